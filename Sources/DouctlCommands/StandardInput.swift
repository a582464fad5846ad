import DouctlCore
import DouctlSystem

/// Standard input read to its end, for every `-` that names it (`shuo post -`, `api -F
/// KEY=@-`, `api --attach KEY=-`, `api --input -`) and `auth login --with-credentials`: one
/// reader, one error.
///
/// A standard input that was closed when douctl started (`<&-`; it then holds /dev/null)
/// is refused, exit 3, rather than read as an empty body. Reading stops when the run's
/// cancellation is requested (Ctrl-C, `--max-time`), however slowly a pipe's writer goes.
struct StandardInput {
    var fileDescriptor: Int32
    /// Closed when douctl started (`StandardDescriptors.wasClosed(0)`).
    var closed: Bool
    var cancellation: Cancellation
    /// Where a body read from it past 1 MiB is kept (`StdinBody`): the run's $TMPDIR; nil,
    /// the system's temporary directory.
    var spoolDirectory: String?

    init(fileDescriptor: Int32, closed: Bool = false, cancellation: Cancellation = Cancellation(), spoolDirectory: String? = nil) {
        self.fileDescriptor = fileDescriptor
        self.closed = closed
        self.cancellation = cancellation
        self.spoolDirectory = spoolDirectory
    }

    init(_ process: ProcessContext) {
        self.init(fileDescriptor: process.standardInput, closed: process.standardInputClosed, cancellation: process.cancellation,
                  spoolDirectory: process.environment["TMPDIR"])
    }

    /// Refuses a closed standard input for `use` (what was to come from it: "--input -").
    func requireOpen(for use: String) throws(DouctlError) {
        if closed { throw .localInput("\(use) reads standard input, which is closed (<&-); nothing was sent") }
    }

    /// All of it, for `use` (named in the error when it is closed).
    func bytes(for use: String) throws(DouctlError) -> [UInt8] {
        try requireOpen(for: use)
        let bytes: [UInt8]?
        do { bytes = try FileIO.readAll(fileDescriptor, stoppingAt: cancellation) } catch { throw .localInput("cannot read standard input (\(error))") }
        guard let bytes else { throw .interrupted }
        return bytes
    }

    /// As text, without the trailing newlines a shell pipe adds. Bytes that are not UTF-8
    /// (a Latin-1 or GBK file) are refused, exit 3, naming the first bad byte's offset,
    /// rather than posted as U+FFFD.
    func text(for use: String) throws(DouctlError) -> String {
        let bytes = try bytes(for: use)
        if let offset = Self.firstInvalidUTF8(bytes) {
            throw .localInput("standard input is not valid UTF-8 (byte 0x\(Self.hex(bytes[offset])) at offset \(offset) does not begin a valid sequence); convert it first, e.g. iconv -f GBK -t UTF-8")
        }
        var text = EscapedBytes.string(bytes)
        while text.hasSuffix("\n") || text.hasSuffix("\r\n") || text.hasSuffix("\r") { text.removeLast() }
        return text
    }

    /// The offset of the first byte that does not begin or continue a well-formed UTF-8
    /// sequence (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), or nil.
    static func firstInvalidUTF8(_ bytes: [UInt8]) -> Int? {
        bytes.withUnsafeBufferPointer { buffer in
            var index = 0
            while index < buffer.count {
                // Where the bad sequence begins, as Python says.
                guard let length = EscapedBytes.sequenceLength(buffer, at: index) else { return index }
                index += length
            }
            return nil
        }
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }
}
