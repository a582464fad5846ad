import DouctlHTTP
import Testing

/// Which tries `HTTPClient` makes again, and how long it waits first: the policy's
/// decisions, which the client's send loop asks for every reply and failure.
@Suite("Retry policy")
struct RetryPolicyTests {
    static let policy = RetryPolicy(maxAttempts: 3, baseDelay: 0.5, maxDelay: 30)

    static func request(_ method: String, body: RequestBody = .none) -> HTTPRequest {
        HTTPRequest(method: method, url: "https://api.example/v2/x", body: body)
    }

    @Test(arguments: [502, 503, 504])
    func idempotentRequestsRetryTheNotNowStatuses(status: Int) {
        for method in ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "get"] {
            #expect(Self.policy.retries(status: status, of: Self.request(method), attempt: 1), "\(method) \(status)")
        }
    }

    /// A 429 is the quota layer's (waited out with --wait-on-rate-limit, else exit 6 at once).
    @Test(arguments: [200, 301, 400, 401, 404, 429, 500, 501])
    func otherStatusesAreAnswers(status: Int) {
        #expect(!Self.policy.retries(status: status, of: Self.request("GET"), attempt: 1))
    }

    @Test func aPostIsNeverSentAgainForAStatus() {
        for method in ["POST", "PATCH"] {
            #expect(!Self.policy.retries(status: 503, of: Self.request(method, body: .bytes([1])), attempt: 1))
        }
    }

    @Test func triesStopAtMaxAttempts() {
        #expect(Self.policy.retries(status: 503, of: Self.request("GET"), attempt: 2))
        #expect(!Self.policy.retries(status: 503, of: Self.request("GET"), attempt: 3))
        #expect(!RetryPolicy.never.retries(status: 503, of: Self.request("GET"), attempt: 1))
        #expect(!RetryPolicy.never.retries(TransportError.cannotConnect("refused"), of: Self.request("GET"), attempt: 1))
    }

    @Test func aBodyFromAPipeIsNeverSentTwice() {
        let piped = Self.request("PUT", body: .stream(fileDescriptor: 0))
        #expect(!Self.policy.retries(status: 503, of: piped, attempt: 1))
        #expect(!Self.policy.retries(TransportError.cannotConnect("refused"), of: piped, attempt: 1))
    }

    @Test func connectionFailuresRetryIdempotentRequests() {
        let get = Self.request("GET")
        #expect(Self.policy.retries(TransportError.cannotConnect("refused"), of: get, attempt: 1))
        #expect(Self.policy.retries(TransportError.timedOut("30s"), of: get, attempt: 1))
        #expect(Self.policy.retries(TransportError.connectionLost("reset"), of: get, attempt: 1))
    }

    @Test func aPostIsSentAgainOnlyWhenItNeverReachedTheServer() {
        let post = Self.request("POST", body: .bytes([1]))
        #expect(Self.policy.retries(TransportError.cannotConnect("refused"), of: post, attempt: 1))
        #expect(!Self.policy.retries(TransportError.timedOut("30s"), of: post, attempt: 1))
        #expect(!Self.policy.retries(TransportError.connectionLost("reset"), of: post, attempt: 1))
    }

    @Test(arguments: [
        TransportError.invalidRequest("bad URL"), .tls(.untrusted, host: "h", detail: "d"), .redirect("too many"),
        .bodyFile("gone"), .outputFailed("closed"), .interrupted, .libraryUnavailable("no libcurl"),
    ])
    func otherFailuresAreFinal(error: TransportError) {
        #expect(!Self.policy.retries(error, of: Self.request("GET"), attempt: 1))
    }

    // MARK: waits

    /// `Retry-After: value` read as the client reads it (`RateLimitNotice.retryAfter`, the one reader).
    static func retryAfter(_ value: String, now: Double = 0) -> Double? {
        RateLimitNotice.retryAfter(HTTPResponseHead(status: 503, headers: [HTTPHeader("Retry-After", value)]), now: now)?.seconds
    }

    @Test func retryAfterSecondsAreHonouredUpToTheMaximum() {
        #expect(Self.policy.delay(afterAttempt: 1, retryAfter: Self.retryAfter("7")) == 7)
        #expect(Self.policy.delay(afterAttempt: 1, retryAfter: Self.retryAfter(" 0 ")) == 0)
        #expect(Self.policy.delay(afterAttempt: 1, retryAfter: Self.retryAfter("3600")) == 30)
    }

    @Test func retryAfterMayBeAnHTTPDate() {
        let now = 1_445_412_470.0 // Wed, 21 Oct 2015 07:27:50 GMT
        #expect(Self.retryAfter("Wed, 21 Oct 2015 07:28:00 GMT", now: now) == 10)
        #expect(Self.policy.delay(afterAttempt: 1, retryAfter: Self.retryAfter("Wed, 21 Oct 2015 07:28:00 GMT", now: now)) == 10)
        #expect(Self.policy.delay(afterAttempt: 1, retryAfter: Self.retryAfter("Wed, 21 Oct 2015 07:27:00 GMT", now: now)) == 0, "a date in the past means now")
    }

    @Test func withoutRetryAfterTheWaitDoublesWithJitter() {
        for attempt in 1...4 {
            let base = 0.5 * Double(1 << (attempt - 1))
            for _ in 0..<50 {
                let delay = Self.policy.delay(afterAttempt: attempt, retryAfter: nil)
                #expect(delay >= base * 0.5 && delay <= base * 1.5, "attempt \(attempt): \(delay)")
            }
        }
        #expect(Self.policy.delay(afterAttempt: 20, retryAfter: nil) <= 30)
        #expect(Self.retryAfter("soon") == nil)
        #expect(Self.policy.delay(afterAttempt: 1, retryAfter: Self.retryAfter("soon")) <= 0.75, "an unreadable Retry-After falls back to backoff")
    }

    @Test func retryMaxTimeBoundsWhenARetryMayStart() {
        var policy = Self.policy
        #expect(policy.allowsRetry(elapsed: 1_000, delay: 30))
        policy.maxElapsed = 10
        #expect(policy.allowsRetry(elapsed: 4, delay: 6))
        #expect(!policy.allowsRetry(elapsed: 4, delay: 6.5))
    }
}
