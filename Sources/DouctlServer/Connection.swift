#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem

/// Serves one accepted socket on its own thread: read a head, call the handler, write the
/// reply, and again while keep-alive holds. Every way out is decided here; the server's registry
/// closes the socket afterwards (so `stop()` can never shut down a reused descriptor).
final class Connection: @unchecked Sendable {
    /// How the connection ends once `run()` returns.
    enum Ending {
        /// Close right away: nothing unread is expected.
        case close
        /// Send FIN, discard what the peer still sends for a moment, then close, so a reply sent
        /// while the peer was still uploading is not destroyed by an RST.
        case linger
        /// Reset (RST): fault injection.
        case reset
    }

    private enum SendResult {
        case complete
        /// The body was cut short (a producer failed or a file shrank): framing is lost.
        case incomplete
        /// The peer is gone or stopped reading.
        case failed
        case reset
    }

    private let fd: Int32
    private let limits: HTTPServerLimits
    private let handler: HTTPHandler
    private let isStopping: @Sendable () -> Bool
    private let remoteAddress: String
    private let remotePort: UInt16
    private let input: BufferedInput
    private let output: SocketOutput

    /// Reads of a file body go through a buffer this large.
    private static let fileChunkSize = 256 * 1024
    /// How long a lingering close waits for the peer to finish sending.
    private static let lingerSeconds = 2.0

    init(fd: Int32, remoteAddress: String, remotePort: UInt16, limits: HTTPServerLimits,
         handler: @escaping HTTPHandler, isStopping: @escaping @Sendable () -> Bool) {
        self.fd = fd
        self.remoteAddress = remoteAddress
        self.remotePort = remotePort
        self.limits = Self.sane(limits)
        self.handler = handler
        self.isStopping = isStopping
        // The head must fit in the buffer with room to spare for what follows it.
        input = BufferedInput(producer: SocketProducer(fd: fd), capacity: 64 * 1024 + self.limits.maxHeaderBytes)
        output = SocketOutput(fd: fd)
    }

    /// Clamps configuration values that would make arithmetic overflow.
    private static func sane(_ limits: HTTPServerLimits) -> HTTPServerLimits {
        var sane = limits
        sane.maxHeaderBytes = min(max(limits.maxHeaderBytes, 256), 64 << 20)
        sane.maxBodyBytes = max(limits.maxBodyBytes, 0)
        sane.maxDrainBytes = max(limits.maxDrainBytes, 0)
        return sane
    }

    func run() {
        switch serve() {
        case .close: break
        case .linger: SocketIO.shutdownAndDiscardInput(fd, seconds: Self.lingerSeconds)
        case .reset: SocketIO.resetOnClose(fd)
        }
    }

    private func serve() -> Ending {
        // A new connection gets the header timeout to start; later requests the idle timeout.
        var firstByteDeadline = Deadline.after(seconds: limits.headerReadTimeout)
        while !isStopping() {
            let head = input.readHead(maxBytes: limits.maxHeaderBytes, firstByteDeadline: firstByteDeadline,
                                      headerTimeout: limits.headerReadTimeout)
            switch head {
            case .head(let bytes):
                if let ending = exchange(bytes) { return ending }
            case .endOfInput, .idle:
                return .close
            case .truncated:
                return reject(400, "incomplete request head")
            case .headerTimeout:
                return reject(408, "timed out reading the request head")
            case .headerTooLarge:
                return reject(431, "request header fields too large")
            case .requestLineTooLong:
                return reject(414, "request line too long")
            }
            firstByteDeadline = .after(seconds: limits.idleTimeout)
        }
        return .close
    }

