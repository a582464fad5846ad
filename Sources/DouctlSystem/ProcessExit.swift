#if canImport(Glibc)
@preconcurrency import Glibc  // stdout and stderr, C globals read once as the process ends
#elseif canImport(Darwin)
@preconcurrency import Darwin
#endif

/// How douctl's process ends (issue 44). `finish` runs douctl's own end-of-process work
/// (hooks registered with `atExit`), flushes C stdio, and leaves with `_exit`: the loaded
/// libraries' exit handlers are skipped. They only free memory the kernel is about to take
/// back (OpenSSL's `OPENSSL_cleanup`, the destructors of libcurl's ~30 libraries), and cost
/// a small GET ~0.65 M instructions (Benchmarks/floor.py). An `exit()` from anywhere else
/// still runs the hooks, through one atexit handler.
public enum ProcessExit {
    /// A struct, not a tuple: each start makes `hooks`, and a tuple type's metadata is built
    /// at run time (issue 44).
    private struct Hooks {
        var registered = false
        var list: [@Sendable () -> Void] = []
    }
    private static let hooks = LockedValue<Hooks>(Hooks())

    /// Runs `hook` once as the process ends, by `finish` or by `exit()`.
    public static func atExit(_ hook: @escaping @Sendable () -> Void) {
        let first = hooks.withLock { state -> Bool in
            state.list.append(hook)
            defer { state.registered = true }
            return !state.registered
        }
        if first { atexit { ProcessExit.runHooks() } }
    }

    /// Ends the process with `status`: the hooks, then C stdio's stdout and stderr flushed
    /// (the only streams douctl writes through stdio; not `fflush(NULL)`, which would wait for
    /// the lock of a stream another thread may hold, as `exit()` does not), then `_exit`.
    public static func finish(_ status: Int32) -> Never {
        runHooks()
        fflush(stdout)
        fflush(stderr)
        _exit(status)
    }

    private static func runHooks() {
        let list = hooks.withLock { state -> [@Sendable () -> Void] in
            defer { state.list = [] }
            return state.list
        }
        for hook in list { hook() }
    }
}
