#if canImport(Glibc)
import Glibc
#endif
@testable import DouctlHTTP
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 44.4: a plain-http request with no proxy is carried by douctl's own HTTP/1.1 code
/// straight to the origin (`SocketExchange`, route `.direct`), so a small call never loads
/// libcurl. Each reply shape of `SocketExchangeTests.cases` is served by a scripted origin on
/// 127.0.0.1 twice: to the own code and to libcurl (`ownPlainHTTP` off, as when `DOUCTL_LIBCURL` names one),
/// and both must end alike: the same request bytes, the same reply or kind of failure, the
/// same `-v` lines, the same connection kept or dropped.
@Suite struct DirectExchangeTests {
    /// One run of `request` against `origin`, by the own code or by libcurl.
    struct Run {
        var summary: String
        var requests: [UInt8]
        var log: [String]
        var withoutLibcurl: Int
    }

    static func run(
        _ request: HTTPRequest, origin: ScriptedOrigin, viaLibcurl: Bool, timeout: Double = 5, cancellation: Cancellation = Cancellation(),
        then next: HTTPRequest? = nil
    ) -> Run {
        let log = LogLines()
        var configuration = HTTPClientConfiguration(timeout: timeout, verboseLog: { log.append($0) }, cancellation: cancellation)
        configuration.retry.maxAttempts = 1
        configuration.ownPlainHTTP = !viaLibcurl
        /// The client ends with this function, closing its kept connection, before the origin is asked.
        func exchanges() -> ([String], Int) {
            let client = HTTPClient(configuration)
            var summaries: [String] = []
            for each in [request] + (next.map { [$0] } ?? []) {
                do {
                    summaries.append(SocketExchangeTests.summary(.success(try client.fetch(each))))
                } catch {
                    summaries.append(SocketExchangeTests.summary(.failure(error)))
                }
            }
            return (summaries, client.carriedDirectWithoutLibcurl)
        }
        let (summaries, withoutLibcurl) = exchanges()
        let received = origin.finish()
        // Each run has its own origin: its port is written PORT. libcurl's aside before it
        // reuses an HTTP/1.1 connection is its own bookkeeping, not about the exchange.
        let port = String(origin.port)
        return Run(summary: summaries.joined(separator: " | "),
                   requests: Array(String(decoding: received, as: UTF8.self).replacingOccurrences(of: ":\(port)\r\n", with: ":PORT\r\n").utf8),
                   log: log.lines.map { $0.replacingOccurrences(of: port, with: "PORT") }.filter { $0 != "* Can not multiplex, even if we wanted to" },
                   withoutLibcurl: withoutLibcurl)
    }

    /// The own code's run (`runs[0]`) and libcurl's sent the same bytes and said the same under `-v`.
    static func expectAlike(_ runs: [Run], _ context: String = "", sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(runs[0].requests == runs[1].requests, "\(context) own \(String(decoding: runs[0].requests, as: UTF8.self)) | libcurl \(String(decoding: runs[1].requests, as: UTF8.self))", sourceLocation: sourceLocation)
        #expect(runs[0].log == runs[1].log, "\(context) own:\n\(runs[0].log.joined(separator: "\n"))\nlibcurl:\n\(runs[1].log.joined(separator: "\n"))", sourceLocation: sourceLocation)
    }

    @Test(arguments: SocketExchangeTests.cases)
    func theOwnCodeEndsAsLibcurlDoes(_ scripted: SocketExchangeTests.Case) throws {
        var runs: [Run] = []
        for viaLibcurl in [false, true] {
            let origin = try ScriptedOrigin(reply: scripted.reply, after: scripted.after)
            var request = HTTPRequest(url: "http://127.0.0.1:\(origin.port)/items?id=7")
            request.method = scripted.method
            if let body = scripted.body {
                request.body = .bytes(body)
                request.headers.append(HTTPHeader("Content-Type", "application/json"))
            }
            runs.append(Self.run(request, origin: origin, viaLibcurl: viaLibcurl))
        }
        #expect(runs[0].withoutLibcurl == 1 && runs[1].withoutLibcurl == 0, "the first run went without libcurl, the second through it")
        #expect(runs[0].summary == runs[1].summary, "\(scripted): own \(runs[0].summary) | libcurl \(runs[1].summary)")
        #expect(runs[0].requests == runs[1].requests, "\(scripted): own \(String(decoding: runs[0].requests, as: UTF8.self)) | libcurl \(String(decoding: runs[1].requests, as: UTF8.self))")
        #expect(!runs[0].requests.isEmpty)
        if runs[0].summary.hasPrefix("reply") {
            #expect(runs[0].log == runs[1].log, "\(scripted): -v, own:\n\(runs[0].log.joined(separator: "\n"))\nlibcurl:\n\(runs[1].log.joined(separator: "\n"))")
        }
    }

