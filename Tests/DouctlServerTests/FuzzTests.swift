import Testing
import Foundation
@testable import DouctlServer
import DouctlSystem
import DouctlTestSupport

/// Throws random, truncated and mutated requests at a live server, then checks it still serves
/// a normal request correctly. Deterministic: a failure reproduces from the seed.
@Suite struct FuzzTests {
    static let validRequests: [String] = [
        "GET /shuo/v2/statuses/home_timeline?count=20&since_id=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer abc\r\n\r\n",
        "POST /shuo/v2/statuses/ HTTP/1.1\r\nHost: t\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 17\r\n\r\ntext=hello+world!",
        "POST /up HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\nabcd\r\n3\r\nefg\r\n0\r\nX-T: 1\r\n\r\n",
        "POST /form HTTP/1.1\r\nHost: t\r\nContent-Type: multipart/form-data; boundary=zz\r\nContent-Length: 130\r\n\r\n"
            + "--zz\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nvalue\r\n"
            + "--zz\r\nContent-Disposition: form-data; name=\"f\"; filename=\"x%22.txt\"\r\n\r\n\r\n--zz-\r\n--zz--",
        "PUT /x HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
        "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /again HTTP/1.1\r\nHost: t\r\n\r\n",
        "HEAD /h HTTP/1.1\r\nHost: t\r\n\r\nDELETE /d HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    ]

    /// Reads the body, as multipart when it says so, and answers with what it found.
    static let handler: HTTPHandler = { request in
        do {
            if let type = request.headers["Content-Type"], let reader = MultipartReader(body: request.body, contentType: type) {
                var names: [String] = []
                while let part = try reader.nextPart() {
                    names.append(part.name ?? "?")
                    _ = try part.readAll(limit: 1 << 20)
                }
                return .text(200, "parts=\(names)")
            }
            if request.path.hasPrefix("/stream") {
                return HTTPServerResponse(status: 200, body: .stream(length: nil) { writer in try writer.write("s") })
            }
            let body = try request.body.readAll(limit: 1 << 20)
            return .text(200, "\(request.method) \(request.path) \(body.count)")
        } catch {
            return .text(400, "\(error)")
        }
    }

    static func mutate(_ input: [UInt8], using generator: inout SplitMix64) -> [UInt8] {
        var bytes = input
        switch generator.next() % 8 {
        case 0:  // random bytes
            bytes = (0..<Int(generator.next() % 3000)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        case 1:  // truncation
            bytes = Array(bytes.prefix(Int(generator.next() % UInt64(bytes.count + 1))))
        case 2:  // flipped bytes
            for _ in 0..<(1 + Int(generator.next() % 6)) where !bytes.isEmpty {
                bytes[Int(generator.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: generator.next())
            }
        case 3:  // inserted junk
            let junk = ["\r\n", "\n", "\r", " ", ":", "\r\n\r\n", "0\r\n", "99999999999999999999", "FFFFFFFFFFFFFFFFFFFF",
                        "Content-Length: 5\r\n", "Transfer-Encoding: chunked\r\n", "\u{0}", "--zz", "--zz--", "%"]
            for _ in 0..<(1 + Int(generator.next() % 4)) {
                let at = Int(generator.next() % UInt64(bytes.count + 1))
                bytes.insert(contentsOf: Array(junk[Int(generator.next() % UInt64(junk.count))].utf8), at: at)
            }
        case 4:  // deleted ranges
            if bytes.count > 2 {
                let from = Int(generator.next() % UInt64(bytes.count - 1))
                let length = 1 + Int(generator.next() % UInt64(min(40, bytes.count - from)))
                bytes.removeSubrange(from..<min(bytes.count, from + length))
            }
        case 5:  // duplicated slice
            if !bytes.isEmpty {
                let from = Int(generator.next() % UInt64(bytes.count))
                let slice = bytes[from..<min(bytes.count, from + Int(generator.next() % 200))]
                bytes.insert(contentsOf: slice, at: Int(generator.next() % UInt64(bytes.count + 1)))
            }
        case 6:  // a huge header line
            bytes.insert(contentsOf: Array(("X-Big: " + String(repeating: "b", count: 70_000) + "\r\n").utf8),
                         at: bytes.firstIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0)
        default:  // valid, pipelined with another valid one
            bytes += Array(validRequests[Int(generator.next() % UInt64(validRequests.count))].utf8)
        }
        return bytes
    }

    @Test func liveServerSurvivesGarbage() throws {
        let limits = quickLimits {
            $0.idleTimeout = 0.3
            $0.headerReadTimeout = 0.3
            $0.ioTimeout = 0.3
            $0.maxBodyBytes = 1 << 20
        }
        try withServer(limits: limits, handler: Self.handler) { server in
            // Four clients at once, 150 connections each, every one with its own seed.
            let answered = LockedValue(0)
            let port = server.port
            let workers = try (0..<4).map { worker in
                try JoinableThread {
                    var generator = SplitMix64(seed: 0xD0C7_1000 + UInt64(worker))
                    for round in 0..<150 {
                        let base = Array(Self.validRequests[round % Self.validRequests.count].utf8)
                        let bytes = Self.mutate(base, using: &generator)
                        if Self.throwAtServer(bytes, port: port, style: generator.next() % 8,
                                              split: Int(generator.next() % UInt64(bytes.count + 1))) {
                            answered.withLock { $0 += 1 }
                        }
                    }
                }
            }
            workers.forEach { $0.join() }
            let answeredCount = answered.value
            #expect(answeredCount > 100)
            // Every connection thread ends: none is stuck on a half-parsed request.
            for _ in 0..<500 where server.openConnectionCount > 0 { usleep(10_000) }
            #expect(server.openConnectionCount == 0)

            // Afterwards the server still answers correctly, with keep-alive intact.
            let client = try RawClient(port: server.port)
            for request in 0..<2 {
                try client.send("POST /check/\(request) HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nxyz")
                let reply = try client.readResponse()
                #expect(reply.status == 200)
                #expect(reply.text == "POST /check/\(request) 3")
            }
        }
    }

    /// Sends `bytes` split in two at `split`, then (by `style`) leaves at once, half-closes and
    /// reads, or just reads. True when a response came back.
    static func throwAtServer(_ bytes: [UInt8], port: UInt16, style: UInt64, split: Int) -> Bool {
        guard let client = try? RawClient(port: port, receiveTimeout: 3) else { return false }
        try? client.send(Array(bytes[..<split]))
        if style == 0 { usleep(2000) }  // let the server parse the first piece on its own
        try? client.send(Array(bytes[split...]))
        if style == 1 { return false }  // gone without reading: the server must cope with the reset
        if style != 2 { client.shutdownWrite() }  // style 2 keeps the connection open: idle timeout
        return client.readToEnd().starts(with: Array("HTTP/1.1 ".utf8))
    }

    @Test func multipartParserSurvivesMutatedBodies() {
        let body = multipartBody(boundary: "fz", parts: [
            ("Content-Disposition: form-data; name=\"a\"", Array("alpha\r\n--f".utf8)),
            ("Content-Disposition: form-data; name=\"b\"; filename=\"b.txt\"\r\nContent-Type: text/plain", Array(repeating: 0x0D, count: 50)),
        ])
        var generator = SplitMix64(seed: 99)
        for _ in 0..<3000 {
            let mutated = Self.mutate(body, using: &generator)
            let perCall = 1 + Int(generator.next() % 100)
            _ = try? parseAll(mutated, boundary: "fz", maxPerCall: perCall, bufferSize: 128 + Int(generator.next() % 300),
                              readSize: 1 + Int(generator.next() % 64))
        }
    }

    @Test func chunkedDecoderSurvivesMutatedBodies() {
        let chunked = Array("4;x=y\r\nabcd\r\n3\r\nefg\r\n0\r\nX-T: 1\r\n\r\n".utf8)
        var generator = SplitMix64(seed: 5)
        for _ in 0..<5000 {
            let mutated = Self.mutate(chunked, using: &generator)
            let body = HTTPRequestBody(input: BufferedInput(producer: MemoryProducer(mutated, maxPerCall: 1 + Int(generator.next() % 9)),
                                                            capacity: 4096),
                                       contentLength: nil, isChunked: true, maxBodyBytes: 100, maxTrailerBytes: 200,
                                       readTimeout: 1, continueSender: nil)
            _ = try? body.readAll(limit: 1000)
            #expect(body.bytesRead <= 100)
        }
    }
}
