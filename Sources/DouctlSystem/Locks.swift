#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a mutex; the one way our threads share mutable state.
///
/// A pthread mutex and the value, each in memory of its own, rather than the Synchronization
/// module's `Mutex<Value>`: that one is a generic type of a resilient module, so each
/// `LockedValue<Value>` a run made also built `Mutex<Value>` and `_Cell<Value>` metadata at
/// run time (~50 K instructions and two zeroed pages of a small GET's start; issue 44).
public final class LockedValue<Value: ~Copyable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let storage: UnsafeMutablePointer<Value>

    public init(_ value: consuming sending Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        storage = .allocate(capacity: 1)
        storage.initialize(to: value)
    }

    deinit {
        storage.deinitialize(count: 1)
        storage.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&storage.pointee)
    }
}

extension LockedValue where Value: Copyable & Sendable {
    /// A copy of the current value.
    public var value: Value { withLock { $0 } }
}