    /// A compressed reply: asked for with libcurl's own list (Debian's libcurl is built with
    /// zlib, brotli and zstd, the decoders found here), decoded the same.
    @Test func aCompressedReplyIsAskedForAndDecodedAsLibcurlDoes() throws {
        let packed: [UInt8] = [0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0xcb, 0xcf, 0x06, 0x00, 0x47, 0xdd, 0xdc, 0x79, 0x02, 0x00, 0x00, 0x00]
        let reply = Array("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(packed.count)\r\n\r\n".utf8) + packed
        var runs: [Run] = []
        for viaLibcurl in [false, true] {
            let origin = try ScriptedOrigin(reply: reply, after: .keep)
            var request = HTTPRequest(url: "http://127.0.0.1:\(origin.port)/packed")
            request.acceptsCompression = true
            runs.append(Self.run(request, origin: origin, viaLibcurl: viaLibcurl))
        }
        #expect(runs[0].withoutLibcurl == 1)
        #expect(runs[0].summary == "reply 200 ok" && runs[1].summary == runs[0].summary, "\(runs[0].summary) | \(runs[1].summary)")
        Self.expectAlike(runs)
    }

    /// Two requests of one client (a walk's pages) ride one connection, as libcurl's do, with
    /// the same `-v` ("Re-using existing connection #0", "over a reused connection").
    @Test func theSecondRequestReusesTheConnectionAsLibcurlDoes() throws {
        let reply = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
        var runs: [Run] = []
        for viaLibcurl in [false, true] {
            let origin = try ScriptedOrigin(reply: reply, after: .keep, requests: 2)
            let base = "http://127.0.0.1:\(origin.port)"
            runs.append(Self.run(HTTPRequest(url: base + "/one"), origin: origin, viaLibcurl: viaLibcurl, then: HTTPRequest(url: base + "/two")))
        }
        #expect(runs[0].withoutLibcurl == 2)
        #expect(runs[0].summary == "reply 200 ok | reply 200 ok" && runs[1].summary == runs[0].summary)
        #expect(String(decoding: runs[0].requests, as: UTF8.self).contains("GET /two HTTP/1.1"), "both on one connection")
        #expect(runs[0].log.contains("* Re-using existing connection #0 with host 127.0.0.1"), "\(runs[0].log)")
        #expect(runs[0].log.last == "* HTTP/1.1 over a reused connection", "\(runs[0].log)")
        Self.expectAlike(runs)
    }

    /// An IPv6 literal: connected to as itself, named without brackets as libcurl names it.
    @Test func anIPv6LiteralIsReachedAsLibcurlReachesIt() throws {
        let reply = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
        var runs: [Run] = []
        for viaLibcurl in [false, true] {
            let origin = try ScriptedOrigin(reply: reply, after: .keep, ipv6: true)
            runs.append(Self.run(HTTPRequest(url: "http://[::1]:\(origin.port)/six"), origin: origin, viaLibcurl: viaLibcurl))
        }
        #expect(runs[0].withoutLibcurl == 1)
        #expect(runs[0].summary == "reply 200 ok" && runs[1].summary == runs[0].summary, "\(runs[0].summary) | \(runs[1].summary)")
        Self.expectAlike(runs)
    }

    /// A kept connection the server has since closed: the next request opens a new one and
    /// succeeds, as libcurl retries a reused connection that turns out dead.
    @Test func aKeptConnectionTheServerClosedIsReplacedUnseen() throws {
        let reply = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
        let origin = try ScriptedOrigin(reply: reply, after: .close, connections: 2)
        let base = "http://127.0.0.1:\(origin.port)"
        let run = Self.run(HTTPRequest(url: base + "/one"), origin: origin, viaLibcurl: false, then: HTTPRequest(url: base + "/two"))
        #expect(run.summary == "reply 200 ok | reply 200 ok", "\(run.summary)\n\(run.log.joined(separator: "\n"))")
        #expect(run.withoutLibcurl == 2)
    }

    /// A failed request's message and `-v` lines, through the own code or through libcurl, the
    /// milliseconds written N. libcurl 7.88 says "Could not resolve host" twice (its resolver,
    /// then its failure), so a line repeated at once counts once.
    static func failure(of url: String, viaLibcurl: Bool) -> (message: String, log: [String]) {
        let log = LogLines()
        var configuration = HTTPClientConfiguration(timeout: 5, verboseLog: { log.append($0) })
        configuration.retry.maxAttempts = 1
        configuration.ownPlainHTTP = !viaLibcurl
        var message = "no failure"
        do { _ = try HTTPClient(configuration).fetch(HTTPRequest(url: url)) } catch { message = error.message }
        var lines: [String] = []
        for line in log.lines.map(withoutMilliseconds) where line != lines.last { lines.append(line) }
        return (withoutMilliseconds(message), lines)
    }

