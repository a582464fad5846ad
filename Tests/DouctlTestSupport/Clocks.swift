#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The monotonic clock, for tests that time what they cause, and wall time for timestamps.
public enum TestClock {
    public static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1_000_000_000
    }

    /// Whole seconds of wall time, read the way the sandbox stamps `created_at`
    /// (clock_gettime(CLOCK_REALTIME)); time() reads the kernel's coarse clock, which can still
    /// say the previous second a few milliseconds after it ended.
    public static func wallSeconds() -> Int {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int(time.tv_sec)
    }

    public static func sleep(_ seconds: Double) {
        let whole = Int(seconds)
        var request = timespec(tv_sec: whole, tv_nsec: Int((seconds - Double(whole)) * 1_000_000_000))
        var remaining = timespec()
        nanosleep(&request, &remaining)
    }
}

/// Seconds `body` took, on the monotonic clock.
public func secondsTaken(_ body: () throws -> Void) rethrows -> Double {
    let start = TestClock.now()
    try body()
    return TestClock.now() - start
}
