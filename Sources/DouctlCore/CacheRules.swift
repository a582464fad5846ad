import DouctlHTTP
import DouctlSystem

/// The directives of every `Cache-Control` field line of a message (RFC 9111 §5.2): a
/// `no-store` in a second line counts as much as one in the first. Names are compared
/// lower-cased; a quoted value is unquoted; the first occurrence of a directive wins.
public struct CacheControl: Sendable, Equatable {
    public private(set) var directives: [String: String] = [:]

    public init(_ headers: [HTTPHeader]) {
        for header in headers where header.name.lowercased() == "cache-control" {
            for item in Self.items(header.value) {
                let (name, value) = item
                if !name.isEmpty, directives[name] == nil { directives[name] = value }
            }
        }
    }

    public func has(_ directive: String) -> Bool { directives[directive] != nil }

    /// A delta-seconds value (`max-age=60`); nil when absent or not a number.
    public func seconds(_ directive: String) -> Int? {
        guard let text = directives[directive], !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text) ?? Int.max
    }

    /// `a, b=1, c="x, y"` → [(a, ""), (b, 1), (c, "x, y")]: commas inside quotes do not split.
    static func items(_ value: String) -> [(String, String)] {
        var items: [(String, String)] = []
        var current: [UInt8] = []
        var quoted = false
        var escaped = false
        func finish() {
            let text = String(decoding: current, as: UTF8.self)
            current.removeAll()
            let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = (parts.first.map(String.init) ?? "").trimmingCharacters(in: " \t").lowercased()
            var argument = parts.count > 1 ? String(parts[1]).trimmingCharacters(in: " \t") : ""
            if argument.count >= 2, argument.hasPrefix("\""), argument.hasSuffix("\"") {
                argument = String(argument.dropFirst().dropLast()).replacingAll("\\\"", with: "\"")
            }
            if !name.isEmpty { items.append((name, argument)) }
        }
        for byte in value.utf8 {
            if escaped { escaped = false; current.append(byte); continue }
            if quoted && byte == 0x5C { escaped = true; current.append(byte); continue }
            if byte == 0x22 { quoted.toggle() }
            if byte == 0x2C && !quoted { finish(); continue }
            current.append(byte)
        }
        finish()
        return items
    }
}

extension ResponseCache {
    // MARK: - what chooses a reply

    /// The cache key of the request as it goes out (the final `HTTPRequest`: URL with its
    /// query, every header the credentials and the profile added): the profile's tag, then a
    /// SHA-256 over everything that chooses the reply —
    /// - the method and the URL with its query (a key in `token_query`, `access_token`,
    ///   `common_params` included), less `volatileQuery` (a signature's timestamp: it changes
    ///   with the clock, not with the reply);
    /// - the Unix socket (`--unix-socket`): a socket's reply is never one for TCP;
    /// - a digest of every header that can carry an identity (`identityHeaders`).
    /// Only digests reach the disk, never a secret.
    public static func key(profile: String, request: HTTPRequest, unixSocket: String?, volatileQuery: Set<String> = []) -> String {
        let material = [
            "douctl-cache-key-2", profile, request.method.uppercased(),
            dropping(volatileQuery, from: request.url),
            unixSocket.map { "unix:" + $0 } ?? "tcp",
            identityDigest(request),
        ].map { "\($0.utf8.count):\($0)" }.joined()
        return profileTag(profile) + "-" + Digest.hex(Digest.sha256(Array(material.utf8)))
    }

    /// The query parameters of a profile's signature that change with the clock (hmac-sha1's
    /// `_ts` and `_sig`); md5-sorted's `sign` is fixed by the rest, so it stays in the key.
    public static func volatileQuery(signing: SigningScheme?) -> Set<String> {
        signing == .hmacSHA1 ? ["_ts", "_sig"] : []
    }

    /// Whether `header` may say who is asking: `Authorization`, `Proxy-Authorization`,
    /// `Cookie`, a header whose value is one of the request's secrets (`token_header`'s API
    /// key), and any header whose name says key, token, auth, session, secret, credential or
    /// password (`X-API-Key` from `common_headers`, `Private-Token`, `X-Auth-Token`).
    public static func carriesIdentity(_ header: HTTPHeader, secrets: [String]) -> Bool {
        let name = header.name.lowercased()
        if ["authorization", "proxy-authorization", "cookie"].contains(name) { return true }
        if secrets.contains(where: { !$0.isEmpty && header.value.containsBytes($0) }) { return true }
        return ["key", "token", "auth", "session", "secret", "credential", "password"].contains { name.containsBytes($0) }
    }

