#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a `BufferedInput` gets its bytes: a socket, or memory (tests and in-process requests).
protocol ByteProducer: AnyObject {
    /// Reads up to `count` bytes into `pointer`; 0 means the end of input.
    func produce(into pointer: UnsafeMutableRawPointer, count: Int, deadline: Deadline) throws(HTTPServerError) -> Int
}

final class SocketProducer: ByteProducer {
    let fd: Int32
    init(fd: Int32) { self.fd = fd }

    func produce(into pointer: UnsafeMutableRawPointer, count: Int, deadline: Deadline) throws(HTTPServerError) -> Int {
        try SocketIO.receive(fd, into: pointer, count: count, deadline: deadline)
    }
}

final class MemoryProducer: ByteProducer {
    private let bytes: [UInt8]
    private var offset = 0
    /// Hands out at most this many bytes per call, so tests can exercise split reads.
    private let maxPerCall: Int

    init(_ bytes: [UInt8], maxPerCall: Int = .max) {
        self.bytes = bytes
        self.maxPerCall = max(1, maxPerCall)
    }

    func produce(into pointer: UnsafeMutableRawPointer, count: Int, deadline: Deadline) throws(HTTPServerError) -> Int {
        let taken = min(count, bytes.count - offset, maxPerCall)
        guard taken > 0 else { return 0 }
        bytes.withUnsafeBytes { source in
            if let base = source.baseAddress { pointer.copyMemory(from: base + offset, byteCount: taken) }
        }
        offset += taken
        return taken
    }
}

/// One connection's read buffer. Everything read from the socket lands here first (except large
/// body reads, which go straight into the caller's buffer when nothing is pending), and bytes
/// past the end of one request stay here for the next: that is what makes pipelining work.
final class BufferedInput {
    /// What came of waiting for a request head.
    enum HeadResult: Equatable {
        case head([UInt8])
        /// The peer closed the connection before sending anything: the normal end of keep-alive.
        case endOfInput
        /// The peer closed (or reset) in the middle of a head.
        case truncated
        /// Nothing arrived before the idle deadline.
        case idle
        /// Some of a head arrived, but not all of it before the header deadline.
        case headerTimeout
        case headerTooLarge
        case requestLineTooLong
    }

    private let producer: any ByteProducer
    private let base: UnsafeMutableRawPointer
    private let capacity: Int
    private var start = 0
    private var end = 0

    /// Below this size a read is served through the buffer (one large recv, then copies);
    /// above it, straight into the caller's memory.
    private static let directReadThreshold = 16 * 1024

    init(producer: any ByteProducer, capacity: Int) {
        self.producer = producer
        self.capacity = max(capacity, 4096)
        base = .allocate(byteCount: self.capacity, alignment: 16)
    }

    deinit { base.deallocate() }

    var bufferedCount: Int { end - start }

    /// Moves pending bytes to the front and reads more after them. Returns the count added; 0
    /// means end of input (or, if the buffer is full, no room: callers check for that first).
    private func fill(deadline: Deadline) throws(HTTPServerError) -> Int {
        if start > 0 {
            if end > start { memmove(base, base + start, end - start) }
            end -= start
            start = 0
        }
        guard end < capacity else { return 0 }
        let received = try producer.produce(into: base + end, count: capacity - end, deadline: deadline)
        end += received
        return received
    }

    private func byte(at index: Int) -> UInt8 { base.load(fromByteOffset: index, as: UInt8.self) }

