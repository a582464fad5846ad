#if canImport(Glibc)
import Glibc
#endif
import CCurl
import DouctlHTTP
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 44: a request through the keeper carried without libcurl (`SocketExchange`) against a
/// scripted keeper on a Unix socket in this process. Each reply shape is sent twice: once to
/// the Swift exchange (no progress callback) and once to libcurl's keeper path (a progress
/// callback keeps a request on libcurl), and both must end alike: the same request bytes, the
/// same reply or the same kind of failure, the connection marked clean only after a whole exchange.
@Suite struct SocketExchangeTests {
    enum After { case keep, close, reset }

    struct Case: Sendable, CustomStringConvertible {
        let name: String
        let reply: [UInt8]
        let after: After
        var method = "GET"
        var body: [UInt8]? = nil
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(name: "content-length", reply: Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".utf8), after: .keep),
        Case(name: "chunked", reply: Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=y\r\n world\r\n0\r\n\r\n".utf8), after: .keep),
        Case(name: "until close", reply: Array("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end".utf8), after: .close),
        Case(name: "1xx skipped", reply: Array("HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok".utf8), after: .keep),
        Case(name: "204", reply: Array("HTTP/1.1 204 No Content\r\n\r\n".utf8), after: .keep),
        Case(name: "304", reply: Array("HTTP/1.1 304 Not Modified\r\nContent-Length: 40\r\n\r\n".utf8), after: .keep),
        Case(name: "HEAD", reply: Array("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n".utf8), after: .keep, method: "HEAD"),
        Case(name: "POST body", reply: Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8), after: .keep, method: "POST", body: Array(#"{"a":1}"#.utf8)),
        Case(name: "a 404 is a reply", reply: Array("HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found".utf8), after: .keep),
        Case(name: "short body", reply: Array("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc".utf8), after: .close),
        Case(name: "short chunked body", reply: Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel".utf8), after: .close),
        Case(name: "nothing", reply: [], after: .close),
        Case(name: "reset", reply: Array("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab".utf8), after: .reset),
        Case(name: "no status line", reply: Array("garbage here\r\n\r\n".utf8), after: .close),
        Case(name: "bad content-length", reply: Array("HTTP/1.1 200 OK\r\nContent-Length: x1\r\n\r\nabc".utf8), after: .close),
        Case(name: "two content-lengths", reply: Array("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd".utf8), after: .close),
        Case(name: "bad chunk", reply: Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n".utf8), after: .close),
        Case(name: "head too large", reply: Array("HTTP/1.1 200 OK\r\nX-Big: ".utf8) + [UInt8](repeating: 0x61, count: 320 * 1024) + Array("\r\n\r\n".utf8), after: .close),
    ]

    /// What a run ended with, comparable across the two paths.
    static func summary(_ result: Result<HTTPResponse, TransportError>) -> String {
        switch result {
        case .success(let reply): return "reply \(reply.status) \(String(decoding: reply.body, as: UTF8.self))"
        case .failure(let error):
            switch error {
            case .connectionLost: return "connectionLost"
            case .malformedReply: return "malformedReply"
            case .timedOut: return "timedOut"
            case .stopped: return "stopped"
            default: return "other: \(error.message)"
            }
        }
    }

    @Test(arguments: cases)
    func theSwiftExchangeEndsAsLibcurlsPath(_ scripted: Case) throws {
        var seen: [String] = []
        var marks: [Bool] = []
        var requests: [[UInt8]] = []
        var logs: [[String]] = []
        for viaLibcurl in [false, true] {
            let keeper = try ScriptedKeeper(reply: scripted.reply, after: scripted.after)
            let log = LogLines()
            var configuration = HTTPClientConfiguration(timeout: 5, verboseLog: { log.append($0) })
            configuration.retry.maxAttempts = 1
            configuration.keeper = KeeperRoute(socketPath: keeper.path, version: "t1", start: nil)
            let client = HTTPClient(configuration)
            var request = HTTPRequest(url: "https://origin.test:8443/items?id=7")
            request.method = scripted.method
            if let body = scripted.body {
                request.body = .bytes(body)
                request.headers.append(HTTPHeader("Content-Type", "application/json"))
            }
            let result: Result<HTTPResponse, TransportError>
            do {
                result = .success(try client.fetch(request, progress: viaLibcurl ? { _ in } : nil))
            } catch {
                result = .failure(error)
            }
            let (received, marked) = keeper.finish()
            seen.append(Self.summary(result))
            marks.append(marked)
            requests.append(received)
            logs.append(log.lines.map { $0.replacingOccurrences(of: keeper.path, with: "KEEPER") })
        }
        // -v: the same lines for a reply (a failure's wording is libcurl's own, not compared).
        if seen[0].hasPrefix("reply") {
            #expect(logs[0] == logs[1], "\(scripted): -v, Swift:\n\(logs[0].joined(separator: "\n"))\nlibcurl:\n\(logs[1].joined(separator: "\n"))")
        }
        #expect(seen[0] == seen[1], "\(scripted): Swift \(seen[0]) | libcurl \(seen[1])")
        #expect(marks[0] == marks[1], "\(scripted): marked clean: Swift \(marks[0]) | libcurl \(marks[1])")
        #expect(requests[0] == requests[1], "\(scripted): the request bytes: Swift \(String(decoding: requests[0], as: UTF8.self)) | libcurl \(String(decoding: requests[1], as: UTF8.self))")
        #expect(!requests[0].isEmpty)
    }

    /// Ctrl-C (the injected Cancellation, requested once the body starts) stops the exchange,
    /// and the connection, left mid-reply, is not marked clean; the same through libcurl.
    @Test func anInterruptMidReplyStopsAndLeavesTheConnectionUnmarked() throws {
        for viaLibcurl in [false, true] {
            let keeper = try ScriptedKeeper(reply: Array("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nfirst bytes".utf8), after: .keep)
            let cancellation = Cancellation()
            var configuration = HTTPClientConfiguration(timeout: 5, cancellation: cancellation)
            configuration.retry.maxAttempts = 1
            configuration.keeper = KeeperRoute(socketPath: keeper.path, version: "t1", start: nil)
            let client = HTTPClient(configuration)
            var outcome = "reply"
            do {
                _ = try client.send(HTTPRequest(url: "https://origin.test/x"), progress: viaLibcurl ? { _ in } : nil, restartSink: nil, head: nil) { _ in
                    cancellation.request(.interrupt)
                    return true
                }
            } catch {
                outcome = error == .stopped(.interrupt) ? "stopped" : error.message
            }
            let (_, marked) = keeper.finish()
            #expect(outcome == "stopped", "via libcurl: \(viaLibcurl)")
            #expect(!marked, "via libcurl: \(viaLibcurl)")
        }
    }

    /// Two requests of one process (a walk's pages): the second rides the connection the first
    /// left whole, with no second handshake, as libcurl keeps its socket.
    @Test func aSecondRequestOfTheProcessReusesItsConnection() throws {
        let reply = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
        let keeper = try ScriptedKeeper(reply: reply, after: .keep, requests: 2)
        let log = LogLines()
        var configuration = HTTPClientConfiguration(timeout: 5, verboseLog: { log.append($0) })
        configuration.retry.maxAttempts = 1
        configuration.keeper = KeeperRoute(socketPath: keeper.path, version: "t1", start: nil)
        let client = HTTPClient(configuration)
        let first = try client.fetch(HTTPRequest(url: "https://origin.test/one"))
        let second = try client.fetch(HTTPRequest(url: "https://origin.test/two"))
        let (received, _) = keeper.finish()
        #expect(first.body == Array("ok".utf8) && second.body == Array("ok".utf8))
        #expect(String(decoding: received, as: UTF8.self).contains("GET /two HTTP/1.1"), "both on one connection")
        #expect(log.lines.contains("* Re-using existing connection #0 with host origin.test"), "\(log.lines)")
        #expect(log.lines.last == "* HTTP/1.1 over the keeper's connection (kept open by this process)", "\(log.lines)")
    }

    /// One GET that asks for a compressed reply, through `keeper`, no retry.
    static func compressedFetch(through keeper: ScriptedKeeper, log: LogLines) throws -> HTTPResponse {
        var configuration = HTTPClientConfiguration(timeout: 5, verboseLog: { log.append($0) })
        configuration.retry.maxAttempts = 1
        configuration.keeper = KeeperRoute(socketPath: keeper.path, version: "t1", start: nil)
        var request = HTTPRequest(url: "https://origin.test/items")
        request.acceptsCompression = true
        return try HTTPClient(configuration).fetch(request)
    }

    /// The Accept-Encoding a compressed request carries without libcurl is the one the keeper
    /// said its libcurl sends (after a tab in the handshake's answer), not a fixed list: a
    /// keeper whose libcurl offers only "gzip" gets "gzip", as a direct call through that
    /// libcurl would send. (libcurl here sends its own, longer list.)
    @Test func theAcceptEncodingSentIsTheOneTheKeeperSaid() throws {
        for offered in ["gzip", "deflate, gzip, zstd"] {
            let packed: [UInt8] = [0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0xcb, 0xcf, 0x06, 0x00, 0x47, 0xdd, 0xdc, 0x79, 0x02, 0x00, 0x00, 0x00]
            let reply = Array("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(packed.count)\r\n\r\n".utf8) + packed
            let keeper = try ScriptedKeeper(reply: reply, after: .keep, answer: "ok new (scripted)\t\(offered)")
            let log = LogLines()
            let reply2 = try Self.compressedFetch(through: keeper, log: log)
            let (received, marked) = keeper.finish()
            let head = String(decoding: received, as: UTF8.self)
            #expect(head.contains("\r\nAccept-Encoding: \(offered)\r\n"), "\(offered): \(head)")
            #expect(head.components(separatedBy: "Accept-Encoding").count == 2, "one Accept-Encoding: \(head)")
            #expect(reply2.body == Array("ok".utf8), "the gzip reply decoded")
            #expect(marked)
            #expect(keeper.leftUnused == 0)
            #expect(!log.lines.contains { $0.contains("goes through libcurl") }, "\(log.lines)")
        }
    }

    /// A keeper whose libcurl offers an encoding this process cannot decode ("xz" here: no
    /// decoder for it), or that does not say what it offers: the Swift side sends nothing on
    /// the connection it was given (the keeper keeps it as it was) and libcurl's keeper path
    /// carries the request, so the reply is always decodable. libcurl sends its own list.
    /// A request that asks for no compression still goes without libcurl.
    @Test func aKeeperListWeCannotDecodeSendsTheRequestTheLibcurlWay() throws {
        let libcurlList = try Self.libcurlsOwnAcceptEncoding()
        for answer in ["ok new (scripted)\tdeflate, gzip, br, zstd, xz", "ok new (scripted)"] {
            let reply = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
            let keeper = try ScriptedKeeper(reply: reply, after: .keep, answer: answer, connections: 2)
            let log = LogLines()
            let result = try Self.compressedFetch(through: keeper, log: log)
            let (received, marked) = keeper.finish()
            let head = String(decoding: received, as: UTF8.self)
            #expect(result.body == Array("ok".utf8))
            #expect(keeper.leftUnused == 1, "\(answer): the first connection carried nothing")
            #expect(head.contains("\r\nAccept-Encoding: \(libcurlList)\r\n"), "\(answer): libcurl's own list: \(head)")
            #expect(!head.contains("xz"), "\(head)")
            #expect(marked, "libcurl's keeper path marks its exchange clean")
            #expect(log.lines.contains { $0.hasPrefix("* keeper: ") && $0.hasSuffix("this call goes through libcurl") }, "\(log.lines)")
        }
        // Without compression the keeper's list does not matter: carried in Swift, one connection.
        let keeper = try ScriptedKeeper(reply: Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8), after: .keep, answer: "ok new (scripted)\txz")
        let log = LogLines()
        var configuration = HTTPClientConfiguration(timeout: 5, verboseLog: { log.append($0) })
        configuration.retry.maxAttempts = 1
        configuration.keeper = KeeperRoute(socketPath: keeper.path, version: "t1", start: nil)
        _ = try HTTPClient(configuration).fetch(HTTPRequest(url: "https://origin.test/plain"))
        let (received, _) = keeper.finish()
        #expect(keeper.leftUnused == 0)
        #expect(!String(decoding: received, as: UTF8.self).contains("Accept-Encoding"))
    }

    /// The keeper's probe asks libcurl itself what it sends (a request to a Unix socket of its
    /// own) and gets a list; it agrees with the libraries libcurl's version string names
    /// (zlib: "deflate, gzip"; brotli: "br"; zstd: "zstd"), the probe's fallback.
    @Test func theKeeperAsksLibcurlWhichEncodingsItSends() throws {
        let asked = KeeperServer.acceptEncodingAsked(directory: TemporaryDirectory.make(prefix: "kx-probe"))
        #expect(asked != nil, "libcurl answered the probe")
        #expect(asked == KeeperServer.acceptEncodingFromVersion(), "probe \(asked ?? "nil"), version string \(KeeperServer.acceptEncodingFromVersion() ?? "nil")")
        #expect(asked?.hasPrefix("deflate, gzip") == true, "libcurl here has zlib: \(asked ?? "nil")")
    }

    /// Before a compressed request goes without libcurl, each decoder library on the keeper's
    /// list is looked for (`ccurl_trusted_find`: the loader's own search, system directories
    /// only) without being opened, so a call whose reply is not compressed pays no dlopen.
    /// A library that is not installed is not found (the request then goes through libcurl).
    @Test func aDecoderLibraryIsFoundWithoutBeingOpened() throws {
        func find(_ names: [String]) -> Bool {
            var pointers: [UnsafePointer<CChar>?] = names.map { UnsafePointer(strdup($0)) }
            pointers.append(nil)
            defer { for pointer in pointers { free(UnsafeMutableRawPointer(mutating: pointer)) } }
            return pointers.withUnsafeBufferPointer { ccurl_trusted_find($0.baseAddress) } == 1
        }
        try Tools.requireLibrary("libbrotlienc.so.1")
        #expect(find(["libz.so.1", "libz.so"]))
        #expect(!find(["libdouctl-no-such-decoder.so.1"]))
        #expect(find(["libdouctl-no-such-decoder.so.1", "libz.so.1"]), "the names are tried in order")
        // libbrotlienc: nothing in douctl or libcurl opens it, so it is loaded only if find opened it.
        #expect(dlopen("libbrotlienc.so.1", RTLD_NOW | RTLD_NOLOAD) == nil)
        #expect(find(["libbrotlienc.so.1"]))
        #expect(dlopen("libbrotlienc.so.1", RTLD_NOW | RTLD_NOLOAD) == nil, "found, not opened")
    }

    /// What this machine's libcurl sends for CURLOPT_ACCEPT_ENCODING "", asked of libcurl by
    /// the keeper's own probe (the same code the keeper runs at start).
    static func libcurlsOwnAcceptEncoding() throws -> String {
        let directory = TemporaryDirectory.make(prefix: "kx-probe")
        guard let value = KeeperServer.libcurlAcceptEncoding(directory: directory) else { throw TestFailure("libcurl said no Accept-Encoding") }
        return value
    }

    /// A keeper socket that answers anything at all never crashes the exchange: random bytes
    /// after a good handshake end in a failure or a reply, never a trap.
    @Test func hostileBytesEndInAnErrorNotACrash() throws {
        var generator = SeededGenerator(seed: 44)
        for round in 0..<60 {
            var reply: [UInt8]
            switch round % 3 {
            case 0: reply = (0..<Int.random(in: 1...600, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            case 1: reply = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8) + (0..<200).map { _ in UInt8.random(in: 0...255, using: &generator) }
            default: reply = Array("HTTP/1.1 \(Int.random(in: 0...999, using: &generator)) X\r\nContent-Length: \(Int.random(in: -5...50, using: &generator))\r\n\r\n".utf8) + (0..<30).map { _ in UInt8.random(in: 0...255, using: &generator) }
            }
            let keeper = try ScriptedKeeper(reply: reply, after: .close)
            var configuration = HTTPClientConfiguration(timeout: 5)
            configuration.retry.maxAttempts = 1
            configuration.keeper = KeeperRoute(socketPath: keeper.path, version: "t1", start: nil)
            _ = try? HTTPClient(configuration).fetch(HTTPRequest(url: "https://origin.test/x"))
            _ = keeper.finish()
        }
    }
}

final class LogLines: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    func append(_ line: String) { lock.lock(); stored.append(line); lock.unlock() }
    var lines: [String] { lock.lock(); defer { lock.unlock() }; return stored }
}

struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return state
    }
}

/// A keeper on a Unix socket for one connection: it does the handshake ("ok new"), reads the
/// request (its head and a Content-Length body), sends `reply`, then keeps the connection
/// (noting a mark-clean byte), closes it, or resets it.
final class ScriptedKeeper: @unchecked Sendable {
    let path: String
    private let listener: Int32
    private var thread: Thread?
    private let done = DispatchSemaphore(value: 0)
    private var received: [UInt8] = []
    private var marked = false
    /// Connections that did the handshake and closed without sending a request.
    private(set) var leftUnused = 0

