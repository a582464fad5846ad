#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CCurl
import DouctlSystem

/// An HTTP/1.1 exchange douctl speaks itself, without libcurl (issue 44), on one of two
/// sockets (`Route`): the connection keeper's Unix socket (the keeper holds the TLS
/// connection), or a TCP connection straight to a plain-http origin. A process whose calls
/// all go this way never loads libcurl and its ~30 libraries (11 M of a small call's 15 M
/// instructions). It carries only what it can send exactly as libcurl would (`carries`):
/// the same request bytes at the origin, the same `Transfer` callbacks (so the sink,
/// `headReady`, held bodies and `-v`'s header lines are the libcurl path's), the same
/// errors. Anything else — a body of unknown length, an `Expect`, a proxy — goes through
/// libcurl as before.
final class SocketExchange {
    /// Where this exchange's connections go. One `SocketExchange` serves one route.
    enum Route {
        /// Through the keeper, which holds the connection to the origin.
        case keeper(KeeperLink)
        /// Straight to a plain-http origin over TCP (`DirectConnect`).
        case direct
    }

    /// The connection (to the keeper, or to the origin) this process holds after a whole
    /// exchange, as libcurl keeps its socket: the next request to the same origin rides it with no handshake.
    private var held: (fd: Int32, host: String, port: UInt16, number: Int, h2: Bool, acceptEncoding: String?)?
    /// This exchange's request goes on from the keeper over HTTP/2 (it answered `ok h2 …`):
    /// this side still speaks HTTP/1.1 to it, and the keeper knows where each exchange ends.
    private(set) var overHTTP2 = false
    /// libcurl's connection numbers in `-v` ("#0"), counted the same way.
    private var connections = 0
    /// Body bytes received over the wire in this exchange (encoded): the decompression bomb's measure.
    private(set) var bodyOnTheWire: Int64 = 0
    /// The last reply's version ("HTTP/1.1" or "HTTP/1.0"), for `-v`.
    private var replyVersion = "HTTP/1.1"
    /// Direct: a compressed reply was asked for and no decoder library is installed here, so
    /// such requests go through libcurl (the keeper's link keeps its own answer).
    private(set) var compressedNeedsLibcurl = false

    deinit { if let held { close(held.fd) } }

    enum Result {
        case reply(HTTPResponseHead, held: [UInt8]?, story: String)
        case failure(TransportError, delivered: Int64)
        /// Nothing was sent: the request goes direct (libcurl), as when libcurl's keeper socket is refused.
        case declined
        /// Nothing was sent: the request asks for a compressed reply and the keeper's libcurl
        /// offers an encoding this process cannot decode (or the keeper did not say what it
        /// offers; direct: no decoder library is installed here), so it goes through libcurl,
        /// which decodes its own list.
        case viaLibcurl
    }

    /// libcurl sends a request body over this many bytes with `Expect: 100-continue`.
    static let expectThreshold: Int64 = 1024 * 1024

    /// Whether this request can go without libcurl, byte for byte as libcurl would send it.
    static func carries(_ request: HTTPRequest) -> Bool {
        guard let length = request.body.length, length <= expectThreshold,
              !EscapedBytes.contains(request.url), let url = HTTPURL(request.url), safeTarget(url) else { return false }
        let method = request.method.uppercased()
        guard !method.isEmpty, method.utf8.allSatisfy({ isTokenByte($0) }) else { return false }
        // libcurl sends a HEAD without its body (NOBODY).
        if method == "HEAD" && length > 0 { return false }
        if request.acceptsCompression && request.headers.value(of: "Accept-Encoding") != nil { return false }
        for header in request.headers {
            if HTTPSyntax.headerProblem(name: header.name, value: header.value) != nil { return false }
            let name = header.name.lowercased()
            if name == "expect" || name == "transfer-encoding" || name == "content-length" || name == "connection" { return false }
            if EscapedBytes.contains(header.name) || EscapedBytes.contains(header.value) { return false }
            // libcurl trims and skips some custom header shapes; only plain ones are carried.
            if header.value.utf8.first == 0x20 || header.value.utf8.first == 0x09 || header.value.utf8.last == 0x20 || header.value.utf8.last == 0x09 { return false }
        }
        return true
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || "!#$%&'*+-.^_`|~".utf8.contains(byte)
    }

