#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import DouctlCore
import DouctlHTTP
import DouctlSystem
import DouctlTestSupport
import Testing

/// What chooses a cached reply (issue 38, the cache): the key covers the method, the URL with
/// its query, the Unix socket and every identity the request carries; an entry records its
/// `Vary`; every `Cache-Control` line is read; a cache another user could write is refused.
@Suite("Cache key, Vary, Cache-Control and trust")
struct CacheKeyTests {
    static func get(_ url: String = "http://api.test/me", headers: [(String, String)] = [], secrets: [String] = []) -> HTTPRequest {
        var request = HTTPRequest(url: url, headers: headers.map { HTTPHeader($0.0, $0.1) })
        request.secrets = secrets
        return request
    }

    static func key(_ request: HTTPRequest, socket: String? = nil) -> String {
        ResponseCache.key(profile: "p", request: request, unixSocket: socket)
    }

    static func reply(_ headers: [(String, String)] = [], body: String = "{}") -> HTTPResponse {
        HTTPResponse(head: HTTPResponseHead(status: 200, headers: headers.map { HTTPHeader($0.0, $0.1) }), body: Array(body.utf8))
    }

    static func cache() -> ResponseCache {
        ResponseCache(directory: TemporaryDirectory.make(prefix: "cache-key") + "/douctl", maximumBytes: 1 << 20)
    }

    // MARK: the key

