#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Clocks: wall time for anything stored or shown (token expiry, `created_at`), monotonic time
/// for durations (log lines, fault pauses measured within one run).
///
/// The wall clock is the sandbox's own (`SandboxConfiguration.clock`): the system's, or in
/// tests one they advance, so a token, a device code or a two-factor step expires without
/// the test sleeping.
public struct SandboxClock: Sendable {
    /// Seconds since 1970.
    public var now: @Sendable () -> Double

    public init(now: @escaping @Sendable () -> Double) {
        self.now = now
    }

    /// The system's wall clock (CLOCK_REALTIME).
    public static let system = SandboxClock {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1_000_000_000
    }

    static func monotonic() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1_000_000_000
    }

    /// Sleeps `seconds` in short steps, returning early once `shouldStop()` is true, so a
    /// handler pausing for a fault never holds up `Sandbox.stop()`.
    static func pause(_ seconds: Double, shouldStop: () -> Bool) {
        let end = monotonic() + seconds
        while !shouldStop() {
            let left = end - monotonic()
            if left <= 0 { return }
            let step = min(left, 0.02)
            var request = timespec(tv_sec: Int(step), tv_nsec: Int((step - Double(Int(step))) * 1_000_000_000))
            var remaining = timespec()
            nanosleep(&request, &remaining)
        }
    }
}
