import DouctlCore
import DouctlSystem

/// Standard input read to its end, for every `-` that names it (`shuo post -`, `api -F
/// KEY=@-`, `api --attach KEY=-`) and `auth login --with-credentials`: one reader, one error.
enum StandardInput {
    static func bytes(_ fd: Int32) throws(DouctlError) -> [UInt8] {
        do { return try FileIO.readAll(fd) } catch { throw .localInput("cannot read standard input (\(error))") }
    }

    /// As text, without the trailing newlines a shell pipe adds.
    static func text(_ fd: Int32) throws(DouctlError) -> String {
        var text = String(decoding: try bytes(fd), as: UTF8.self)
        while text.hasSuffix("\n") || text.hasSuffix("\r\n") || text.hasSuffix("\r") { text.removeLast() }
        return text
    }
}
