#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CCurl
import DouctlSystem

/// Issue 44: the keeper's HTTP/2 side. An HTTP/2 connection cannot be relayed byte for
/// byte to several clients (its HPACK tables, stream ids and SETTINGS belong to one
/// endpoint), so for an origin that negotiates h2 the keeper ends HTTP itself: each client
/// still speaks HTTP/1.1 over its Unix socket, and `KeeperH2Origin` reads each request
/// (method, target, headers, a body by Content-Length or chunked, streamed), sends it as a
/// stream on one multiplexed connection it holds (libcurl's multi handle with
/// CURLPIPE_MULTIPLEX and CURLOPT_PIPEWAIT), and streams the reply back as HTTP/1.1. Parallel
/// douctl processes then share one TLS connection. It follows no redirects and adds no
/// credentials: each request brings its own headers, and the reply goes back as it came.

/// One request head a client sent, as the keeper carries it on.
struct KeeperH2Request: Equatable {
    enum Body: Equatable {
        case none
        case length(Int64)
        case chunked
    }

    var method: String
    var target: String
    /// The end-to-end headers, in order (hop-by-hop ones and the framing dropped).
    var headers: [(name: String, value: String)]
    var body: Body
    /// The client waits for `100 Continue` before its body.
    var expectsContinue: Bool

    static func == (a: Self, b: Self) -> Bool {
        a.method == b.method && a.target == b.target && a.body == b.body && a.expectsContinue == b.expectsContinue
            && a.headers.map { [$0.name, $0.value] } == b.headers.map { [$0.name, $0.value] }
    }

    /// Headers that describe one HTTP/1.1 connection, not the request: never sent on.
    static let hopByHop: Set<String> = ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "content-length", "trailer"]

    /// The head's bytes (up to and without the blank line), or nil when it is not one this
    /// path carries: not HTTP/1.1, a target not in origin form, a framing it cannot read
    /// (a transfer coding other than chunked, two different lengths).
    static func parse(_ head: ArraySlice<UInt8>) -> KeeperH2Request? {
        let text = String(decoding: head, as: UTF8.self)
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        guard !lines.isEmpty else { return nil }
        let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: false)
        guard requestLine.count == 3, requestLine[2] == "HTTP/1.1", !requestLine[0].isEmpty,
              requestLine[0].utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }),
              requestLine[1].hasPrefix("/"), !requestLine[1].utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F }) else { return nil }
        var request = KeeperH2Request(method: String(requestLine[0]), target: String(requestLine[1]), headers: [], body: .none, expectsContinue: false)
        var length: Int64?
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else { return nil }
            let name = String(line[..<colon])
            guard !name.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) else { return nil }
            let value = String(line[line.index(after: colon)...]).trimmingSpaces()
            guard !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else { return nil }
            switch name.lowercased() {
            case "content-length":
                guard let number = Int64(value), number >= 0, length == nil || length == number else { return nil }
                length = number
            case "transfer-encoding":
                guard value.lowercased() == "chunked" else { return nil }
                request.body = .chunked
            case "expect" where value.lowercased() == "100-continue":
                request.expectsContinue = true
            case "expect":
                request.headers.append((name, value))
            case let lowered where hopByHop.contains(lowered):
                continue
            default:
                request.headers.append((name, value))
            }
        }
        if request.body == .chunked {
            guard length == nil else { return nil }
        } else if let length {
            request.body = .length(length)
        }
        return request
    }

    /// What libcurl is told, besides the URL: the headers as its list's lines (an empty
    /// value as `Name;`, and `Name:` for each header libcurl would add of its own that the
    /// client did not send, so the origin sees what a direct call sends).
    var headerLines: [String] {
        var lines = headers.map { $0.value.isEmpty ? "\($0.name);" : "\($0.name): \($0.value)" }
        let names = Set(headers.map { $0.name.lowercased() })
        if !names.contains("accept") { lines.append("Accept:") }
        if hasBody && !names.contains("content-type") { lines.append("Content-Type:") }
        if !names.contains("expect") { lines.append("Expect:") }
        return lines
    }

    /// Whether the request carries a body (libcurl is then told POST, renamed).
    var hasBody: Bool {
        switch body {
        case .none: return false
        case .chunked: return true
        case .length(let count): return count > 0 || ["POST", "PUT", "PATCH"].contains(method.uppercased())
        }
    }
}

