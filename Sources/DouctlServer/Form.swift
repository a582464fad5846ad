/// `application/x-www-form-urlencoded` (the WHATWG URL standard's rules), used for query strings
/// and form bodies. Parsing never fails: whatever arrives, something sensible comes out, because a
/// fake API server must answer odd clients instead of crashing on them.
public enum FormURLEncoded {
    /// Splits on `&`, then on the first `=`; `+` becomes a space and `%XX` a byte; an invalid escape
    /// is kept literally; the bytes are read as UTF-8 (invalid sequences become U+FFFD). Empty
    /// pieces (`a=1&&b=2`) are skipped; a piece without `=` is a name with an empty value.
    public static func parse(_ bytes: [UInt8]) -> [(name: String, value: String)] {
        bytes.withUnsafeBufferPointer { parse(UnsafeBufferPointer(rebasing: $0[...])) }
    }

    public static func parse(_ text: String) -> [(name: String, value: String)] {
        var text = text
        return text.withUTF8 { parse($0) }
    }

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        for piece in bytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let name: Slice<UnsafeBufferPointer<UInt8>>
            let value: Slice<UnsafeBufferPointer<UInt8>>
            if let equals = piece.firstIndex(of: UInt8(ascii: "=")) {
                name = piece[..<equals]
                value = piece[(equals + 1)...]
            } else {
                name = piece
                value = piece[piece.endIndex...]
            }
            fields.append((name: PercentEncoding.decodeString(name, plusAsSpace: true),
                           value: PercentEncoding.decodeString(value, plusAsSpace: true)))
        }
        return fields
    }

    /// The inverse: `name=value&…` with everything but unreserved characters percent-encoded
    /// (space as `+`), so a parse of the result gives the fields back.
    public static func serialize(_ fields: [(String, String)]) -> String {
        fields.map { PercentEncoding.encode($0.0, spaceAsPlus: true) + "=" + PercentEncoding.encode($0.1, spaceAsPlus: true) }
            .joined(separator: "&")
    }
}

/// `%XX` escapes in both directions.
public enum PercentEncoding {
    /// Decodes `%XX` (either case of hex digits); a `%` not followed by two hex digits is kept as
    /// is. With `plusAsSpace`, `+` becomes a space (form rules); paths keep their `+`.
    public static func decode<Bytes: Collection<UInt8>>(_ bytes: Bytes, plusAsSpace: Bool) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                let first = bytes.index(after: index)
                if first != bytes.endIndex {
                    let second = bytes.index(after: first)
                    if second != bytes.endIndex, let high = hexValue(bytes[first]), let low = hexValue(bytes[second]) {
                        result.append(high << 4 | low)
                        index = bytes.index(after: second)
                        continue
                    }
                }
                result.append(byte)
            } else if plusAsSpace && byte == UInt8(ascii: "+") {
                result.append(UInt8(ascii: " "))
            } else {
                result.append(byte)
            }
            index = bytes.index(after: index)
        }
        return result
    }

    public static func decodeString<Bytes: Collection<UInt8>>(_ bytes: Bytes, plusAsSpace: Bool) -> String {
        String(decoding: decode(bytes, plusAsSpace: plusAsSpace), as: UTF8.self)
    }

    public static func decode(_ text: String, plusAsSpace: Bool = false) -> String {
        decodeString(Array(text.utf8), plusAsSpace: plusAsSpace)
    }

    /// Percent-encodes every byte except RFC 3986 unreserved ones (`A-Z a-z 0-9 - . _ ~`).
    public static func encode(_ text: String, spaceAsPlus: Bool = false) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var result: [UInt8] = []
        result.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                result.append(byte)
            case UInt8(ascii: " ") where spaceAsPlus:
                result.append(UInt8(ascii: "+"))
            default:
                result.append(UInt8(ascii: "%"))
                result.append(digits[Int(byte >> 4)])
                result.append(digits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: result, as: UTF8.self)
    }
}

@inline(__always)
func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
    default: return nil
    }
}
