#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Ctrl-C handling (and SIGTERM, SIGHUP: the same stop), the process-level source of `Cancellation.process`. The handler only
/// sets flags; long operations poll their context's cancellation and unwind, so files are
/// closed and the process exits 130 cleanly. A second Ctrl-C exits at once.
public enum Interrupt {
    private static let signals = Atomic<Int>(0)

    /// Installs the handler. Safe to call more than once.
    ///
    /// Without SA_RESTART, on purpose: a blocking read (a prompt) then returns EINTR, so the
    /// first Ctrl-C ends it cleanly (terminal settings restored) instead of being absorbed.
    public static func install() {
        // Initialised here, not lazily inside the handler (not async-signal-safe).
        _ = Cancellation.process.isRequested
        _ = signals.load(ordering: .relaxed)
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in
            // Only async-signal-safe work here: atomic operations.
            if Interrupt.signals.add(1, ordering: .relaxed).newValue > 1 { _exit(130) }
            Cancellation.process.request(.interrupt)
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        sigaction(SIGINT, &action, nil)
        sigaction(SIGTERM, &action, nil)
        // SIGHUP (the terminal or SSH session closed) is a stop like Ctrl-C: its default
        // would kill douctl mid-write, leaving a download's or `api -o`'s temp file. Unless
        // it is ignored already: `nohup douctl …` asked to outlive the terminal.
        var hangup = sigaction()
        let ignored = unsafeBitCast(SIG_IGN, to: Int.self)
        if sigaction(SIGHUP, nil, &hangup) == 0, hangup.__sigaction_handler.sa_handler.map({ unsafeBitCast($0, to: Int.self) }) != ignored {
            sigaction(SIGHUP, &action, nil)
        }
        signal(SIGPIPE, SIG_IGN)
        // A blocked signal mask survives exec: a parent that blocks SIGINT (some test
        // runners and supervisors do) would otherwise leave douctl deaf to Ctrl-C.
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        sigaddset(&unblocked, SIGINT)
        sigaddset(&unblocked, SIGTERM)
        sigaddset(&unblocked, SIGHUP)
        pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
    }

    /// Forgets the signals seen (the sandbox, which treats Ctrl-C as "shut down").
    public static func reset() { signals.store(0, ordering: .relaxed) }
}