/// The reply's head as the keeper sends it back over HTTP/1.1, from the lines libcurl
/// passed up (`HTTP/2 200`, `name: value`).
struct KeeperH2ReplyHead: Equatable {
    enum Framing: Equatable {
        /// HEAD, 204, 304: no body follows whatever the headers say.
        case none
        /// Content-Length as the origin said: the bytes go back as they come.
        case length
        /// No length: chunked, so an end cut short is seen as one.
        case chunked
    }

    var bytes: [UInt8]
    var framing: Framing

    /// `closing`: the client's body was not all read (the origin answered early), so the
    /// connection closes after this reply (and libcurl stops sending on a 3xx-5xx).
    static func make(status: Int, headers: [(String, String)], method: String, closing: Bool) -> KeeperH2ReplyHead {
        var text = "HTTP/1.1 \(status) \(StatusReason.phrase(for: status))\r\n"
        let noBody = method.uppercased() == "HEAD" || status == 204 || status == 304 || status < 200
        var hasLength = false
        for (name, value) in headers {
            let lowered = name.lowercased()
            if lowered == "content-length" { hasLength = true }
            if ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"].contains(lowered) { continue }
            text += "\(name): \(value)\r\n"
        }
        let framing: Framing = noBody ? .none : hasLength ? .length : .chunked
        if framing == .chunked { text += "transfer-encoding: chunked\r\n" }
        if closing { text += "connection: close\r\n" }
        text += "\r\n"
        return KeeperH2ReplyHead(bytes: Array(text.utf8), framing: framing)
    }
}

/// A chunked request body, decoded as its bytes arrive (RFC 9112 §7.1).
struct KeeperChunkedDecoder {
    private enum State { case size, data(Int64), dataEnd, trailer, done }
    private var state = State.size
    private var line: [UInt8] = []
    var isDone: Bool { if case .done = state { return true } else { return false } }

    /// Decodes what it can of `input` from `offset`, appending the payload to `output`;
    /// returns where it stopped, or nil when the framing is broken.
    mutating func feed(_ input: [UInt8], from offset: Int, into output: inout [UInt8]) -> Int? {
        var index = offset
        while index < input.count {
            switch state {
            case .size, .trailer, .dataEnd:
                let byte = input[index]
                index += 1
                if byte != 0x0A {
                    line.append(byte)
                    if line.count > 4096 { return nil }
                    continue
                }
                if line.last == 0x0D { line.removeLast() }
                let text = String(decoding: line, as: UTF8.self)
                line.removeAll(keepingCapacity: true)
                switch state {
                case .size:
                    let digits = text.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first.map { $0.trimmingSpaces() } ?? ""
                    guard !digits.isEmpty, digits.count <= 15, let size = Int64(digits, radix: 16), size >= 0 else { return nil }
                    state = size == 0 ? .trailer : .data(size)
                case .dataEnd:
                    guard text.isEmpty else { return nil }
                    state = .size
                default:
                    if text.isEmpty { state = .done }
                }
            case .data(let left):
                let take = Int(min(left, Int64(input.count - index)))
                output.append(contentsOf: input[index..<index + take])
                index += take
                state = left - Int64(take) == 0 ? .dataEnd : .data(left - Int64(take))
            case .done:
                return index
            }
        }
        return index
    }
}

extension StringProtocol {
    fileprivate func trimmingSpaces() -> String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return String(slice)
    }
}

/// One origin's (and TLS setting's) HTTP/2 connection and the clients whose requests ride
/// it, on one thread of its own that drives libcurl's multi handle and every client socket.
final class KeeperH2Origin: @unchecked Sendable {
    let origin: String
    private let host: String
    private let port: UInt16
    private let fields: [String: String]
    private let idleSeconds: Double
    private let multi: UnsafeMutableRawPointer
    /// Takes a client whose request this path cannot carry, with the bytes already read
    /// from it: the keeper relays it over HTTP/1.1 instead.
    private let fallback: @Sendable (Int32, [UInt8]) -> Void

    private struct Shared {
        var incoming: [Int32] = []
        var closed = false
        /// A transfer could not reach the origin at all: this connection ends, and the
        /// keeper asks ALPN again next time (so a call finds out why, going direct).
        var lost = false
        var stopping = false
        var clients = 0
        var inFlight = 0
        var streams = 0
        var connections = 0
        var idleSince = currentUnixTime()
    }

