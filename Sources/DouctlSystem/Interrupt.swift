#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Ctrl-C handling. The handler only sets a flag; long operations (transfers, waits) poll
/// `Interrupt.requested` and unwind, so files are closed and the process exits 130 cleanly.
/// A second Ctrl-C exits at once.
public enum Interrupt {
    private static let flag = Atomic<Int>(0)

    /// True once SIGINT or SIGTERM arrived.
    public static var requested: Bool { flag.load(ordering: .relaxed) != 0 }

    /// Installs the handler. Safe to call more than once.
    ///
    /// Without SA_RESTART, on purpose: a blocking read (a prompt) then returns EINTR, so the
    /// first Ctrl-C ends it cleanly (terminal settings restored) instead of being absorbed.
    public static func install() {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in
            // Only async-signal-safe work here.
            if Interrupt.flag.add(1, ordering: .relaxed).newValue > 1 { _exit(130) }
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        sigaction(SIGINT, &action, nil)
        sigaction(SIGTERM, &action, nil)
        signal(SIGPIPE, SIG_IGN)
        // A blocked signal mask survives exec: a parent that blocks SIGINT (some test
        // runners and supervisors do) would otherwise leave douctl deaf to Ctrl-C.
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        sigaddset(&unblocked, SIGINT)
        sigaddset(&unblocked, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
    }

    /// For tests and for the sandbox, which treats Ctrl-C as "shut down".
    public static func reset() { flag.store(0, ordering: .relaxed) }

    /// Marks an interrupt as requested (tests, and code that wants to stop everything).
    public static func request() { flag.store(1, ordering: .relaxed) }
}

/// `--max-time`: a budget for the whole command. When it runs out, the command stops the
/// way Ctrl-C stops it (transfers abort, waits end, temporary files are removed), and
/// `expired` tells the top level to report a timeout (exit 7) instead of an interrupt.
public enum CommandDeadline {
    private static let flag = Atomic<Int>(0)

    private static let limitBits = Atomic<UInt64>(0)

    public static var expired: Bool { flag.load(ordering: .relaxed) != 0 }

    /// The budget `start` was given, in seconds.
    public static var seconds: Double { Double(bitPattern: limitBits.load(ordering: .relaxed)) }

    /// What the error line says when the budget ran out.
    public static var message: String {
        let seconds = self.seconds
        let text = seconds == seconds.rounded() && abs(seconds) < 1e15 ? String(Int64(seconds)) : String(seconds)
        return "the command ran longer than --max-time \(text)s"
    }

    /// Starts the clock; a detached thread requests the stop when `seconds` have passed.
    public static func start(seconds: Double) {
        limitBits.store(seconds.bitPattern, ordering: .relaxed)
        let microseconds = UInt32(min(max(seconds, 0), 4000) * 1_000_000)
        let whole = seconds > 4000 ? seconds - 4000 : 0
        try? startDetachedThread(stackSize: 64 << 10) {
            if whole > 0 { sleep(UInt32(min(whole, Double(UInt32.max)))) }
            usleep(microseconds)
            flag.store(1, ordering: .relaxed)
            Interrupt.request()
        }
    }
}
