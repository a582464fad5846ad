#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Why a run, or one transfer, stopped before its end: the one vocabulary every layer
/// throws (`TransportError.stopped`) and one place maps to an exit code (`ExitStatus`).
public enum StopReason: Sendable, Equatable {
    /// Ctrl-C, SIGTERM or SIGHUP, or code that wants everything to stop (exit 130).
    case interrupt
    /// The `--max-time` budget (seconds) ran out: a timeout (exit 7).
    case deadline(Double)
    /// The reader of the output went away (`| head`): quiet, exit 141.
    case readerClosed
    /// A bound refused the reply (a decompression bomb, a size cap); the bound's own words
    /// (exit 8: a reply douctl cannot use).
    case refused(String)

    /// Ctrl-C or `--max-time`: the whole run stops, not only one reply.
    public var stopsTheRun: Bool {
        switch self {
        case .interrupt, .deadline: return true
        case .readerClosed, .refused: return false
        }
    }

    /// What the error line says.
    public var message: String {
        switch self {
        case .interrupt: return "interrupted"
        case .deadline(let seconds): return "timed out: " + Cancellation.deadlineMessage(seconds)
        case .readerClosed: return "the output was closed"
        case .refused(let detail): return detail
        }
    }
}

/// A request to stop a run, and why: Ctrl-C (or SIGTERM), or the `--max-time` budget
/// running out. Thread-safe; long operations (transfers, waits, walks, batches) poll
/// `isRequested` and unwind, so files are closed and the run exits cleanly.
///
/// `Cancellation.process` is the process's: the signal handler (`Interrupt.install`) and
/// the `--max-time` deadline feed it. Everything else receives a cancellation from the
/// command's context, so a test can run a command with its own and cancel it without
/// signals or sleeping.
public final class Cancellation: Sendable {
    /// Why a run was stopped (a run is stopped by `.interrupt` or `.deadline`).
    public typealias Reason = StopReason

    private static let interruptBit = 1
    private static let deadlineBit = 2

    private let state = Atomic<Int>(0)
    private let deadlineBits = Atomic<UInt64>(0)
    /// `--max-time`: when (on the run's clock) the budget runs out, and the clock.
    private let armed = Atomic<Bool>(false)
    private let timer = LockedValue<Deadline?>(nil)

    /// The armed `--max-time`: when, the budget, and the clock. A struct, not a tuple: a
    /// tuple holding a closure had its metadata (tuple, function type, optional) built at
    /// run time by every start, since `Cancellation.process` is made by each (issue 44).
    private struct Deadline: Sendable {
        let at: Double
        let seconds: Double
        let now: @Sendable () -> Double
    }

    public init() {}

    /// The process's cancellation, fed by SIGINT/SIGTERM and by `--max-time`.
    public static let process = Cancellation()

    /// True once a stop was requested, for any reason (the `--max-time` deadline is read
    /// here, on the run's clock, so every poll notices it).
    public var isRequested: Bool {
        if state.load(ordering: .relaxed) != 0 { return true }
        return armed.load(ordering: .relaxed) && deadlinePassed()
    }

    /// Why the run was stopped; the deadline wins when both happened (a timeout is reported
    /// as one however the command unwound), nil while it runs on.
    public var reason: StopReason? {
        _ = isRequested
        let bits = state.load(ordering: .acquiring)
        if bits & Self.deadlineBit != 0 { return .deadline(Double(bitPattern: deadlineBits.load(ordering: .relaxed))) }
        return bits != 0 ? .interrupt : nil
    }

    /// Why a stop that was noticed happened: the run's reason, `.interrupt` when none was
    /// requested (code that wants everything to stop).
    public var stopReason: StopReason { reason ?? .interrupt }

    /// True once the `--max-time` budget ran out.
    public var deadlineExpired: Bool {
        _ = isRequested
        return state.load(ordering: .relaxed) & Self.deadlineBit != 0
    }

    /// Requests a stop. Async-signal-safe (an atomic or), so the signal handler calls it.
    /// A run is stopped by an interrupt or its deadline; any other reason stops it as an
    /// interrupt does (the reason itself travels with the error that says it).
    public func request(_ reason: StopReason = .interrupt) {
        switch reason {
        case .deadline(let seconds):
            deadlineBits.store(seconds.bitPattern, ordering: .relaxed)
            state.bitwiseOr(Self.deadlineBit, ordering: .releasing)
        case .interrupt, .readerClosed, .refused:
            state.bitwiseOr(Self.interruptBit, ordering: .relaxed)
        }
    }

    /// Forgets a request (the sandbox, which treats Ctrl-C as "shut down", then exits
    /// cleanly), and the deadline.
    public func reset() {
        armed.store(false, ordering: .relaxed)
        timer.withLock { $0 = nil }
        state.store(0, ordering: .relaxed)
    }

    /// What the error line says when the `--max-time` budget ran out, nil before.
    public var deadlineMessage: String? {
        guard case .deadline(let seconds) = reason else { return nil }
        return Self.deadlineMessage(seconds)
    }

    public static func deadlineMessage(_ seconds: Double) -> String {
        let text = seconds == seconds.rounded() && abs(seconds) < 1e15 ? String(Int64(seconds)) : String(seconds)
        return "the command ran longer than --max-time \(text)s"
    }

    /// `--max-time`: the stop is requested once `seconds` have passed on `clock` (the run's:
    /// a virtual clock's waits move it on, so a test's budget runs out without sleeping).
    /// Noticed by every poll of `isRequested`, and by the run's waits, which poll it.
    public func expire(after seconds: Double, clock: RunClock = .system) {
        let now = clock.now
        let at = now() + max(seconds, 0)
        timer.withLock { $0 = Deadline(at: at, seconds: seconds, now: now) }
        armed.store(true, ordering: .releasing)
    }

    private func deadlinePassed() -> Bool {
        guard let deadline = timer.value, deadline.now() >= deadline.at else { return false }
        // An interrupt that came first stays the reason.
        if state.load(ordering: .relaxed) == 0 { request(.deadline(deadline.seconds)) }
        return true
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
