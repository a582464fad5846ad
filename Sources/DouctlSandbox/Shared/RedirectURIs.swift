/// The redirect URIs registered for the sandbox's client.
enum RedirectURIs {
    /// Loopback URIs match with any port and any path below `/callback` (RFC 8252 §7.3);
    /// the non-loopback one (for the paste-code flow) only exactly.
    static let registered = ["http://127.0.0.1/callback", "http://localhost/callback", "http://[::1]/callback",
                             "https://example.com/back"]

    static func isRegistered(_ uri: String) -> Bool {
        if uri == "https://example.com/back" { return true }
        guard uri.hasPrefix("http://"), !uri.contains("#") else { return false }
        var rest = Substring(uri.dropFirst(7))
        var matchedHost = false
        for host in ["127.0.0.1", "localhost", "[::1]"] where rest.hasPrefix(host) {
            rest = rest.dropFirst(host.count)
            matchedHost = true
            break
        }
        guard matchedHost else { return false }
        if rest.first == ":" {
            rest = rest.dropFirst()
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count <= 5, let port = Int(digits), port <= 65535 else { return false }
            rest = rest.dropFirst(digits.count)
        }
        guard rest.hasPrefix("/callback") else { return false }
        let after = rest.dropFirst("/callback".count)
        return after.isEmpty || after.first == "/" || after.first == "?"
    }

    /// `uri` with query fields added.
    static func appending(_ fields: [(String, String)], to uri: String) -> String {
        uri + (uri.contains("?") ? "&" : "?") + URLText.query(fields)
    }
}