    /// A SHA-256 over the identity-carrying headers (`carriesIdentity`), by lower-cased name,
    /// repeats kept in order; "-" for a request that carries none.
    static func identityDigest(_ request: HTTPRequest) -> String {
        let lines = request.headers.enumerated()
            .filter { carriesIdentity($0.element, secrets: request.secrets) }
            .map { (name: $0.element.name.lowercased(), index: $0.offset, value: $0.element.value) }
            .sorted { ($0.name, $0.index) < ($1.name, $1.index) }
        guard !lines.isEmpty else { return "-" }
        let text = lines.map { "\($0.name.utf8.count):\($0.name)\($0.value.utf8.count):\($0.value)" }.joined()
        return Digest.hex(Digest.sha256(Array(("identity\n" + text).utf8)))
    }

    /// `url` without the query parameters named in `names`.
    static func dropping(_ names: Set<String>, from url: String) -> String {
        guard !names.isEmpty, let question = url.firstIndex(of: "?") else { return url }
        let fragment = url[question...].firstIndex(of: "#")
        let query = url[url.index(after: question)..<(fragment ?? url.endIndex)]
        let kept = query.split(separator: "&", omittingEmptySubsequences: false).filter { item in
            let name = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            return !names.contains(PercentEncoding.decode(name))
        }
        let base = String(url[..<question])
        let tail = fragment.map { String(url[$0...]) } ?? ""
        return (kept.isEmpty ? base : base + "?" + kept.joined(separator: "&")) + tail
    }

    // MARK: - Vary

    /// The request header names a reply's `Vary` lines name, lower-cased, sorted, each once;
    /// `*` among them when the reply varies on what no header says.
    public static func varyNames(_ head: HTTPResponseHead) -> [String] {
        var names = Set<String>()
        for header in head.headers where header.name.lowercased() == "vary" {
            for name in header.value.split(separator: ",") {
                let trimmed = name.trimmingCharacters(in: " \t").lowercased()
                if !trimmed.isEmpty { names.insert(trimmed) }
            }
        }
        return names.sorted()
    }

    /// A digest of `request`'s values of `names` (every line of each, in order; absent told
    /// from empty), salted with the entry's key: what an entry records so that a request with
    /// other values (`Accept: text/csv` for a JSON entry) is not served it, and never a value.
    static func varyDigest(_ names: [String], request: HTTPRequest, key: String) -> String {
        var text = "vary\n\(key)\n"
        for name in names {
            let values = request.headers.filter { $0.name.lowercased() == name }.map { $0.value.trimmingCharacters(in: " \t") }
            text += "\(name.utf8.count):\(name)"
            text += values.isEmpty ? "-" : "+" + values.map { "\($0.utf8.count):\($0)" }.joined()
        }
        return Digest.hex(Digest.sha256(Array(text.utf8)))
    }

    // MARK: - what may be answered and kept

    /// A request the cache stays out of: one the caller made conditional or partial
    /// (`asksConditionally`: its answer is the caller's to see), or one saying
    /// `Cache-Control: no-store` in any line (nothing of it is to be kept, and a caller who
    /// says so wants the server's own answer).
    public static func bypasses(_ request: HTTPRequest) -> Bool {
        asksConditionally(request.headers) || CacheControl(request.headers).has("no-store")
    }

    /// Whether `response` to `request` may be kept: a plain 200, 203 or 204 to a request the
    /// cache does not stay out of (`bypasses`), without `no-store` in any `Cache-Control`
    /// line of the reply, and not `Vary: *` (a reply varying on what no header says is never
    /// kept, so never served).
    public static func isStorable(_ response: HTTPResponse, request: HTTPRequest) -> Bool {
        isStorable(response, requestHeaders: request.headers) && !bypasses(request)
    }
}

extension CachePolicy {
    /// Whether `entry` may be served to `request` without asking the server: younger than
    /// `--cache`'s duration, unless the reply said `no-cache` (kept, but revalidated before
    /// each use, RFC 9111 §5.2.2.4) or the request says `no-cache`, or `max-age` younger than
    /// the entry (§5.2.1). `--cache-only` serves any age (the caller decides that first).
    public func isFresh(_ entry: ResponseCache.Entry, request: HTTPRequest, now: Double) -> Bool {
        let age = now - entry.storedAt
        guard let freshFor, age <= freshFor else { return false }
        if CacheControl(entry.response.head.headers).has("no-cache") { return false }
        let asked = CacheControl(request.headers)
        if asked.has("no-cache") { return false }
        if let maxAge = asked.seconds("max-age"), age > Double(maxAge) { return false }
        return true
    }
}
