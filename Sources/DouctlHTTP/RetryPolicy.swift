#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// When to send a request again (design §8): idempotent methods only, on connection
/// failures and on 429/502/503/504, up to `maxAttempts` tries, exponential backoff with
/// jitter, `Retry-After` honoured up to `maxDelay`.
public struct RetryPolicy: Sendable, Equatable {
    public var maxAttempts: Int
    public var baseDelay: Double
    public var maxDelay: Double
    public var retryableStatuses: Set<Int>

    public init(maxAttempts: Int = 3, baseDelay: Double = 0.5, maxDelay: Double = 30, retryableStatuses: Set<Int> = [429, 502, 503, 504]) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.retryableStatuses = retryableStatuses
    }

    public static let standard = RetryPolicy()
    public static let never = RetryPolicy(maxAttempts: 1)

    /// Seconds to wait before attempt `attempt + 1`: the server's `Retry-After` when given,
    /// else base·2^(attempt−1) with ±50 % jitter so many clients do not retry in step.
    public func delay(afterAttempt attempt: Int, retryAfter: String?, now: Double = currentUnixTime()) -> Double {
        if let retryAfter, let seconds = Self.parseRetryAfter(retryAfter, now: now) {
            return min(max(seconds, 0), maxDelay)
        }
        let exponential = baseDelay * Double(1 << min(max(attempt - 1, 0), 10))
        let jitter = Double.random(in: 0.5...1.5)
        return min(exponential * jitter, maxDelay)
    }

    /// `Retry-After` is either delta-seconds or an IMF-fixdate (RFC 9110 §10.2.3).
    public static func parseRetryAfter(_ value: String, now: Double) -> Double? {
        let trimmed = value.trimmingCharacters(in: " \t")
        if let seconds = Double(trimmed), seconds.isFinite { return seconds }
        // "Sun, 06 Nov 1994 08:49:37 GMT"
        let parts = trimmed.split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT",
              let day = Int32(parts[1]),
              let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"].firstIndex(of: String(parts[2])),
              let year = Int32(parts[3]) else { return nil }
        let clock = parts[4].split(separator: ":").compactMap { Int32($0) }
        guard clock.count == 3 else { return nil }
        var fields = tm()
        fields.tm_year = year - 1900
        fields.tm_mon = Int32(month)
        fields.tm_mday = day
        fields.tm_hour = clock[0]
        fields.tm_min = clock[1]
        fields.tm_sec = clock[2]
        let when = timegm(&fields)
        guard when != -1 else { return nil }
        return Double(when) - now
    }
}

/// Seconds since 1970, with sub-second precision.
public func currentUnixTime() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}
