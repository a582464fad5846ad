import DouctlSystem

/// A request body, read as it arrives: Content-Length or chunked framing is removed, so the
/// handler sees only content. Nothing is buffered beyond the connection's read buffer, which is
/// what lets a handler stream a multi-gigabyte upload to disk in constant memory.
///
/// Valid until the response has been sent (a `.stream` producer may still read it); read it from
/// one thread at a time.
public final class HTTPRequestBody: @unchecked Sendable {
    private enum State {
        case finished
        case remaining(Int64)
        case chunkHeader
        case chunkData(Int64)
        case chunkEnd
    }

    private let input: BufferedInput
    private var state: State
    private let maxBodyBytes: Int64
    private let maxTrailerBytes: Int
    private let readTimeout: Double
    /// Sends `100 Continue` on the first read, when the client asked for it and is waiting.
    private var continueSender: (() throws(HTTPServerError) -> Void)?

    /// The declared length, or nil for chunked bodies and requests without a body.
    public let contentLength: Int64?
    public let isChunked: Bool
    /// Content bytes handed out so far.
    public private(set) var bytesRead: Int64 = 0
    /// Trailer fields of a chunked body, once it has been read to the end.
    public private(set) var trailers = HTTPHeaders()
    /// The first error a read ran into; every later read throws it again. The server looks at it
    /// after the handler returns, to answer 400/413 itself and close the connection.
    public private(set) var failure: HTTPServerError?

    /// True once the whole body has been read (always true for requests without a body).
    public var isComplete: Bool {
        if case .finished = state { return true }
        return false
    }

    /// True when the client is still waiting for `100 Continue` before it sends the body.
    var isAwaitingContinue: Bool { continueSender != nil && !isComplete }

    init(input: BufferedInput, contentLength: Int64?, isChunked: Bool, maxBodyBytes: Int64,
         maxTrailerBytes: Int, readTimeout: Double, continueSender: (() throws(HTTPServerError) -> Void)?) {
        self.input = input
        self.contentLength = isChunked ? nil : contentLength
        self.isChunked = isChunked
        self.maxBodyBytes = maxBodyBytes
        self.maxTrailerBytes = maxTrailerBytes
        self.readTimeout = readTimeout
        if isChunked {
            state = .chunkHeader
        } else if let contentLength, contentLength > 0 {
            state = .remaining(contentLength)
        } else {
            state = .finished
        }
        self.continueSender = isComplete ? nil : continueSender
    }

    /// A body held in memory, for calling handlers in-process (tests of the sandbox, for example).
    public convenience init(bytes: [UInt8]) {
        self.init(input: BufferedInput(producer: MemoryProducer(bytes), capacity: 16 * 1024),
                  contentLength: Int64(bytes.count), isChunked: false, maxBodyBytes: .max,
                  maxTrailerBytes: 64 * 1024, readTimeout: 30, continueSender: nil)
    }

