#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem

/// When to send a request again: idempotent methods only, on connection failures and on
/// 502/503/504, up to `maxAttempts` tries, exponential backoff with jitter, `Retry-After`
/// honoured up to `maxDelay`. A 429 is not the retry policy's: the quota layer owns rate
/// limits (waited out with `--wait-on-rate-limit`, else exit 6 at once).
public struct RetryPolicy: Sendable, Equatable {
    public var maxAttempts: Int
    public var baseDelay: Double
    public var maxDelay: Double
    public var retryableStatuses: Set<Int>
    /// `--retry-max-time`: no retry starts later than this many seconds after the first try.
    public var maxElapsed: Double?

    public init(maxAttempts: Int = 3, baseDelay: Double = 0.5, maxDelay: Double = 30, retryableStatuses: Set<Int> = [502, 503, 504]) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.retryableStatuses = retryableStatuses
    }

    public static let standard = RetryPolicy()
    public static let never = RetryPolicy(maxAttempts: 1)

    /// Seconds to wait before attempt `attempt + 1`: the server's `Retry-After` (seconds from
    /// now, `RateLimitNotice.retryAfter`) when given, else base·2^(attempt−1) with ±50 %
    /// jitter so many clients do not retry in step.
    public func delay(afterAttempt attempt: Int, retryAfter: Double?) -> Double {
        if let retryAfter, retryAfter.isFinite {
            return min(max(retryAfter, 0), maxDelay)
        }
        let exponential = baseDelay * Double(1 << min(max(attempt - 1, 0), 10))
        let jitter = Double.random(in: 0.5...1.5)
        return min(exponential * jitter, maxDelay)
    }

    /// Whether a reply with `status` to try `attempt` of `request` is sent again: idempotent
    /// methods only (a POST may have been processed), statuses that mean "not now", and a
    /// body that can be read again.
    public func retries(status: Int, of request: HTTPRequest, attempt: Int) -> Bool {
        hasTriesLeft(request, attempt: attempt) && request.isIdempotent && retryableStatuses.contains(status)
    }

    /// Whether a try that failed with `error` is made again: connection failures only, and
    /// a request that is not idempotent only when it certainly never reached the server.
    public func retries(_ error: TransportError, of request: HTTPRequest, attempt: Int) -> Bool {
        guard hasTriesLeft(request, attempt: attempt), error.isTransient else { return false }
        return request.isIdempotent || error.neverReachedServer
    }

    /// A body read from a pipe is gone once sent, so its request is never tried twice.
    private func hasTriesLeft(_ request: HTTPRequest, attempt: Int) -> Bool {
        attempt < maxAttempts && request.body.isReplayable
    }

    /// Whether a retry after `delay` more seconds still fits `maxElapsed`, `elapsed` seconds
    /// after the first try began.
    public func allowsRetry(elapsed: Double, delay: Double) -> Bool {
        guard let maxElapsed else { return true }
        return elapsed + delay <= maxElapsed
    }
}