    /// Reads one request head: the bytes up to and including the empty line that ends the
    /// header section. Empty lines before the request line are skipped (RFC 9112 §2.2).
    /// - `firstByteDeadline`: how long to wait for the request to begin (idle keep-alive time).
    /// - `headerTimeout`: from the first byte, how long the whole head may take.
    func readHead(maxBytes: Int, firstByteDeadline: Deadline, headerTimeout: Double) -> HeadResult {
        var headDeadline: Deadline?
        var scanned = 0  // bytes after `start` known not to contain the end of the head
        while true {
            while start < end, byte(at: start) == 0x0D || byte(at: start) == 0x0A {
                start += 1
                scanned = 0
            }
            if end > start {
                if headDeadline == nil { headDeadline = .after(seconds: headerTimeout) }
                if let headEnd = findEndOfHead(from: start + scanned) {
                    if headEnd - start > maxBytes { return tooLargeResult(maxBytes: maxBytes) }
                    let head = [UInt8](UnsafeRawBufferPointer(start: base + start, count: headEnd - start))
                    start = headEnd
                    return .head(head)
                }
                // The terminator may straddle the next read: rescan the last three bytes.
                scanned = max(0, end - start - 3)
                if end - start > maxBytes { return tooLargeResult(maxBytes: maxBytes) }
            }
            do {
                let received = try fill(deadline: headDeadline ?? firstByteDeadline)
                if received == 0 {
                    if end == capacity { return tooLargeResult(maxBytes: maxBytes) }
                    return headDeadline == nil ? .endOfInput : .truncated
                }
            } catch .timedOut {
                return headDeadline == nil ? .idle : .headerTimeout
            } catch {
                return headDeadline == nil ? .endOfInput : .truncated
            }
        }
    }

    private func tooLargeResult(maxBytes: Int) -> HeadResult {
        let searched = min(end - start, maxBytes)
        let hasLineFeed = memchr(base + start, 0x0A, searched) != nil
        return hasLineFeed ? .headerTooLarge : .requestLineTooLong
    }

    /// The index just past the blank line ending the head (`\n\n` or `\n\r\n`), if buffered.
    private func findEndOfHead(from index: Int) -> Int? {
        var position = index
        while position < end {
            guard let found = memchr(base + position, 0x0A, end - position) else { return nil }
            let lineFeed = found - base
            if lineFeed + 1 >= end { return nil }
            let next = byte(at: lineFeed + 1)
            if next == 0x0A { return lineFeed + 2 }
            if next == 0x0D {
                if lineFeed + 2 >= end { return nil }
                if byte(at: lineFeed + 2) == 0x0A { return lineFeed + 3 }
            }
            position = lineFeed + 1
        }
        return nil
    }

    /// Reads one line ending in LF (a preceding CR is dropped), for chunk sizes and trailers.
    /// A line longer than `maxLength` bytes is malformed; end of input is `connectionClosed`.
    func readLine(maxLength: Int, deadline: Deadline) throws(HTTPServerError) -> [UInt8] {
        var scanned = 0
        while true {
            if let found = memchr(base + start + scanned, 0x0A, end - start - scanned) {
                let lineFeed = found - base
                var lineEnd = lineFeed
                if lineEnd > start && byte(at: lineEnd - 1) == 0x0D { lineEnd -= 1 }
                let line = [UInt8](UnsafeRawBufferPointer(start: base + start, count: lineEnd - start))
                start = lineFeed + 1
                if line.count > maxLength { throw .malformed("line too long") }
                return line
            }
            scanned = end - start
            if scanned > maxLength + 1 { throw .malformed("line too long") }
            if start == 0 && end == capacity { throw .malformed("line too long") }
            if try fill(deadline: deadline) == 0 { throw .connectionClosed }
        }
    }

    /// Reads up to `limit` bytes into `destination`; 0 only at the end of input.
    func read(into destination: UnsafeMutableRawBufferPointer, limit: Int, deadline: Deadline) throws(HTTPServerError) -> Int {
        let wanted = min(limit, destination.count)
        guard wanted > 0, let target = destination.baseAddress else { return 0 }
        if end == start {
            if wanted >= Self.directReadThreshold {
                return try producer.produce(into: target, count: wanted, deadline: deadline)
            }
            if try fill(deadline: deadline) == 0 { return 0 }
        }
        let taken = min(wanted, end - start)
        target.copyMemory(from: base + start, byteCount: taken)
        start += taken
        return taken
    }
}
