import Testing
@testable import DouctlServer
import DouctlSystem

/// The head parser and chunk-size parser on their own, where thousands of inputs are cheap.
@Suite struct RequestParserTests {
    private func parse(_ text: String) throws(RequestRejection) -> (RequestHead, RequestFraming) {
        let head = try RequestParser.parseHead(Array(text.utf8))
        return (head, try RequestParser.framing(of: head))
    }

    @Test func parsesAWellFormedHead() throws {
        let (head, framing) = try parse("POST /x?y=1 HTTP/1.1\r\nHost: h\r\nContent-Length:  42 \r\nX-Tab:\tv\t\r\n\r\n")
        #expect(head.method == "POST")
        #expect(head.target == "/x?y=1")
        #expect(head.minorVersion == 1)
        #expect(head.headers["x-tab"] == "v")
        #expect(framing == RequestFraming(contentLength: 42, isChunked: false, keepAlive: true, expectsContinue: false))
    }

    @Test func repeatedEqualContentLengthsAreOneLength() throws {
        let (_, framing) = try parse("POST / HTTP/1.1\r\nContent-Length: 5, 5\r\nContent-Length: 5\r\n\r\n")
        #expect(framing.contentLength == 5)
    }

    @Test func http10Rules() throws {
        #expect(try parse("GET / HTTP/1.0\r\n\r\n").1.keepAlive == false)
        #expect(try parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").1.keepAlive == true)
        #expect(try parse("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n").1.expectsContinue == false)
        #expect(throws: RequestRejection.badRequest("Transfer-Encoding in an HTTP/1.0 request")) {
            _ = try parse("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n")
        }
        #expect(try parse("GET / HTTP/1.1\r\nConnection: keep-alive, CLOSE\r\n\r\n").1.keepAlive == false)
        #expect(try parse("GET / HTTP/1.9\r\n\r\n").1.keepAlive == true)
    }

    @Test func decimalParsingRejectsEverythingButDigits() {
        #expect(RequestParser.parseDecimal("0") == 0)
        #expect(RequestParser.parseDecimal("9223372036854775807") == .max)
        #expect(RequestParser.parseDecimal("9223372036854775808") == nil)
        #expect(RequestParser.parseDecimal("99999999999999999999") == nil)
        #expect(RequestParser.parseDecimal("+1") == nil)
        #expect(RequestParser.parseDecimal("1e3") == nil)
        #expect(RequestParser.parseDecimal("") == nil)
        #expect(RequestParser.parseDecimal("١٢") == nil)
    }

    @Test func chunkSizes() throws {
        #expect(try HTTPRequestBody.parseChunkSize(Array("1aF".utf8)) == 0x1AF)
        #expect(try HTTPRequestBody.parseChunkSize(Array("7fffffffffffffff".utf8)) == .max)
        #expect(try HTTPRequestBody.parseChunkSize(Array("000000000000000000000010;x=\"y\"".utf8)) == 16)
        #expect(try HTTPRequestBody.parseChunkSize(Array("5 \t;ext".utf8)) == 5)
        for bad in ["", "g", "-1", "0x10", "8000000000000000", "FFFFFFFFFFFFFFFFFFFF", "5 x", "5;\u{1}"] {
            #expect(throws: HTTPServerError.self, "\(bad)") { _ = try HTTPRequestBody.parseChunkSize(Array(bad.utf8)) }
        }
    }

    @Test func targets() throws {
        #expect(try RequestParser.splitTarget("/a/b?c=d#frag", method: "GET") == ("/a/b", "c=d"))
        #expect(try RequestParser.splitTarget("/a?", method: "GET") == ("/a", ""))
        #expect(try RequestParser.splitTarget("HTTP://h:1?q", method: "GET") == ("/", "q"))
        #expect(try RequestParser.splitTarget("https://h", method: "GET") == ("/", nil))
        #expect(try RequestParser.splitTarget("*", method: "OPTIONS") == ("*", nil))
        #expect(throws: RequestRejection.self) { _ = try RequestParser.splitTarget("*", method: "GET") }
        #expect(throws: RequestRejection.self) { _ = try RequestParser.splitTarget("host:443", method: "CONNECT") }
    }

    @Test func randomHeadsNeverCrashTheParser() {
        var generator = SplitMix64(seed: 7)
        let pieces = ["GET", "POST", " ", "/", "HTTP/1.1", "HTTP/", "\r\n", "\n", "\r", ":", "Content-Length", "Transfer-Encoding",
                      "chunked", "99999999999999999999999", "-1", ",", "\t", "\u{0}", "é", "Expect", "100-continue", "Connection",
                      "close", "%", "?", "#", "*", "http://"]
        for _ in 0..<20_000 {
            var text = ""
            for _ in 0..<Int(generator.next() % 30) { text += pieces[Int(generator.next() % UInt64(pieces.count))] }
            var bytes = Array(text.utf8) + Array("\r\n\r\n".utf8)
            if generator.next() % 4 == 0, !bytes.isEmpty {
                bytes[Int(generator.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: generator.next())
            }
            if let head = try? RequestParser.parseHead(bytes) {
                _ = try? RequestParser.framing(of: head)
                _ = try? RequestParser.splitTarget(head.target, method: head.method)
            }
        }
    }
}
