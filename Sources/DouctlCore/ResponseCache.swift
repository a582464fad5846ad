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
/// atomically. The key (`key(profile:request:unixSocket:)`) is taken from the request as it
/// goes out: method, URL with its query, the Unix socket, and a digest of every header that
/// can carry an identity — never a credential — so one identity's replies are not served to
/// another; an entry records the reply's `Vary` and is served only to a request with the same
/// values (`Vary: *` is never kept). `auth login` and `auth logout` drop the profile's entries.
/// `no-store` in any `Cache-Control` line of the request or the reply is honoured; the
/// directory is kept under `cache_max_mb`, least recently used first out.
///
/// A cache directory or entry another local user could have written (`FileTrust`), or one
/// that is a symbolic link, is refused as config files are: exit 3, one line naming the fix,
/// nothing read or written there (`requireTrusted`).
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
    /// request, whose part would be served as the whole under the same key, nor a reply with
    /// `no-store` in any `Cache-Control` line, nor one that says `Vary: *`.
    public static func isStorable(_ response: HTTPResponse, requestHeaders: [HTTPHeader]) -> Bool {
        [200, 203, 204].contains(response.status) && !asksConditionally(requestHeaders)
            && !CacheControl(response.head.headers).has("no-store") && !varyNames(response.head).contains("*")
    }

    /// A request the caller made conditional or partial itself (`api -H 'Range: …'`,
    /// `-H 'If-None-Match: …'`): its answer is the caller's to see, so the cache neither
    /// answers it nor keeps what comes back.
    public static func asksConditionally(_ headers: [HTTPHeader]) -> Bool {
        let names: Set<String> = ["range", "if-range", "if-none-match", "if-modified-since", "if-match", "if-unmodified-since"]
        return headers.contains { names.contains($0.name.lowercased()) }
    }

    /// The first cache key: profile, method, URL and a credential chosen by the caller. Blind
    /// to `-H Authorization`, API-key headers, `Vary` and `--unix-socket`; kept only until the
    /// request path's cache layer uses `key(profile:request:unixSocket:)`.
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

    /// The entry for `key` that may answer `request`, whatever its age (the caller judges
    /// freshness: `CachePolicy.isFresh`): none when the request's values of the headers the
    /// reply's `Vary` named differ from those it was fetched with, or it varied on `*`.
    /// Touches it so eviction sees it was used. A directory or entry another user could have
    /// written, or a symbolic link, is refused (`requireTrusted`, exit 3).
    public func load(_ key: String, request: HTTPRequest) throws(DouctlError) -> Entry? {
        // Made before it is judged (as `count` would make it anyway), so that a directory
        // above it others can write refuses the first run as it refuses every later one.
        if !FileIO.nameExists(directory) { try? FileIO.makeDirectory(directory, mode: 0o700) }
        try requireTrusted()
        let file = path(key)
        guard try requireTrustedEntry(file), let (entry, vary) = read(file) else { return nil }
        if let vary {
            guard !vary.names.contains("*"), vary.digest == Self.varyDigest(vary.names, request: request, key: key) else { return nil }
        }
        utime(file, nil)
        return entry
    }

    /// The entry for `key` as the first cache key had it: whatever its age, none that
    /// recorded a `Vary` (this caller cannot say what its request sent) or that is not the
    /// user's own. Kept only until the request path's cache layer uses `load(_:request:)`.
    public func load(_ key: String) -> Entry? {
        let file = path(key)
        guard (try? requireTrusted()) != nil, (try? requireTrustedEntry(file)) == true,
              let (entry, vary) = read(file), vary == nil else { return nil }
        utime(file, nil)
        return entry
    }

    /// What a `Vary` recorded: the names, and the digest of the request's values of them.
    struct VaryRecord: Equatable {
        var names: [String]
        var digest: String
    }

    private func read(_ file: String) -> (Entry, VaryRecord?)? {
        guard let bytes = try? FileIO.readFile(file), let newline = bytes.firstIndex(of: 0x0A),
              let meta = try? JSONParser.parse(Array(bytes[..<newline])),
              let status = meta["status"]?.intValue, let storedAt = meta["stored_at"]?.doubleValue else { return nil }
        var headers: [HTTPHeader] = []
        for pair in meta["headers"]?.arrayValue ?? [] {
            if let name = pair[0]?.stringValue, let value = pair[1]?.stringValue, Self.isKept(HTTPHeader(name, value)) { headers.append(HTTPHeader(name, value)) }
        }
        let head = HTTPResponseHead(status: status, headers: headers)
        var vary: VaryRecord?
        if let names = meta["vary"]?.arrayValue {
            guard let digest = meta["vary_digest"]?.stringValue else { return nil }
            vary = VaryRecord(names: names.compactMap(\.stringValue), digest: digest)
        } else if !Self.varyNames(head).isEmpty {
            return nil  // a Vary with no record of what it was fetched with: serves no one
        }
        return (Entry(response: HTTPResponse(head: head, body: Array(bytes[(newline + 1)...])), storedAt: storedAt), vary)
    }

    /// An entry a 304 to `request` confirmed (`Entry.isConfirmed(by:)`): fresh again from
    /// `now`, its headers updated with the 304's (RFC 9111 §3.2), its body kept, its `Vary`
    /// recorded again for `request`.
    public func refresh(_ key: String, _ entry: Entry, with notModified: HTTPResponseHead, request: HTTPRequest, now: Double) throws(DouctlError) -> Entry {
        let updated = Self.refreshed(entry, with: notModified, now: now)
        try store(key, updated.response, request: request, now: now)
        return updated
    }

    /// `refresh` for the first cache key, which has no request to record a `Vary` for.
    public func refresh(_ key: String, _ entry: Entry, with notModified: HTTPResponseHead, now: Double) throws(DouctlError) -> Entry {
        let updated = Self.refreshed(entry, with: notModified, now: now)
        try store(key, updated.response, now: now)
        return updated
    }

    static func refreshed(_ entry: Entry, with notModified: HTTPResponseHead, now: Double) -> Entry {
        var updated = entry
        let replaced = Set(notModified.headers.filter(Self.isUpdatable).map { $0.name.lowercased() })
        var headers = entry.response.head.headers.filter { !replaced.contains($0.name.lowercased()) }
        headers += notModified.headers.filter(Self.isUpdatable)
        updated.response.head.headers = headers
        updated.storedAt = now
        return updated
    }

    /// Headers of a 304 that update the stored reply: not those describing the 304's own
    /// (empty) framing, nor cookies.
    static func isUpdatable(_ header: HTTPHeader) -> Bool {
        let name = header.name.lowercased()
        return isKept(header) && !["content-length", "content-encoding", "transfer-encoding", "content-range", "connection", "keep-alive"].contains(name)
    }

    /// Stores the reply to `request` unless either says `no-store` (in any `Cache-Control`
    /// line) or the reply says `Vary: *`, recording the reply's `Vary` names and a digest of
    /// the request's values of them; then trims the directory to its bound. A directory
    /// another user could have written is refused (`requireTrusted`, exit 3).
    public func store(_ key: String, _ response: HTTPResponse, request: HTTPRequest, now: Double) throws(DouctlError) {
        if CacheControl(request.headers).has("no-store") { return }
        try write(key, response, request: request, now: now)
    }

    /// `store` for the first cache key, which has no request to record a `Vary` for: the
    /// entry is recorded as fetched without the headers `Vary` names.
    public func store(_ key: String, _ response: HTTPResponse, now: Double) throws(DouctlError) {
        try write(key, response, request: HTTPRequest(url: ""), now: now)
    }

    private func write(_ key: String, _ response: HTTPResponse, request: HTTPRequest, now: Double) throws(DouctlError) {
        if CacheControl(response.head.headers).has("no-store") { return }
        let vary = Self.varyNames(response.head)
        if vary.contains("*") { return }
        try requireTrusted()
        do {
            try FileIO.makeDirectory(directory, mode: 0o700)
        } catch {
            throw .localInput("cannot create the cache directory \(directory) (\(error))")
        }
        // Made just now: the directories above it are judged too.
        try requireTrusted()
        var meta = JSONObject()
        meta["status"] = .int(Int64(response.status))
        meta["stored_at"] = .number(String(Int64(now)))
        meta["headers"] = .array(response.head.headers.filter(Self.isKept).map { .array([.string($0.name), .string($0.value)]) })
        if !vary.isEmpty {
            meta["vary"] = .array(vary.map { .string($0) })
            meta["vary_digest"] = .string(Self.varyDigest(vary, request: request, key: key))
        }
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
        guard (try? requireTrusted()) != nil, (try? FileIO.makeDirectory(directory, mode: 0o700)) != nil,
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
            // The name itself: a symbolic link planted here is counted and removed, never followed.
            guard lstat(file, &info) == 0 else { continue }
            let used = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
            found.append((file, Int64(info.st_size), used))
        }
        return found
    }
}

