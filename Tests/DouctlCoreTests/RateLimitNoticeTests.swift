@testable import DouctlCore
import DouctlHTTP
import DouctlSystem
import DouctlTestSupport
import Testing

/// Reading the quota a server announces in its headers, the hostile values included.
@Suite("Rate-limit headers")
struct RateLimitNoticeTests {
    static let now = 1_700_000_000.0

    static func read(_ headers: [(String, String)]) -> RateLimitNotice? { read(200, headers) }

    static func read(_ status: Int, _ headers: [(String, String)]) -> RateLimitNotice? {
        RateLimitNotice.read(HTTPResponseHead(status: status, headers: headers.map { HTTPHeader($0.0, $0.1) }), now: now)
    }

    @Test func theIETFStructuredFieldTakesThePolicyWithTheLeastLeft() {
        let one = Self.read([("RateLimit", "\"default\";r=0;t=30")])
        #expect(one?.remaining == 0 && one?.resetAt == Self.now + 30 && one?.isExhausted == true)
        let two = Self.read([("RateLimit", "\"hour\";r=50;t=3000, \"burst\";r=0;t=2"), ("RateLimit-Policy", "\"hour\";q=100;w=3600")])
        #expect(two?.remaining == 0 && two?.resetAt == Self.now + 2)
        let older = Self.read([("RateLimit", "limit=10, remaining=0, reset=5")])
        #expect(older?.remaining == 0 && older?.resetAt == Self.now + 5)
        #expect(Self.read([("RateLimit", "\"d\";r=3")])?.isExhausted == false)
        #expect(Self.read([("RateLimit", "garbage")]) == nil)
        #expect(Self.read([("RateLimit", "\"d\";r=-1;t=5")]) == nil)
    }

    @Test func resetsAreEpochOrDeltaSecondsAndHostileOnesAreTamed() {
        let github = Self.read(403, [("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "1700000060")])
        #expect(github?.resetAt == Self.now + 60 && github?.isExhausted == true)
        let gitlab = Self.read([("RateLimit-Remaining", "0"), ("RateLimit-Reset", "1700000010")])
        #expect(gitlab?.resetAt == Self.now + 10)
        let delta = Self.read([("RateLimit-Remaining", "0"), ("RateLimit-Reset", "7")])
        #expect(delta?.resetAt == Self.now + 7)
        // In the past: no reset, so nothing to wait for.
        #expect(Self.read([("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "1600000000")])?.isExhausted == false)
        // Far future: capped at an hour, and it says so.
        let far = Self.read([("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "1900000000")])
        #expect(far?.resetAt == Self.now + 3600 && far?.capped == true)
        #expect(far?.reason.contains("capped at 1h") == true)
        // Garbage: ignored, never a crash or a wait.
        for value in ["soon", "-5", "nan", "inf", "1e400", "99999999999999999999999999", "", "1.5.5"] {
            #expect(Self.read([("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", value)])?.isExhausted != true, "\(value)")
        }
        #expect(Self.read([("X-RateLimit-Remaining", "lots"), ("X-RateLimit-Reset", "5")]) == nil)
    }

    @Test func retryAfterOnARateLimitedReplyIsTheReset() {
        let limited = Self.read(429, [("Retry-After", "12"), ("X-RateLimit-Remaining", "0")])
        #expect(limited?.resetAt == Self.now + 12 && limited?.isExhausted == true)
        #expect(Self.read(429, [("Retry-After", "99999")])?.capped == true)
        #expect(Self.read(200, [("Retry-After", "12")]) == nil, "Retry-After on a success says nothing of the quota")
    }

    @Test func aGitHub403WithNothingLeftIsRateLimitedNotForbidden() {
        let head = HTTPResponseHead(status: 403, headers: [HTTPHeader("X-RateLimit-Remaining", "0")])
        #expect(RateLimitNotice.isExhaustedGitHubStyle(head))
        #expect(!RateLimitNotice.isExhaustedGitHubStyle(HTTPResponseHead(status: 403, headers: [HTTPHeader("X-RateLimit-Remaining", "12")])))
        #expect(!RateLimitNotice.isExhaustedGitHubStyle(HTTPResponseHead(status: 403)))
        let body = Array(#"{"message":"API rate limit exceeded"}"#.utf8)
        do {
            _ = try ReplyDecoder.decode(HTTPResponse(head: head, body: body), rules: PlainStyle(), request: "GET /x")
            Issue.record("a 403 decoded as a success")
        } catch {
            guard case .api(let apiError) = error else { Issue.record("\(error)"); return }
            #expect(apiError.kind == .rateLimited)
        }
    }

    @Test func theSharedResetKeepsTheLaterTimeAndIgnoresADamagedFile() throws {
        let directory = ConfigDirectory(path: TemporaryDirectory.make(prefix: "server-limit"))
        let limit = ServerRateLimit(directory: directory, profile: "p", origin: "https://api.example:443")
        #expect(limit.blockedUntil(now: Self.now) == nil)
        limit.record(until: Self.now + 30, reason: "first", now: Self.now)
        limit.record(until: Self.now + 10, reason: "earlier", now: Self.now)
        #expect(limit.blockedUntil(now: Self.now)?.until == Self.now + 30)
        #expect(limit.blockedUntil(now: Self.now)?.reason == "first")
        #expect(limit.blockedUntil(now: Self.now + 31) == nil, "past its reset it says nothing")
        try AtomicFile.write(Array("{not json".utf8), to: limit.statePath, mode: 0o600)
        #expect(limit.blockedUntil(now: Self.now) == nil)
    }
}