    private let shared = LockedValue(Shared())
    /// Bytes a client's reply may hold here before its stream is paused (flat memory for a
    /// reply of any size to a slow reader).
    static let replyBuffer = 1 << 20
    /// Request body bytes read ahead of libcurl.
    static let bodyBuffer = 1 << 20

    private init(origin: String, host: String, port: UInt16, fields: [String: String], idleSeconds: Double, multi: UnsafeMutableRawPointer, fallback: @escaping @Sendable (Int32, [UInt8]) -> Void) {
        self.fallback = fallback
        self.origin = origin
        self.host = host
        self.port = port
        self.fields = fields
        self.idleSeconds = idleSeconds
        self.multi = multi
    }

    /// A new origin's engine with its thread running, or nil (libcurl lacks the multi
    /// interface this needs, or no thread could start): the caller relays HTTP/1.1 instead.
    static func start(origin: String, host: String, port: UInt16, fields: [String: String], idleSeconds: Double,
                      fallback: @escaping @Sendable (Int32, [UInt8]) -> Void, onExit: @escaping @Sendable (KeeperH2Origin) -> Void) -> KeeperH2Origin? {
        guard let multi = ccurl_multi_init_multiplexed() else { return nil }
        let engine = KeeperH2Origin(origin: origin, host: host, port: port, fields: fields, idleSeconds: idleSeconds, multi: multi, fallback: fallback)
        do {
            try startDetachedThread(stackSize: 512 << 10) {
                engine.run()
                onExit(engine)
            }
        } catch {
            ccurl_multi_cleanup(multi)
            return nil
        }
        return engine
    }

