#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem

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

/// A wall clock a test moves by hand: waits on it take no time and are recorded, so a
/// 30-second rate-limit wait or a token's lifetime is asserted on, not slept through.
public final class VirtualClock: Sendable {
    private let state: LockedValue<(now: Double, waits: [Double])>

    /// Starts at `now` (seconds since 1970; default 2027-01-15).
    public init(now: Double = 1_800_000_000) {
        state = LockedValue((now, []))
    }

    public var now: Double { state.value.now }

    /// The clock's reading as a closure, for the types that take one.
    public var read: @Sendable () -> Double { { [state] in state.value.now } }

    /// Moves the clock on.
    public func advance(_ seconds: Double) {
        state.withLock { $0.now += seconds }
    }

    /// Every wait asked of `run`, in order.
    public var waits: [Double] { state.value.waits }

    /// A `RunClock` whose `sleep` advances this clock instead of waiting (a cancelled run
    /// does not wait at all, as the system clock's sleep returns at once).
    public var run: RunClock {
        let state = self.state
        return RunClock(now: { state.value.now }, sleep: { seconds, cancellation in
            guard !cancellation.isRequested else { return }
            state.withLock { $0.now += seconds; $0.waits.append(seconds) }
        })
    }
}
