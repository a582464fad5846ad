import Testing
import Foundation
import DouctlServer
import DouctlSystem
import DouctlTestSupport

/// Start, stop, timeouts, and clients that misbehave by doing nothing.
@Suite struct LifecycleTests {
    @Test func silentClientDoesNotBlockOthers() throws {
        try withServer(handler: echoHandler) { server in
            let silent = try RawClient(port: server.port)
            let halfHead = try RawClient(port: server.port)
            try halfHead.send("GET / HTTP/1.1\r\nHo")
            let client = try RawClient(port: server.port)
            try client.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(echoFields(try client.readResponse().text).contains("path=/hello"))
            _ = (silent, halfHead)
        }
    }

    @Test func stopIsPromptWithIdleClientsConnected() throws {
        let server = try HTTPServer(handler: echoHandler)
        try server.start()
        var clients: [RawClient] = []
        for _ in 0..<5 {
            let client = try RawClient(port: server.port)
            try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            _ = try client.readResponse()
            clients.append(client)  // now idle in keep-alive
        }
        clients.append(try RawClient(port: server.port))  // silent
        let partial = try RawClient(port: server.port)
        try partial.send("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nonly part")  // stuck in a body read
        clients.append(partial)

        let elapsed = secondsTaken { server.stop() }
        #expect(elapsed < 2, "stop took \(elapsed) s")
        #expect(server.openConnectionCount == 0)
        for client in clients.dropLast() { #expect(client.isClosedByServer()) }
    }

    @Test func stopIsIdempotentAndReleasesWaiters() throws {
        let server = try HTTPServer(handler: echoHandler)
        try server.start()
        let released = LockedValue(false)
        let waiter = try JoinableThread {
            server.waitUntilStopped()
            released.withLock { $0 = true }
        }
        #expect(released.value == false)
        server.stop()
        waiter.join()
        #expect(released.value)
        server.stop()
        server.waitUntilStopped()
        #expect(throws: HTTPServerError.notStartable) { try server.start() }
        #expect(throws: (any Error).self) { _ = try RawClient(port: server.port) }
    }

    @Test func stopBeforeStartIsFine() throws {
        let server = try HTTPServer(handler: echoHandler)
        server.stop()
        server.waitUntilStopped()
        #expect(throws: HTTPServerError.notStartable) { try server.start() }
    }

    @Test func droppingTheServerStopsIt() throws {
        var port: UInt16 = 0
        do {
            let server = try HTTPServer(handler: echoHandler)
            try server.start()
            port = server.port
            let client = try RawClient(port: port)
            try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try client.readResponse().status == 200)
        }
        #expect(throws: (any Error).self) { _ = try RawClient(port: port) }
    }