    /// One request and its response. Returns nil when the connection stays open for the next.
    private func exchange(_ headBytes: [UInt8]) -> Ending? {
        let head: RequestHead
        let framing: RequestFraming
        let target: (path: Substring, query: Substring?)
        do throws(RequestRejection) {
            head = try RequestParser.parseHead(headBytes)
            framing = try RequestParser.framing(of: head)
            target = try RequestParser.splitTarget(head.target, method: head.method)
        } catch {
            return reject(error.status, error.reason)
        }
        if let length = framing.contentLength, length > limits.maxBodyBytes {
            // Not read, and no 100 Continue: a client waiting for one learns it need not send.
            return reject(413, "request body too large")
        }
        let output = self.output
        let continueSender: (() throws(HTTPServerError) -> Void)? = framing.expectsContinue ? { () throws(HTTPServerError) in
            output.append("HTTP/1.1 100 Continue\r\n\r\n")
            try output.flush()
        } : nil
        let body = HTTPRequestBody(input: input, contentLength: framing.contentLength, isChunked: framing.isChunked,
                                   maxBodyBytes: limits.maxBodyBytes, maxTrailerBytes: limits.maxHeaderBytes,
                                   readTimeout: limits.ioTimeout, continueSender: continueSender)
        let request = HTTPServerRequest(head: head, path: target.path, query: target.query, framing: framing,
                                        remoteAddress: remoteAddress, remotePort: remotePort, body: body)
        let response = handler(request)
        if response.resetConnection { return .reset }
        return respond(with: response, to: request, keepAliveRequested: framing.keepAlive)
    }

    private func respond(with handlerResponse: HTTPServerResponse, to request: HTTPServerRequest,
                         keepAliveRequested: Bool) -> Ending? {
        var response = handlerResponse
        let body = request.body
        var keepAlive = keepAliveRequested && !response.closeConnection && !isStopping()
        if response.headers.contains(where: { HTTPSyntax.caseInsensitiveEquals($0.0, "Connection")
            && $0.1.split(separator: ",").contains { HTTPSyntax.asciiLowercased(HTTPSyntax.trimmingWhitespace($0)) == "close" } }) {
            keepAlive = false
        }
        if let failure = body.failure {
            // The body broke a rule: whatever the handler made of it, the connection is done.
            // A client-error reply from the handler stands (a fake API may word its own 413);
            // a success or a 5xx built on a broken body gives way to the server's diagnosis.
            keepAlive = false
            let handlerBlamedClient = (400..<500).contains(response.status)
            switch failure {
            case .connectionClosed:
                return .close
            case .bodyTooLarge where !handlerBlamedClient:
                response = .text(413, "request body too large\n")
            case .malformed(let reason) where !handlerBlamedClient:
                response = .text(400, "\(reason)\n")
            case .timedOut where !handlerBlamedClient:
                response = .text(408, "timed out reading the request body\n")
            default:
                break
            }
        }
        if !body.isComplete {
            let unreadLength = body.contentLength.map { $0 - body.bytesRead }
            // Draining needs the client to send: one still waiting for 100 Continue will not.
            if body.isAwaitingContinue || unreadLength.map({ $0 > limits.maxDrainBytes }) ?? true {
                keepAlive = false
            }
        }
        // From here on a 100 Continue would land inside the reply.
        body.withholdContinue()

        let isHTTP10 = request.version == "HTTP/1.0"
        if isHTTP10, case .stream(nil, _) = response.body, request.method != "HEAD" {
            keepAlive = false  // without chunked encoding, closing is what ends the body
        }
        let connectionHeader: String? = !keepAlive ? "close" : (isHTTP10 ? "keep-alive" : nil)
        switch send(response, isHEAD: request.method == "HEAD", isHTTP10: isHTTP10, connectionHeader: connectionHeader) {
        case .reset:
            return .reset
        case .failed:
            return .close
        case .incomplete:
            return .linger
        case .complete:
            break
        }
        if !keepAlive {
            return body.isComplete && input.bufferedCount == 0 ? .close : .linger
        }
        if !body.isComplete {
            guard (try? body.drain(upTo: limits.maxDrainBytes)) != nil else { return .linger }
        }
        return nil
    }

