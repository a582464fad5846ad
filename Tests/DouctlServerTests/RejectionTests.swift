import Testing
import DouctlServer
import DouctlTestSupport

/// Requests the server answers itself (4xx/5xx) and the connection closing afterwards.
@Suite struct RejectionTests {
    static let malformedRequests: [(String, String)] = [
        ("bad method token", "GE(T / HTTP/1.1\r\nHost: t\r\n\r\n"),
        ("empty method", " / HTTP/1.1\r\nHost: t\r\n\r\n"),
        ("missing version", "GET /\r\nHost: t\r\n\r\n"),
        ("malformed version", "GET / HTTQ/1.1\r\nHost: t\r\n\r\n"),
        ("version without minor", "GET / HTTP/1\r\nHost: t\r\n\r\n"),
        ("extra token in request line", "GET / HTTP/1.1 extra\r\nHost: t\r\n\r\n"),
        ("double space", "GET  / HTTP/1.1\r\nHost: t\r\n\r\n"),
        ("target not origin-form", "GET index.html HTTP/1.1\r\nHost: t\r\n\r\n"),
        ("header without colon", "GET / HTTP/1.1\r\nHost: t\r\nNoColonHere\r\n\r\n"),
        ("space before colon", "GET / HTTP/1.1\r\nHost : t\r\n\r\n"),
        ("obs-fold", "GET / HTTP/1.1\r\nHost: t\r\nX-Long: a\r\n  continued\r\n\r\n"),
        ("control character in value", "GET / HTTP/1.1\r\nHost: t\r\nX-Bad: a\u{01}b\r\n\r\n"),
        ("bare CR", "GET / HTTP/1.1\r\nHost: t\rX: y\r\n\r\n"),
        ("negative Content-Length", "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n"),
        ("non-numeric Content-Length", "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: ten\r\n\r\n"),
        ("empty Content-Length", "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: \r\n\r\n"),
        ("overflowing Content-Length", "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999999999999\r\n\r\n"),
        ("conflicting Content-Lengths", "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"),
        ("Content-Length and chunked", "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
        ("chunked not last", "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"),
        ("bad chunk size", "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n"),
        ("overflowing chunk size", "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFF\r\nab\r\n0\r\n\r\n"),
        ("chunk data too long", "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n"),
        ("bad trailer", "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nnot a field\r\n\r\n"),
    ]

    @Test(arguments: malformedRequests)
    func malformedRequestIs400AndCloses(_ example: (String, String)) throws {
        try withServer(limits: quickLimits(), handler: echoHandler) { server in
            let client = try RawClient(port: server.port)
            try client.send(example.1)
            let reply = try client.readResponse()
            #expect(reply.status == 400, "\(example.0): got \(reply.status) \(reply.text)")
            #expect(reply.headers["Connection"] == "close", "\(example.0)")
            #expect(client.isClosedByServer(), "\(example.0)")
        }
    }

    @Test func unsupportedVersionIs505() throws {
        try withServer(handler: echoHandler) { server in
            for version in ["HTTP/2.0", "HTTP/3.0", "HTTP/0.9"] {
                let client = try RawClient(port: server.port)
                try client.send("GET / \(version)\r\nHost: t\r\n\r\n")
                #expect(try client.readResponse().status == 505, "\(version)")
                #expect(client.isClosedByServer())
            }
        }
    }

    @Test func unknownTransferCodingIs501() throws {
        try withServer(handler: echoHandler) { server in
            let client = try RawClient(port: server.port)
            try client.send("POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n")
            #expect(try client.readResponse().status == 501)
        }
    }

    @Test func oversizedHeaderSectionIs431() throws {
        try withServer(handler: echoHandler) { server in
            let client = try RawClient(port: server.port)
            let filler = String(repeating: "x", count: 1000)
            let headers = (0..<70).map { "X-Filler-\($0): \(filler)\r\n" }.joined()
            try? client.send("GET / HTTP/1.1\r\nHost: t\r\n" + headers + "\r\n")
            let reply = try client.readResponse()
            #expect(reply.status == 431)
            #expect(client.isClosedByServer())
        }
    }

    @Test func headerSectionJustUnderTheLimitIsFine() throws {
        var limits = HTTPServerLimits()
        limits.maxHeaderBytes = 8 * 1024
        try withServer(limits: limits, handler: echoHandler) { server in
            let client = try RawClient(port: server.port)
            let head = "GET / HTTP/1.1\r\nHost: t\r\nX-Fill: "
            let fill = String(repeating: "y", count: 8 * 1024 - head.utf8.count - 4)
            try client.send(head + fill + "\r\n\r\n")
            #expect(try client.readResponse().status == 200)
        }
    }

    @Test func overlongRequestLineIs414() throws {
        var limits = HTTPServerLimits()
        limits.maxHeaderBytes = 4096
        try withServer(limits: limits, handler: echoHandler) { server in
            let client = try RawClient(port: server.port)
            try? client.send("GET /" + String(repeating: "a", count: 10_000) + " HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try client.readResponse().status == 414)
        }
    }

    @Test func declaredBodyOverTheLimitIs413() throws {
        let limits = quickLimits { $0.maxBodyBytes = 1024 }
        try withServer(limits: limits, handler: echoHandler) { server in
            let client = try RawClient(port: server.port)
            // The body is on its way already, as most clients send it without waiting.
            try? client.send("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n" + String(repeating: "b", count: 5000))
            let reply = try client.readResponse()
            #expect(reply.status == 413)
            #expect(reply.headers["Connection"] == "close")
            #expect(client.isClosedByServer())
        }
    }

    @Test func chunkedBodyGrowingOverTheLimitIs413() throws {
        let limits = quickLimits { $0.maxBodyBytes = 1024 }
        try withServer(limits: limits, handler: echoHandler) { server in
            let client = try RawClient(port: server.port)
            let chunk = String(repeating: "c", count: 600)
            try? client.send("POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "258\r\n\(chunk)\r\n258\r\n\(chunk)\r\n0\r\n\r\n")
            let reply = try client.readResponse()
            #expect(reply.status == 413)
            #expect(client.isClosedByServer())
        }
    }

    @Test func handlerErrorReplyStandsWhenTheBodyIsTooLarge() throws {
        let limits = quickLimits { $0.maxBodyBytes = 10 }
        let handler: HTTPHandler = { request in
            do {
                _ = try request.body.readAll(limit: 1000)
                return .text(200, "read")
            } catch {
                return .json(413, "{\"code\":1001,\"msg\":\"\(error)\"}")
            }
        }
        try withServer(limits: limits, handler: handler) { server in
            let client = try RawClient(port: server.port)
            try client.send("POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n14\r\n" + String(repeating: "d", count: 20) + "\r\n0\r\n\r\n")
            let reply = try client.readResponse()
            #expect(reply.status == 413)
            #expect(reply.text.contains("\"code\":1001"))
        }
    }

    @Test func incompleteHeadBeforeCloseIs400() throws {
        try withServer(handler: echoHandler) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET / HTTP/1.1\r\nHost:")
            client.shutdownWrite()
            #expect(try client.readResponse().status == 400)
        }
    }
}
