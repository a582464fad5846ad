import DouctlSystem

/// Query strings and fragments the sandbox builds (redirects), percent-encoded per RFC 3986.
enum URLText {
    static func encode(_ text: String) -> String { PercentEncoding.encode(text) }

    static func query(_ fields: [(String, String)]) -> String {
        fields.map { encode($0.0) + "=" + encode($0.1) }.joined(separator: "&")
    }
}
