import Testing
import Foundation
import DouctlServer
import DouctlSystem
import DouctlTestSupport

/// Chunked bodies, `Expect: 100-continue`, and the streaming body API.
@Suite struct RequestBodyTests {
    @Test func chunkedBodyWithExtensionsAndTrailers() throws {
        try withServer(handler: echoHandler) { server in
            let client = try RawClient(port: server.port)
            try client.send("POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "5;name=value;flag\r\nhello\r\n"
                + "1 ; spaced=\"quoted\"\r\n \r\n"
                + "00000000005\r\nworld\r\n"
                + "0;last\r\nX-Checksum: abc\r\nX-Other: 1\r\n\r\n")
            let reply = try client.readResponse()
            #expect(reply.status == 200)
            let fields = echoFields(reply.text)
            #expect(fields.contains("body=hello world"))
            #expect(fields.contains("trailer:X-Checksum=abc"))
            #expect(fields.contains("trailer:X-Other=1"))
            // Still in step for another request.
            try client.send("GET /after HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(echoFields(try client.readResponse().text).contains("path=/after"))
        }
    }

    @Test func chunkedBodyWithBareLineFeeds() throws {
        try withServer(handler: echoHandler) { server in
            let client = try RawClient(port: server.port)
            try client.send("POST / HTTP/1.1\nHost: t\nTransfer-Encoding: chunked\n\n3\nabc\n0\n\n")
            #expect(echoFields(try client.readResponse().text).contains("body=abc"))
        }
    }

    @Test func continueIsSentWhenTheHandlerReadsTheBody() throws {
        try withServer(handler: echoHandler) { server in
            let client = try RawClient(port: server.port)
            try client.send("POST /up HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
            let interim = try client.readResponse()
            #expect(interim.status == 100)
            try client.send("data")
            let final = try client.readResponse()
            #expect(final.status == 200)
            #expect(echoFields(final.text).contains("body=data"))
        }
    }

    @Test func continueIsNotSentWhenTheHandlerIgnoresTheBody() throws {
        let handler: HTTPHandler = { _ in .text(403, "denied") }
        try withServer(handler: handler) { server in
            let client = try RawClient(port: server.port)
            try client.send("POST /up HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
            let reply = try client.readResponse()
            #expect(reply.status == 403)
            // The client never sent the body, so the connection cannot continue in step.
            #expect(reply.headers["Connection"] == "close")
            #expect(client.isClosedByServer())
        }
    }

    @Test func tooLargeExpectationIsAnswered413WithoutContinue() throws {
        let limits = quickLimits { $0.maxBodyBytes = 1000 }
        try withServer(limits: limits, handler: echoHandler) { server in
            let client = try RawClient(port: server.port)
            try client.send("PUT /big HTTP/1.1\r\nHost: t\r\nContent-Length: 1001\r\nExpect: 100-continue\r\n\r\n")
            let reply = try client.readResponse()
            #expect(reply.status == 413)
            #expect(client.isClosedByServer())
        }
    }

    @Test func unknownExpectationIs417() throws {
        try withServer(handler: echoHandler) { server in
            let client = try RawClient(port: server.port)
            try client.send("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nExpect: something-else\r\n\r\n")
            #expect(try client.readResponse().status == 417)
        }
    }

    @Test func curlChunkedUploadArrivesWhole() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.makeFile(named: "upload.bin", size: 3_000_000)
        let received = directory.path + "/received.bin"
        let handler: HTTPHandler = { request in
            guard request.isChunked, request.contentLength == nil else { return .text(400, "expected chunked") }
            let fd = open(received, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            defer { close(fd) }
            var buffer = [UInt8](repeating: 0, count: 100_000)
            do {
                while true {
                    let count = try buffer.withUnsafeMutableBytes { try request.body.read(into: $0) }
                    if count == 0 { break }
                    try FileIO.writeAll(fd, Array(buffer[..<count]))
                }
            } catch {
                return .text(500, "\(error)")
            }
            return .text(200, "got \(request.body.bytesRead)")
        }
        try withServer(handler: handler) { server in
            let result = try runCurl(["-H", "Transfer-Encoding: chunked", "--data-binary", "@" + file, server.baseURL + "/up"])
            #expect(result.exitCode == 0, "\(result.stderr)")
            #expect(String(decoding: result.stdout, as: UTF8.self) == "got 3000000")
        }
        #expect(try filesAreEqual(file, received))
    }

    @Test func readAllRefusesBeyondItsLimitWithoutReading() throws {
        let body = HTTPRequestBody(bytes: Array(repeating: 7, count: 100))
        #expect(throws: HTTPServerError.bodyTooLarge) { try body.readAll(limit: 99) }
        #expect(body.bytesRead == 0)
        #expect(try body.readAll(limit: 100).count == 100)
        #expect(body.isComplete)
    }

    @Test func drainReportsDiscardedBytes() throws {
        let body = HTTPRequestBody(bytes: Array(repeating: 1, count: 70_000))
        var first = [UInt8](repeating: 0, count: 10)
        #expect(try first.withUnsafeMutableBytes { try body.read(into: $0) } == 10)
        #expect(try body.drain() == 69_990)
        #expect(try first.withUnsafeMutableBytes { try body.read(into: $0) } == 0)
    }
}
