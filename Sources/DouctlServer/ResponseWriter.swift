import DouctlSystem

/// A connection's write side: small pieces (the head, chunk sizes, small bodies) collect in a
/// buffer and leave in one `send`; large ones go straight from the caller's memory.
final class SocketOutput {
    private let fd: Int32
    private var pending: [UInt8] = []
    /// Writes at most this large are copied into `pending` rather than sent on their own.
    static let coalescingLimit = 16 * 1024
    /// Bytes handed to the kernel so far.
    private(set) var bytesSent: Int64 = 0

    init(fd: Int32) {
        self.fd = fd
        pending.reserveCapacity(Self.coalescingLimit * 2)
    }

    func append(_ bytes: UnsafeRawBufferPointer) { pending.append(contentsOf: bytes) }
    func append(_ bytes: [UInt8]) { pending.append(contentsOf: bytes) }
    func append(_ text: String) { pending.append(contentsOf: text.utf8) }

    /// Sends what is pending. `more`: further bytes follow right away (MSG_MORE).
    func flush(more: Bool = false) throws(HTTPServerError) {
        guard !pending.isEmpty else { return }
        let count = pending.count
        var failure: HTTPServerError?
        pending.withUnsafeBytes { bytes in
            do throws(HTTPServerError) { try SocketIO.sendAll(fd, bytes, more: more) } catch { failure = error }
        }
        pending.removeAll(keepingCapacity: true)
        if let failure { throw failure }
        bytesSent += Int64(count)
    }

    /// Sends `bytes` after whatever is pending, without copying them.
    func send(_ bytes: UnsafeRawBufferPointer, more: Bool) throws(HTTPServerError) {
        if bytes.count <= Self.coalescingLimit {
            append(bytes)
            try flush(more: more)
            return
        }
        try flush(more: true)
        try SocketIO.sendAll(fd, bytes, more: more)
        bytesSent += Int64(bytes.count)
    }
}

/// Given to a `.stream` body's producer. Each `write` goes out at once (as one chunk, when the
/// length is unknown), so a producer can trickle bytes to test a client's progress handling.
public final class HTTPResponseBodyWriter: @unchecked Sendable {
    enum Framing {
        case length(Int64)
        case chunked
    }

    private let output: SocketOutput
    private let framing: Framing
    /// Content bytes written so far.
    public private(set) var bytesWritten: Int64 = 0
    private var failure: HTTPServerError?

    init(output: SocketOutput, framing: Framing) {
        self.output = output
        self.framing = framing
    }

    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        try writeContent(bytes)
    }

    public func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { buffer in try writeContent(buffer) }
    }

    public func write(_ text: String) throws {
        try write(Array(text.utf8))
    }

    private func writeContent(_ bytes: UnsafeRawBufferPointer) throws(HTTPServerError) {
        if let failure { throw failure }
        guard bytes.count > 0 else { return }  // an empty chunk would end the body
        do throws(HTTPServerError) {
            switch framing {
            case .length(let length):
                guard Int64(bytes.count) <= length - bytesWritten else { throw .responseBodyOverflow }
                try output.send(bytes, more: false)
            case .chunked:
                output.append(String(bytes.count, radix: 16) + "\r\n")
                try output.send(bytes, more: true)
                output.append("\r\n")
                try output.flush()
            }
            bytesWritten += Int64(bytes.count)
        } catch {
            failure = error
            throw error
        }
    }

    /// Fault injection ("reset mid-reply"): sends what was written so far, then the server resets
    /// the connection (RST) instead of completing the body. Always throws `connectionAborted`;
    /// let it propagate out of the producer.
    public func abortConnection() throws -> Never {
        try? output.flush()
        failure = .connectionAborted
        throw HTTPServerError.connectionAborted
    }

    var isAborted: Bool { failure == .connectionAborted }

    /// Ends the body after the producer returned. True when the body is complete and correctly
    /// framed, so the connection may be reused.
    func finish() throws(HTTPServerError) -> Bool {
        if let failure { throw failure }
        switch framing {
        case .length(let length):
            try output.flush()
            return bytesWritten == length
        case .chunked:
            output.append("0\r\n\r\n")
            try output.flush()
            return true
        }
    }
}

/// Builds response heads. Handler-supplied headers are sanitized (a CR or LF in a value would
/// let a value inject headers; an invalid name is dropped) and the framing fields are the
/// server's own.
enum ResponseHead {
    enum Framing: Equatable {
        /// No framing field: 204 and 304 replies, or a HEAD reply whose handler gave its own length.
        case none
        case length(Int64)
        case chunked
    }

    static func serialize(status: Int, headers: [(String, String)], framing: Framing,
                          keepHandlerContentLength: Bool, connection: String?) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(StatusReason.phrase(for: status))\r\n"
        var hasDate = false
        for (name, value) in headers {
            guard HTTPSyntax.isToken(name) else { continue }
            if HTTPSyntax.caseInsensitiveEquals(name, "Content-Length") && !keepHandlerContentLength { continue }
            if HTTPSyntax.caseInsensitiveEquals(name, "Transfer-Encoding") || HTTPSyntax.caseInsensitiveEquals(name, "Connection") {
                continue
            }
            if HTTPSyntax.caseInsensitiveEquals(name, "Date") { hasDate = true }
            head += "\(name): \(sanitizedValue(value))\r\n"
        }
        if !hasDate { head += "Date: \(HTTPDate.now())\r\n" }
        switch framing {
        case .none: break
        case .length(let length): head += "Content-Length: \(length)\r\n"
        case .chunked: head += "Transfer-Encoding: chunked\r\n"
        }
        if let connection { head += "Connection: \(connection)\r\n" }
        head += "\r\n"
        return Array(head.utf8)
    }

    private static func sanitizedValue(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 < 0x20 && $0 != UInt8(ascii: "\t") || $0 == 0x7F }) else { return value }
        return String(decoding: value.utf8.map { $0 < 0x20 && $0 != UInt8(ascii: "\t") || $0 == 0x7F ? UInt8(ascii: " ") : $0 },
                      as: UTF8.self)
    }
}
