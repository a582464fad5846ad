import Testing
import DouctlServer
import DouctlSystem
import DouctlTestSupport

/// Requests and replies on one connection: decoding, framing, keep-alive, pipelining.
@Suite struct ExchangeTests {
    @Test func getDecodesPathAndQuery() throws {
        try withServer(handler: echoHandler) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET /shuo/v2/%E4%B8%AD%20a+b?x=1&name=a+b%26c&empty=&flag&bad=%zz&x=2 HTTP/1.1\r\nHost: t\r\n\r\n")
            let reply = try client.readResponse()
            #expect(reply.status == 200)
            let fields = echoFields(reply.text)
            #expect(fields.contains("method=GET"))
            #expect(fields.contains("path=/shuo/v2/中 a+b"))
            #expect(fields.contains("rawPath=/shuo/v2/%E4%B8%AD%20a+b"))
            #expect(fields.contains("query:x=1"))
            #expect(fields.contains("query:name=a b&c"))
            #expect(fields.contains("query:empty="))
            #expect(fields.contains("query:flag="))
            #expect(fields.contains("query:bad=%zz"))
            #expect(fields.filter { $0.hasPrefix("query:x=") } == ["query:x=1", "query:x=2"])
            #expect(reply.headers["Content-Length"] == String(reply.body.count))
            #expect(reply.headers["Date"] != nil)
        }
    }

    @Test func queryValueReturnsFirstMatch() throws {
        let request = HTTPServerRequest(method: "GET", target: "/p?a=1&b=two+words&a=3")
        #expect(request.queryValue("a") == "1")
        #expect(request.queryValues("a") == ["1", "3"])
        #expect(request.queryValue("b") == "two words")
        #expect(request.queryValue("missing") == nil)
        #expect(request.path == "/p")
    }

    @Test func absoluteFormTargetIsAccepted() throws {
        try withServer(handler: echoHandler) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET http://example.com:80/x/y?q=1 HTTP/1.1\r\nHost: example.com\r\n\r\n")
            let fields = echoFields(try client.readResponse().text)
            #expect(fields.contains("path=/x/y"))
            #expect(fields.contains("query:q=1"))
        }
    }

    @Test func postWithContentLength() throws {
        try withServer(handler: echoHandler) { server in
            let client = try RawClient(port: server.port)
            try client.send("POST /form HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\nhello world")
            let reply = try client.readResponse()
            #expect(reply.status == 200)
            #expect(echoFields(reply.text).contains("body=hello world"))
            #expect(echoFields(reply.text).contains("bodyLength=11"))
        }
    }

    @Test func keepAliveServesSequentialRequestsOnOneSocket() throws {
        try withServer(handler: echoHandler) { server in
            let client = try RawClient(port: server.port)
            for index in 1...3 {
                try client.send("POST /n/\(index) HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\n\(index)")
                let reply = try client.readResponse()
                #expect(reply.status == 200)
                #expect(reply.headers["Connection"] == nil)
                #expect(echoFields(reply.text).contains("path=/n/\(index)"))
                #expect(echoFields(reply.text).contains("body=\(index)"))
            }
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() throws {
        try withServer(handler: echoHandler) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET /first HTTP/1.1\r\nHost: t\r\n\r\n"
                + "POST /second HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nabcde"
                + "POST /third HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nxyz\r\n0\r\n\r\n")
            let first = try client.readResponse()
            let second = try client.readResponse()
            let third = try client.readResponse()
            #expect(echoFields(first.text).contains("path=/first"))
            #expect(echoFields(second.text).contains("path=/second"))
            #expect(echoFields(second.text).contains("body=abcde"))
            #expect(echoFields(third.text).contains("path=/third"))
            #expect(echoFields(third.text).contains("body=xyz"))
        }
    }

    @Test func connectionCloseIsHonoured() throws {
        try withServer(handler: echoHandler) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            let reply = try client.readResponse()
            #expect(reply.status == 200)
            #expect(reply.headers["Connection"] == "close")
            #expect(client.isClosedByServer())
        }
    }

    @Test func http10ClosesUnlessKeepAliveAsked() throws {
        try withServer(handler: echoHandler) { server in
            let plain = try RawClient(port: server.port)
            try plain.send("GET /a HTTP/1.0\r\n\r\n")
            let reply = try plain.readResponse()
            #expect(reply.status == 200)
            #expect(reply.headers["Connection"] == "close")
            #expect(plain.isClosedByServer())

            let keepAlive = try RawClient(port: server.port)
            for _ in 1...2 {
                try keepAlive.send("GET /b HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                let reply = try keepAlive.readResponse()
                #expect(reply.status == 200)
                #expect(reply.headers["Connection"] == "keep-alive")
            }
        }
    }

    @Test func handlerCanAskToClose() throws {
        let handler: HTTPHandler = { _ in
            var response = HTTPServerResponse.text(200, "bye")
            response.closeConnection = true
            return response
        }
        try withServer(handler: handler) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            let reply = try client.readResponse()
            #expect(reply.text == "bye")
            #expect(reply.headers["Connection"] == "close")
            #expect(client.isClosedByServer())
        }
    }

    @Test func headGetsHeadersOnly() throws {
        let handler: HTTPHandler = { _ in .text(200, "twelve bytes") }
        try withServer(handler: handler) { server in
            let client = try RawClient(port: server.port)
            try client.send("HEAD / HTTP/1.1\r\nHost: t\r\n\r\n")
            let reply = try client.readResponse(forHEAD: true)
            #expect(reply.status == 200)
            #expect(reply.headers["Content-Length"] == "12")
            // The connection stays usable, which it would not if a body had been sent.
            try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try client.readResponse().text == "twelve bytes")
        }
    }

    /// `HTTPServer.answeringHEAD`: a handler that only knows GET answers HEAD with the GET's
    /// status and headers (Content-Length that of the body left out) and no body, whatever
    /// kind of body it makes (RFC 9110 §9.3.2); it sees a GET whose `sentMethod` is HEAD.
    @Test(arguments: [
        ("/bytes", 200, "twelve bytes"),
        ("/stream", 200, "streamed, with a length"),
        ("/missing", 404, "no such thing"),
    ])
    func answeringHEADIsGETWithoutTheBody(path: String, status: Int, body: String) throws {
        let seen = LockedValue<[String]>([])
        let handler = HTTPServer.answeringHEAD { request in
            seen.withLock { $0.append("\(request.method)/\(request.sentMethod)") }
            guard request.method == "GET" else { return .text(405, "GET only") }
            let bytes = Array(body.utf8)
            switch request.path {
            case "/stream":
                return HTTPServerResponse(status: status, headers: [("X-Kind", "stream")], body: .stream(length: Int64(bytes.count)) { writer in
                    try writer.write(bytes)
                })
            default:
                return HTTPServerResponse(status: status, headers: [("X-Kind", "bytes")], body: .bytes(bytes))
            }
        }
        try withServer(handler: handler) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET \(path) HTTP/1.1\r\nHost: t\r\n\r\n")
            let get = try client.readResponse()
            try client.send("HEAD \(path) HTTP/1.1\r\nHost: t\r\n\r\n")
            let head = try client.readResponse(forHEAD: true)
            #expect(get.status == status && head.status == status)
            #expect(head.headers["Content-Length"] == String(body.utf8.count))
            #expect(head.headers["X-Kind"] == get.headers["X-Kind"])
            // No body was sent: the connection carries the next exchange cleanly.
            try client.send("GET \(path) HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try client.readResponse().text == body)
        }
        #expect(seen.value == ["GET/GET", "GET/HEAD", "GET/GET"])
    }

    @Test func headersKeepOrderAndRepeats() throws {
        let seen = LockedValue(HTTPHeaders())
        let handler: HTTPHandler = { request in
            seen.withLock { $0 = request.headers }
            return .text(200, "ok")
        }
        try withServer(handler: handler) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET / HTTP/1.1\r\nHost: t\r\nX-Multi: one\r\nx-multi:  two  \r\nAccept: */*\r\n\r\n")
            _ = try client.readResponse()
        }
        let headers = seen.value
        #expect(headers.values("X-MULTI") == ["one", "two"])
        #expect(headers["x-Multi"] == "one")
        #expect(Array(headers).map(\.name) == ["Host", "X-Multi", "x-multi", "Accept"])
    }

    @Test func handlerHeadersAreSanitizedAndFramingIsTheServers() throws {
        let handler: HTTPHandler = { _ in
            HTTPServerResponse(status: 201, headers: [("X-Evil", "a\r\nInjected: yes"), ("Content-Length", "999"),
                                                      ("Bad Name", "x"), ("X-Good", "fine")],
                               body: .bytes(Array("abc".utf8)))
        }
        try withServer(handler: handler) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            let reply = try client.readResponse()
            #expect(reply.status == 201)
            #expect(reply.headers["Injected"] == nil)
            #expect(reply.headers["X-Evil"] == "a  Injected: yes")
            #expect(reply.headers.values("Content-Length") == ["3"])
            #expect(reply.headers["X-Good"] == "fine")
            #expect(reply.text == "abc")
        }
    }

    @Test func unreadBodyIsDrainedSoKeepAliveStaysInStep() throws {
        let handler: HTTPHandler = { request in .text(200, "path=\(request.path)") }
        try withServer(handler: handler) { server in
            let client = try RawClient(port: server.port)
            let body = String(repeating: "z", count: 100_000)
            try client.send("POST /ignored HTTP/1.1\r\nHost: t\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
                + "GET /next HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try client.readResponse().text == "path=/ignored")
            #expect(try client.readResponse().text == "path=/next")
        }
    }

    @Test func unreadBodyBeyondDrainLimitClosesTheConnection() throws {
        let limits = quickLimits { $0.maxDrainBytes = 1000 }
        let handler: HTTPHandler = { _ in .text(401, "no") }
        try withServer(limits: limits, handler: handler) { server in
            let client = try RawClient(port: server.port)
            try client.send("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n" + String(repeating: "q", count: 5000))
            let reply = try client.readResponse()
            #expect(reply.status == 401)
            #expect(reply.headers["Connection"] == "close")
            #expect(client.isClosedByServer())
        }
    }

    @Test func inMemoryRequestCanBeHandledWithoutASocket() throws {
        let request = HTTPServerRequest(method: "POST", target: "/a%2Fb?x=%41", headers: ["Content-Type": "text/plain"],
                                        body: Array("payload".utf8))
        let reply = echoHandler(request)
        guard case .bytes(let bytes) = reply.body else {
            Issue.record("expected bytes")
            return
        }
        let fields = echoFields(String(decoding: bytes, as: UTF8.self))
        #expect(fields.contains("path=/a/b"))
        #expect(fields.contains("rawPath=/a%2Fb"))
        #expect(fields.contains("query:x=A"))
        #expect(fields.contains("body=payload"))
        #expect(request.mediaType == "text/plain")
    }
}

