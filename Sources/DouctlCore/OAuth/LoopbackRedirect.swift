import DouctlSystem

/// The redirect URI of the browser flow, on the loopback interface (RFC 8252 §7.3).
public struct LoopbackRedirect: Sendable, Equatable {
    /// The host as written in the redirect URI: "127.0.0.1", "[::1]" or "localhost".
    public var host: String
    public var port: UInt16
    /// The callback path: the registered one, or distinct per profile so concurrent logins
    /// never take each other's code (RFC 8252 §8.10).
    public var path: String
    /// The registered URI's query ("" when none), sent back as registered.
    public var query: String

    /// "http://HOST:PORT/PATH", the host and path as registered.
    public func uri(port actualPort: UInt16) -> String {
        "http://\(host):\(actualPort)\(path)" + (query.isEmpty ? "" : "?" + query)
    }

    /// The address the listener binds: the host written ("localhost" listens on 127.0.0.1,
    /// "[::1]" on ::1), so the browser's request reaches it.
    public var bindHost: String { host == "[::1]" ? "::1" : "127.0.0.1" }

    /// From the profile's `redirect_uri`. Port 0 or none: any free port. A registered URI
    /// (`asRegistered`: the profile's own setting) keeps its host and path; a preset's
    /// template or a URI without a path gets the path "/callback" (or the template's)
    /// followed by the profile name.
    public init(redirectURI: String?, profile: String, asRegistered: Bool = false) {
        var host = "127.0.0.1"
        var port: UInt16 = 0
        var basePath = "/callback"
        var query = ""
        var registeredPath: String?
        if let redirectURI, let parts = URLParts(redirectURI) {
            port = parts.port ?? 0
            if LoopbackRedirect.isLoopback(redirectURI) { host = parts.host }
            if parts.path != "/" && !parts.path.isEmpty {
                basePath = parts.path
                if asRegistered {
                    registeredPath = parts.path
                    query = LoopbackRedirect.rawQuery(of: redirectURI)
                }
            }
        }
        while basePath.hasSuffix("/") { basePath.removeLast() }
        self.host = host
        self.port = port
        self.query = query
        path = registeredPath ?? basePath + "/" + FormEncoding.pathSegment(profile)
    }

    public static func isLoopback(_ uri: String) -> Bool {
        guard let parts = URLParts(uri), parts.scheme == "http" else { return false }
        return ["127.0.0.1", "localhost", "[::1]"].contains(parts.host)
    }

    /// The text between '?' and '#', as written.
    static func rawQuery(of uri: String) -> String {
        guard let question = uri.firstIndex(of: "?") else { return "" }
        let rest = uri[uri.index(after: question)...]
        return String(rest.prefix { $0 != "#" })
    }
}

/// Just enough URL parsing for redirect URIs and pasted callback URLs.
public struct URLParts: Sendable, Equatable {
    public var scheme: String
    public var host: String
    public var port: UInt16?
    public var path: String
    public var query: [(String, String)]

    public init?(_ text: String) {
        guard let schemeEnd = text.firstRange(ofBytes: "://") else { return nil }
        scheme = HTTPSyntax.lowercased(text[..<schemeEnd.lowerBound])
        var rest = text[schemeEnd.upperBound...]
        if let hash = rest.firstIndex(ofASCII: "#") { rest = rest[..<hash] }
        var queryText = ""
        if let question = rest.firstIndex(ofASCII: "?") {
            queryText = String(rest[rest.index(afterASCII: question)...])
            rest = rest[..<question]
        }
        let authorityEnd = rest.firstIndex(ofASCII: "/") ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        path = authorityEnd == rest.endIndex ? "/" : String(rest[authorityEnd...])
        if authority.hasPrefix(bytes: "["), let close = authority.firstIndex(ofASCII: "]") {
            host = String(authority[...close])
            let after = authority[authority.index(afterASCII: close)...]
            port = after.hasPrefix(bytes: ":") ? UInt16(after.droppingASCII(1)) : nil
        } else if let colon = authority.lastIndex(ofASCII: ":") {
            host = HTTPSyntax.lowercased(authority[..<colon])
            guard let number = UInt16(authority[authority.index(afterASCII: colon)...]) else { return nil }
            port = number
        } else {
            host = HTTPSyntax.lowercased(authority)
            port = nil
        }
        guard !host.isEmpty else { return nil }
        query = URLParts.parseQuery(queryText)
    }

    public func value(_ name: String) -> String? { query.first { $0.0 == name }?.1 }

    public static func parseQuery(_ text: String) -> [(String, String)] {
        text.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (PercentEncoding.decode(String(parts[0]), plusAsSpace: true),
                    parts.count > 1 ? PercentEncoding.decode(String(parts[1]), plusAsSpace: true) : "")
        }
    }

    public static func == (lhs: URLParts, rhs: URLParts) -> Bool {
        lhs.scheme == rhs.scheme && lhs.host == rhs.host && lhs.port == rhs.port && lhs.path == rhs.path
            && lhs.query.elementsEqual(rhs.query) { $0 == $1 }
    }
}
