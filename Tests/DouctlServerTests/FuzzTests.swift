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

    // MARK: multipart

    /// What reading a whole multipart body came to: its parts, or the error that stopped it.
    enum MultipartOutcome: Equatable {
        case parts([ParsedPart])
        case failed(HTTPServerError)
    }

    static func multipartOutcome(_ body: [UInt8], boundary: String, maxPerCall: Int, bufferSize: Int, readSize: Int) -> MultipartOutcome {
        do {
            return .parts(try parseAll(body, boundary: boundary, maxPerCall: maxPerCall, bufferSize: bufferSize, readSize: readSize))
        } catch let error as HTTPServerError {
            return .failed(error)
        } catch {
            Issue.record("the multipart reader threw \(error), which is not an HTTPServerError")
            return .failed(.malformed("\(error)"))
        }
    }

    /// The errors `MultipartReader` documents for a broken body: all `.malformed`, with these details.
    static func isDocumentedMultipartError(_ error: HTTPServerError) -> Bool {
        guard case .malformed(let detail) = error else { return false }
        return ["truncated multipart body", "multipart line too long", "multipart part headers too large"].contains(detail)
            || detail.hasPrefix("invalid multipart part header: ")
    }

    /// Mutated bodies either parse or fail with a documented error, and how the bytes arrive
    /// (read sizes, the body's own chunking) never changes which.
    @Test func multipartParserAnswersMutatedBodiesTheSameWhateverTheReads() {
        let body = multipartBody(boundary: "fz", parts: [
            ("Content-Disposition: form-data; name=\"a\"", Array("alpha\r\n--f".utf8)),
            ("Content-Disposition: form-data; name=\"b\"; filename=\"b.txt\"\r\nContent-Type: text/plain", Array(repeating: 0x0D, count: 50)),
        ])
        var generator = SplitMix64(seed: 99)
        var parsed = 0, failed = 0
        for _ in 0..<3000 {
            let mutated = Self.mutate(body, using: &generator)
            let bufferSize = 128 + Int(generator.next() % 300)
            let first = Self.multipartOutcome(mutated, boundary: "fz", maxPerCall: 1 + Int(generator.next() % 100),
                                              bufferSize: bufferSize, readSize: 1 + Int(generator.next() % 64))
            let second = Self.multipartOutcome(mutated, boundary: "fz", maxPerCall: .max, bufferSize: bufferSize, readSize: 100_000)
            #expect(first == second, "reads changed the outcome for \(mutated)")
            switch first {
            case .parts: parsed += 1
            case .failed(let error):
                failed += 1
                #expect(Self.isDocumentedMultipartError(error), "undocumented error \(error) for \(mutated)")
            }
        }
        #expect(parsed > 100 && failed > 100, "parsed \(parsed), failed \(failed)")
    }

    /// Any parts, written as multipart, read back as the same parts. Contents come close to
    /// the delimiter in every way but never hold it whole (RFC 2046 §5.1.1: a writer picks a
    /// boundary its contents do not contain).
    @Test func multipartRoundTrips() throws {
        var generator = SplitMix64(seed: 0x3D1F)
        let pieces: [[UInt8]] = ["\r", "\n", "\r\n", "-", "--", "--fz", "\r\n--f", "\r\n-", "z", "a", "é", "\u{0}"].map { Array($0.utf8) }
        let delimiter = Array("\r\n--fz".utf8)
        for round in 0..<500 {
            var parts: [ParsedPart] = []
            for index in 0..<(1 + Int(generator.next() % 4)) {
                var content: [UInt8] = []
                for _ in 0..<Int(generator.next() % 40) {
                    let piece = pieces[Int(generator.next() % UInt64(pieces.count))]
                    if (content + piece).firstRange(of: delimiter) == nil { content += piece }
                }
                let isFile = generator.next() % 2 == 0
                parts.append(ParsedPart(name: "p\(index)", filename: isFile ? "f\(index).bin" : nil,
                                        contentType: isFile ? "application/octet-stream" : nil, content: content))
            }
            let body = multipartBody(boundary: "fz", parts: parts.map { part in
                var headers = "Content-Disposition: form-data; name=\"\(part.name ?? "")\""
                if let filename = part.filename { headers += "; filename=\"\(filename)\"" }
                if let contentType = part.contentType { headers += "\r\nContent-Type: \(contentType)" }
                return (headers, part.content)
            })
            let outcome = Self.multipartOutcome(body, boundary: "fz", maxPerCall: 1 + Int(generator.next() % 50),
                                                bufferSize: 128 + Int(generator.next() % 300), readSize: 1 + Int(generator.next() % 64))
            #expect(outcome == .parts(parts), "round \(round)")
        }
    }

    // MARK: chunked bodies

    /// What reading a whole chunked body came to: its bytes and trailers, or the error.
    enum ChunkedOutcome: Equatable {
        case body([UInt8], trailers: [String])
        case failed(HTTPServerError)
    }

    static func chunkedOutcome(_ bytes: [UInt8], maxPerCall: Int, maxBodyBytes: Int64 = 100) -> (ChunkedOutcome, bytesRead: Int64) {
        let body = HTTPRequestBody(input: BufferedInput(producer: MemoryProducer(bytes, maxPerCall: maxPerCall), capacity: 4096),
                                   contentLength: nil, isChunked: true, maxBodyBytes: maxBodyBytes, maxTrailerBytes: 200,
                                   readTimeout: 1, continueSender: nil)
        do {
            let content = try body.readAll(limit: 1000)
            return (.body(content, trailers: body.trailers.map { "\($0.name): \($0.value)" }), body.bytesRead)
        } catch let error as HTTPServerError {
            return (.failed(error), body.bytesRead)
        } catch {
            Issue.record("the chunked decoder threw \(error), which is not an HTTPServerError")
            return (.failed(.malformed("\(error)")), body.bytesRead)
        }
    }

    /// The errors a chunked body documents: cut short, too large, or broken framing.
    static func isDocumentedChunkedError(_ error: HTTPServerError) -> Bool {
        switch error {
        case .connectionClosed, .bodyTooLarge:
            return true
        case .malformed(let detail):
            return ["chunk data not followed by CRLF", "chunk size too large", "invalid chunk size", "invalid chunk extension",
                    "trailer section too large", "line too long"].contains(detail)
                || detail.hasPrefix("invalid trailer field: ")
        default:
            return false
        }
    }

    /// Mutated chunked bodies decode or fail with a documented error, never past the body
    /// limit, the same however the bytes arrive.
    @Test func chunkedDecoderAnswersMutatedBodiesTheSameWhateverTheReads() {
        let chunked = Array("4;x=y\r\nabcd\r\n3\r\nefg\r\n0\r\nX-T: 1\r\n\r\n".utf8)
        var generator = SplitMix64(seed: 5)
        var decoded = 0, failed = 0
        for _ in 0..<5000 {
            let mutated = Self.mutate(chunked, using: &generator)
            let (first, bytesRead) = Self.chunkedOutcome(mutated, maxPerCall: 1 + Int(generator.next() % 9))
            let (second, _) = Self.chunkedOutcome(mutated, maxPerCall: .max)
            #expect(bytesRead <= 100)
            #expect(first == second, "reads changed the outcome for \(mutated)")
            switch first {
            case .body: decoded += 1
            case .failed(let error):
                failed += 1
                #expect(Self.isDocumentedChunkedError(error), "undocumented error \(error) for \(mutated)")
            }
        }
        #expect(decoded > 100 && failed > 100, "decoded \(decoded), failed \(failed)")
    }

    /// Any bytes, sent in any chunk sizes with extensions and trailers, decode to those bytes.
    @Test func chunkedBodiesRoundTrip() {
        var generator = SplitMix64(seed: 0xC4C4)
        for round in 0..<1000 {
            let content = (0..<Int(generator.next() % 300)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            var encoded: [UInt8] = []
            var offset = 0
            while offset < content.count {
                let size = min(content.count - offset, 1 + Int(generator.next() % 64))
                let extensionText = generator.next() % 3 == 0 ? ";name=value" : ""
                encoded += Array((String(size, radix: 16, uppercase: generator.next() % 2 == 0) + extensionText + "\r\n").utf8)
                encoded += content[offset..<(offset + size)] + [13, 10]
                offset += size
            }
            let trailers = generator.next() % 2 == 0 ? ["X-Sum: \(content.count)"] : []
            encoded += Array(("0\r\n" + trailers.map { $0 + "\r\n" }.joined() + "\r\n").utf8)
            let (outcome, bytesRead) = Self.chunkedOutcome(encoded, maxPerCall: 1 + Int(generator.next() % 20), maxBodyBytes: 1 << 20)
            #expect(outcome == .body(content, trailers: trailers), "round \(round)")
            #expect(bytesRead == Int64(content.count))
        }
    }
}
