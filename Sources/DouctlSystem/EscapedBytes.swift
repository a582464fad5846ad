#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Bytes that are not UTF-8, carried losslessly through a `String` (issue 30).
///
/// A command line is bytes: `-f t=$'\xff'`, a file named `a\xff.txt`, a path `/a\xff`.
/// `CommandLine.arguments` repairs invalid UTF-8 into U+FFFD, so douctl sent `%EF%BF%BD`,
/// looked for another file name, and wrote `-o` under another name. Instead, as Python's
/// `surrogateescape` does (a Swift String cannot hold lone surrogates), each byte 0x80–0xFF
/// that does not belong to a valid UTF-8 sequence becomes one private-use scalar,
/// U+10FF80–U+10FFFF (U+10FF00 + the byte). Where the text leaves douctl it is turned back
/// into the original bytes, in one place per boundary: file names given to the system
/// (`EscapedBytes.cString`, by `FileIO` and the writers), percent-encoding for the wire
/// (`PercentEncoding.encode`), the URL and header lines given to libcurl, and multipart
/// names and values. Error lines and terminal text show such a byte as `\xff`.
///
/// The mapping is a bijection: an argument that spells one of the reserved scalars in
/// valid UTF-8 (F4 8F BE/BF xx) has those four bytes escaped one by one, so decoding gives
/// back exactly the bytes that came in. Valid UTF-8 without them, the usual case, is taken
/// as it is, after one pass over the bytes (no Character work).
public enum EscapedBytes {
    /// The scalar that stands for byte `byte` (0x80–0xFF) is `base + byte`.
    static let base: UInt32 = 0x10FF00

    /// The arguments of this process (`CommandLine.unsafeArgv`), program name dropped, each
    /// decoded by `string(_:)`.
    public static func commandLineArguments() -> [String] {
        let count = Int(CommandLine.argc)
        guard count > 1 else { return [] }
        var arguments: [String] = []
        arguments.reserveCapacity(count - 1)
        for index in 1..<count {
            guard let pointer = CommandLine.unsafeArgv[index] else { continue }
            let length = strlen(pointer)
            arguments.append(pointer.withMemoryRebound(to: UInt8.self, capacity: length) {
                string(UnsafeBufferPointer(start: $0, count: length))
            })
        }
        return arguments
    }

    /// The bytes as a String: valid UTF-8 as it is, every other byte escaped.
    public static func string(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBufferPointer { string($0) }
    }

    /// The bytes as a String: valid UTF-8 as it is, every other byte escaped.
    public static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        if isPlain(bytes) { return String(decoding: bytes, as: UTF8.self) }
        var utf8: [UInt8] = []
        utf8.reserveCapacity(bytes.count * 2)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if let length = sequenceLength(bytes, at: index), !isReserved(bytes, at: index) {
                utf8.append(contentsOf: bytes[index..<(index + length)])
                index += length
            } else {
                appendEscape(of: bytes[index], to: &utf8)
                index += 1
            }
        }
        return String(decoding: utf8, as: UTF8.self)
    }

    /// The original bytes of `text`: each escape back to its byte, everything else as UTF-8.
    public static func bytes(_ text: String) -> [UInt8] {
        let utf8 = text.utf8
        guard contains(text) else { return Array(utf8) }
        var result: [UInt8] = []
        result.reserveCapacity(utf8.count)
        var iterator = utf8.makeIterator()
        var pending: [UInt8] = []
        while let byte = iterator.next() {
            guard byte == 0xF4 else { result.append(byte); continue }
            pending = [byte]
            while pending.count < 4, let next = iterator.next() { pending.append(next) }
            if pending.count == 4, pending[1] == 0x8F, pending[2] == 0xBE || pending[2] == 0xBF {
                result.append(0x80 | (pending[2] & 1) << 6 | (pending[3] & 0x3F))
            } else {
                result.append(contentsOf: pending)
            }
        }
        return result
    }

    /// The original bytes, NUL-terminated, for a C function that takes a file name.
    public static func cString(_ text: String) -> [CChar] {
        var bytes = bytes(text)
        bytes.append(0)
        return bytes.map { CChar(bitPattern: $0) }
    }

    /// True when `text` holds an escaped byte: a scan of its UTF-8 for an escape's first
    /// three bytes (F4 8F BE/BF), so text without them pays one pass and no allocation.
    public static func contains(_ text: String) -> Bool {
        // How many bytes of an escape's start were just seen: F4, then 8F.
        var matched = 0
        for byte in text.utf8 {
            switch (matched, byte) {
            case (2, 0xBE), (2, 0xBF): return true
            case (1, 0x8F): matched = 2
            case (_, 0xF4): matched = 1
            default: matched = 0
            }
        }
        return false
    }

    /// `text` for a person: every escaped byte as `\xff`.
    public static func shown(_ text: String) -> String {
        guard contains(text) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            if let byte = escapedByte(scalar) {
                result += "\\x" + hex(byte)
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// The byte `scalar` stands for, or nil when it is not an escape.
    public static func escapedByte(_ scalar: Unicode.Scalar) -> UInt8? {
        scalar.value >= base + 0x80 && scalar.value <= base + 0xFF ? UInt8(scalar.value - base) : nil
    }

    /// The first escaped byte of `text`, or nil: for an error line that names it.
    public static func firstEscapedByte(_ text: String) -> UInt8? {
        guard contains(text) else { return nil }
        for scalar in text.unicodeScalars { if let byte = escapedByte(scalar) { return byte } }
        return nil
    }

    /// The length of the well-formed UTF-8 sequence (RFC 3629: no overlong forms, no
    /// surrogates, nothing above U+10FFFF) that starts at `index`, or nil.
    public static func sequenceLength(_ bytes: [UInt8], at index: Int) -> Int? {
        bytes.withUnsafeBufferPointer { sequenceLength($0, at: index) }
    }

    /// The length of the well-formed UTF-8 sequence that starts at `index`, or nil.
    public static func sequenceLength(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Int? {
        let lead = bytes[index]
        let length: Int
        var low: UInt8 = 0x80, high: UInt8 = 0xBF
        switch lead {
        case 0x00...0x7F: return 1
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: return nil
        }
        for position in 1..<length {
            let at = index + position
            guard at < bytes.endIndex else { return nil }
            let byte = bytes[at]
            let (min, max) = position == 1 ? (low, high) : (UInt8(0x80), UInt8(0xBF))
            guard byte >= min && byte <= max else { return nil }
        }
        return length
    }

    /// ASCII, or valid UTF-8 with no reserved scalar: taken as it is.
    private static func isPlain(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if bytes[index] < 0x80 { index += 1; continue }
            guard let length = sequenceLength(bytes, at: index), !isReserved(bytes, at: index) else { return false }
            index += length
        }
        return true
    }

    /// A valid sequence that spells an escape's scalar (F4 8F BE/BF xx).
    private static func isReserved(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Bool {
        bytes[index] == 0xF4 && index + 2 < bytes.endIndex && bytes[index + 1] == 0x8F && (bytes[index + 2] == 0xBE || bytes[index + 2] == 0xBF)
    }

    private static func appendEscape(of byte: UInt8, to utf8: inout [UInt8]) {
        // U+10FF00 + byte (0x80–0xFF) in UTF-8: F4 8F, BE or BF, then the low six bits.
        utf8.append(0xF4)
        utf8.append(0x8F)
        utf8.append(0xBE | (byte >> 6) & 1)
        utf8.append(0x80 | byte & 0x3F)
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits: [Character] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "a", "b", "c", "d", "e", "f"]
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }
}