    /// A path and query libcurl sends unchanged: printable ASCII without spaces, no dot segments.
    private static func safeTarget(_ url: HTTPURL) -> Bool {
        let target = url.path + (url.query.map { "?" + $0 } ?? "")
        guard target.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x23 && $0 != 0x5C }) else { return false }
        for segment in url.path.utf8.split(separator: 0x2F, omittingEmptySubsequences: false) {
            if segment.elementsEqual(".".utf8) || segment.elementsEqual("..".utf8) { return false }
        }
        return url.path.hasPrefix("/")
    }

    /// The request's head as libcurl 7.x/8.x writes it for `setMethodAndBody`'s options: the
    /// request line, the custom Host first (douctl always gives one on this path), then
    /// User-Agent and Accept unless given, the custom headers in order ("Name;" is an empty
    /// value), then for a body Content-Length and libcurl's default Content-Type.
    static func requestHead(_ request: HTTPRequest, headers: [HTTPHeader], userAgent: String, acceptEncoding: String) -> [UInt8] {
        let method = request.method.uppercased()
        let url = HTTPURL(request.url)
        let target = (url?.path ?? "/") + (url?.query.map { "?" + $0 } ?? "")
        var text = "\(method) \(target) HTTP/1.1\r\n"
        let hasBody = !(method == "HEAD" || (request.body == .none && method != "POST" && method != "PUT" && method != "PATCH"))
        var custom = ""
        var host = ""
        for header in headers {
            if HTTPSyntax.caseInsensitiveEquals(header.name, "Host") && host.isEmpty {
                host = header.value.isEmpty ? "\(header.name):\r\n" : "\(header.name): \(header.value)\r\n"
                continue
            }
            custom += header.value.isEmpty ? "\(header.name):\r\n" : "\(header.name): \(header.value)\r\n"
        }
        text += host
        if headers.value(of: "User-Agent") == nil && !userAgent.isEmpty { text += "User-Agent: \(userAgent)\r\n" }
        if headers.value(of: "Accept") == nil { text += "Accept: */*\r\n" }
        if request.acceptsCompression { text += "Accept-Encoding: \(acceptEncoding)\r\n" }
        text += custom
        if hasBody {
            text += "Content-Length: \(request.body.length ?? 0)\r\n"
            if headers.value(of: "Content-Type") == nil { text += "Content-Type: application/x-www-form-urlencoded\r\n" }
        }
        text += "\r\n"
        return Array(text.utf8)
    }

    /// One exchange: connect (or reuse the held connection), send, read the reply into
    /// `transfer`'s callbacks. Through the keeper, its link does the handshake and the bookkeeping.
    func run(
        _ request: HTTPRequest, headers: [HTTPHeader], route: Route, host: String, port: UInt16,
        configuration: HTTPClientConfiguration, transfer: Transfer, holdBody: (HTTPResponseHead) -> Bool
    ) -> Result {
        let timeout = configuration.timeout.isNaN ? 30 : min(max(configuration.timeout, 0.001), 1_000_000)
        overHTTP2 = false
        // What the keeper's libcurl sends for CURLOPT_ACCEPT_ENCODING "" (its handshake says).
        var acceptEncoding: String?
        var reused = false
        var fd: Int32 = -1
        var story = ""
        var number = connections
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        // libcurl's own -v lines about the connection, through the same debug callback.
        func text(_ line: String) {
            guard configuration.verboseLog != nil else { return }
            var bytes = Array((line + "\n").utf8)
            _ = bytes.withUnsafeMutableBytes { debugCallback(nil, CCURLINFO_TEXT, $0.baseAddress?.assumingMemoryBound(to: CChar.self), $0.count, context) }
        }
        // libcurl names an IPv6 literal's host without its brackets.
        let shownHost = TerminalText.escaped(host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host)
        let connectedText = { [self] (address: String) in
            number = connections
            connections += 1
            text("Connected to \(shownHost) (\(address)) port \(port) (#\(number))")
        }
        let shouldStop = { [configuration] in
            progressCallback(context, 0, 0, 0, 0) != 0 || configuration.cancellation.isRequested
        }
        /// A new connection (through the keeper, its handshake), or how the call ends without one.
        func connectAnew() -> Result? {
            switch route {
            case .keeper(let link):
                let connected = {
                    text("  Trying \(link.route.socketPath):0...")
                    connectedText(link.route.socketPath)
                }
                switch link.connectWithoutCurl(host: host, port: port, tls: configuration.tls, timeout: timeout, connected: connected) {
                case .ready(let socket, let text, let h2, let offered):
                    fd = socket
                    story = text
                    overHTTP2 = h2
                    acceptEncoding = offered
                    return nil
                case .declined: return .declined
                case .stopped: return .failure(.stopped(configuration.cancellation.stopReason), delivered: 0)
                }
            case .direct:
                switch DirectConnect.open(host: host, port: port, timeout: timeout, shouldStop: shouldStop, text: text) {
                case .connected(let socket, let address):
                    connectedText(address)
                    fd = socket
                    acceptEncoding = KeeperDecoding.installedEncodings
                    return nil
                case .failed(let error):
                    connections += 1
                    text("Closing connection \(connections - 1)")
                    return .failure(error, delivered: 0)
                case .stopped:
                    return .failure(.stopped(configuration.cancellation.stopReason), delivered: 0)
                }
            }
        }
        // Direct, the encodings offered are this machine's decoders: with none installed, a
        // compressed reply is libcurl's to ask for, before any connection is opened.
        if case .direct = route, request.acceptsCompression, KeeperDecoding.installedEncodings == nil {
            compressedNeedsLibcurl = true
            return .viaLibcurl
        }
        if let held, held.host == host, held.port == port {
            self.held = nil
            fd = held.fd
            number = held.number
            overHTTP2 = held.h2
            acceptEncoding = held.acceptEncoding
            reused = true
            story = route.isKeeper ? "kept open by this process" : "a reused connection"
            text("Re-using existing connection #\(number) with host \(shownHost)")
        } else {
            if let held { close(held.fd) }
            held = nil
            if let refused = connectAnew() { return refused }
        }
        // A compressed reply is asked for with the keeper's libcurl's list, and only when every
        // encoding on it can be decoded here; otherwise nothing is sent on this connection (the
        // keeper keeps it as it was) and libcurl carries the request.
        if request.acceptsCompression {
            guard let offered = acceptEncoding, KeeperDecoding.canDecode(offered) else {
                close(fd)
                switch route {
                case .keeper(let link):
                    link.compressedNeedsLibcurl = true
                    configuration.verboseLog?("* keeper: \(acceptEncoding.map { "its libcurl asks for \($0), not all of which can be decoded here" } ?? "it did not say which encodings its libcurl asks for"); this call goes through libcurl")
                case .direct:
                    compressedNeedsLibcurl = true
                }
                return .viaLibcurl
            }
        }
        let offered = acceptEncoding ?? ""
        let head = Self.requestHead(request, headers: headers, userAgent: configuration.userAgent, acceptEncoding: offered)
        bodyOnTheWire = 0
        transfer.bytesOnTheWire = { [unowned self] in self.bodyOnTheWire }
        var wire = Wire(fd: fd, timeout: timeout, cancellation: configuration.cancellation, progress: { down, downTotal, up, upTotal in
            progressCallback(context, downTotal, down, upTotal, up) == 0
        })
        var outcome = exchange(request, head: head, offered: offered, wire: &wire, transfer: transfer, context: context, holdBody: holdBody, text: text)
        if reused, case .failure(.connectionLost, let delivered) = outcome, delivered == 0, wire.received == 0, !wire.stopped {
            // The held connection had ended (the keeper's idle time): a new one, as libcurl retries a reused one.
            close(fd)
            if let refused = connectAnew() { return refused }
            wire = Wire(fd: fd, timeout: timeout, cancellation: configuration.cancellation, progress: wire.progress)
            outcome = exchange(request, head: head, offered: offered, wire: &wire, transfer: transfer, context: context, holdBody: holdBody, text: text)
        }
        if case .whole(true) = outcome {
            text("Connection #\(number) to host \(shownHost) left intact")
        } else {
            text("Closing connection \(number)")
        }
        transfer.finishLog()
        switch outcome {
        case .whole(let keepAlive):
            if keepAlive {
                // The exchange is whole: the keeper may lend its connection again (over
                // HTTP/2 it reads each exchange itself and takes no mark).
                if route.isKeeper && !overHTTP2 { _ = ccurl_keeper_mark_clean(fd) }
                held = (fd, host, port, number, overHTTP2, acceptEncoding)
            } else {
                close(fd)
            }
            logProtocol(route, story: story, reused: reused, log: configuration.verboseLog)
            var replyHead = transfer.head ?? HTTPResponseHead(status: wire.status)
            if replyHead.status == 0 { replyHead.status = wire.status }
            if overHTTP2 { replyHead = HTTPClient.asHTTP2(replyHead) }
            if replyHead.status == 407 { return .failure(.proxyRefused(host: host), delivered: 0) }
            let heldBody = transfer.heldBody.isEmpty && !holdBody(replyHead) ? nil : transfer.heldBody
            return .reply(replyHead, held: heldBody, story: story)
        case .cutOnPurpose:
            close(fd)
            logProtocol(route, story: story, reused: reused, log: configuration.verboseLog)
            let replyHead = transfer.head ?? HTTPResponseHead(status: wire.status)
            return .reply(overHTTP2 ? HTTPClient.asHTTP2(replyHead) : replyHead, held: transfer.heldBody, story: story)
        case .failure(let error, let delivered):
            // A connection left mid-way is never marked clean: the keeper drops it.
            close(fd)
            return .failure(error, delivered: delivered)
        }
    }

    /// `-v`'s last word on the connection, as `HTTPClient.logProtocol` gives it for libcurl.
    private func logProtocol(_ route: Route, story: String, reused: Bool, log: ((String) -> Void)?) {
        guard let log else { return }
        switch route {
        case .keeper: log("* \(overHTTP2 ? "HTTP/2" : "HTTP/1.1") over the keeper's connection (\(story))")
        case .direct: log("* \(replyVersion) over \(reused ? "a reused connection" : "a new connection")")
        }
    }

    private enum Exchange {
        case whole(keepAlive: Bool)
        case cutOnPurpose
        case failure(TransportError, delivered: Int64)
    }

    private func exchange(
        _ request: HTTPRequest, head: [UInt8], offered: String, wire: inout Wire, transfer: Transfer, context: UnsafeMutableRawPointer,
        holdBody: (HTTPResponseHead) -> Bool, text: (String) -> Void
    ) -> Exchange {
        // Send the head, then the body from the reader (files at flat memory).
        if let failure = wire.send(head) { return .failure(failure, delivered: 0) }
        _ = head.withUnsafeBytes { debugCallback(nil, CCURLINFO_HEADER_OUT, UnsafeMutableRawPointer(mutating: $0.baseAddress)?.assumingMemoryBound(to: CChar.self), $0.count, context) }
        let method = request.method.uppercased()
        let bodyLength = request.body.length ?? 0
        if bodyLength > 0 {
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            var sent: Int64 = 0
            while sent < bodyLength {
                let count = buffer.withUnsafeMutableBytes { transfer.reader.read(into: $0) }
                guard let count else {
                    return .failure(transfer.reader.failure ?? .bodyFile("cannot read the request body"), delivered: 0)
                }
                if count == 0 { break }
                if let failure = buffer.withUnsafeBytes({ wire.send(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }) {
                    return .failure(failure, delivered: 0)
                }
                sent += Int64(count)
                wire.uploaded = sent
                wire.uploadTotal = bodyLength
            }
            text("We are completely uploaded and fine")
        }
        // The reply: heads until a final one (1xx skipped), then its body as framed.
        var parser = ReplyParser()
        while true {
            let headResult = readHead(&wire, &parser, context: context)
            guard case .head(let status, let lines) = headResult else {
                if case .failure(let error) = headResult { return .failure(error, delivered: 0) }
                return .failure(.connectionLost("the reply could not be read"), delivered: 0)
            }
            wire.status = status
            // Each line to libcurl's header callback and to -v, as libcurl gives them.
            for line in lines {
                var bytes = Array(line.utf8) + [0x0D, 0x0A]
                let accepted = bytes.withUnsafeMutableBytes { headerCallback($0.baseAddress?.assumingMemoryBound(to: CChar.self), 1, $0.count, context) }
                _ = bytes.withUnsafeMutableBytes { debugCallback(nil, CCURLINFO_HEADER_IN, $0.baseAddress?.assumingMemoryBound(to: CChar.self), $0.count, context) }
                if accepted != bytes.count {
                    return .failure(transfer.framingError.map { .malformedReply($0) } ?? .malformedReply("the reply's head was refused"), delivered: 0)
                }
            }
            let fields = ReplyParser.fields(lines)
            let interim = status >= 100 && status < 200
            let bodiless = interim || method == "HEAD" || status == 204 || status == 304
            if !bodiless && !fields.chunked && fields.contentLength == nil && !fields.connectionClose {
                text("no chunk, no close, no size. Assume close to signal end")
            }
            var blank: [UInt8] = [0x0D, 0x0A]
            _ = blank.withUnsafeMutableBytes { headerCallback($0.baseAddress?.assumingMemoryBound(to: CChar.self), 1, 2, context) }
            // libcurl's -v shows no empty line after an interim reply.
            if !interim {
                _ = blank.withUnsafeMutableBytes { debugCallback(nil, CCURLINFO_HEADER_IN, $0.baseAddress?.assumingMemoryBound(to: CChar.self), 2, context) }
            }
            if status >= 100 && status < 200 && status != 101 { continue }
            if status == 101 { return .failure(.malformedReply("the server switched protocols (HTTP 101)"), delivered: 0) }
            var keepAlive = parser.http11 ? !fields.connectionClose : fields.keepAlive
            if method == "HEAD" || status == 204 || status == 304 {
                return .whole(keepAlive: keepAlive)
            }
            // libcurl decodes a Content-Encoding only when it asked for one.
            var decoders: [ContentDecoder] = []
            if request.acceptsCompression, let encoding = fields.contentEncoding {
                switch KeeperDecoding.decoders(for: encoding, offered: offered) {
                case .success(let found): decoders = found
                case .failure(let error): return .failure(error, delivered: 0)
                }
            }
            let deliverDecoded: (UnsafeRawBufferPointer) -> Exchange? = { bytes in
                guard !bytes.isEmpty else { return nil }
                let count = writeCallback(UnsafeMutableRawPointer(mutating: bytes.baseAddress)?.assumingMemoryBound(to: CChar.self), 1, bytes.count, context)
                if count == bytes.count { return nil }
                if transfer.heldBodyCut { return .cutOnPurpose }
                if let stop = transfer.stop { return .failure(.stopped(stop), delivered: transfer.deliveredBytes) }
                if transfer.sinkRefused { return .failure(.outputFailed("the output was closed"), delivered: transfer.deliveredBytes) }
                return .failure(.connectionLost("Failure writing output to destination"), delivered: transfer.deliveredBytes)
            }
            let deliver: (UnsafeRawBufferPointer) -> Exchange? = { bytes in
                self.bodyOnTheWire += Int64(bytes.count)
                guard !decoders.isEmpty else { return deliverDecoded(bytes) }
                // Each decoder hands its output on a block at a time (the next decoder, then
                // the sink), so the decompression bomb's bound stops a reply as it decodes.
                var outcome: Exchange?
                func pass(_ level: Int, _ data: UnsafeRawBufferPointer) -> Bool {
                    guard level < decoders.count else {
                        outcome = deliverDecoded(data)
                        return outcome == nil
                    }
                    switch decoders[level].feed(data, { pass(level + 1, $0) }) {
                    case .taken: return true
                    case .refused: return false
                    case .invalid:
                        outcome = .failure(.malformedReply("Error while processing content unencoding: the data is not valid in its Content-Encoding"), delivered: transfer.deliveredBytes)
                        return false
                    }
                }
                _ = pass(0, bytes)
                return outcome
            }
            if fields.chunked {
                return readChunked(&wire, &parser, transfer: transfer, deliver: deliver, keepAlive: keepAlive)
            }
            if let lengthText = fields.contentLength {
                guard let length = Int64(lengthText), length >= 0 else {
                    return .failure(.malformedReply("Invalid Content-Length: \(TerminalText.escaped(String(lengthText.prefix(40))))"), delivered: 0)
                }
                wire.downloadTotal = length
                var left = length
                if !parser.buffer.isEmpty {
                    let take = Int(min(Int64(parser.buffer.count), left))
                    let exchange = parser.buffer.withUnsafeBytes { deliver(UnsafeRawBufferPointer(rebasing: $0[0..<take])) }
                    if let exchange { return exchange }
                    parser.buffer.removeFirst(take)
                    left -= Int64(take)
                    wire.downloaded += Int64(take)
                }
                while left > 0 {
                    switch wire.receive(upTo: Int(min(left, 256 * 1024))) {
                    case .bytes(let chunk):
                        if let exchange = deliver(chunk) { return exchange }
                        left -= Int64(chunk.count)
                        wire.downloaded += Int64(chunk.count)
                    case .closed:
                        return .failure(.connectionLost("the reply ended early (transfer closed with \(left) bytes remaining to read)"), delivered: transfer.deliveredBytes)
                    case .failed(let error):
                        return .failure(error, delivered: transfer.deliveredBytes)
                    }
                }
                // Bytes past the body on a kept-alive connection: the connection is not reused.
                if !parser.buffer.isEmpty { keepAlive = false }
                return .whole(keepAlive: keepAlive)
            }
            // Framed by the connection's end.
            if !parser.buffer.isEmpty {
                let exchange = parser.buffer.withUnsafeBytes { deliver($0) }
                if let exchange { return exchange }
                wire.downloaded += Int64(parser.buffer.count)
                parser.buffer.removeAll()
            }
            while true {
                switch wire.receive(upTo: 256 * 1024) {
                case .bytes(let chunk):
                    if let exchange = deliver(chunk) { return exchange }
                    wire.downloaded += Int64(chunk.count)
                case .closed:
                    return .whole(keepAlive: false)
                case .failed(let error):
                    return .failure(error, delivered: transfer.deliveredBytes)
                }
            }
        }
    }

    private enum HeadRead {
        case head(status: Int, lines: [String])
        case failure(TransportError)
    }

    /// libcurl's bound on a reply head (300 KiB, as libcurl 8's).
    static let maximumHeadBytes = 300 * 1024

    private func readHead(_ wire: inout Wire, _ parser: inout ReplyParser, context: UnsafeMutableRawPointer) -> HeadRead {
        while true {
            switch parser.takeHead() {
            case .head(let version, let status, let lines):
                parser.http11 = version != "HTTP/1.0"
                replyVersion = version
                return .head(status: status, lines: lines)
            case .malformed(let why):
                return .failure(.malformedReply(why))
            case .tooLarge(let size):
                return .failure(.connectionLost("Too large response headers: \(size) > \(Self.maximumHeadBytes)"))
            case .needMore:
                break
            }
            if parser.buffer.count > Self.maximumHeadBytes {
                return .failure(.connectionLost("Too large response headers: \(parser.buffer.count) > \(Self.maximumHeadBytes)"))
            }
            switch wire.receive(upTo: 64 * 1024) {
            case .bytes(let chunk): parser.buffer.append(contentsOf: chunk)
            case .closed:
                if wire.received == 0 || parser.buffer.isEmpty && parser.heads == 0 {
                    return .failure(.connectionLost("the server closed the connection without replying"))
                }
                return .failure(.connectionLost("the reply ended early (the connection closed in the reply's head)"))
            case .failed(let error): return .failure(error)
            }
        }
    }

    private func readChunked(
        _ wire: inout Wire, _ parser: inout ReplyParser, transfer: Transfer,
        deliver: (UnsafeRawBufferPointer) -> Exchange?, keepAlive: Bool
    ) -> Exchange {
        var decoder = ChunkedDecoder()
        var pending = parser.buffer
        parser.buffer.removeAll()
        while true {
            var output: [UInt8] = []
            let state = decoder.feed(pending, into: &output)
            pending.removeAll(keepingCapacity: true)
            if !output.isEmpty {
                if let exchange = output.withUnsafeBytes({ deliver($0) }) { return exchange }
                wire.downloaded += Int64(output.count)
            }
            switch state {
            case .malformed:
                return .failure(.connectionLost("Illegal or missing hexadecimal sequence in chunked-encoding"), delivered: transfer.deliveredBytes)
            case .done(let extra):
                return .whole(keepAlive: keepAlive && extra == 0)
            case .more:
                break
            }
            switch wire.receive(upTo: 256 * 1024) {
            case .bytes(let chunk): pending = Array(chunk)
            case .closed:
                return .failure(.connectionLost("the reply ended early (transfer closed with outstanding read data remaining)"), delivered: transfer.deliveredBytes)
            case .failed(let error):
                return .failure(error, delivered: transfer.deliveredBytes)
            }
        }
    }
}

