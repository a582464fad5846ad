#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A bounded queue of byte blocks from one producing thread to one consuming thread: a
/// fixed set of `blocks` buffers of `blockSize` bytes, allocated once, so memory stays flat
/// whatever passes through. The producer copies bytes in (`put`, which waits while every
/// buffer is full) and says when it has no more (`close`); the consumer takes them in the
/// order they were put (`take`) and may refuse more (its body returns false), after which
/// `put` returns false at once and drops what it was given. Each `put` of at most
/// `blockSize` bytes reaches the consumer as one block, as it was put.
public final class BlockHandoff: @unchecked Sendable {
    public let blockSize: Int
    private let slots: [UnsafeMutableRawPointer]
    private var lengths: [Int]
    /// The next slot the producer fills and the next the consumer reads; `filled` between.
    private var head = 0
    private var tail = 0
    private var filled = 0
    private var closed = false
    private var refused = false
    /// Whether the producer waits for a free block, or the consumer for a filled one: the
    /// other side wakes it only then (a wake-up is a system call and a context switch).
    private var producerWaits = false
    private var consumerWaits = false
    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let changed = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init(blocks: Int, blockSize: Int) {
        self.blockSize = max(1, blockSize)
        let count = max(1, blocks)
        slots = (0..<count).map { _ in UnsafeMutableRawPointer.allocate(byteCount: max(1, blockSize), alignment: 16) }
        lengths = Array(repeating: 0, count: count)
        pthread_mutex_init(lock, nil)
        pthread_cond_init(changed, nil)
    }

    deinit {
        slots.forEach { $0.deallocate() }
        pthread_cond_destroy(changed)
        pthread_mutex_destroy(lock)
        lock.deallocate()
        changed.deallocate()
    }

    /// Whether the consumer has refused more.
    public var isRefused: Bool {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return refused
    }

    /// Waits, holding the lock, until a block is free or the consumer has refused more.
    private func waitForRoom() {
        while filled == slots.count && !refused {
            producerWaits = true
            pthread_cond_wait(changed, lock)
            producerWaits = false
        }
    }

    /// Copies `bytes` in, a block at a time (one block when they fit), waiting while every
    /// buffer is full. False, with the rest dropped, once the consumer has refused more.
    public func put(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return !isRefused }
        var start = 0
        while start < bytes.count {
            let length = min(blockSize, bytes.count - start)
            pthread_mutex_lock(lock)
            waitForRoom()
            if refused {
                pthread_mutex_unlock(lock)
                return false
            }
            let slot = head
            pthread_mutex_unlock(lock)
            // The slot is the producer's until it is counted as filled.
            slots[slot].copyMemory(from: base + start, byteCount: length)
            pthread_mutex_lock(lock)
            lengths[slot] = length
            head = (head + 1) % slots.count
            filled += 1
            if consumerWaits { pthread_cond_broadcast(changed) }
            pthread_mutex_unlock(lock)
            start += length
        }
        return true
    }

    /// The block `append` is filling (the producer's until `publish`), and its length.
    private var appending: Int?
    private var appended = 0

    /// Copies `bytes` in after what earlier appends left, filling each block before it
    /// goes to the consumer (many small writes become few large blocks); `publish` (or
    /// `close`) sends a block that is not full. Waits while every block is full or being
    /// read. False, with the rest dropped, once the consumer has refused more.
    public func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return !isRefused }
        var start = 0
        while start < bytes.count {
            let slot: Int
            if let current = appending {
                slot = current
            } else {
                pthread_mutex_lock(lock)
                waitForRoom()
                let refusedNow = refused
                pthread_mutex_unlock(lock)
                if refusedNow { return false }
                slot = head
                appending = slot
                appended = 0
            }
            let length = min(blockSize - appended, bytes.count - start)
            (slots[slot] + appended).copyMemory(from: base + start, byteCount: length)
            appended += length
            start += length
            if appended == blockSize && !publish() { return false }
        }
        return true
    }

    /// Sends the block `append` is filling, full or not. False once the consumer has
    /// refused more.
    @discardableResult
    public func publish() -> Bool {
        guard let slot = appending else { return !isRefused }
        appending = nil
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        if refused { return false }
        if appended > 0 {
            lengths[slot] = appended
            head = (head + 1) % slots.count
            filled += 1
            if consumerWaits { pthread_cond_broadcast(changed) }
        }
        return true
    }

    /// No more blocks (what `append` was filling is sent first): `take` returns false once
    /// it has handed out every block put.
    public func close() {
        publish()
        pthread_mutex_lock(lock)
        closed = true
        pthread_cond_broadcast(changed)
        pthread_mutex_unlock(lock)
    }

    /// Waits for the next block and gives it to `body`; the block is reused once `body`
    /// returns. False when there are no more: the producer closed and every block was
    /// taken, or the consumer refused earlier. `body` returning false refuses the rest
    /// (the producer's waiting `put` returns false).
    public func take(_ body: (UnsafeRawBufferPointer) -> Bool) -> Bool {
        pthread_mutex_lock(lock)
        while filled == 0 && !closed && !refused {
            consumerWaits = true
            pthread_cond_wait(changed, lock)
            consumerWaits = false
        }
        if refused || filled == 0 {
            pthread_mutex_unlock(lock)
            return false
        }
        let slot = tail
        let length = lengths[slot]
        pthread_mutex_unlock(lock)
        // The slot is the consumer's until it is counted as free.
        let accepted = body(UnsafeRawBufferPointer(start: slots[slot], count: length))
        pthread_mutex_lock(lock)
        tail = (tail + 1) % slots.count
        filled -= 1
        if !accepted { refused = true }
        if producerWaits || !accepted { pthread_cond_broadcast(changed) }
        pthread_mutex_unlock(lock)
        return accepted
    }
}
