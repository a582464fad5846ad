/// Percent-encoding for query strings, form bodies and path segments.
public enum FormEncoding {
    /// `application/x-www-form-urlencoded` (what Douban and Coding take for POST/PUT):
    /// unreserved characters as they are, space as '+', everything else %XX of its UTF-8.
    public static func encode(_ fields: [(String, String)]) -> String {
        fields.map { "\(escape($0.0, spaceAsPlus: true))=\(escape($0.1, spaceAsPlus: true))" }.joined(separator: "&")
    }

    /// A query string (no leading '?'); spaces as %20, which every server reads.
    public static func query(_ fields: [(String, String)]) -> String {
        fields.map { "\(escape($0.0, spaceAsPlus: false))=\(escape($0.1, spaceAsPlus: false))" }.joined(separator: "&")
    }

    /// One path segment: RFC 3986 unreserved characters stay; '/' and '?' are escaped too,
    /// so an ID cannot change the path.
    public static func pathSegment(_ text: String) -> String {
        escape(text, spaceAsPlus: false, keep: "-._~")
    }

    /// Appends `fields` to `url`'s query.
    public static func appendQuery(_ fields: [(String, String)], to url: String) -> String {
        guard !fields.isEmpty else { return url }
        return url + (url.contains("?") ? "&" : "?") + query(fields)
    }

    static func escape(_ text: String, spaceAsPlus: Bool, keep: String = "-._~*") -> String {
        let hex: [UInt8] = Array("0123456789ABCDEF".utf8)
        let keepBytes = Set(keep.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                out.append(byte)
            case UInt8(ascii: " ") where spaceAsPlus:
                out.append(UInt8(ascii: "+"))
            case _ where keepBytes.contains(byte):
                out.append(byte)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