/// A connection's bytes (the keeper's socket or the origin's) with libcurl's limits: a stall (under `HTTPClient.stallBytesPerSecond`
/// for the whole timeout) ends it, and Ctrl-C or `--max-time` (the progress callback's
/// answer, asked every 50 ms as libcurl does at least once a second) stops it at once.
struct Wire {
    /// `bytes` stay valid until the next `receive`.
    enum Receive { case bytes(UnsafeRawBufferPointer), closed, failed(TransportError) }

    /// One buffer for every read of the exchange: a fresh 256 KiB array per read was
    /// zero-filled each time (and, above malloc's mmap threshold, mapped anew): a 1 GiB
    /// reply read in ~64 KiB pieces wrote 4 GiB of zeros.
    private final class ReceiveBuffer {
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
        deinit { bytes.deallocate() }
    }

    let fd: Int32
    let timeout: Double
    let cancellation: Cancellation
    let progress: (Int64, Int64, Int64, Int64) -> Bool
    var received: Int64 = 0
    var downloaded: Int64 = 0
    var downloadTotal: Int64 = 0
    var uploaded: Int64 = 0
    var uploadTotal: Int64 = 0
    var status = 0
    private(set) var stopped = false
    private var windowStart = currentUnixTime()
    private var windowBytes: Int64 = 0
    private let buffer = ReceiveBuffer()

