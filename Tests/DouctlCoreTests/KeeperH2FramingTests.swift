@testable import DouctlHTTP
import Testing

/// Issue 44 in process: how the keeper's HTTP/2 side reads a client's HTTP/1.1 request and
/// writes the reply back (KeeperH2.swift), without sockets.
@Suite("Keeper over HTTP/2: framing")
struct KeeperH2FramingTests {
    static func parse(_ text: String) -> KeeperH2Request? {
        KeeperH2Request.parse(ArraySlice(Array(text.utf8)))
    }

    @Test func aGetKeepsItsHeadersInOrderAndDropsTheConnectionsOwn() throws {
        let request = try #require(Self.parse("GET /a/b?x=1 HTTP/1.1\r\nHost: api.example:8443\r\nAuthorization: Bearer t\r\nConnection: keep-alive\r\nKeep-Alive: 5\r\nTE: trailers\r\nX-Empty:\r\nAccept: application/json"))
        #expect(request.method == "GET" && request.target == "/a/b?x=1" && request.body == .none && !request.expectsContinue)
        #expect(request.headers.map(\.name) == ["Host", "Authorization", "X-Empty", "Accept"])
        #expect(request.headerLines == ["Host: api.example:8443", "Authorization: Bearer t", "X-Empty;", "Accept: application/json", "Expect:"])
        #expect(!request.hasBody)
    }

    @Test func whatLibcurlWouldAddIsSuppressedWhenTheClientDidNotSendIt() throws {
        let request = try #require(Self.parse("POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 3"))
        #expect(request.body == .length(3) && request.hasBody)
        #expect(request.headerLines == ["Host: h", "Accept:", "Content-Type:", "Expect:"])
    }

    @Test func bodiesByLengthChunkedAndExpect() throws {
        #expect(Self.parse("PUT /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue")?.body == .chunked)
        #expect(Self.parse("PUT /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue")?.expectsContinue == true)
        #expect(Self.parse("POST /p HTTP/1.1\r\nContent-Length: 0")?.hasBody == true, "an empty POST is still a POST with a body")
        #expect(Self.parse("DELETE /p HTTP/1.1\r\nContent-Length: 0")?.hasBody == false)
        #expect(Self.parse("GET /p HTTP/1.1\r\nContent-Length: 5")?.hasBody == true, "a GET with a body keeps it")
        #expect(Self.parse("POST /p HTTP/1.1\r\nContent-Length: 7\r\nContent-Length: 7")?.body == .length(7))
        // An expectation other than 100-continue is the origin's to judge: it goes on.
        let other = Self.parse("POST /p HTTP/1.1\r\nExpect: something")
        #expect(other?.expectsContinue == false && other?.headerLines.contains("Expect: something") == true && other?.headerLines.contains("Expect:") == false)
    }

    @Test(arguments: [
        "GET /p HTTP/1.0",  // not HTTP/1.1
        "GET http://h/p HTTP/1.1",  // absolute form
        "GET  /p HTTP/1.1",
        "GET /p HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2",
        "GET /p HTTP/1.1\r\nContent-Length: -1",
        "POST /p HTTP/1.1\r\nTransfer-Encoding: gzip, chunked",
        "POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3",
        "GET /p HTTP/1.1\r\nNo colon here",
        "GET /p HTTP/1.1\r\n: empty name",
        "GET /p HTTP/1.1\r\nBad Name: x",
    ])
    func aHeadThisPathCannotCarryIsRefused(head: String) {
        #expect(Self.parse(head) == nil, "\(head)")
    }

