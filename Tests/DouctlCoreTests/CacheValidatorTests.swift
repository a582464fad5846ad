@testable import DouctlCore
import DouctlHTTP
import Testing
import DouctlTestSupport

/// Which 304s confirm a cached entry (RFC 9111 §4.3.4), and which replies may be stored.
@Suite("Cache validators")
struct CacheValidatorTests {
    static func entry(_ headers: [HTTPHeader]) -> ResponseCache.Entry {
        ResponseCache.Entry(response: HTTPResponse(head: HTTPResponseHead(status: 200, headers: headers), body: Array("{}".utf8)), storedAt: 0)
    }

    static func notModified(_ headers: [HTTPHeader]) -> HTTPResponseHead {
        HTTPResponseHead(status: 304, headers: headers)
    }

    @Test func weakComparisonIgnoresTheWeakPrefixAndNothingElse() {
        #expect(ResponseCache.weakMatch("\"a\"", "\"a\""))
        #expect(ResponseCache.weakMatch("W/\"a\"", "\"a\""))
        #expect(ResponseCache.weakMatch("W/\"a\"", "W/\"a\""))
        #expect(!ResponseCache.weakMatch("\"a\"", "\"b\""))
        #expect(!ResponseCache.weakMatch("\"a\"", "\"A\""))
        #expect(!ResponseCache.weakMatch("a", "a"), "an unquoted tag is garbage, not a match")
        #expect(!ResponseCache.weakMatch("\"", "\""))
        #expect(!ResponseCache.weakMatch("", ""))
    }

    @Test func a304ConfirmsOnlyTheVersionHeld() {
        let tagged = Self.entry([HTTPHeader("ETag", "\"v1\""), HTTPHeader("Last-Modified", "Tue, 14 Nov 2023 22:13:20 GMT")])
        #expect(tagged.isConfirmed(by: Self.notModified([HTTPHeader("ETag", "\"v1\"")])))
        #expect(tagged.isConfirmed(by: Self.notModified([HTTPHeader("ETag", "W/\"v1\"")])))
        #expect(!tagged.isConfirmed(by: Self.notModified([HTTPHeader("ETag", "\"v2\"")])))
        #expect(!tagged.isConfirmed(by: Self.notModified([])), "no ETag in the 304 for an entry that has one")
        let dated = Self.entry([HTTPHeader("Last-Modified", "Tue, 14 Nov 2023 22:13:20 GMT")])
        #expect(dated.isConfirmed(by: Self.notModified([])))
        #expect(dated.isConfirmed(by: Self.notModified([HTTPHeader("Last-Modified", "Tue, 14 Nov 2023 22:13:20 GMT")])))
        #expect(!dated.isConfirmed(by: Self.notModified([HTTPHeader("Last-Modified", "Wed, 15 Nov 2023 22:13:20 GMT")])))
        #expect(!dated.isConfirmed(by: Self.notModified([HTTPHeader("ETag", "\"v1\"")])), "an ETag the entry never had")
        #expect(!Self.entry([]).isConfirmed(by: Self.notModified([])), "nothing to confirm without validators")
        #expect(tagged.conditionalHeaders.map(\.name) == ["If-None-Match", "If-Modified-Since"])
        #expect(Self.entry([HTTPHeader("ETag", "\"a\"\r\nX: y")]).conditionalHeaders.isEmpty, "a validator that would break the header is not sent")
    }

    @Test func onlyWholeSuccessfulRepliesAreStorable() {
        func reply(_ status: Int) -> HTTPResponse { HTTPResponse(head: HTTPResponseHead(status: status), body: []) }
        for status in [200, 203, 204] { #expect(ResponseCache.isStorable(reply(status), requestHeaders: [])) }
        for status in [206, 301, 304, 401, 403, 404, 429, 500, 503] {
            #expect(!ResponseCache.isStorable(reply(status), requestHeaders: []), "HTTP \(status)")
        }
        #expect(!ResponseCache.isStorable(reply(200), requestHeaders: [HTTPHeader("range", "bytes=0-1")]))
        #expect(!ResponseCache.isStorable(reply(200), requestHeaders: [HTTPHeader("If-None-Match", "\"x\"")]))
    }

    @Test func a304UpdatesTheStoredHeadersButNotItsFraming() throws {
        let cache = ResponseCache(directory: TemporaryDirectory.make(prefix: "cache-unit"), maximumBytes: 1 << 20)
        let entry = Self.entry([HTTPHeader("ETag", "\"v1\""), HTTPHeader("Content-Length", "2"), HTTPHeader("X-Old", "1")])
        let renewed = try cache.refresh("k", entry, with: Self.notModified([HTTPHeader("ETag", "\"v1\""), HTTPHeader("X-Old", "2"), HTTPHeader("Content-Length", "0")]), now: 42)
        #expect(renewed.storedAt == 42)
        #expect(renewed.response.body == Array("{}".utf8))
        #expect(renewed.response.head.header("X-Old") == "2")
        #expect(renewed.response.head.header("Content-Length") == "2")
        #expect(cache.load("k")?.response.head.header("X-Old") == "2")
        cache.count(.hits)
        cache.count(.hits)
        cache.count(.misses)
        #expect(cache.counts() == [.hits: 2, .misses: 1])
        cache.clear()
        #expect(cache.counts().isEmpty)
    }
}
