#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// `--cache DURATION` (HAccess's cache, gh's `--cache`): successful GET/HEAD replies kept in
/// `$XDG_CACHE_HOME/douctl` (else `~/.cache/douctl`), one file each, mode 0600, written
/// atomically. The key is profile + method + URL + a hash of the credential in force (the
/// token, or the cookie session's digest) — never the credential — so one user's replies
/// are not served to another; `auth login` and `auth logout` drop the profile's entries. `Cache-Control: no-store` is honoured;
/// the directory is kept under `cache_max_mb`, least recently used first out.
public struct ResponseCache: Sendable {
    public let directory: String
    public let maximumBytes: Int64

    public init(directory: String, maximumBytes: Int64) {
        self.directory = directory
        self.maximumBytes = maximumBytes
    }

    /// `$XDG_CACHE_HOME/douctl`, else `$HOME/.cache/douctl`.
    public static func defaultDirectory(environment: [String: String]) -> String? {
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") { return xdg + "/douctl" }
        guard let home = environment["HOME"], !home.isEmpty else { return nil }
        return home + "/.cache/douctl"
    }

    public struct Entry: Sendable {
        public var response: HTTPResponse
        public var storedAt: Double
    }

    /// The cache key: the profile's tag, then a SHA-256 over what identifies the reply —
    /// the credential in force included (a token, or a cookie session's digest), hashed,
    /// so one identity's replies are never another's and no secret reaches the disk.
    public static func key(profile: String, method: String, url: String, credential: String?) -> String {
        let credentialHash = credential.map { Digest.hex(Digest.sha256(Array($0.utf8))) } ?? "-"
        return profileTag(profile) + "-" + Digest.hex(Digest.sha256(Array("\(profile)\n\(method.uppercased())\n\(url)\n\(credentialHash)".utf8)))
    }

    /// The start of every key of `profile`'s replies, so they can be dropped together.
    static func profileTag(_ profile: String) -> String {
        String(Digest.hex(Digest.sha256(Array("profile\n\(profile)".utf8))).prefix(16))
    }

    /// Headers never kept in an entry: a session's cookies are the server's to set on the
    /// exchange that made them, not to replay from disk.
    static func isKept(_ header: HTTPHeader) -> Bool {
        let name = header.name.lowercased()
        return name != "set-cookie" && name != "set-cookie2"
    }

    private func path(_ key: String) -> String { directory + "/" + key + ".reply" }

    /// The entry for `key`, whatever its age (the caller judges freshness); touches it so
    /// eviction sees it was used.
    public func load(_ key: String) -> Entry? {
        let file = path(key)
        guard let bytes = try? FileIO.readFile(file), let newline = bytes.firstIndex(of: 0x0A),
              let meta = try? JSONParser.parse(Array(bytes[..<newline])),
              let status = meta["status"]?.intValue, let storedAt = meta["stored_at"]?.doubleValue else { return nil }
        var headers: [HTTPHeader] = []
        for pair in meta["headers"]?.arrayValue ?? [] {
            if let name = pair[0]?.stringValue, let value = pair[1]?.stringValue, Self.isKept(HTTPHeader(name, value)) { headers.append(HTTPHeader(name, value)) }
        }
        utime(file, nil)
        let head = HTTPResponseHead(status: status, headers: headers)
        return Entry(response: HTTPResponse(head: head, body: Array(bytes[(newline + 1)...])), storedAt: storedAt)
    }

    /// Stores a reply unless it says `no-store`; then trims the directory to its bound.
    public func store(_ key: String, _ response: HTTPResponse, now: Double) throws(DouctlError) {
        if let control = response.head.header("Cache-Control")?.lowercased(), control.containsBytes("no-store") { return }
        do {
            try FileIO.makeDirectory(directory, mode: 0o700)
        } catch {
            throw .localInput("cannot create the cache directory \(directory) (\(error))")
        }
        var meta = JSONObject()
        meta["status"] = .int(Int64(response.status))
        meta["stored_at"] = .number(String(Int64(now)))
        meta["headers"] = .array(response.head.headers.filter(Self.isKept).map { .array([.string($0.name), .string($0.value)]) })
        var bytes = JSON.object(meta).serialized(.compact)
        bytes.append(0x0A)
        bytes += response.body
        do {
            try AtomicFile.write(bytes, to: path(key), mode: 0o600)
        } catch {
            throw .localInput("cannot write the cache (\(error))")
        }
        evict()
    }

    public struct Summary: Sendable {
        public var entries: Int
        public var bytes: Int64
    }

    public func summary() -> Summary {
        let files = entries()
        return Summary(entries: files.count, bytes: files.reduce(0) { $0 + $1.size })
    }

    /// Removes every entry; returns how many there were.
    @discardableResult
    public func clear() -> Int {
        let files = entries()
        for file in files { unlink(file.path) }
        return files.count
    }

    /// Removes `profile`'s entries (its identity changed: `auth login`, `auth logout`);
    /// returns how many there were.
    @discardableResult
    public func drop(profile: String) -> Int {
        let prefix = directory + "/" + Self.profileTag(profile) + "-"
        let files = entries().filter { $0.path.hasPrefix(prefix) }
        for file in files { unlink(file.path) }
        return files.count
    }

    /// Least recently used first out, until the directory fits `maximumBytes`.
    func evict() {
        var files = entries()
        var total = files.reduce(Int64(0)) { $0 + $1.size }
        guard total > maximumBytes else { return }
        files.sort { $0.used < $1.used }
        for file in files where total > maximumBytes {
            unlink(file.path)
            total -= file.size
        }
    }

    private func entries() -> [(path: String, size: Int64, used: Double)] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var found: [(String, Int64, Double)] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name.hasSuffix(".reply") else { continue }
            let file = directory + "/" + name
            var info = stat()
            guard stat(file, &info) == 0 else { continue }
            let used = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
            found.append((file, Int64(info.st_size), used))
        }
        return found
    }
}

/// How one run uses the cache: `--cache DURATION` (fresh for that long), `--cache-only`
/// (never the network), and stale-if-error (an older entry when the network fails).
public struct CachePolicy: Sendable {
    public var cache: ResponseCache
    /// Seconds an entry counts as fresh; nil with `--cache-only` alone (any age).
    public var freshFor: Double?
    public var cacheOnly: Bool
    /// Says "served from the cache" kinds of things on stderr.
    public var note: @Sendable (String) -> Void

    public init(cache: ResponseCache, freshFor: Double?, cacheOnly: Bool, note: @escaping @Sendable (String) -> Void) {
        self.cache = cache
        self.freshFor = freshFor
        self.cacheOnly = cacheOnly
        self.note = note
    }

    /// "30s", "5m", "2h", "1d", or plain seconds.
    public static func parseDuration(_ text: String) -> Double? {
        guard let last = text.last else { return nil }
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        let (number, unit) = units[last].map { (text.dropLast(), $0) } ?? (Substring(text), 1)
        guard let value = Double(number), value >= 0, value.isFinite else { return nil }
        return value * unit
    }
}