    /// Takes `client` (its handshake answered): its requests now ride this connection. False
    /// when this engine is ending (the caller gives the client to a new one).
    func accept(_ client: Int32) -> Bool {
        let taken = shared.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.incoming.append(client)
            state.clients += 1
            return true
        }
        if taken { _ = ccurl_multi_wakeup(multi) }
        return taken
    }

    /// The story a client's `-v` tells: whether a connection was already open.
    var story: String {
        shared.withLock { state in
            state.streams == 0 ? "new" : "reused: stream \(state.streams + 1) on it, \(state.inFlight) more in flight"
        }
    }

    var isBusy: Bool { shared.withLock { $0.clients > 0 } }
    var lostOrigin: Bool { shared.withLock { $0.lost } }
    var isClosed: Bool { shared.withLock { $0.closed } }

    /// libcurl's results that mean the origin was not reached (resolving, connecting, the
    /// TLS handshake), never a failure mid-stream.
    static let unreachable: Set<Int32> = [6, 7, 28, 35, 58, 60, 77, 83, 90, 91, 98]

    fileprivate func noteUnreachable() {
        shared.withLock {
            $0.lost = true
            $0.closed = true
        }
    }

    func stop() {
        shared.withLock { $0.stopping = true }
        _ = ccurl_multi_wakeup(multi)
    }

    /// `keeper status`'s line for it.
    func statusLine(now: Double) -> String {
        shared.withLock { state in
            "held \(origin) (HTTP/2, \(state.streams) streams, \(state.inFlight) in flight, \(state.clients) clients, \(state.connections) connections opened, idle \(formatSeconds(state.clients > 0 ? 0 : now - state.idleSince)))"
        }
    }

    // MARK: - the loop

    private var clients: [Int32: KeeperH2Client] = [:]

    private func run() {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let (arrived, stopping) = shared.withLock { state -> ([Int32], Bool) in
                defer { state.incoming.removeAll() }
                return (state.incoming, state.stopping)
            }
            for fd in arrived { clients[fd] = KeeperH2Client(fd: fd, engine: self) }
            if stopping { break }
            let finished = shared.withLock { state -> Bool in
                if state.closed && clients.isEmpty { return true }
                if clients.isEmpty && state.incoming.isEmpty && currentUnixTime() - state.idleSince >= idleSeconds {
                    state.closed = true
                    return true
                }
                return false
            }
            if finished { break }
            var waits: [pollfd] = clients.values.map { pollfd(fd: $0.fd, events: $0.pollEvents, revents: 0) }
            _ = waits.withUnsafeMutableBufferPointer { ccurl_multi_poll(multi, $0.baseAddress, UInt32($0.count), 250) }
            for wait in waits where wait.revents != 0 {
                guard let client = clients[wait.fd] else { continue }
                if wait.revents & Int16(POLLOUT) != 0 { client.flush() }
                if wait.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 { client.readable(&buffer) }
                settle(client)
            }
            var running: Int32 = 0
            _ = ccurl_multi_perform(multi, &running)
            var result: Int32 = 0
            while let easy = ccurl_multi_done(multi, &result) {
                if let client = clients.values.first(where: { $0.easy == easy }) {
                    client.finished(result: result)
                    settle(client)
                }
            }
            for client in Array(clients.values) {
                client.resumeIfDrained()
                settle(client)
            }
        }
        for client in Array(clients.values) { drop(client) }
        for fd in shared.withLock({ $0.incoming }) { close(fd) }
        shared.withLock {
            $0.closed = true
            $0.incoming = []
            $0.clients = 0
        }
        ccurl_multi_cleanup(multi)
    }

    /// Starts the transfer of a client's new request, ends a client that is done.
    private func settle(_ client: KeeperH2Client) {
        if client.wantsTransfer {
            client.wantsTransfer = false
            if let easy = makeEasy(for: client), ccurl_multi_add(multi, easy) == CCURLE_OK {
                client.easy = easy
                shared.withLock { $0.inFlight += 1 }
            } else {
                client.failed = true
            }
        }
        if let unread = client.handBack {
            // Not a request this path carries (nothing of it was sent): the client leaves
            // this connection for an HTTP/1.1 relay, the bytes it sent going first.
            client.freeHeaders()
            clients[client.fd] = nil
            shared.withLock {
                $0.clients -= 1
                if $0.clients == 0 { $0.idleSince = currentUnixTime() }
            }
            fallback(client.fd, unread)
            return
        }
        if client.failed { drop(client) }
    }

    private func drop(_ client: KeeperH2Client) {
        if let easy = client.easy {
            // Removing a transfer mid-way resets its stream only; the connection stays.
            _ = ccurl_multi_remove(multi, easy)
            ccurl_easy_cleanup(easy)
            client.easy = nil
            shared.withLock { $0.inFlight -= 1 }
        }
        client.freeHeaders()
        close(client.fd)
        clients[client.fd] = nil
        shared.withLock {
            $0.clients -= 1
            if $0.clients == 0 { $0.idleSince = currentUnixTime() }
        }
    }

    /// A finished transfer's handle leaves the multi handle (its connection stays in the pool).
    fileprivate func retire(_ easy: UnsafeMutableRawPointer, connects: Int) {
        _ = ccurl_multi_remove(multi, easy)
        ccurl_easy_cleanup(easy)
        shared.withLock {
            $0.inFlight -= 1
            $0.streams += 1
            $0.connections += connects
        }
    }

    private func makeEasy(for client: KeeperH2Client) -> UnsafeMutableRawPointer? {
        guard let request = client.request, let handle = ccurl_easy_init() else { return nil }
        var problems = 0
        func check(_ result: Int32) { if result != CCURLE_OK { problems += 1 } }
        let authority = host.contains(":") ? "[\(host)]" : host
        check(ccurl_setopt_string(handle, CCURLOPT_URL, "https://\(authority):\(port)\(request.target)"))
        check(ccurl_setopt_long(handle, CCURLOPT_HTTP_VERSION, Int(CCURL_HTTP_VERSION_2TLS)))
        check(ccurl_setopt_long(handle, CCURLOPT_PIPEWAIT, 1))
        check(ccurl_setopt_long(handle, CCURLOPT_PATH_AS_IS, 1))
        check(ccurl_setopt_long(handle, CCURLOPT_NOSIGNAL, 1))
        check(ccurl_setopt_long(handle, CCURLOPT_SSLVERSION, Int(CCURL_SSLVERSION_TLSv1_2)))
        check(ccurl_setopt_long(handle, CCURLOPT_TCP_NODELAY, 1))
        check(ccurl_setopt_string(handle, CCURLOPT_PROXY, ""))
        check(ccurl_setopt_long(handle, CCURLOPT_FOLLOWLOCATION, 0))
        KeeperServer.applyConnectionFields(fields, to: handle, check: check)
        let method = request.method.uppercased()
        if request.hasBody {
            check(ccurl_setopt_long(handle, CCURLOPT_POST, 1))
            if case .length(let count) = request.body { check(ccurl_setopt_offset(handle, CCURLOPT_POSTFIELDSIZE_LARGE, count)) }
            check(ccurl_setopt_data_callback(handle, CCURLOPT_READFUNCTION, keeperH2ReadCallback))
            if request.method != "POST" { check(ccurl_setopt_string(handle, CCURLOPT_CUSTOMREQUEST, request.method)) }
        } else if method == "HEAD" {
            check(ccurl_setopt_long(handle, CCURLOPT_NOBODY, 1))
            if request.method != "HEAD" { check(ccurl_setopt_string(handle, CCURLOPT_CUSTOMREQUEST, request.method)) }
        } else {
            check(ccurl_setopt_long(handle, CCURLOPT_HTTPGET, 1))
            if request.method != "GET" { check(ccurl_setopt_string(handle, CCURLOPT_CUSTOMREQUEST, request.method)) }
        }
        var list: UnsafeMutableRawPointer?
        for line in request.headerLines { list = line.withCString { ccurl_slist_append(list, $0) } }
        client.headerList = list
        if list != nil { check(ccurl_setopt_pointer(handle, CCURLOPT_HTTPHEADER, list)) }
        let context = Unmanaged.passUnretained(client).toOpaque()
        check(ccurl_setopt_pointer(handle, CCURLOPT_READDATA, context))
        check(ccurl_setopt_data_callback(handle, CCURLOPT_WRITEFUNCTION, keeperH2WriteCallback))
        check(ccurl_setopt_pointer(handle, CCURLOPT_WRITEDATA, context))
        check(ccurl_setopt_data_callback(handle, CCURLOPT_HEADERFUNCTION, keeperH2HeaderCallback))
        check(ccurl_setopt_pointer(handle, CCURLOPT_HEADERDATA, context))
        guard problems == 0 else {
            ccurl_easy_cleanup(handle)
            return nil
        }
        return handle
    }
}

