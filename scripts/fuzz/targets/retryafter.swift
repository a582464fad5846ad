// Fuzz target: Retry-After (delta-seconds or an HTTP date) as the one reader reads it
// (RateLimitNotice.retryAfter), the other quota headers, and the retry delay computed from
// it, which must always be a finite number of seconds within the policy's cap.
import DouctlHTTP
import DouctlSystem

let policy = RetryPolicy.standard

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    for now in [0.0, 1_700_000_000, -1e300, 1e300] {
        for status in [200, 429, 503] {
            let head = HTTPResponseHead(status: status, headers: ["Retry-After", "Backoff", "RateLimit", "X-RateLimit-Reset"].map { HTTPHeader($0, text) })
            let retryAfter = RateLimitNotice.retryAfter(head, now: now)?.seconds
            _ = RateLimitNotice.read(head, now: now)
            for attempt in [0, 1, 3, Int.max] {
                let delay = policy.delay(afterAttempt: attempt, retryAfter: retryAfter)
                if !delay.isFinite || delay < 0 || delay > policy.maxDelay {
                    fuzzFailure("delay \(delay) for Retry-After \(text.debugDescription)")
                }
            }
        }
    }
    _ = HTTPDate.parse(text)
    return 0
}
