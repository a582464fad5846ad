#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem
import Synchronization

/// The open connections and their threads. Socket descriptors are closed only here, under the
/// same lock `stop()` holds while it shuts sockets down, so `stop()` can never hit a descriptor
/// number the process has meanwhile reused for something else.
final class ConnectionRegistry: @unchecked Sendable {
    enum Admission {
        case admitted(id: Int)
        case busy
        case stopping
    }

    private struct OpenConnection {
        let fd: Int32
        var thread: JoinableThread?
        /// The serving thread's pthread, once it runs: `stop()` called from a handler must not
        /// wait for the very thread it runs on.
        var pthread: pthread_t?
    }

    private let lock = ConditionLock()
    private let maxConnections: Int
    private let stoppingFlag = Atomic<Bool>(false)
    // Guarded by `lock`:
    private var open: [Int: OpenConnection] = [:]
    private var finishedThreads: [JoinableThread] = []
    private var finishedBeforeAttach: Set<Int> = []
    private var nextID = 0

    init(maxConnections: Int) {
        self.maxConnections = max(1, maxConnections)
    }

    /// Read lock-free by connection threads between requests.
    var isStopping: Bool { stoppingFlag.load(ordering: .acquiring) }

    var openCount: Int { lock.withLock { open.count } }

    /// Connections admitted since the server started (each new TCP connection counts once,
    /// however many requests it carries): how tests prove keep-alive reuse.
    var admittedCount: Int { lock.withLock { nextID } }

    func admit(fd: Int32) -> Admission {
        lock.withLock {
            if isStopping { return .stopping }
            if open.count >= maxConnections { return .busy }
            nextID += 1
            open[nextID] = OpenConnection(fd: fd, thread: nil)
            return .admitted(id: nextID)
        }
    }

    /// Records the thread serving `id`, which may already have finished.
    func attach(_ thread: JoinableThread, to id: Int) {
        lock.withLock {
            if finishedBeforeAttach.remove(id) != nil {
                finishedThreads.append(thread)
            } else {
                open[id]?.thread = thread
            }
        }
    }

    /// Called by a connection's thread as its first act.
    func markRunning(_ id: Int) {
        lock.withLock { open[id]?.pthread = pthread_self() }
    }

    /// Called by a connection's thread as its last act (or by the acceptor when no thread could
    /// be started): closes the socket and queues the thread to be joined.
    func finish(_ id: Int, threadStarted: Bool = true) {
        lock.withLock {
            guard let connection = open.removeValue(forKey: id) else { return }
            close(connection.fd)
            if let thread = connection.thread {
                finishedThreads.append(thread)
            } else if threadStarted {
                finishedBeforeAttach.insert(id)
            }
            lock.broadcast()
        }
    }

    /// Joins threads that have finished; they are at most a few instructions from returning.
    func joinFinishedThreads() {
        let threads = lock.withLock {
            defer { finishedThreads.removeAll() }
            return finishedThreads
        }
        threads.forEach { $0.join() }
    }

    /// Refuses new connections from now on.
    func beginStopping() {
        lock.withLock { stoppingFlag.store(true, ordering: .releasing) }
    }

    /// Ends every connection, gracefully first: shutting down the read side wakes threads
    /// waiting for a request (idle keep-alive, slow headers) and ends body reads, while a
    /// handler that is running can still send its reply, which matters when a handler itself
    /// calls `stop()` (the OAuth listener does, after the one callback it waits for). Threads
    /// still busy after `gracePeriod` seconds get their sockets shut down completely, which
    /// fails their writes; a thread stuck elsewhere (a handler sleeping) is left to finish on
    /// its own. Finished threads are joined.
    func shutDownAll(gracePeriod: Double) {
        let caller = pthread_self()
        let othersAreOpen = { [self] in
            open.values.contains { connection in connection.pthread.map { pthread_equal($0, caller) == 0 } ?? true }
        }
        lock.withLock {
            for connection in open.values { shutdown(connection.fd, Int32(SHUT_RD)) }
            if !lock.wait(until: .after(seconds: gracePeriod), while: othersAreOpen) {
                for connection in open.values { shutdown(connection.fd, Int32(SHUT_RDWR)) }
                _ = lock.wait(until: .after(seconds: 0.25), while: othersAreOpen)
            }
        }
        joinFinishedThreads()
    }
}