    /// Reads up to `buffer.count` bytes of content; returns 0 at the end. Throws
    /// `HTTPServerError` on a broken connection, bad chunking, or a body beyond the server limit.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try readContent(into: buffer)
    }

    func readContent(into buffer: UnsafeMutableRawBufferPointer) throws(HTTPServerError) -> Int {
        if let failure { throw failure }
        do {
            return try decode(into: buffer)
        } catch {
            failure = error
            throw error
        }
    }

    private func decode(into buffer: UnsafeMutableRawBufferPointer) throws(HTTPServerError) -> Int {
        guard buffer.count > 0, !isComplete else { return 0 }
        if let sendContinue = continueSender {
            continueSender = nil
            try sendContinue()
        }
        let deadline = Deadline.after(seconds: readTimeout)
        while true {
            switch state {
            case .finished:
                return 0
            case .remaining(let left):
                let count = try input.read(into: buffer, limit: Int(clamping: left), deadline: deadline)
                if count == 0 { throw .connectionClosed }
                bytesRead += Int64(count)
                state = left == Int64(count) ? .finished : .remaining(left - Int64(count))
                return count
            case .chunkHeader:
                let size = try Self.parseChunkSize(input.readLine(maxLength: 4096, deadline: deadline))
                if size == 0 {
                    try readTrailers(deadline: deadline)
                    state = .finished
                    return 0
                }
                if size > maxBodyBytes - bytesRead { throw .bodyTooLarge }
                state = .chunkData(size)
            case .chunkData(let left):
                let count = try input.read(into: buffer, limit: Int(clamping: left), deadline: deadline)
                if count == 0 { throw .connectionClosed }
                bytesRead += Int64(count)
                state = left == Int64(count) ? .chunkEnd : .chunkData(left - Int64(count))
                return count
            case .chunkEnd:
                let line = try input.readLine(maxLength: 64, deadline: deadline)
                guard line.isEmpty else { throw .malformed("chunk data not followed by CRLF") }
                state = .chunkHeader
            }
        }
    }

    /// `1*HEXDIG [ BWS ";" extensions ]`. Extensions are allowed and ignored; the size may not
    /// overflow (a 40-digit size is malformed, not a crash).
    static func parseChunkSize(_ line: [UInt8]) throws(HTTPServerError) -> Int64 {
        var value: Int64 = 0
        var index = 0
        while index < line.count, let digit = PercentEncoding.hexValue(line[index]) {
            let (shifted, overflowed) = value.multipliedReportingOverflow(by: 16)
            if overflowed { throw .malformed("chunk size too large") }
            value = shifted | Int64(digit)
            index += 1
        }
        guard index > 0 else { throw .malformed("invalid chunk size") }
        while index < line.count, line[index] == UInt8(ascii: " ") || line[index] == UInt8(ascii: "\t") { index += 1 }
        if index < line.count {
            guard line[index] == UInt8(ascii: ";") else { throw .malformed("invalid chunk size") }
            guard line[index...].allSatisfy({ ($0 >= 0x20 && $0 != 0x7F) || $0 == UInt8(ascii: "\t") }) else {
                throw .malformed("invalid chunk extension")
            }
        }
        return value
    }

    private func readTrailers(deadline: Deadline) throws(HTTPServerError) {
        var total = 0
        while true {
            let line = try input.readLine(maxLength: maxTrailerBytes, deadline: deadline)
            if line.isEmpty { return }
            total += line.count + 2
            if total > maxTrailerBytes { throw .malformed("trailer section too large") }
            do throws(RequestRejection) {
                let field = try RequestParser.parseFieldLine(line[...])
                trailers.add(field.name, field.value)
            } catch {
                throw .malformed("invalid trailer field: \(error.reason)")
            }
        }
    }

    /// Reads the whole (rest of the) body. Throws `bodyTooLarge`, without reading on, as soon as
    /// it is known to exceed `limit` bytes.
    public func readAll(limit: Int) throws -> [UInt8] {
        var result: [UInt8] = []
        if case .remaining(let left) = state {
            if left > Int64(max(limit, 0)) { throw HTTPServerError.bodyTooLarge }
            result.reserveCapacity(Int(left))
        }
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        defer { scratch.deallocate() }
        while true {
            let count = try readContent(into: scratch)
            if count == 0 { return result }
            if count > limit - result.count { throw HTTPServerError.bodyTooLarge }
            result.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[..<count]))
        }
    }

    /// Reads and discards the rest of the body; returns how many content bytes that was.
    @discardableResult
    public func drain() throws -> Int64 {
        try drain(upTo: .max) ?? 0
    }

    /// Discards the rest if it is at most `maxBytes` long; nil when it is longer (the rest is
    /// then only partly read and the connection cannot be reused).
    func drain(upTo maxBytes: Int64) throws(HTTPServerError) -> Int64? {
        if case .remaining(let left) = state, left > maxBytes { return nil }
        var discarded: Int64 = 0
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        defer { scratch.deallocate() }
        while true {
            let count = try readContent(into: scratch)
            if count == 0 { return discarded }
            discarded += Int64(count)
            if discarded > maxBytes { return nil }
        }
    }

    /// Called once the response head is on the wire: a `100 Continue` after it would corrupt
    /// the response, so later reads just wait for whatever the client sends.
    func withholdContinue() {
        continueSender = nil
    }
}