/// One client socket on an HTTP/2 origin: its requests one after another (HTTP/1.1
/// keep-alive), each a stream on the origin's connection while it lasts.
final class KeeperH2Client {
    let fd: Int32
    private unowned let engine: KeeperH2Origin
    var easy: UnsafeMutableRawPointer?
    var headerList: UnsafeMutableRawPointer?
    /// The request being carried.
    var request: KeeperH2Request?
    /// Its head has been read: the loop starts its transfer.
    var wantsTransfer = false
    /// Something broke (the client went away, bad framing): the client is closed.
    var failed = false
    /// A request head this path cannot carry, before any of it was sent: the bytes read
    /// (the head and what followed), for the HTTP/1.1 relay.
    var handBack: [UInt8]?

    /// Bytes read from the client not yet taken (a head in the making, or body bytes).
    private var input: [UInt8] = []
    /// Request body bytes decoded, waiting for libcurl's read callback.
    private var body = ReadAheadBuffer(dropTakenAfter: KeeperH2Origin.bodyBuffer)
    private var bodyLeft: Int64 = 0
    private var chunked: KeeperChunkedDecoder?
    private var bodyComplete = true
    /// Reply bytes not yet written to the client.
    private var output: [UInt8] = []
    private var outputOffset = 0
    private var sendPaused = false
    private var receivePaused = false
    /// The reply's head as it comes (1xx heads are skipped).
    private var status = 0
    private var replyHeaders: [(String, String)] = []
    private var framing: KeeperH2ReplyHead.Framing?
    private var closeAfterReply = false

    init(fd: Int32, engine: KeeperH2Origin) {
        self.fd = fd
        self.engine = engine
    }

    var pollEvents: Int16 {
        var events: Int32 = 0
        if outputPending > 0 { events |= Int32(POLLOUT) }
        if wantsInput { events |= Int32(POLLIN) }
        return Int16(events)
    }

    private var outputPending: Int { output.count - outputOffset }

    /// Reading now: a head, the body libcurl will ask for, or (during a reply) only to see
    /// the client leave.
    private var wantsInput: Bool {
        if request == nil { return input.count < 64 << 10 }
        if !bodyComplete { return body.pending < KeeperH2Origin.bodyBuffer }
        return input.count < 64 << 10
    }

    func freeHeaders() {
        ccurl_slist_free_all(headerList)
        headerList = nil
    }

    func readable(_ buffer: inout [UInt8]) {
        let got = buffer.withUnsafeMutableBytes { ccurl_keeper_read(fd, $0.baseAddress, $0.count) }
        if got == -Int(EAGAIN) { return }
        guard got > 0 else {
            // The client closed (Ctrl-C, --max-time, or it is done): its stream, if any,
            // is reset; the connection stays for the others.
            failed = true
            return
        }
        input.append(contentsOf: buffer[..<got])
        advance()
    }