    init(fd: Int32, timeout: Double, cancellation: Cancellation, progress: @escaping (Int64, Int64, Int64, Int64) -> Bool) {
        self.fd = fd
        self.timeout = timeout
        self.cancellation = cancellation
        self.progress = progress
    }

    /// Nil when allowed to go on; else why not.
    private mutating func check() -> TransportError? {
        if !progress(downloaded, downloadTotal, uploaded, uploadTotal) || cancellation.isRequested {
            stopped = true
            return .stopped(cancellation.stopReason)
        }
        let now = currentUnixTime()
        if now - windowStart >= timeout {
            if Double(windowBytes) < Double(HTTPClient.stallBytesPerSecond) * timeout {
                return .timedOut("Operation too slow. Less than \(HTTPClient.stallBytesPerSecond) bytes/sec transferred the last \(max(1, Int(timeout.rounded(.up)))) seconds")
            }
            windowStart = now
            windowBytes = 0
        }
        return nil
    }

    private mutating func wait(_ events: Int16) -> TransportError? {
        while true {
            if let problem = check() { return problem }
            var ready = pollfd(fd: fd, events: events, revents: 0)
            let count = poll(&ready, 1, 50)
            if count < 0 && errno != EINTR { return .connectionLost("poll failed: \(SystemError("poll").reason)") }
            if count > 0 { return nil }
        }
    }