    /// Nothing listening: libcurl's lines and message, word for word (bar the milliseconds).
    @Test func aRefusedConnectionFailsInLibcurlsWords() throws {
        let port = refusingPort()
        let own = Self.failure(of: "http://127.0.0.1:\(port)/x", viaLibcurl: false)
        let libcurl = Self.failure(of: "http://127.0.0.1:\(port)/x", viaLibcurl: true)
        #expect(own.message == libcurl.message, "own \(own.message) | libcurl \(libcurl.message)")
        #expect(own.message.contains("Failed to connect to 127.0.0.1 port \(port) after"), "\(own.message)")
        #expect(own.log == libcurl.log, "own:\n\(own.log.joined(separator: "\n"))\nlibcurl:\n\(libcurl.log.joined(separator: "\n"))")
    }

    /// "localhost" is answered without the resolver, 127.0.0.1 then ::1, as libcurl does; and
    /// a name that does not resolve fails with libcurl's message and lines.
    @Test func localhostAndAnUnknownNameResolveAsInLibcurl() throws {
        let port = refusingPort()
        for host in ["localhost", "nosuch.invalid"] {
            let own = Self.failure(of: "http://\(host):\(port)/x", viaLibcurl: false)
            let libcurl = Self.failure(of: "http://\(host):\(port)/x", viaLibcurl: true)
            #expect(own.message == libcurl.message, "\(host): own \(own.message) | libcurl \(libcurl.message)")
            #expect(own.log == libcurl.log, "\(host): own:\n\(own.log.joined(separator: "\n"))\nlibcurl:\n\(libcurl.log.joined(separator: "\n"))")
            if host == "localhost" {
                #expect(own.log.first == "*   Trying 127.0.0.1:\(port)...", "\(own.log)")
            } else {
                #expect(own.message == "cannot connect: Could not resolve host: nosuch.invalid")
            }
        }
    }

    /// A connect that hangs (a listener whose queue is full drops the handshake) ends at the
    /// timeout as a timeout, and Ctrl-C ends it within a poll (50 ms), not at the timeout.
    @Test func aHangingConnectEndsAtTheTimeoutOrAtOnceOnCtrlC() throws {
        let (listener, port) = try listenOnLoopback(backlog: 0)
        defer { close(listener) }
        // Fill the accept queue (backlog 0 holds one) so the next handshakes go unanswered.
        var fillers: [Int32] = []
        defer { for fd in fillers { close(fd) } }
        for _ in 0..<3 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            fillers.append(fd)
        }
        usleep(100_000)
        var configuration = HTTPClientConfiguration(timeout: 1)
        configuration.retry.maxAttempts = 1
        var outcome = "reply"
        var messages: [String] = []
        for viaLibcurl in [false, true] {
            configuration.ownPlainHTTP = !viaLibcurl
            do { _ = try HTTPClient(configuration).fetch(HTTPRequest(url: "http://127.0.0.1:\(port)/x")) } catch {
                if case .timedOut = error { outcome = "timedOut" } else { outcome = error.message }
                messages.append(Self.withoutMilliseconds(error.message))
            }
            #expect(outcome == "timedOut", "via libcurl: \(viaLibcurl)")
        }
        #expect(messages.count == 2 && messages[0] == messages[1], "own and libcurl's words: \(messages)")
        var outcomeAfterStop = "reply"