    @Test func theReplyHeadSaysHowItsBodyIsFramed() {
        let plain = KeeperH2ReplyHead.make(status: 200, headers: [("content-type", "application/json"), ("content-length", "12")], method: "GET", closing: false)
        #expect(String(decoding: plain.bytes, as: UTF8.self) == "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 12\r\n\r\n")
        #expect(plain.framing == .length)
        let unknown = KeeperH2ReplyHead.make(status: 201, headers: [("x-a", "b")], method: "POST", closing: false)
        #expect(String(decoding: unknown.bytes, as: UTF8.self) == "HTTP/1.1 201 Created\r\nx-a: b\r\ntransfer-encoding: chunked\r\n\r\n")
        #expect(unknown.framing == .chunked)
        for (status, method) in [(200, "HEAD"), (204, "GET"), (304, "GET")] {
            let head = KeeperH2ReplyHead.make(status: status, headers: [("content-length", "42"), ("connection", "x")], method: method, closing: false)
            #expect(head.framing == .none, "\(status) \(method)")
            #expect(String(decoding: head.bytes, as: UTF8.self).contains("content-length: 42\r\n"))
            #expect(!String(decoding: head.bytes, as: UTF8.self).contains("connection"), "connection-specific headers are not passed")
        }
        let early = KeeperH2ReplyHead.make(status: 413, headers: [("content-length", "0")], method: "PUT", closing: true)
        #expect(String(decoding: early.bytes, as: UTF8.self).hasSuffix("connection: close\r\n\r\n"))
        #expect(KeeperH2ReplyHead.make(status: 299, headers: [], method: "GET", closing: false).bytes.starts(with: Array("HTTP/1.1 299 Success\r\n".utf8)))
    }

    @Test func aChunkedBodyDecodesWhateverWayItIsSplit() {
        let wire = Array("5;ext=1\r\nhello\r\n1a\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nTrailer: x\r\n\r\nNEXT".utf8)
        let expected = Array("helloabcdefghijklmnopqrstuvwxyz".utf8)
        for split in 0...wire.count {
            var decoder = KeeperChunkedDecoder()
            var output: [UInt8] = []
            var used = 0
            for part in [Array(wire[..<split]), Array(wire[split...])] {
                guard !decoder.isDone, let stopped = decoder.feed(part, from: 0, into: &output) else { break }
                used += stopped
            }
            #expect(decoder.isDone, "split at \(split)")
            #expect(output == expected, "split at \(split)")
            #expect(used == wire.count - 4, "the next request's bytes stay: split at \(split)")
        }
    }

    @Test(arguments: ["zz\r\n", "5\r\nhelloXY\r\n", "\r\n", "1234567890abcdef0\r\n"])
    func aBrokenChunkedBodyIsRefused(wire: String) {
        var decoder = KeeperChunkedDecoder()
        var output: [UInt8] = []
        #expect(decoder.feed(Array(wire.utf8), from: 0, into: &output) == nil, "\(wire)")
    }
}

/// The HTTP/2 side's read-ahead of a request body: flat however libcurl's reads interleave
/// with the client's writes (CI saw the keeper grow by 33 MiB on a 64 MiB upload; 16 MiB here).
@Suite("Keeper over HTTP/2: body read-ahead")
struct KeeperReadAheadTests {
    @Test func aBodyKeptToppedUpWhileTakenInPiecesStaysFlat() {
        var buffer = ReadAheadBuffer(dropTakenAfter: KeeperH2Origin.bodyBuffer)
        var destination = [UInt8](repeating: 0, count: 64 << 10)
        var sent = 0, received = 0, largest = 0
        var inOrder = true
        while received < 16 << 20 {
            // The client writes 64 KiB whenever less than 1 MiB is pending (wantsInput);
            // libcurl takes 60 KiB at a time, so the array never empties on its own.
            if buffer.pending < 1 << 20 && sent < 16 << 20 {
                buffer.bytes.append(contentsOf: (0..<(64 << 10)).map { UInt8(truncatingIfNeeded: sent + $0) })
                sent += 64 << 10
            }
            let got = destination.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return buffer.take(into: base, upTo: 60 << 10)
            }
            for index in 0..<got where destination[index] != UInt8(truncatingIfNeeded: received + index) { inOrder = false }
            received += got
            largest = max(largest, buffer.bytes.count)
        }
        #expect(inOrder, "the bytes came out in the order they went in")
        #expect(received == 16 << 20)
        #expect(largest < (2 << 20) + (128 << 10), "the array held \(largest) bytes")
    }
}
