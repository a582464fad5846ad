#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A request to stop a run, and why: Ctrl-C (or SIGTERM), or the `--max-time` budget
/// running out. Thread-safe; long operations (transfers, waits, walks, batches) poll
/// `isRequested` and unwind, so files are closed and the run exits cleanly.
///
/// `Cancellation.process` is the process's: the signal handler (`Interrupt.install`) and
/// the `--max-time` timer feed it. Everything else receives a cancellation from the
/// command's context, so a test can run a command with its own and cancel it without
/// signals or sleeping.
public final class Cancellation: Sendable {
    /// Why a run was stopped.
    public enum Reason: Sendable, Equatable {
        /// Ctrl-C, SIGTERM, or code that wants everything to stop.
        case interrupt
        /// The `--max-time` budget (seconds) ran out.
        case deadline(Double)
    }

    private static let interruptBit = 1
    private static let deadlineBit = 2

    private let state = Atomic<Int>(0)
    private let deadlineBits = Atomic<UInt64>(0)

    public init() {}

    /// The process's cancellation, fed by SIGINT/SIGTERM and by `--max-time`.
    public static let process = Cancellation()

    /// True once a stop was requested, for any reason.
    public var isRequested: Bool { state.load(ordering: .relaxed) != 0 }

    /// Why the run was stopped; the deadline wins when both happened (a timeout is reported
    /// as one however the command unwound), nil while it runs on.
    public var reason: Reason? {
        let bits = state.load(ordering: .acquiring)
        if bits & Self.deadlineBit != 0 { return .deadline(Double(bitPattern: deadlineBits.load(ordering: .relaxed))) }
        return bits != 0 ? .interrupt : nil
    }

    /// True once the `--max-time` budget ran out.
    public var deadlineExpired: Bool { state.load(ordering: .relaxed) & Self.deadlineBit != 0 }

    /// Requests a stop. Async-signal-safe (an atomic or), so the signal handler calls it.
    public func request(_ reason: Reason = .interrupt) {
        switch reason {
        case .interrupt:
            state.bitwiseOr(Self.interruptBit, ordering: .relaxed)
        case .deadline(let seconds):
            deadlineBits.store(seconds.bitPattern, ordering: .relaxed)
            state.bitwiseOr(Self.deadlineBit, ordering: .releasing)
        }
    }

    /// Forgets a request (the sandbox, which treats Ctrl-C as "shut down", then exits cleanly).
    public func reset() { state.store(0, ordering: .relaxed) }

    /// What the error line says when the `--max-time` budget ran out, nil before.
    public var deadlineMessage: String? {
        guard case .deadline(let seconds) = reason else { return nil }
        return Self.deadlineMessage(seconds)
    }

    public static func deadlineMessage(_ seconds: Double) -> String {
        let text = seconds == seconds.rounded() && abs(seconds) < 1e15 ? String(Int64(seconds)) : String(seconds)
        return "the command ran longer than --max-time \(text)s"
    }

    /// `--max-time`: a detached thread requests the stop when `seconds` have passed.
    public func expire(after seconds: Double) {
        let microseconds = UInt32(min(max(seconds, 0), 4000) * 1_000_000)
        let whole = seconds > 4000 ? seconds - 4000 : 0
        let cancellation = self
        try? startDetachedThread(stackSize: 64 << 10) {
            if whole > 0 { sleepWholeSeconds(UInt32(min(whole, Double(UInt32.max)))) }
            usleep(microseconds)
            cancellation.request(.deadline(seconds))
        }
    }

    /// Sleeps `seconds` in short steps, returning early once a stop is requested.
    public func sleep(_ seconds: Double) {
        var remaining = seconds
        while remaining > 0 && !isRequested {
            let step = min(remaining, 0.05)
            usleep(useconds_t(step * 1_000_000))
            remaining -= step
        }
    }
}

private func sleepWholeSeconds(_ seconds: UInt32) {
    #if canImport(Glibc)
    _ = Glibc.sleep(seconds)
    #else
    _ = Darwin.sleep(seconds)
    #endif
}

/// Time as a run sees it: the wall clock and a wait that a cancellation ends early.
/// The system's in douctl; tests pass a virtual one whose `sleep` only advances `now`,
/// so a 30-second rate-limit wait takes no time and can be asserted on.
public struct RunClock: Sendable {
    /// Seconds since 1970.
    public var now: @Sendable () -> Double
    /// Waits `seconds`, or less once `cancellation` is requested.
    public var sleep: @Sendable (_ seconds: Double, _ cancellation: Cancellation) -> Void

    public init(now: @escaping @Sendable () -> Double, sleep: @escaping @Sendable (_ seconds: Double, _ cancellation: Cancellation) -> Void) {
        self.now = now
        self.sleep = sleep
    }

    /// The wall clock (CLOCK_REALTIME) and a real, interruptible sleep.
    public static let system = RunClock(now: { currentUnixTime() }, sleep: { seconds, cancellation in cancellation.sleep(seconds) })
}

/// Seconds since 1970 (CLOCK_REALTIME), with sub-second precision.
public func currentUnixTime() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}