        let cancellation = Cancellation()
        configuration = HTTPClientConfiguration(timeout: 30, cancellation: cancellation)
        configuration.retry.maxAttempts = 1
        let started = currentUnixTime()
        Thread.detachNewThread {
            usleep(200_000)
            cancellation.request(.interrupt)
        }
        do { _ = try HTTPClient(configuration).fetch(HTTPRequest(url: "http://127.0.0.1:\(port)/x")) } catch {
            outcomeAfterStop = error == .stopped(.interrupt) ? "stopped" : error.message
        }
        #expect(outcomeAfterStop == "stopped")
        #expect(currentUnixTime() - started < 5, "stopped long before the 30 s timeout")
    }

    /// What goes through libcurl instead: a proxy, a Unix socket, user:password in the URL,
    /// a body of unknown length, a progress bar, a libcurl named in `DOUCTL_LIBCURL`.
    @Test func whatTheOwnCodeLeavesToLibcurl() throws {
        let reply = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8)
        func carried(_ change: (inout HTTPClientConfiguration, inout HTTPRequest) -> Void, progress: Bool = false) throws -> Int {
            let origin = try ScriptedOrigin(reply: reply, after: .keep, waitMilliseconds: 1000)
            var configuration = HTTPClientConfiguration(timeout: 5)
            configuration.retry.maxAttempts = 1
            var request = HTTPRequest(url: "http://127.0.0.1:\(origin.port)/x")
            change(&configuration, &request)
            func carry() -> Int {
                let client = HTTPClient(configuration)
                _ = try? client.fetch(request, progress: progress ? { _ in } : nil)
                return client.carriedDirectWithoutLibcurl
            }
            let count = carry()
            _ = origin.finish()
            return count
        }
        #expect(try carried { _, _ in } == 1)
        #expect(try carried { configuration, _ in configuration.ownPlainHTTP = false } == 0)
        #expect(try carried({ _, _ in }, progress: true) == 0)
        #expect(try carried { _, request in request.url = request.url.replacingOccurrences(of: "http://", with: "http://user:pw@") } == 0)
        #expect(try carried { configuration, _ in configuration.proxy = "http://127.0.0.1:9" } == 0)
        #expect(try carried { _, request in
            request.method = "POST"
            request.body = .stream(fileDescriptor: open("/dev/null", O_RDONLY))
        } == 0)
    }

    /// Hosts the own code resolves; any other shape (a broken literal, an international name,
    /// a zone) is libcurl's to accept or refuse in its own words.
    @Test func whichHostsTheOwnCodeTakes() {
        for host in ["127.0.0.1", "localhost", "api.example.com", "a_b-c.d", "[::1]", "[2001:db8::1]"] {
            #expect(HTTPClient.isPlainHost(host), "\(host)")
        }
        for host in ["", "[:", "[::1", "[nothing]", "[fe80::1%25eth0]", "例え.jp", "a b", "x\u{1B}y", "[127.0.0.1]"] {
            #expect(!HTTPClient.isPlainHost(host), "\(host)")
        }
    }

    static func withoutMilliseconds(_ line: String) -> String {
        guard let range = line.range(of: #"after \d+ ms"#, options: .regularExpression) else { return line }
        return line.replacingCharacters(in: range, with: "after N ms")
    }
}

/// An origin on 127.0.0.1 for `connections` connections: it reads each request (its head and
/// a Content-Length body), sends `reply` to each of `requests` requests, then keeps the
/// connection until the client closes it, closes it, or resets it.
final class ScriptedOrigin: @unchecked Sendable {
    let port: UInt16
    private let listener: Int32
    private let done = DispatchSemaphore(value: 0)
    private let received = LockedValue<[UInt8]>([])

    /// `waitMilliseconds`: how long it waits for each connection (a request that goes elsewhere never comes).
    init(reply: [UInt8], after: SocketExchangeTests.After, requests: Int = 1, connections: Int = 1, waitMilliseconds: Int32 = 5000, ipv6: Bool = false) throws {
        (listener, port) = ipv6 ? try Self.listenOnIPv6Loopback() : try listenOnLoopback()
        let listening = listener
        let store = received
        Thread.detachNewThread { [done] in
            defer { done.signal() }
            for _ in 0..<connections {
                var ready = pollfd(fd: listening, events: Int16(POLLIN), revents: 0)
                guard poll(&ready, 1, waitMilliseconds) > 0 else { return }
                let connection = accept(listening, nil, nil)
                guard connection >= 0 else { return }
                var reader = ConnectionReader(connection)
                var served = 0
                while served < requests {
                    guard let end = reader.requestEnd(from: 0) else { break }
                    store.withLock { $0.append(contentsOf: reader.buffer[..<end]) }
                    reader.buffer.removeFirst(end)
                    _ = reply.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    served += 1
                }
                switch after {
                case .keep:
                    var byte: UInt8 = 0
                    _ = recv(connection, &byte, 1, 0)
                case .close:
                    break
                case .reset:
                    ConnectionReader.resetOnClose(connection)
                }
                close(connection)
            }
        }
    }

    /// A listening socket on [::1] at a free port.
    static func listenOnIPv6Loopback() throws -> (Int32, UInt16) {
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_loopback
        var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard fd >= 0, bound, listen(fd, 16) == 0 else { throw TestFailure("cannot listen on [::1] (errno \(errno))") }
        return (fd, UInt16(bigEndian: address.sin6_port))
    }

    /// The request bytes received (all connections, in order), once the client is done.
    func finish() -> [UInt8] {
        _ = done.wait(timeout: .now() + 6)
        close(listener)
        return received.value
    }
}
