import DouctlSystem

/// The client's query strings, form bodies and path segments, on the one percent-encoder
/// (`PercentEncoding`). Forms and queries keep `*` too, as Douban's own clients send it.
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
        PercentEncoding.encode(text)
    }

    /// Appends `fields` to `url`'s query.
    public static func appendQuery(_ fields: [(String, String)], to url: String) -> String {
        guard !fields.isEmpty else { return url }
        return url + (url.contains("?") ? "&" : "?") + query(fields)
    }

    /// One name or value of a form or query.
    static func escape(_ text: String, spaceAsPlus: Bool) -> String {
        PercentEncoding.encode(text, spaceAsPlus: spaceAsPlus, alsoKeeping: "*")
    }
}
