import Testing
import Foundation
import DouctlServer
import DouctlSystem
import DouctlTestSupport

/// `.file` and `.stream` bodies, and resets for fault injection.
@Suite struct ResponseBodyTests {
    @Test func fileBodyIsStreamedWithItsLength() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.makeFile(named: "download.bin", size: 1_500_000)
        let handler: HTTPHandler = { request in
            HTTPServerResponse(status: 200, headers: [("Content-Type", "application/octet-stream")],
                               body: .file(path: request.path == "/missing" ? directory.path + "/nope" : file))
        }
        try withServer(handler: handler) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET /f HTTP/1.1\r\nHost: t\r\n\r\n")
            let reply = try client.readResponse()
            #expect(reply.status == 200)
            #expect(reply.headers["Content-Length"] == "1500000")
            #expect(reply.body == (try readWholeFile(file)))

            try client.send("HEAD /f HTTP/1.1\r\nHost: t\r\n\r\n")
            let head = try client.readResponse(forHEAD: true)
            #expect(head.headers["Content-Length"] == "1500000")

            try client.send("GET /missing HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try client.readResponse().status == 404)
        }
    }

    @Test func streamWithoutLengthIsChunked() throws {
        let handler: HTTPHandler = { _ in
            HTTPServerResponse(status: 200, body: .stream(length: nil) { writer in
                for index in 0..<5 { try writer.write("part\(index);") }
                try writer.write([UInt8]())  // an empty write must not end the body early
                try writer.write(Array(repeating: UInt8(ascii: "z"), count: 100_000))
            })
        }
        try withServer(handler: handler) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            let reply = try client.readResponse()
            #expect(reply.headers["Transfer-Encoding"] == "chunked")
            #expect(reply.headers["Content-Length"] == nil)
            #expect(reply.text.hasPrefix("part0;part1;part2;part3;part4;zzz"))
            #expect(reply.body.count == 30 + 100_000)
            // Keep-alive survives a chunked reply.
            try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try client.readResponse().body.count == 100_030)
        }
    }

    @Test func streamWithLengthUsesContentLength() throws {
        let handler: HTTPHandler = { _ in
            HTTPServerResponse(status: 200, body: .stream(length: 6) { writer in
                try writer.write("abc")
                try writer.write("def")
            })
        }
        try withServer(handler: handler) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            let reply = try client.readResponse()
            #expect(reply.headers["Content-Length"] == "6")
            #expect(reply.text == "abcdef")
        }
    }

    @Test func streamToHTTP10ClientIsDelimitedByClose() throws {
        let handler: HTTPHandler = { _ in
            HTTPServerResponse(status: 200, body: .stream(length: nil) { writer in try writer.write("old client") })
        }
        try withServer(handler: handler) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            let reply = try client.readResponse()
            #expect(reply.headers["Transfer-Encoding"] == nil)
            #expect(reply.text == "old client")
        }
    }

    @Test func overlongStreamWriteIsRefusedAndTheConnectionCloses() throws {
        let outcome = LockedValue<String>("")
        let handler: HTTPHandler = { _ in
            HTTPServerResponse(status: 200, body: .stream(length: 4) { writer in
                try writer.write("ab")
                do {
                    try writer.write("cde")
                } catch {
                    outcome.withLock { $0 = "\(error)" }
                    throw error
                }
            })
        }
        try withServer(handler: handler) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            let partial = client.readPartialResponse()
            #expect(partial.head.contains("Content-Length: 4"))
            #expect(partial.body == Array("ab".utf8))
        }
        #expect(outcome.value == HTTPServerError.responseBodyOverflow.description)
    }

    @Test func abortConnectionTruncatesTheReply() throws {
        let handler: HTTPHandler = { _ in
            HTTPServerResponse(status: 200, body: .stream(length: 1000) { writer in
                try writer.write(Array(repeating: UInt8(ascii: "a"), count: 100))
                try writer.abortConnection()
            })
        }
        try withServer(handler: handler) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            let partial = client.readPartialResponse()
            #expect(partial.head.hasPrefix("HTTP/1.1 200 OK"))
            #expect(partial.body.count == 100)

            // curl sees the same thing as an error.
            let curl = try runCurl([server.baseURL + "/"])
            #expect(curl.exitCode != 0)
            #expect(curl.stdout.count == 100)
        }
    }

    @Test func resetResponseSendsNothing() throws {
        try withServer(handler: { _ in .reset() }) { server in
            let client = try RawClient(port: server.port)
            try client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(client.readToEnd().isEmpty)
        }
    }

    @Test func producerFailingWhenTheClientLeavesDoesNotHurtTheServer() throws {
        let failures = LockedValue(0)
        let handler: HTTPHandler = { request in
            if request.path == "/ping" { return .text(200, "pong") }
            return HTTPServerResponse(status: 200, body: .stream(length: nil) { writer in
                let block = [UInt8](repeating: 0x41, count: 64 * 1024)
                do {
                    for _ in 0..<10_000 { try writer.write(block) }  // 640 MB: the client leaves long before
                } catch {
                    failures.withLock { $0 += 1 }
                    throw error
                }
            })
        }
        try withServer(handler: handler) { server in
            for _ in 0..<3 {
                let client = try RawClient(port: server.port)
                try client.send("GET /endless HTTP/1.1\r\nHost: t\r\n\r\n")
                #expect(client.waitForBytes(1))
                // Leaving without reading: the server's writes fail.
            }
            let client = try RawClient(port: server.port)
            try client.send("GET /ping HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(try client.readResponse().text == "pong")
        }
        #expect(failures.value == 3)
    }

    @Test func noContentRepliesHaveNoBodyOrLength() throws {
        try withServer(handler: { _ in .text(204, "ignored") }) { server in
            let client = try RawClient(port: server.port)
            try client.send("DELETE /x HTTP/1.1\r\nHost: t\r\n\r\nGET /y HTTP/1.1\r\nHost: t\r\n\r\n")
            let first = try client.readResponse()
            #expect(first.status == 204)
            #expect(first.headers["Content-Length"] == nil)
            #expect(try client.readResponse().status == 204)
        }
    }
}