    mutating func send(_ bytes: [UInt8]) -> TransportError? {
        bytes.withUnsafeBytes { send($0) }
    }

    mutating func send(_ bytes: UnsafeRawBufferPointer) -> TransportError? {
        var offset = 0
        while offset < bytes.count {
            if let problem = wait(Int16(POLLOUT)) { return problem }
            let written = Glibc.send(fd, bytes.baseAddress.map { $0 + offset }, bytes.count - offset, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            if written < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return .connectionLost("Send failure: \(SystemError("send").reason)")
            }
            offset += written
            windowBytes += Int64(written)
        }
        return nil
    }

    mutating func receive(upTo limit: Int) -> Receive {
        if let problem = wait(Int16(POLLIN)) { return .failed(problem) }
        let room = UnsafeMutableRawBufferPointer(rebasing: buffer.bytes[0..<max(1, min(limit, buffer.bytes.count))])
        while true {
            let got = recv(fd, room.baseAddress, room.count, Int32(MSG_DONTWAIT))
            if got < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN {
                    if let problem = wait(Int16(POLLIN)) { return .failed(problem) }
                    continue
                }
                return .failed(.connectionLost("Recv failure: \(SystemError("recv").reason)"))
            }
            if got == 0 { return .closed }
            received += Int64(got)
            windowBytes += Int64(got)
            return .bytes(UnsafeRawBufferPointer(rebasing: room[0..<got]))
        }
    }
}