    /// `answer`: the handshake's answer line; `connections`: how many connections it accepts
    /// (one that closes after the handshake without a request makes way for the next).
    init(reply: [UInt8], after: ScriptedKeeper.After, requests: Int = 1, answer: String = "ok new (scripted)", connections: Int = 1) throws {
        path = TemporaryDirectory.make(prefix: "kx") + "/k.sock"
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        guard bound == 0, listen(listener, 4) == 0 else { throw TestFailure("cannot listen at \(path)") }
        let listening = listener
        /// One connection; false once one carried a request (or failed to be accepted).
        @Sendable func serveOne() -> Bool {
            let connection = accept(listening, nil, nil)
            guard connection >= 0 else { return false }
            var reader = ConnectionReader(connection)
            // The handshake: lines up to an empty one.
            while reader.buffer.firstRange(of: [0x0A, 0x0A]) == nil { if !reader.more() { close(connection); return false } }
            if let range = reader.buffer.firstRange(of: [0x0A, 0x0A]) { reader.buffer.removeSubrange(..<range.upperBound) }
            let greeting = Array("douctl-keeper 1 t1\n\(answer)\n".utf8)
            _ = send(connection, greeting, greeting.count, Int32(MSG_NOSIGNAL))
            if reader.buffer.isEmpty && !reader.more() {
                leftUnused += 1
                close(connection)
                return true
            }
            var consumed = 0
            for index in 0..<requests {
                if index > 0 {
                    // The mark-clean byte of the exchange before comes first.
                    while reader.buffer.count <= consumed { if !reader.more() { close(connection); return false } }
                    if reader.buffer[consumed] == UInt8(ascii: "K") { reader.buffer.remove(at: consumed) }
                }
                guard let end = reader.requestEnd(from: consumed) else { close(connection); return false }
                consumed = end
                received = reader.buffer
                _ = reply.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
            switch after {
            case .keep:
                var byte: UInt8 = 0
                marked = recv(connection, &byte, 1, 0) == 1 && byte == UInt8(ascii: "K")
            case .close:
                break
            case .reset:
                ConnectionReader.resetOnClose(connection)
            }
            close(connection)
            return false
        }
        let thread = Thread { [self] in
            defer { done.signal() }
            for _ in 0..<connections {
                if !serveOne() { break }
            }
        }
        self.thread = thread
        thread.start()
    }

    /// The request bytes received, and whether the client marked the exchange clean.
    func finish() -> ([UInt8], Bool) {
        _ = done.wait(timeout: .now() + 10)
        close(listener)
        unlink(path)
        return (received, marked)
    }
}

extension ScriptedKeeper {
    typealias After = SocketExchangeTests.After
}

/// What a scripted server has read of one connection, read as needed (each read waits 3 s at most).
struct ConnectionReader {
    let connection: Int32
    var buffer: [UInt8] = []