    @Test func idleKeepAliveConnectionIsClosed() throws {
        try withServer(limits: quickLimits(), handler: echoHandler) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try client.readResponse().status == 200)
            #expect(client.isClosedByServer())
        }
    }

    @Test func slowHeaderIsDroppedWith408() throws {
        try withServer(limits: quickLimits(), handler: echoHandler) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET / HTTP/1.1\r\nHost: t\r\n")
            let reply = try client.readResponse()
            #expect(reply.status == 408)
            #expect(client.isClosedByServer())
        }
    }

    @Test func tricklingHeaderCannotOutlastTheHeaderTimeout() throws {
        try withServer(limits: quickLimits(), handler: echoHandler) { server in
            let client = try RawClient(port: server.port)
            // One byte every 100 ms would take 3 s; the 0.5 s header deadline ends it first.
            for byte in "GET / HTTP/1.1\r\nX-Slow: aaaaaaaaa\r\n\r\n".utf8 {
                if client.hasInputWaiting() || (try? client.send([byte])) == nil { break }
                usleep(100_000)
            }
            let reply = try? client.readResponse()
            #expect(reply?.status == 408)
        }
    }

    @Test func slowHandlerDoesNotHoldUpOtherConnections() throws {
        let gateOpen = LockedValue(false)
        let handler: HTTPHandler = { request in
            if request.path == "/slow" {
                for _ in 0..<10_000 where !gateOpen.value { usleep(1000) }
                return .text(200, "slow done")
            }
            return .text(200, "fast")
        }
        try withServer(handler: handler) { server in
            let slow = try RawClient(port: server.port)
            try slow.send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
            for _ in 0..<3 {
                let fast = try RawClient(port: server.port)
                try fast.send("GET /fast HTTP/1.1\r\nHost: t\r\n\r\n")
                #expect(try fast.readResponse().text == "fast")
            }
            #expect(gateOpen.value == false)
            gateOpen.withLock { $0 = true }
            #expect(try slow.readResponse().text == "slow done")
        }
    }

    @Test func stopDoesNotWaitForeverForAStuckHandler() throws {
        var limits = HTTPServerLimits()
        limits.stopGracePeriod = 0.3
        let entered = LockedValue(false)
        let server = try HTTPServer(limits: limits) { _ in
            entered.withLock { $0 = true }
            sleep(3)
            return .text(200, "late")
        }
        try server.start()
        let client = try RawClient(port: server.port)
        try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        for _ in 0..<5000 where !entered.value { usleep(1000) }
        #expect(entered.value)
        let elapsed = secondsTaken { server.stop() }
        #expect(elapsed < 2.5, "stop took \(elapsed) s")
    }

    @Test func handlerCanStopTheServerAndStillReply() throws {
        let serverBox = LockedValue<HTTPServer?>(nil)
        let server = try HTTPServer { request in
            guard request.path == "/callback" else { return .text(404, "no") }
            serverBox.withLock { $0 }?.stop()
            return .text(200, "You can close this tab.")
        }
        serverBox.withLock { $0 = server }
        try server.start()
        let idle = try RawClient(port: server.port)
        let client = try RawClient(port: server.port)
        var reply: RawReply?
        let elapsed = try secondsTaken {
            try client.send("GET /callback?code=x HTTP/1.1\r\nHost: t\r\n\r\n")
            reply = try client.readResponse()
        }
        #expect(reply?.text == "You can close this tab.")
        #expect(reply?.headers["Connection"] == "close")
        #expect(elapsed < 2.5, "stop inside a handler took \(elapsed) s")
        #expect(idle.isClosedByServer())
        server.waitUntilStopped()
        serverBox.withLock { $0 = nil }
    }

    @Test func stopLetsARunningHandlerFinishItsReply() throws {
        let entered = LockedValue(false)
        let server = try HTTPServer { _ in
            entered.withLock { $0 = true }
            usleep(300_000)
            return .text(200, "finished")
        }
        try server.start()
        let client = try RawClient(port: server.port)
        try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        for _ in 0..<5000 where !entered.value { usleep(1000) }
        server.stop()
        let reply = try client.readResponse()
        #expect(reply.text == "finished")
        #expect(reply.headers["Connection"] == "close")
    }

    @Test func connectionsBeyondTheLimitGet503() throws {
        let limits = quickLimits {
            $0.maxConnections = 2
            $0.headerReadTimeout = 10
        }
        try withServer(limits: limits, handler: echoHandler) { server in
            let first = try RawClient(port: server.port)
            let second = try RawClient(port: server.port)
            try first.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try first.readResponse().status == 200)
            let third = try RawClient(port: server.port)
            let reply = try third.readResponse()
            #expect(reply.status == 503)
            _ = second
        }
    }

    @Test func bindingErrorsAreReported() throws {
        let server = try HTTPServer(handler: echoHandler)
        #expect(throws: (any Error).self) { _ = try HTTPServer(host: "127.0.0.1", port: server.port, handler: echoHandler) }
        #expect(throws: HTTPServerError.invalidAddress("example.com")) { _ = try HTTPServer(host: "example.com", handler: echoHandler) }
        #expect(server.baseURL == "http://127.0.0.1:\(server.port)")
    }

    @Test func listensOnAnyAddressAndIPv6Loopback() throws {
        try withServer(handler: echoHandler) { _ in }
        let any = try HTTPServer(host: "0.0.0.0", handler: echoHandler)
        try any.start()
        defer { any.stop() }
        #expect(any.baseURL == "http://127.0.0.1:\(any.port)")
        let client = try RawClient(port: any.port)
        try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try client.readResponse().status == 200)

        // IPv6 may be missing in a container; only test it where ::1 can be bound.
        guard let v6 = try? HTTPServer(host: "::1", handler: echoHandler) else { return }
        try v6.start()
        defer { v6.stop() }
        #expect(v6.baseURL == "http://[::1]:\(v6.port)")
        let result = try runCurl(["-g", v6.baseURL + "/six"])
        #expect(result.exitCode == 0, "\(result.stderr)")
        #expect(echoFields(String(decoding: result.stdout, as: UTF8.self)).contains("path=/six"))
    }
}
