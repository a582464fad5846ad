import DouctlCore
import DouctlSystem

/// Standard input read to its end, for every `-` that names it (`shuo post -`, `api -F
/// KEY=@-`, `api --attach KEY=-`) and `auth login --with-credentials`: one reader, one error.
enum StandardInput {
    static func bytes(_ fd: Int32) throws(DouctlError) -> [UInt8] {
        do { return try FileIO.readAll(fd) } catch { throw .localInput("cannot read standard input (\(error))") }
    }

    /// As text, without the trailing newlines a shell pipe adds. Bytes that are not UTF-8
    /// (a Latin-1 or GBK file) are refused, exit 3, naming the first bad byte's offset,
    /// rather than posted as U+FFFD.
    static func text(_ fd: Int32) throws(DouctlError) -> String {
        let bytes = try bytes(fd)
        if let offset = firstInvalidUTF8(bytes) {
            throw .localInput("standard input is not valid UTF-8 (byte 0x\(hex(bytes[offset])) at offset \(offset) does not begin a valid sequence); convert it first, e.g. iconv -f GBK -t UTF-8")
        }
        var text = String(decoding: bytes, as: UTF8.self)
        while text.hasSuffix("\n") || text.hasSuffix("\r\n") || text.hasSuffix("\r") { text.removeLast() }
        return text
    }

    /// The offset of the first byte that does not begin or continue a well-formed UTF-8
    /// sequence (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), or nil.
    static func firstInvalidUTF8(_ bytes: [UInt8]) -> Int? {
        var index = 0
        while index < bytes.count {
            let lead = bytes[index]
            let length: Int
            var low: UInt8 = 0x80, high: UInt8 = 0xBF
            switch lead {
            case 0x00...0x7F: index += 1; continue
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; high = 0x9F
            case 0xF0: length = 4; low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; high = 0x8F
            default: return index
            }
            for position in 1..<length {
                let at = index + position
                guard at < bytes.count else { return index }
                let byte = bytes[at]
                let (min, max) = position == 1 ? (low, high) : (UInt8(0x80), UInt8(0xBF))
                guard byte >= min && byte <= max else { return index }  // where the bad sequence begins, as Python says
            }
            index += length
        }
        return nil
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }
}