    /// Takes what `input` holds: a new request's head, or body bytes.
    private func advance() {
        if request == nil {
            guard let end = input.firstRange(of: [0x0D, 0x0A, 0x0D, 0x0A]) else {
                if input.count >= 64 << 10 { failed = true }
                return
            }
            guard let parsed = KeeperH2Request.parse(input[..<end.lowerBound]) else {
                // Only while no reply is on its way to this client (a reply still being
                // written would be cut); then it is closed.
                if outputPending == 0 { handBack = input } else { failed = true }
                return
            }
            input.removeSubrange(..<end.upperBound)
            request = parsed
            status = 0
            replyHeaders = []
            framing = nil
            closeAfterReply = false
            body.removeAll()
            switch parsed.body {
            case .none:
                bodyComplete = true
            case .length(let count):
                bodyLeft = count
                bodyComplete = count == 0
            case .chunked:
                chunked = KeeperChunkedDecoder()
                bodyComplete = false
            }
            if parsed.expectsContinue { queue(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) }
            wantsTransfer = true
        }
        guard !bodyComplete, !input.isEmpty else { return }
        if var decoder = chunked {
            guard let used = decoder.feed(input, from: 0, into: &body.bytes) else {
                failed = true
                return
            }
            input.removeSubrange(..<used)
            chunked = decoder
            if decoder.isDone {
                bodyComplete = true
                chunked = nil
            }
        } else {
            let take = Int(min(bodyLeft, Int64(input.count)))
            body.bytes.append(contentsOf: input[..<take])
            input.removeSubrange(..<take)
            bodyLeft -= Int64(take)
            bodyComplete = bodyLeft == 0
        }
        if sendPaused, let easy {
            sendPaused = false
            _ = ccurl_easy_pause(easy, receivePaused ? 1 : 0)
        }
    }

    // MARK: libcurl's callbacks

    func read(into destination: UnsafeMutablePointer<CChar>, _ size: Int) -> Int {
        if body.pending == 0 {
            if bodyComplete { return 0 }
            sendPaused = true
            return Int(CCURL_READFUNC_PAUSE)
        }
        return body.take(into: UnsafeMutableRawPointer(destination), upTo: size)
    }

