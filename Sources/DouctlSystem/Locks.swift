import Synchronization

/// A value guarded by a mutex; the one way our threads share mutable state.
public final class LockedValue<Value: ~Copyable>: Sendable {
    private let mutex: Mutex<Value>

    public init(_ value: consuming sending Value) {
        mutex = Mutex(value)
    }

    public func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try mutex.withLock(body)
    }
}

extension LockedValue where Value: Copyable & Sendable {
    /// A copy of the current value.
    public var value: Value { withLock { $0 } }
}