    @Test func everyCredentialSentIsPartOfTheKey() {
        let alice = Self.key(Self.get(headers: [("Authorization", "Bearer alice")]))
        #expect(alice == Self.key(Self.get(headers: [("Authorization", "Bearer alice")])), "the same request, the same key")
        #expect(alice != Self.key(Self.get(headers: [("Authorization", "Bearer bob")])))
        #expect(alice != Self.key(Self.get()), "anonymous is another identity")
        #expect(Self.key(Self.get(headers: [("authorization", "Bearer alice")])) == alice, "names compare case-insensitively")
        #expect(Self.key(Self.get(headers: [("Authorization", "Bearer t"), ("Authorization", "Bearer alice")]))
            != Self.key(Self.get(headers: [("Authorization", "Bearer t"), ("Authorization", "Bearer bob")])), "every line counts, not the first")
        // API keys by name (common_headers X-API-Key=$VAR), cookies, proxies, tokens.
        for name in ["X-API-Key", "Private-Token", "X-Auth-Token", "X-Session-Id", "Cookie", "Proxy-Authorization", "X-Client-Secret"] {
            #expect(Self.key(Self.get(headers: [(name, "a")])) != Self.key(Self.get(headers: [(name, "b")])), "\(name)")
        }
        // A header of any name carrying one of the request's secrets (token_header).
        #expect(Self.key(Self.get(headers: [("X-Tenant-Pass", "s1")], secrets: ["s1"]))
            != Self.key(Self.get(headers: [("X-Tenant-Pass", "s2")], secrets: ["s2"])))
        #expect(Self.key(Self.get(headers: [("X-Weird", "s1")], secrets: ["s1"])) != Self.key(Self.get(headers: [("X-Weird", "s2")], secrets: ["s2"])))
        // Headers that say nothing of who asks do not split the cache.
        #expect(Self.key(Self.get(headers: [("X-Trace", "1")])) == Self.key(Self.get(headers: [("X-Trace", "2")])))
        #expect(Self.key(Self.get(headers: [("User-Agent", "a")])) == Self.key(Self.get()))
    }

    @Test func methodURLQueryAndSocketArePartOfTheKey() {
        let plain = Self.key(Self.get())
        #expect(Self.key(Self.get("http://api.test/me?key=a")) != Self.key(Self.get("http://api.test/me?key=b")), "token_query, access_token")
        #expect(Self.key(Self.get("http://api.test/me?key=a")) != plain)
        var head = Self.get()
        head.method = "HEAD"
        #expect(Self.key(head) != plain)
        #expect(Self.key(Self.get(), socket: "/run/a.sock") != plain, "a socket's reply is not TCP's")
        #expect(Self.key(Self.get(), socket: "/run/a.sock") != Self.key(Self.get(), socket: "/run/b.sock"))
        #expect(plain.hasPrefix(ResponseCache.profileTag("p") + "-"), "auth login drops the profile's entries by this prefix")
        #expect(!Self.key(Self.get(headers: [("Authorization", "Bearer alice")])).contains("alice"))
    }

    @Test func aSignaturesTimestampDoesNotSplitTheCache() {
        let volatile = ResponseCache.volatileQuery(signing: .hmacSHA1)
        let first = ResponseCache.key(profile: "p", request: Self.get("http://api.test/me?a=1&apikey=k&_ts=100&_sig=x"), unixSocket: nil, volatileQuery: volatile)
        let later = ResponseCache.key(profile: "p", request: Self.get("http://api.test/me?a=1&apikey=k&_ts=160&_sig=y"), unixSocket: nil, volatileQuery: volatile)
        #expect(first == later)
        let otherKey = ResponseCache.key(profile: "p", request: Self.get("http://api.test/me?a=1&apikey=k2&_ts=100&_sig=x"), unixSocket: nil, volatileQuery: volatile)
        #expect(first != otherKey, "the API key stays in the key")
        #expect(ResponseCache.volatileQuery(signing: .md5Sorted).isEmpty && ResponseCache.volatileQuery(signing: nil).isEmpty)
        #expect(ResponseCache.dropping(["_ts"], from: "http://h/p?_ts=1#f") == "http://h/p#f")
    }

    // MARK: Vary

    @Test func anEntryIsServedOnlyToTheVariantThatFetchedIt() throws {
        let cache = Self.cache()
        let json = Self.get(headers: [("Accept", "application/json")])
        let key = Self.key(json)
        try cache.store(key, Self.reply([("Vary", "Accept")], body: #"{"json":1}"#), request: json, now: 10)
        #expect(try cache.load(key, request: json)?.response.body == Array(#"{"json":1}"#.utf8))
        #expect(try cache.load(key, request: Self.get(headers: [("Accept", "text/csv")])) == nil, "Accept: text/csv is not served the JSON entry")
        #expect(try cache.load(key, request: Self.get()) == nil, "absent is not the same as application/json")
        #expect(cache.load(key) == nil, "the first API cannot tell what its request sent: no Vary entry for it")

        // Every Vary line, names in any case.
        let two = Self.get(headers: [("Accept", "a"), ("accept-language", "zh")])
        try cache.store("two", Self.reply([("Vary", "accept"), ("vary", "Accept-Language")]), request: two, now: 10)
        #expect(try cache.load("two", request: two) != nil)
        #expect(try cache.load("two", request: Self.get(headers: [("Accept", "a"), ("Accept-Language", "en")])) == nil)
    }

    @Test func varyStarIsNeverKeptAndAVaryEntryHoldsNoValue() throws {
        let cache = Self.cache()
        let request = Self.get(headers: [("Authorization", "Bearer sekrit-alice")])
        #expect(!ResponseCache.isStorable(Self.reply([("Vary", "Accept, *")]), request: request))
        try cache.store("star", Self.reply([("Vary", "*")]), request: request, now: 10)
        #expect(try cache.load("star", request: request) == nil)
        #expect(cache.summary().entries == 0)
        try cache.store("auth", Self.reply([("Vary", "Authorization")]), request: request, now: 10)
        #expect(try cache.load("auth", request: request) != nil)
        let text = String(decoding: try FileIO.readFile(cache.directory + "/auth.reply"), as: UTF8.self)
        #expect(!text.contains("sekrit"), "only a digest of the varied values: \(text)")
    }

    // MARK: Cache-Control

    @Test func everyCacheControlLineIsRead() throws {
        let twoLines = Self.reply([("Cache-Control", "max-age=60"), ("Cache-Control", "no-store")])
        #expect(!ResponseCache.isStorable(twoLines, request: Self.get()))
        #expect(!ResponseCache.isStorable(twoLines, requestHeaders: []))
        let cache = Self.cache()
        try cache.store("k", twoLines, request: Self.get(), now: 10)
        #expect(cache.summary().entries == 0, "a no-store in the second line is honoured")
        // A quoted argument is not a directive.
        #expect(!CacheControl([HTTPHeader("Cache-Control", #"private="x, no-store", max-age=5"#)]).has("no-store"))
        #expect(CacheControl([HTTPHeader("Cache-Control", #"private="x, no-store", max-age=5"#)]).seconds("max-age") == 5)
        #expect(CacheControl([HTTPHeader("cache-control", "MAX-AGE=7 , No-Cache")]).has("no-cache"))
        // The request's lines: no-store keeps the cache out.
        #expect(ResponseCache.bypasses(Self.get(headers: [("Cache-Control", "max-age=5"), ("Cache-Control", "no-store")])))
        #expect(ResponseCache.bypasses(Self.get(headers: [("If-None-Match", "\"x\"")])))
        #expect(!ResponseCache.bypasses(Self.get(headers: [("Cache-Control", "max-age=5")])))
        try cache.store("r", Self.reply(), request: Self.get(headers: [("Cache-Control", "no-store")]), now: 10)
        #expect(cache.summary().entries == 0)
    }

    @Test func freshnessHonoursNoCacheAndMaxAge() {
        let policy = CachePolicy(cache: Self.cache(), freshFor: 300, cacheOnly: false, note: { _ in })
        let entry = ResponseCache.Entry(response: Self.reply(), storedAt: 1000)
        #expect(policy.isFresh(entry, request: Self.get(), now: 1100))
        #expect(!policy.isFresh(entry, request: Self.get(), now: 1301), "older than --cache")
        let noCache = ResponseCache.Entry(response: Self.reply([("Cache-Control", "private"), ("Cache-Control", "no-cache")]), storedAt: 1000)
        #expect(!policy.isFresh(noCache, request: Self.get(), now: 1001), "no-cache in the reply: revalidated before each use")
        #expect(!policy.isFresh(entry, request: Self.get(headers: [("Cache-Control", "no-cache")]), now: 1001))
        #expect(!policy.isFresh(entry, request: Self.get(headers: [("Cache-Control", "max-age=0")]), now: 1001))
        #expect(policy.isFresh(entry, request: Self.get(headers: [("Cache-Control", "max-age=200")]), now: 1100))
        #expect(!CachePolicy(cache: Self.cache(), freshFor: nil, cacheOnly: true, note: { _ in }).isFresh(entry, request: Self.get(), now: 1000))
    }

    // MARK: whose cache it is

    /// A cache with one good entry "k" for `Self.get()`.
    static func filled() throws -> ResponseCache {
        let cache = Self.cache()
        try cache.store("k", Self.reply(body: #"{"mine":1}"#), request: Self.get(), now: 10)
        #expect(try cache.load("k", request: Self.get()) != nil)
        return cache
    }

    static func refusal(_ body: () throws(DouctlError) -> Void) -> String? {
        do {
            try body()
            return nil
        } catch {
            guard case .localInput(let message) = error else {
                Issue.record("not a local-input refusal (exit 3): \(error)")
                return nil
            }
            return message
        }
    }

    @Test func aDirectoryOthersCanWriteIsRefusedAsConfigFilesAre() throws {
        for mode: mode_t in [0o770, 0o707] {
            let cache = try Self.filled()
            #expect(chmod(cache.directory, mode) == 0)
            let message = Self.refusal { () throws(DouctlError) in _ = try cache.load("k", request: Self.get()) }
            let who = mode == 0o770 ? "its group" : "other users"
            #expect(message == "bad owner or permissions on the cache directory \(cache.directory) (it is writable by \(who) (mode \(String(mode, radix: 8)))); refusing to use it. Fix it with: chmod go-w \(cache.directory)")
            #expect(Self.refusal { () throws(DouctlError) in try cache.store("k2", Self.reply(), request: Self.get(), now: 1) } != nil)
            #expect(cache.load("k") == nil, "the first API is refused too")
            #expect(!FileIO.nameExists(cache.directory + "/k2.reply"), "nothing written")
            cache.count(.hits)
            #expect(!FileIO.nameExists(cache.directory + "/counts.json"), "not even the counts")
        }
    }

    @Test func aParentOthersCanWriteRefusesTheFirstRunToo() throws {
        let parent = TemporaryDirectory.make(prefix: "cache-parent")
        #expect(chmod(parent, 0o777) == 0)
        let cache = ResponseCache(directory: parent + "/douctl", maximumBytes: 1 << 20)
        let message = Self.refusal { () throws(DouctlError) in _ = try cache.load("k", request: Self.get()) }
        #expect(message == "bad owner or permissions on the cache directory \(cache.directory) (its directory \(parent) is writable by other users (mode 777)); refusing to use it. Fix it with: chmod go-w \(parent)")
    }

    @Test func aSymbolicLinkIsNeverACacheDirectoryOrEntry() throws {
        let cache = try Self.filled()
        // The entry replaced by a link to a reply planted elsewhere.
        let planted = TemporaryDirectory.make(prefix: "planted") + "/k.reply"
        try FileIO.removeFile(planted)
        #expect(rename(cache.directory + "/k.reply", planted) == 0)
        #expect(symlink(planted, cache.directory + "/k.reply") == 0)
        let message = Self.refusal { () throws(DouctlError) in _ = try cache.load("k", request: Self.get()) }
        #expect(message == "the cached reply \(cache.directory)/k.reply is a symbolic link; refusing to use it. Remove it: rm \(cache.directory)/k.reply")

        // The directory itself a link, even to a directory of the user's own.
        let real = try Self.filled()
        let linked = ResponseCache(directory: TemporaryDirectory.make(prefix: "cache-link") + "/douctl", maximumBytes: 1 << 20)
        #expect(symlink(real.directory, linked.directory) == 0)
        let refused = Self.refusal { () throws(DouctlError) in _ = try linked.load("k", request: Self.get()) }
        #expect(refused == "the cache directory \(linked.directory) is a symbolic link; refusing to use it. Remove the link (douctl makes the directory again): rm \(linked.directory)")
    }

    @Test func anEntryOthersCanWriteIsRefused() throws {
        let cache = try Self.filled()
        #expect(chmod(cache.directory + "/k.reply", 0o622) == 0)
        let message = Self.refusal { () throws(DouctlError) in _ = try cache.load("k", request: Self.get()) }
        #expect(message?.hasPrefix("bad owner or permissions on the cached reply \(cache.directory)/k.reply (it is writable by") == true, "\(message ?? "served")")
    }

    @Test func anEntryOfAnotherOwnerIsRefused() throws {
        guard geteuid() == 0 else {
            // Giving a file to another user needs root (chown); the mode cases run everywhere.
            try Test.cancel("skipped: chown to another user needs root")
        }
        let cache = try Self.filled()
        #expect(chown(cache.directory + "/k.reply", 65534, 65534) == 0)
        let message = Self.refusal { () throws(DouctlError) in _ = try cache.load("k", request: Self.get()) }
        #expect(message == "bad owner or permissions on the cached reply \(cache.directory)/k.reply (it is owned by another user (uid 65534, not 0)); refusing to use it. Fix it with: chown 0 \(cache.directory)/k.reply")
        let other = try Self.filled()
        #expect(chown(other.directory, 65534, 65534) == 0)
        #expect(Self.refusal { () throws(DouctlError) in _ = try other.load("k", request: Self.get()) }?.contains("owned by another user") == true)
    }

    @Test func aPlantedCountsLockLinkIsNeverFollowed() throws {
        let cache = try Self.filled()
        let chosen = TemporaryDirectory.make(prefix: "chosen") + "/created-by-douctl"
        #expect(symlink(chosen, cache.directory + "/.counts.lock") == 0)
        cache.count(.hits)
        #expect(!FileIO.nameExists(chosen), "douctl did not create the file the link names")
        #expect(throws: (any Error).self) { _ = try FileLock(path: cache.directory + "/.counts.lock") }
        cache.clear()
        #expect(!FileIO.nameExists(chosen))
    }
}
