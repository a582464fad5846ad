/// The bits of HTTP syntax both the client and the server read: tokens, case-insensitive
/// names, optional whitespace.
public enum HTTPSyntax {
    @inlinable @inline(__always)
    public static func asciiLowercase(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }

    public static func asciiLowercased(_ text: some StringProtocol) -> String {
        String(decoding: text.utf8.map(asciiLowercase), as: UTF8.self)
    }

    /// Drops leading and trailing spaces and tabs (HTTP's "optional whitespace").
    public static func trimmingWhitespace(_ text: Substring) -> Substring {
        var result = text
        while let first = result.first, first == " " || first == "\t" { result.removeFirst() }
        while let last = result.last, last == " " || last == "\t" { result.removeLast() }
        return result
    }

    /// RFC 9110 `tchar`: the bytes allowed in methods, field names and other tokens.
    @inlinable
    public static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    public static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy(isTokenByte)
    }

    /// Compares two strings ignoring ASCII case only, without allocating (field names are ASCII tokens).
    public static func caseInsensitiveEquals(_ lhs: String, _ rhs: String) -> Bool {
        let left = lhs.utf8
        let right = rhs.utf8
        guard left.count == right.count else { return false }
        for (a, b) in zip(left, right) where a != b {
            if asciiLowercase(a) != asciiLowercase(b) { return false }
        }
        return true
    }
}