/// Reply heads out of the bytes received.
struct ReplyParser {
    var buffer: [UInt8] = []
    var http11 = true
    var heads = 0

    enum Take {
        case head(version: String, status: Int, lines: [String])
        case malformed(String)
        /// A whole head larger than libcurl's bound (`end` bytes): refused whatever the
        /// reads that brought it, as libcurl counts the head line by line.
        case tooLarge(Int)
        case needMore
    }

    mutating func takeHead() -> Take {
        if buffer.count >= 5 && !buffer.starts(with: "HTTP/".utf8) || (buffer.count < 5 && !buffer.isEmpty && !"HTTP/".utf8.starts(with: buffer)) {
            return .malformed("no HTTP status line (Received HTTP/0.9 when not allowed)")
        }
        // The head ends at an empty line (CRLF CRLF, or LF LF from a lax server).
        var end: Int?
        var index = 0
        while index < buffer.count {
            if buffer[index] == 0x0A {
                if index + 1 < buffer.count, buffer[index + 1] == 0x0A { end = index + 2; break }
                if index + 2 < buffer.count, buffer[index + 1] == 0x0D, buffer[index + 2] == 0x0A { end = index + 3; break }
            }
            index += 1
        }
        guard let end else { return .needMore }
        if end > SocketExchange.maximumHeadBytes { return .tooLarge(end) }
        var lines: [String] = []
        var start = 0
        for position in 0..<end where buffer[position] == 0x0A {
            let stop = position > start && buffer[position - 1] == 0x0D ? position - 1 : position
            lines.append(String(decoding: buffer[start..<stop], as: UTF8.self))
            start = position + 1
        }
        buffer.removeFirst(end)
        while lines.last == "" { lines.removeLast() }
        guard let statusLine = lines.first else { return .malformed("no HTTP status line") }
        let parts = statusLine.utf8.split(separator: 0x20, maxSplits: 2, omittingEmptySubsequences: true).map { String(decoding: $0, as: UTF8.self) }
        let version = parts.first ?? ""
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            return .malformed("Unsupported HTTP version in response")
        }
        guard parts.count > 1, parts[1].utf8.count == 3, parts[1].utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let status = Int(parts[1]), status >= 100 else {
            return .malformed("Unsupported response code in HTTP response")
        }
        for line in lines.dropFirst() where !line.utf8.contains(0x3A) {
            return .malformed("Header without colon")
        }
        heads += 1
        return .head(version: version, status: status, lines: lines)
    }

    struct Fields {
        var contentLength: String?
        var contentEncoding: String?
        var chunked = false
        var connectionClose = false
        var keepAlive = false
    }

    static func fields(_ lines: [String]) -> Fields {
        var fields = Fields()
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(ofASCII: ":") else { continue }
            let name = line[..<colon]
            let value = String(HTTPSyntax.trimmingWhitespace(line[line.index(afterASCII: colon)...]))
            let tokens = value.utf8.split(separator: 0x2C).map { HTTPSyntax.lowercased(HTTPSyntax.trimmingWhitespace(Substring(String(decoding: $0, as: UTF8.self)))) }
            if HTTPSyntax.caseInsensitiveEquals(String(name), "Content-Length") {
                fields.contentLength = tokens.first.map { String($0) } ?? value
            } else if HTTPSyntax.caseInsensitiveEquals(String(name), "Content-Encoding") {
                fields.contentEncoding = fields.contentEncoding.map { $0 + ", " + value } ?? value
            } else if HTTPSyntax.caseInsensitiveEquals(String(name), "Transfer-Encoding") {
                fields.chunked = tokens.last == "chunked"
            } else if HTTPSyntax.caseInsensitiveEquals(String(name), "Connection") {
                if tokens.contains("close") { fields.connectionClose = true }
                if tokens.contains("keep-alive") { fields.keepAlive = true }
            }
        }
        if fields.connectionClose { fields.keepAlive = false }
        return fields
    }
}

