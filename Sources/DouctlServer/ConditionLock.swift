#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A mutex with a condition variable. `LockedValue` (a `Mutex`) cannot wait for a change, and
/// the server must wait for two: "every connection thread has finished" (in `stop()`, with a
/// deadline) and "the server has stopped" (in `waitUntilStopped()`).
final class ConditionLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        #if canImport(Glibc)
        // Deadlines are monotonic; a wall-clock jump must not shorten or stretch a wait.
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        #endif
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Waits (the lock held by the caller, inside `withLock`) while `isNotDone()` holds, until the
    /// deadline. Returns whether the wait ended because it was done.
    func wait(until deadline: Deadline, while isNotDone: () -> Bool) -> Bool {
        while isNotDone() {
            if deadline == .never {
                pthread_cond_wait(condition, mutex)
            } else {
                if deadline.hasPassed { return false }
                #if canImport(Glibc)
                var time = deadline.monotonicTimespec
                #else
                // Darwin condition variables use the wall clock: wait for the time that is left.
                var wallClock = timeval()
                gettimeofday(&wallClock, nil)
                let left = Int(deadline.pollTimeout)
                let nanoseconds = Int(wallClock.tv_usec) * 1000 + (left % 1000) * 1_000_000
                var time = timespec(tv_sec: wallClock.tv_sec + left / 1000 + nanoseconds / 1_000_000_000,
                                    tv_nsec: nanoseconds % 1_000_000_000)
                #endif
                _ = pthread_cond_timedwait(condition, mutex, &time)
            }
        }
        return true
    }

    /// Wakes every waiter; call with the lock held, after changing what they wait for.
    func broadcast() {
        pthread_cond_broadcast(condition)
    }
}
