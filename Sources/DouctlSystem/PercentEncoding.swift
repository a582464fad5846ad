/// `%XX` escapes in both directions, one definition for the client (queries, form bodies,
/// path segments, request signatures) and the servers (paths, forms, RFC 5987 parameters).
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

    /// Percent-encodes every byte except RFC 3986 unreserved ones (`A-Z a-z 0-9 - . _ ~`) and
    /// the ASCII characters of `alsoKeeping` (the client's forms and queries keep `*`, as
    /// Douban's own clients do). With `spaceAsPlus`, a space becomes `+` (form rules).
    public static func encode(_ text: String, spaceAsPlus: Bool = false, alsoKeeping: String = "") -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        let kept = Array(alsoKeeping.utf8)
        var result: [UInt8] = []
        result.reserveCapacity(text.utf8.count)
        // A byte of the command line that is not UTF-8 goes out as itself (%FF), not as
        // its escape's UTF-8 (EscapedBytes).
        for byte in EscapedBytes.bytes(text) {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                result.append(byte)
            case UInt8(ascii: " ") where spaceAsPlus:
                result.append(UInt8(ascii: "+"))
            case _ where kept.contains(byte):
                result.append(byte)
            default:
                result.append(UInt8(ascii: "%"))
                result.append(digits[Int(byte >> 4)])
                result.append(digits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// An RFC 8187 extended value (`UTF-8''na%C3%AFve.txt`), as `filename*` carries it in a
    /// Content-Disposition; ISO-8859-1 is mapped byte for byte. Nil for another charset or
    /// a value without its two quotes.
    public static func decodeExtendedValue(_ text: String) -> String? {
        let pieces = text.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard pieces.count == 3 else { return nil }
        let bytes = decode(pieces[2].utf8, plusAsSpace: false)
        switch pieces[0].lowercased() {
        case "utf-8": return String(decoding: bytes, as: UTF8.self)
        case "iso-8859-1": return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        default: return nil
        }
    }

    /// The value of one hex digit, or nil for any other byte.
    @inline(__always)
    public static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