/// RFC 9112 §7.1's chunked coding, fed in pieces.
struct ChunkedDecoder {
    enum State { case more, done(extra: Int), malformed }
    private enum Phase { case size, parameters, sizeLF, data, dataCR, dataLF, trailer, trailerLF, done }
    private var phase = Phase.size
    private var size: Int64 = 0
    private var digits = 0
    private var trailerLineLength = 0

    mutating func feed(_ bytes: [UInt8], into output: inout [UInt8]) -> State {
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch phase {
            case .size:
                if let value = Self.hex(byte) {
                    guard digits < 15 else { return .malformed }
                    size = size * 16 + Int64(value)
                    digits += 1
                } else if digits > 0 && (byte == 0x3B || byte == 0x20 || byte == 0x09) {
                    phase = .parameters
                } else if digits > 0 && byte == 0x0D {
                    phase = .sizeLF
                } else if digits > 0 && byte == 0x0A {
                    phase = size == 0 ? .trailer : .data
                } else {
                    return .malformed
                }
            case .parameters:
                if byte == 0x0A { phase = size == 0 ? .trailer : .data }
            case .sizeLF:
                guard byte == 0x0A else { return .malformed }
                phase = size == 0 ? .trailer : .data
                trailerLineLength = 0
            case .data:
                let take = Int(min(Int64(bytes.count - index), size))
                output.append(contentsOf: bytes[index..<index + take])
                size -= Int64(take)
                index += take
                if size == 0 { phase = .dataCR }
                continue
            case .dataCR:
                if byte == 0x0D { phase = .dataLF } else if byte == 0x0A { phase = .size; digits = 0 } else { return .malformed }
            case .dataLF:
                guard byte == 0x0A else { return .malformed }
                phase = .size
                digits = 0
            case .trailer:
                if byte == 0x0A {
                    if trailerLineLength == 0 {
                        phase = .done
                        return .done(extra: bytes.count - index - 1)
                    }
                    trailerLineLength = 0
                } else if byte != 0x0D {
                    trailerLineLength += 1
                    guard trailerLineLength < 100 * 1024 else { return .malformed }
                }
            case .trailerLF, .done:
                return .done(extra: bytes.count - index)
            }
            index += 1
        }
        if case .done = phase { return .done(extra: 0) }
        return .more
    }

    private static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: return byte - 0x30
        case 0x41...0x46: return byte - 0x41 + 10
        case 0x61...0x66: return byte - 0x61 + 10
        default: return nil
        }
    }
}