extension ResponseCache {
    // MARK: - whose cache it is

    /// Refuses a cache directory another local user could have written, as config files
    /// are refused (`ConfigDirectory.requireTrusted`: exit 3, one line naming the fix): it,
    /// or a directory above it, owned by someone else or writable by group or others, or the
    /// directory itself a symbolic link. A missing directory is fine: douctl makes it, 0700.
    public func requireTrusted() throws(DouctlError) {
        guard let status = try? FileIO.linkStatus(directory) else { return }
        if status.isSymbolicLink {
            throw .localInput("the cache directory \(directory) is a symbolic link; refusing to use it. Remove the link (douctl makes the directory again): rm \(directory)")
        }
        try ConfigDirectory.requireTrusted(directory, what: "the cache directory")
    }

    /// Whether the entry at `file` exists; refuses one that is a symbolic link, not a plain
    /// file, or another user could have written (exit 3, as `requireTrusted`).
    func requireTrustedEntry(_ file: String) throws(DouctlError) -> Bool {
        guard let status = try? FileIO.linkStatus(file) else { return false }
        if status.isSymbolicLink || !status.isRegularFile {
            throw .localInput("the cached reply \(file) is \(status.isSymbolicLink ? "a symbolic link" : "not a plain file"); refusing to use it. Remove it: rm \(file)")
        }
        try ConfigDirectory.requireTrusted(file, what: "the cached reply")
        return true
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
