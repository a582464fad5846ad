import DouctlSystem

/// What a reply's headers say about the quota left: the IETF httpapi draft's structured
/// `RateLimit: "default";r=0;t=30` (and its older `RateLimit: limit=10, remaining=0,
/// reset=5`), `RateLimit-Remaining`/`RateLimit-Reset` (older drafts in seconds; GitLab's
/// in epoch seconds), GitHub's `X-RateLimit-Remaining`/`X-RateLimit-Reset` (epoch seconds),
/// and `Retry-After` on a rate-limited reply. A reset is read as epoch seconds when it is
/// past 1e9, else as seconds from now; one in the past or unreadable is ignored, one more
/// than `longestWait` ahead is capped there (and says so).
public struct RateLimitNotice: Equatable, Sendable {
    public var remaining: Int?
    /// When the quota is back (Unix time), capped at `now + longestWait`.
    public var resetAt: Double?
    /// The header it came from, for messages: "X-RateLimit-Reset: 1700000000".
    public var source: String
    /// The server asked for a longer wait than `longestWait`.
    public var capped = false

    /// The longest a server's word makes douctl wait before sending (1 hour).
    public static let longestWait = 3600.0

    /// Whether the quota is spent until `resetAt`.
    public var isExhausted: Bool { remaining == 0 && resetAt != nil }

    /// "X-RateLimit-Reset: 1700000000, capped at 1h": why douctl waits.
    public var reason: String { capped ? "\(source); capped at 1h" : source }

    public static func read(_ head: HTTPResponseHead, now: Double) -> RateLimitNotice? {
        if head.status == 429 || isExhaustedGitHubStyle(head), let (seconds, value) = retryAfter(head, now: now), seconds > 0 {
            let (at, capped) = cap(now + seconds, now: now)
            return RateLimitNotice(remaining: 0, resetAt: at, source: "Retry-After: \(value)", capped: capped)
        }
        // Kinto's (and Mozilla's services') Backoff: the server is busy; wait this long
        // before the next request, whatever the status.
        if let value = head.header("Backoff"), let seconds = seconds(value), seconds > 0 {
            let (at, capped) = cap(now + seconds, now: now)
            return RateLimitNotice(remaining: 0, resetAt: at, source: "Backoff: \(value)", capped: capped)
        }
        if let value = head.header("RateLimit"), let notice = structured(value, now: now) { return notice }
        for prefix in ["RateLimit-", "X-RateLimit-"] {
            guard let remainingText = head.header(prefix + "Remaining"), let remaining = count(remainingText) else { continue }
            var notice = RateLimitNotice(remaining: remaining, resetAt: nil, source: "\(prefix)Remaining: \(remainingText)")
            if let resetText = head.header(prefix + "Reset"), let (at, capped) = resetTime(resetText, now: now) {
                notice.resetAt = at
                notice.capped = capped
                notice.source += ", \(prefix)Reset: \(resetText)"
            }
            return notice
        }
        return nil
    }

    /// `Retry-After` (RFC 9110 §10.2.3: delta-seconds or an HTTP date) as seconds from `now`,
    /// with the header's text for messages; nil when absent or unreadable. The one place
    /// douctl reads it: the retry policy's waits and the quota's alike.
    public static func retryAfter(_ head: HTTPResponseHead, now: Double) -> (seconds: Double, text: String)? {
        guard let value = head.header("Retry-After") else { return nil }
        let trimmed = value.trimmingCharacters(in: " \t")
        if !trimmed.isEmpty, trimmed.count <= 18, trimmed.allSatisfy({ $0.isASCII && $0.isNumber }), let seconds = Double(trimmed) {
            return (seconds, value)
        }
        guard let date = HTTPDate.parse(trimmed) else { return nil }
        return (max(date - now, 0), value)
    }

    /// GitHub answers a spent quota with 403, not 429: a 403 whose `X-RateLimit-Remaining`
    /// (or `RateLimit-Remaining`) is 0 is rate limited, not a permission error.
    public static func isExhaustedGitHubStyle(_ head: HTTPResponseHead) -> Bool {
        guard head.status == 403 else { return false }
        return ["X-RateLimit-Remaining", "RateLimit-Remaining"].contains { head.header($0).flatMap(count) == 0 }
    }

    /// `"default";r=0;t=30, "burst";r=5;t=1` (one policy per list member) or
    /// `limit=10, remaining=0, reset=5` (one key per member): the policy with the least left.
    static func structured(_ value: String, now: Double) -> RateLimitNotice? {
        var policies: [(remaining: Int, reset: Double?)] = []
        var flat: (remaining: Int?, reset: Double?) = (nil, nil)
        for member in value.split(separator: ",") {
            var remaining: Int?
            var reset: Double?
            for parameter in member.split(separator: ";") {
                let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: " \t") }
                guard pair.count == 2 else { continue }
                switch pair[0].lowercased() {
                case "r", "remaining": remaining = count(pair[1])
                case "t", "reset": reset = seconds(pair[1])
                default: break
                }
            }
            if member.contains(";") || member.hasPrefix("\"") {
                if let remaining { policies.append((remaining, reset)) }
            } else {
                flat.remaining = remaining ?? flat.remaining
                flat.reset = reset ?? flat.reset
            }
        }
        if let remaining = flat.remaining { policies.append((remaining, flat.reset)) }
        guard let least = policies.min(by: { ($0.remaining, -($0.reset ?? 0)) < ($1.remaining, -($1.reset ?? 0)) }) else { return nil }
        var notice = RateLimitNotice(remaining: least.remaining, resetAt: nil, source: "RateLimit: \(value)")
        if let reset = least.reset, reset > 0 {
            (notice.resetAt, notice.capped) = cap(now + reset, now: now)
        }
        return notice
    }

    /// A count: digits only, at most 18 of them.
    static func count(_ text: String) -> Int? {
        let trimmed = text.trimmingCharacters(in: " \t")
        guard !trimmed.isEmpty, trimmed.count <= 18, trimmed.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(trimmed)
    }

    /// Non-negative finite seconds ("30", "1.5"); nil for anything else.
    static func seconds(_ text: String) -> Double? {
        let trimmed = text.trimmingCharacters(in: " \t")
        guard !trimmed.isEmpty, trimmed.count <= 24, trimmed.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
              let value = Double(trimmed), value.isFinite, value >= 0 else { return nil }
        return value
    }

    /// A reset as Unix time: epoch seconds when past 1e9, else seconds from `now`; nil in
    /// the past or unreadable.
    static func resetTime(_ text: String, now: Double) -> (Double, Bool)? {
        guard let value = seconds(text) else { return nil }
        let at = value > 1e9 ? value : now + value
        guard at > now else { return nil }
        return cap(at, now: now)
    }

    static func cap(_ at: Double, now: Double) -> (Double, Bool) {
        at > now + longestWait ? (now + longestWait, true) : (at, false)
    }
}
