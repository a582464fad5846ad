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

        /// The validators a stale entry is revalidated with (RFC 9111 §4.3.1).
        public var entityTag: String? { response.head.header("ETag") }
        public var lastModified: String? { response.head.header("Last-Modified") }
        public var hasValidator: Bool { entityTag != nil || lastModified != nil }

        /// `If-None-Match` and `If-Modified-Since` from this entry's validators.
        public var conditionalHeaders: [HTTPHeader] {
            var headers: [HTTPHeader] = []
            if let entityTag, HTTPSyntax.isFieldValue(entityTag) { headers.append(HTTPHeader("If-None-Match", entityTag)) }
            if let lastModified, HTTPSyntax.isFieldValue(lastModified) { headers.append(HTTPHeader("If-Modified-Since", lastModified)) }
            return headers
        }

        /// Whether a 304 answering this entry's conditional request is about this entry
        /// (RFC 9111 §4.3.4), so its body may be served: an `ETag` in the 304 must match the
        /// entry's (weak comparison, as `If-None-Match` uses); a 304 without one only
        /// confirms an entry that had none, and a `Last-Modified` in it must be the entry's.
        /// Anything else — a 304 naming another representation — confirms nothing.
        public func isConfirmed(by notModified: HTTPResponseHead) -> Bool {
            if let tag = notModified.header("ETag") {
                guard let own = entityTag else { return false }
                return ResponseCache.weakMatch(tag, own)
            }
            if entityTag != nil { return false }
            guard let own = lastModified else { return false }
            if let date = notModified.header("Last-Modified") { return date == own }
            return true
        }
    }

    /// RFC 9110 §8.8.3.2 weak comparison: the opaque tags are equal, `W/` or not.
    static func weakMatch(_ a: String, _ b: String) -> Bool {
        func opaque(_ tag: String) -> Substring? {
            let trimmed = tag.trimmingCharacters(in: " \t")
            let body = trimmed.hasPrefix("W/") ? trimmed.dropFirst(2) : Substring(trimmed)
            guard body.count >= 2, body.first == "\"", body.last == "\"" else { return nil }
            return body
        }
        guard let left = opaque(a), let right = opaque(b) else { return false }
        return left == right
    }

    /// Whether a reply may be kept for `requestHeaders`: a plain 200, 203 or 204 to a
    /// request that asked for all of the resource, unconditionally. An error (4xx, 5xx) is
    /// never kept — a stale 401 served later would be a lie — nor a 206 to a `Range`
    /// request, whose part would be served as the whole under the same key.
    public static func isStorable(_ response: HTTPResponse, requestHeaders: [HTTPHeader]) -> Bool {
        [200, 203, 204].contains(response.status) && !asksConditionally(requestHeaders)
    }

    /// A request the caller made conditional or partial itself (`api -H 'Range: …'`,
    /// `-H 'If-None-Match: …'`): its answer is the caller's to see, so the cache neither
    /// answers it nor keeps what comes back.
    public static func asksConditionally(_ headers: [HTTPHeader]) -> Bool {
        let names: Set<String> = ["range", "if-range", "if-none-match", "if-modified-since", "if-match", "if-unmodified-since"]
        return headers.contains { names.contains($0.name.lowercased()) }
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

    /// An entry a 304 confirmed (`Entry.isConfirmed(by:)`): fresh again from `now`, its
    /// headers updated with the 304's (RFC 9111 §3.2), its body kept.
    public func refresh(_ key: String, _ entry: Entry, with notModified: HTTPResponseHead, now: Double) throws(DouctlError) -> Entry {
        var updated = entry
        let replaced = Set(notModified.headers.filter(Self.isUpdatable).map { $0.name.lowercased() })
        var headers = entry.response.head.headers.filter { !replaced.contains($0.name.lowercased()) }
        headers += notModified.headers.filter(Self.isUpdatable)
        updated.response.head.headers = headers
        updated.storedAt = now
        try store(key, updated.response, now: now)
        return updated
    }

    /// Headers of a 304 that update the stored reply: not those describing the 304's own
    /// (empty) framing, nor cookies.
    static func isUpdatable(_ header: HTTPHeader) -> Bool {
        let name = header.name.lowercased()
        return isKept(header) && !["content-length", "content-encoding", "transfer-encoding", "content-range", "connection", "keep-alive"].contains(name)
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

    /// Removes every entry and the counts; returns how many entries there were.
    @discardableResult
    public func clear() -> Int {
        let files = entries()
        for file in files { unlink(file.path) }
        if let lock = try? FileLock(path: lockPath) {
            unlink(countsPath)
            lock.unlock()
        }
        return files.count
    }

    /// What a cached request came to, counted for `cache info`: served fresh from the
    /// cache (`hits`, stale-if-error copies included), confirmed by a 304 (`revalidations`),
    /// or fetched whole (`misses`).
    public enum Outcome: String, Sendable, CaseIterable {
        case hits, revalidations, misses
    }

    private var countsPath: String { directory + "/counts.json" }
    private var lockPath: String { directory + "/.counts.lock" }

    /// Adds one to `outcome`'s count, under the cache's lock so concurrent douctl
    /// processes add up; the file is replaced atomically. Counting never fails a command.
    public func count(_ outcome: Outcome) {
        guard (try? FileIO.makeDirectory(directory, mode: 0o700)) != nil,
              let lock = try? FileLock(path: lockPath) else { return }
        defer { lock.unlock() }
        var counts = self.counts()
        counts[outcome, default: 0] += 1
        var object = JSONObject()
        for kind in Outcome.allCases { object[kind.rawValue] = .int(counts[kind] ?? 0) }
        try? AtomicFile.write(JSON.object(object).serialized(.compact), to: countsPath, mode: 0o600)
    }

    /// The counts so far; a missing or damaged file counts as zeros.
    public func counts() -> [Outcome: Int64] {
        var counts: [Outcome: Int64] = [:]
        guard let bytes = try? FileIO.readFile(countsPath), let json = try? JSONParser.parse(bytes) else { return counts }
        for kind in Outcome.allCases {
            if let value = json[kind.rawValue]?.intValue, value > 0 { counts[kind] = Int64(value) }
        }
        return counts
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