extension KeeperLink {
    enum Connection {
        case ready(Int32, story: String, h2: Bool, acceptEncoding: String?)
        case declined
        case stopped
    }

    /// `openSocket` and `ready` for a request carried without libcurl: a connection to the
    /// keeper that has done its handshake for `host:port`, or why not (the same bookkeeping:
    /// a keeper that is gone, stale or not ours makes this process go direct).
    func connectWithoutCurl(host: String, port: UInt16, tls: TLSOptions, timeout: Double, connected: () -> Void = {}) -> Connection {
        guard !unusable else { return .declined }
        var info = stat()
        guard lstat(route.socketPath, &info) == 0 else {
            unusable = true
            startKeeper(why: "none is running")
            return .declined
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .declined }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let path = Array(route.socketPath.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.count < capacity else {
            close(fd)
            unusable = true
            return .declined
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.enumerated() { raw[index] = byte }
        }
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard status == 0 else {
            close(fd)
            // The socket file is there but nobody listens (a keeper that died).
            noteConnectFailure()
            return .declined
        }
        connected()
        switch handshake(fd, (host, port, tls, timeout)) {
        case .ready(let story, let h2, let acceptEncoding):
            return .ready(fd, story: story, h2: h2, acceptEncoding: acceptEncoding)
        case .declined(let why, let forGood):
            close(fd)
            if forGood { unusable = true }
            log?("* keeper: \(why); going direct")
            return .declined
        case .stopped:
            close(fd)
            return .stopped
        }
    }
}

extension SocketExchange.Route {
    var isKeeper: Bool {
        if case .keeper = self { return true }
        return false
    }
}