    /// Writes a whole response. Replies without content (HEAD, 204, 304) get their head only.
    private func send(_ response: HTTPServerResponse, isHEAD: Bool, isHTTP10: Bool, connectionHeader: String?) -> SendResult {
        let status = (200...999).contains(response.status) ? response.status : 500
        let omitsBody = isHEAD || status == 204 || status == 304
        let hasNoFraming = status == 204 || status == 304

        func writeHead(_ framing: ResponseHead.Framing, keepHandlerContentLength: Bool = false) {
            output.append(ResponseHead.serialize(status: status, headers: response.headers,
                                                 framing: hasNoFraming ? .none : framing,
                                                 keepHandlerContentLength: keepHandlerContentLength,
                                                 connection: connectionHeader))
        }

        do {
            switch response.body {
            case .empty:
                let describesGET = isHEAD && response.header("Content-Length") != nil
                writeHead(describesGET ? .none : .length(0), keepHandlerContentLength: describesGET)
                try output.flush()
                return .complete
            case .bytes(let bytes):
                writeHead(.length(Int64(bytes.count)))
                if omitsBody {
                    try output.flush()
                } else {
                    try bytes.withUnsafeBytes { buffer in try output.send(buffer, more: false) }
                }
                return .complete
            case .file(let path):
                return try sendFile(path, omitsBody: omitsBody, isHEAD: isHEAD, isHTTP10: isHTTP10,
                                    connectionHeader: connectionHeader, writeHead: writeHead)
            case .stream(let length, let producer):
                // HTTP/1.0 has no chunked encoding: an unknown length is delimited by closing.
                let delimitedByClose = length == nil && isHTTP10
                writeHead(length.map { .length(max(0, $0)) } ?? (delimitedByClose ? .none : .chunked))
                try output.flush()
                if omitsBody { return .complete }
                let framing: HTTPResponseBodyWriter.Framing = length.map { .length(max(0, $0)) }
                    ?? (delimitedByClose ? .length(.max) : .chunked)
                let writer = HTTPResponseBodyWriter(output: output, framing: framing)
                do {
                    try producer(writer)
                } catch {
                    if writer.isAborted || (error as? HTTPServerError) == .connectionAborted { return .reset }
                    return .incomplete
                }
                let isComplete = try writer.finish()
                return isComplete && !delimitedByClose ? .complete : .incomplete
            }
        } catch {
            return .failed
        }
    }

    private func sendFile(_ path: String, omitsBody: Bool, isHEAD: Bool, isHTTP10: Bool,
                          connectionHeader: String?,
                          writeHead: (ResponseHead.Framing, Bool) -> Void) throws(HTTPServerError) -> SendResult {
        let file = open(path, O_RDONLY | O_CLOEXEC)
        var info = stat()
        guard file >= 0, fstat(file, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            let reason = file >= 0 ? ENOENT : currentErrno()
            if file >= 0 { close(file) }
            let status = reason == EACCES ? 403 : (reason == ENOENT || reason == ENOTDIR ? 404 : 500)
            return send(.text(status, "\(StatusReason.phrase(for: status))\n"), isHEAD: isHEAD,
                        isHTTP10: isHTTP10, connectionHeader: connectionHeader)
        }
        defer { close(file) }
        let size = Int64(info.st_size)
        writeHead(.length(size), false)
        if omitsBody {
            try output.flush()
            return .complete
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.fileChunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var left = size
        while left > 0 {
            let wanted = Int(min(left, Int64(buffer.count)))
            let got = read(file, buffer.baseAddress, wanted)
            if got < 0 && currentErrno() == EINTR { continue }
            if got <= 0 {
                try output.flush()
                return .incomplete  // the file shrank or failed: the promised length cannot be met
            }
            left -= Int64(got)
            try output.send(UnsafeRawBufferPointer(rebasing: buffer[..<got]), more: left > 0)
        }
        try output.flush()
        return .complete
    }

    /// Answers a request the server refuses itself, then ends the connection.
    private func reject(_ status: Int, _ reason: String) -> Ending {
        let body = Array("\(reason)\n".utf8)
        output.append(ResponseHead.serialize(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")],
                                             framing: .length(Int64(body.count)), keepHandlerContentLength: false,
                                             connection: "close"))
        output.append(body)
        try? output.flush()
        return .linger
    }
}