    func header(_ line: UnsafeRawBufferPointer) {
        guard framing == nil else { return }  // trailers: not carried
        // Bytes, not Characters: "\r\n" is one Character, and hasSuffix("\n") misses it.
        var end = line.count
        while end > 0 && (line[end - 1] == 0x0A || line[end - 1] == 0x0D) { end -= 1 }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: line[..<end]), as: UTF8.self)
        if text.hasPrefix("HTTP/") {
            let parts = text.split(separator: " ")
            status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            replyHeaders = []
            return
        }
        if text.isEmpty {
            guard status >= 200 else { return }  // 1xx: another head follows
            let head = KeeperH2ReplyHead.make(status: status, headers: replyHeaders, method: request?.method ?? "GET", closing: !bodyComplete)
            closeAfterReply = !bodyComplete
            framing = head.framing
            queue(head.bytes)
            return
        }
        guard let colon = text.firstIndex(of: ":") else { return }
        replyHeaders.append((String(text[..<colon]), String(text[text.index(after: colon)...]).trimmingSpaces()))
    }

    func write(_ data: UnsafeRawBufferPointer) -> Int {
        if outputPending >= KeeperH2Origin.replyBuffer {
            flush()
            if outputPending >= KeeperH2Origin.replyBuffer {
                receivePaused = true
                return Int(CCURL_WRITEFUNC_PAUSE)
            }
        }
        guard !data.isEmpty, framing != KeeperH2ReplyHead.Framing.none else { return data.count }
        if framing == .chunked { output.append(contentsOf: Array((String(data.count, radix: 16) + "\r\n").utf8)) }
        output.append(contentsOf: data)
        if framing == .chunked { output.append(contentsOf: [0x0D, 0x0A]) }
        flush()
        return data.count
    }

    /// The transfer ended: a whole reply goes back and the client may send its next
    /// request; any failure closes the client, so its reply is seen cut short.
    func finished(result: Int32) {
        guard let easy else { return }
        var connects = 0
        ccurl_getinfo_long(easy, CCURLINFO_NUM_CONNECTS, &connects)
        self.easy = nil
        engine.retire(easy, connects: connects)
        freeHeaders()
        sendPaused = false
        receivePaused = false
        guard result == CCURLE_OK, framing != nil else {
            if framing == nil && KeeperH2Origin.unreachable.contains(result) { engine.noteUnreachable() }
            flush()
            failed = true
            return
        }
        if framing == .chunked { queue(Array("0\r\n\r\n".utf8)) }
        request = nil
        flush()
        if closeAfterReply {
            failed = true
            return
        }
        // A next request may already be here.
        if !input.isEmpty { advance() }
    }

    private func queue(_ bytes: [UInt8]) {
        output.append(contentsOf: bytes)
        flush()
    }

    func flush() {
        while outputPending > 0 {
            let written = output.withUnsafeBytes { send(fd, $0.baseAddress.map { $0 + outputOffset }, outputPending, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if written < 0 && errno == EINTR { continue }
            if written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
            guard written > 0 else {
                failed = true
                output.removeAll()
                outputOffset = 0
                return
            }
            outputOffset += written
        }
        if outputOffset == output.count {
            output.removeAll(keepingCapacity: output.capacity <= 2 * KeeperH2Origin.replyBuffer)
            outputOffset = 0
        } else if outputOffset > KeeperH2Origin.replyBuffer {
            output.removeSubrange(..<outputOffset)
            outputOffset = 0
        }
    }

    /// A reply paused for a slow client goes on once the client has taken most of it.
    func resumeIfDrained() {
        guard receivePaused, let easy, outputPending < KeeperH2Origin.replyBuffer / 2 else { return }
        receivePaused = false
        _ = ccurl_easy_pause(easy, sendPaused ? 4 : 0)
    }
}

extension Array where Element == UInt8 {
    fileprivate func firstRange(of pattern: [UInt8]) -> Range<Int>? {
        guard count >= pattern.count else { return nil }
        var index = 0
        while index + pattern.count <= count {
            if self[index] == pattern[0] && self[index..<index + pattern.count].elementsEqual(pattern) { return index..<index + pattern.count }
            index += 1
        }
        return nil
    }
}

// MARK: - C entry points (the client comes in as the context pointer)

let keeperH2ReadCallback: ccurl_data_callback = { data, size, count, context in
    guard let data, let context else { return Int(CCURL_READFUNC_ABORT) }
    return Unmanaged<KeeperH2Client>.fromOpaque(context).takeUnretainedValue().read(into: data, size * count)
}

let keeperH2WriteCallback: ccurl_data_callback = { data, size, count, context in
    guard let context else { return 0 }
    return Unmanaged<KeeperH2Client>.fromOpaque(context).takeUnretainedValue().write(UnsafeRawBufferPointer(start: data, count: size * count))
}

let keeperH2HeaderCallback: ccurl_data_callback = { data, size, count, context in
    guard let context else { return 0 }
    Unmanaged<KeeperH2Client>.fromOpaque(context).takeUnretainedValue().header(UnsafeRawBufferPointer(start: data, count: size * count))
    return size * count
}

/// Bytes read ahead of a consumer that takes them in pieces (a request body ahead of
/// libcurl's read callback). The bytes taken are dropped once they pass `dropTakenAfter`, so
/// the array holds what is pending plus at most that: while the reader keeps it topped up,
/// the array never empties at once, and without this it grew by every byte sent.
struct ReadAheadBuffer {
    /// Appended to directly by the decoders; only `take` removes.
    var bytes: [UInt8] = []
    private(set) var offset = 0
    let dropTakenAfter: Int

    init(dropTakenAfter: Int) { self.dropTakenAfter = dropTakenAfter }

    var pending: Int { bytes.count - offset }

    mutating func removeAll() {
        bytes = []
        offset = 0
    }

    /// Copies up to `size` pending bytes to `destination`; returns how many.
    mutating func take(into destination: UnsafeMutableRawPointer, upTo size: Int) -> Int {
        let count = min(size, pending)
        guard count > 0 else { return 0 }
        bytes.withUnsafeBytes { source in
            guard let base = source.baseAddress else { return }
            destination.copyMemory(from: base + offset, byteCount: count)
        }
        offset += count
        if offset == bytes.count {
            bytes.removeAll(keepingCapacity: true)
            offset = 0
        } else if offset > dropTakenAfter {
            bytes.removeSubrange(..<offset)
            offset = 0
        }
        return count
    }
}
