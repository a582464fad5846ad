#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A POSIX thread that runs one closure. We use real threads, not the global Dispatch pool,
/// because the work done on them blocks (sockets, libcurl) and would starve that pool.
public final class JoinableThread: @unchecked Sendable {
    private let handle: ThreadHandle
    private var joined = false

    /// Starts `body` on a new thread. Throws when the system cannot create one.
    public init(stackSize: Int = 1 << 20, _ body: @escaping @Sendable () -> Void) throws {
        handle = try startThread(stackSize: stackSize, detached: false, body)
    }

    /// Waits for the thread to finish. Calling it twice is harmless.
    public func join() {
        guard !joined else { return }
        joined = true
        #if canImport(Glibc)
        pthread_join(handle, nil)
        #else
        if let handle { pthread_join(handle, nil) }
        #endif
    }
}

/// Starts `body` on a thread nobody waits for: its resources go back to the system when it
/// ends (a joinable thread never joined is a leak, and ThreadSanitizer reports it).
public func startDetachedThread(stackSize: Int = 1 << 20, _ body: @escaping @Sendable () -> Void) throws {
    _ = try startThread(stackSize: stackSize, detached: true, body)
}

private final class ThreadBody {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

#if canImport(Glibc)
private typealias ThreadHandle = pthread_t
#else
private typealias ThreadHandle = pthread_t?
#endif

private func startThread(stackSize: Int, detached: Bool, _ body: @escaping @Sendable () -> Void) throws -> ThreadHandle {
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setstacksize(&attributes, stackSize)
    if detached { pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED)) }
    #if canImport(Glibc)
    var handle = pthread_t()
    #else
    var handle: ThreadHandle = nil
    #endif
    let context = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    let result = pthread_create(&handle, &attributes, { raw in
        #if canImport(Glibc)
        guard let raw else { return nil }
        #endif
        let box = Unmanaged<ThreadBody>.fromOpaque(raw).takeRetainedValue()
        box.body()
        return nil
    }, context)
    if result != 0 {
        Unmanaged<ThreadBody>.fromOpaque(context).release()
        throw SystemError("pthread_create", errno: result)
    }
    return handle
}

/// Runs `body` for each index on up to `width` threads at once and waits for all of them.
/// Used for `upload --parallel N`; each index runs exactly once.
public func runConcurrently(count: Int, width: Int, _ body: @escaping @Sendable (Int) -> Void) {
    guard count > 0 else { return }
    let next = LockedValue(0)
    let workers = max(1, min(width, count))
    let work: @Sendable () -> Void = {
        while true {
            let index = next.withLock { value -> Int in
                defer { value += 1 }
                return value
            }
            if index >= count { return }
            body(index)
        }
    }
    var threads: [JoinableThread] = []
    for _ in 1..<workers {
        if let thread = try? JoinableThread(work) { threads.append(thread) }
    }
    work() // the calling thread is one of the workers; if no thread could start, it does all the work
    threads.forEach { $0.join() }
}