    init(_ connection: Int32) {
        self.connection = connection
        var timeout = timeval(tv_sec: 3, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Makes `close` send a reset (RST) rather than an orderly end.
    static func resetOnClose(_ connection: Int32) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(connection, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
    }

    /// Reads what has come; false when the peer closed or the read timed out.
    mutating func more() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let got = recv(connection, &chunk, chunk.count, 0)
        guard got > 0 else { return false }
        buffer += chunk[0..<got]
        return true
    }

    /// Where the request that starts at `start` ends (its head, then a Content-Length body),
    /// reading as needed; nil when the connection ended before its head did.
    mutating func requestEnd(from start: Int) -> Int? {
        let blank = Array("\r\n\r\n".utf8)
        while buffer[start...].firstRange(of: blank) == nil { if !more() { return nil } }
        guard let range = buffer[start...].firstRange(of: blank) else { return nil }
        let head = String(decoding: buffer[start..<range.lowerBound], as: UTF8.self).lowercased()
        var length = 0
        for line in head.split(separator: "\r\n") where line.hasPrefix("content-length:") {
            length = Int(line.dropFirst(15).trimmingCharacters(in: .whitespaces)) ?? 0
        }
        while buffer.count < range.upperBound + length { if !more() { break } }
        return min(buffer.count, range.upperBound + length)
    }
}
