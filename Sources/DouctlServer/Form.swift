import DouctlSystem

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
