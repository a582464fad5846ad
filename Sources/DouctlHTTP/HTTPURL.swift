import DouctlSystem

/// An http(s) URL split into its parts (RFC 3986), just enough to follow redirects safely:
/// resolve a `Location` against the URL it answered, compare origins, and drop credential
/// query parameters. Text is kept as sent (no percent-decoding), so nothing is re-encoded.
public struct HTTPURL: Sendable, Equatable {
    public var scheme: String
    /// `user:password@`, without the `@`; empty when absent.
    public var userinfo: String
    public var host: String
    public var port: UInt16?
    public var path: String
    /// Without the `?`; nil when the URL has none.
    public var query: String?

    /// Parses an absolute http or https URL; nil for anything else.
    public init?(_ text: String) {
        guard let schemeEnd = text.firstRange(ofBytes: "://") else { return nil }
        let scheme = HTTPSyntax.lowercased(text[..<schemeEnd.lowerBound])
        guard scheme == "http" || scheme == "https" else { return nil }
        self.scheme = scheme
        var rest = text[schemeEnd.upperBound...]
        if let hash = rest.firstIndex(ofASCII: "#") { rest = rest[..<hash] }
        query = nil
        if let question = rest.firstIndex(ofASCII: "?") {
            query = String(rest[rest.index(afterASCII: question)...])
            rest = rest[..<question]
        }
        let authorityEnd = rest.firstIndex(ofASCII: "/") ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        path = authorityEnd == rest.endIndex ? "/" : String(rest[authorityEnd...])
        userinfo = ""
        if let at = authority.lastIndex(ofASCII: "@") {
            userinfo = String(authority[..<at])
            authority = authority[authority.index(afterASCII: at)...]
        }
        if authority.hasPrefix(bytes: "["), let close = authority.firstIndex(ofASCII: "]") {
            host = HTTPSyntax.lowercased(authority[...close])
            let after = authority[authority.index(afterASCII: close)...]
            if after.hasPrefix(bytes: ":") {
                guard let number = UInt16(after.droppingASCII(1)) else { return nil }
                port = number
            } else {
                guard after.isEmpty else { return nil }
                port = nil
            }
        } else if let colon = authority.lastIndex(ofASCII: ":") {
            host = HTTPSyntax.lowercased(authority[..<colon])
            let digits = authority[authority.index(afterASCII: colon)...]
            if digits.isEmpty {
                port = nil
            } else {
                guard let number = UInt16(digits) else { return nil }
                port = number
            }
        } else {
            host = HTTPSyntax.lowercased(authority)
            port = nil
        }
        guard !host.isEmpty else { return nil }
    }

    /// The port, with the scheme's default filled in.
    public var effectivePort: UInt16 { port ?? (scheme == "https" ? 443 : 80) }

    /// Scheme, host and port: where credentials may go (RFC 6454).
    public func sameOrigin(as other: HTTPURL) -> Bool {
        scheme == other.scheme && host == other.host && effectivePort == other.effectivePort
    }

    public var text: String {
        var result = scheme + "://"
        if !userinfo.isEmpty { result += userinfo + "@" }
        result += host
        if let port { result += ":\(port)" }
        result += path
        if let query { result += "?" + query }
        return result
    }

    /// Resolves a `Location` value (absolute, scheme-relative, absolute-path or relative)
    /// against this URL (RFC 3986 §5.2). Nil when the result is not an http(s) URL.
    public func resolve(_ reference: String) -> HTTPURL? {
        let reference = reference.trimmingCharacters(in: " \t")
        if let colon = reference.firstIndex(of: ":"),
           reference[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }),
           !reference[..<colon].isEmpty {
            return HTTPURL(reference)
        }
        if reference.hasPrefix("//") { return HTTPURL(scheme + ":" + reference) }
        var resolved = self
        resolved.userinfo = ""
        var target = Substring(reference)
        if let hash = target.firstIndex(of: "#") { target = target[..<hash] }
        var newQuery: String?
        if let question = target.firstIndex(of: "?") {
            newQuery = String(target[target.index(after: question)...])
            target = target[..<question]
        }
        if target.isEmpty {
            resolved.query = newQuery ?? query
            return resolved
        }
        let merged: String
        if target.hasPrefix("/") {
            merged = String(target)
        } else {
            let directory = path.lastIndex(of: "/").map { String(path[...$0]) } ?? "/"
            merged = directory + target
        }
        resolved.path = Self.removeDotSegments(merged)
        resolved.query = newQuery
        return resolved
    }

    /// RFC 3986 §5.2.4, on whole segments.
    static func removeDotSegments(_ path: String) -> String {
        var output: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        for (index, segment) in segments.enumerated() where index > 0 || !segment.isEmpty {
            let isLast = index == segments.count - 1
            switch segment {
            case ".":
                if isLast { output.append("") }
            case "..":
                if !output.isEmpty { output.removeLast() }
                if isLast { output.append("") }
            default:
                output.append(segment)
            }
        }
        return "/" + output.joined(separator: "/")
    }

    /// This URL without the query parameters named in `names`.
    public func removingQueryParameters(_ names: Set<String>) -> HTTPURL {
        guard let query, !names.isEmpty else { return self }
        var copy = self
        let kept = query.split(separator: "&", omittingEmptySubsequences: false).filter { pair in
            let name = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            return !names.contains(String(name))
        }
        copy.query = kept.isEmpty ? nil : kept.joined(separator: "&")
        return copy
    }

    /// This URL with the parameters named in `names` that `other` has and this one lacks.
    public func addingQueryParameters(from other: HTTPURL, named names: Set<String>) -> HTTPURL {
        guard let otherQuery = other.query, !names.isEmpty else { return self }
        func name(_ pair: Substring) -> String { String(pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first ?? "") }
        let present = Set((query ?? "").split(separator: "&").map(name))
        let missing = otherQuery.split(separator: "&").filter { names.contains(name($0)) && !present.contains(name($0)) }
        guard !missing.isEmpty else { return self }
        var copy = self
        copy.query = ([query].compactMap { $0 }.filter { !$0.isEmpty } + missing.map(String.init)).joined(separator: "&")
        return copy
    }
}
