@testable import DouctlCore
import DouctlSystem
import DouctlTestSupport
import Testing

/// `rate_limit` on a clock the test owns: several limiters (as several processes would)
/// share one state file, and every wait advances the clock by exactly what was asked, so
/// the property is checked without depending on how the machine schedules anything.
@Suite("Client rate limit")
struct RateLimiterTests {
    final class Clock {
        var now = 1_700_000_000.0
    }

    @Test func sendsNeverExceedTheQuotaInAnyWindow() throws {
        let directory = try TemporaryDirectory()
        let quota = try #require(RateQuota("4/2s"))
        let limiters = (0..<3).map { _ in ClientRateLimiter(quota: quota, directory: ConfigDirectory(path: directory.path), profile: "quota") }
        let clock = Clock()
        let start = clock.now
        var sent: [Double] = []
        // Three "processes" take turns, four requests each.
        for round in 0..<4 {
            for limiter in limiters {
                try limiter.acquire(now: { clock.now }) { seconds in
                    clock.now += seconds
                    return true
                }
                sent.append(clock.now)
                clock.now += 0.01 * Double(round + 1) // the request takes a little while
            }
        }
        #expect(sent.count == 12)
        for (index, first) in sent.enumerated() {
            let inWindow = sent[index...].prefix { $0 < first + quota.seconds }.count
            #expect(inWindow <= quota.count, "\(inWindow) sends within \(quota.seconds) s from +\(first - start)")
        }
        #expect((sent.last ?? 0) - (sent.first ?? 0) >= 4, "12 sends at 4 per 2 s span two full windows")
        #expect(sent.prefix(4).allSatisfy { $0 - start < 0.1 }, "the first four go at once")
    }

    @Test func aWaitThatIsRefusedStopsTheRequest() throws {
        let directory = try TemporaryDirectory()
        let limiter = ClientRateLimiter(quota: try #require(RateQuota("1/1h")), directory: ConfigDirectory(path: directory.path), profile: "p")
        let now = 1_700_000_000.0
        try limiter.acquire(now: { now }) { _ in true }
        var asked: [Double] = []
        #expect(throws: DouctlError.interrupted) {
            try limiter.acquire(now: { now + 10 }) { seconds in
                asked.append(seconds)
                return false
            }
        }
        #expect(asked == [3590])
    }
}
