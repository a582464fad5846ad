import Testing
import Foundation
@testable import DouctlServer
import DouctlSystem
import DouctlTestSupport

/// A body served from memory `maxPerCall` bytes at a time, so delimiters straddle reads.
func memoryBody(_ bytes: [UInt8], maxPerCall: Int = .max) -> HTTPRequestBody {
    HTTPRequestBody(input: BufferedInput(producer: MemoryProducer(bytes, maxPerCall: maxPerCall), capacity: 4096),
                    contentLength: Int64(bytes.count), isChunked: false, maxBodyBytes: .max,
                    maxTrailerBytes: 4096, readTimeout: 5, continueSender: nil)
}

struct ParsedPart: Equatable {
    var name: String?
    var filename: String?
    var contentType: String?
    var content: [UInt8]
}

/// Reads every part, reading each part's content `readSize` bytes at a time.
func parseAll(_ body: [UInt8], boundary: String, maxPerCall: Int = .max, bufferSize: Int = 256 * 1024,
              readSize: Int = 100_000) throws -> [ParsedPart] {
    guard let reader = MultipartReader(body: memoryBody(body, maxPerCall: maxPerCall),
                                       contentType: "multipart/form-data; boundary=\(boundary)", bufferSize: bufferSize) else {
        throw TestFailure("no reader")
    }
    var parts: [ParsedPart] = []
    var buffer = [UInt8](repeating: 0, count: readSize)
    while let part = try reader.nextPart() {
        var content: [UInt8] = []
        while true {
            let count = try buffer.withUnsafeMutableBytes { try part.read(into: $0) }
            if count == 0 { break }
            content += buffer[..<count]
        }
        parts.append(ParsedPart(name: part.name, filename: part.filename, contentType: part.contentType, content: content))
    }
    #expect(try reader.nextPart() == nil)
    return parts
}

/// Builds a multipart body from (headers, content) pairs.
func multipartBody(boundary: String, parts: [(String, [UInt8])], preamble: String = "", epilogue: String = "") -> [UInt8] {
    var body = Array(preamble.utf8)
    for (headers, content) in parts {
        body += Array("--\(boundary)\r\n\(headers)\r\n\r\n".utf8) + content + Array("\r\n".utf8)
    }
    body += Array("--\(boundary)--\(epilogue)".utf8)
    return body
}

@Suite struct MultipartTests {
    static let boundary = "----douctlBoundary7MA4YWxk"

    /// Content that nearly contains the delimiter in every way that could confuse a parser.
    static let trickyContent: [UInt8] = Array((
        "line one\r\n"
        + "\r\n--\r\n"
        + "\r\n--" + String(boundary.dropLast()) + "\r\n"   // boundary missing its last character
        + "\r\n--" + boundary + "X\r\n"                       // boundary followed by more text
        + "\r\n--" + boundary + "-\r\n"                       // a single dash is not the close delimiter
        + "x--" + boundary + "\r\n"                           // no CRLF before it: content
        + "\r\r\n--" + String(boundary.prefix(5))
        + "\r\n-"
        + "\r"
    ).utf8)

    @Test(arguments: [1, 2, 3, 7, 64, 1000, Int.max])
    func severalPartsSurviveAnySplitting(_ maxPerCall: Int) throws {
        let body = multipartBody(boundary: Self.boundary, parts: [
            ("Content-Disposition: form-data; name=\"text\"", Array("plain value".utf8)),
            ("Content-Disposition: form-data; name=\"empty\"", []),
            ("Content-Disposition: form-data; name=\"file\"; filename=\"tricky.bin\"\r\nContent-Type: application/octet-stream",
             Self.trickyContent),
            ("Content-Disposition: form-data; name=\"last\"", Array("end".utf8)),
        ], preamble: "This is the preamble.\r\n", epilogue: "\r\nepilogue text")
        for bufferSize in [256 * 1024, 300] {
            let parts = try parseAll(body, boundary: Self.boundary, maxPerCall: maxPerCall, bufferSize: bufferSize, readSize: 5)
            #expect(parts == [
                ParsedPart(name: "text", filename: nil, contentType: nil, content: Array("plain value".utf8)),
                ParsedPart(name: "empty", filename: nil, contentType: nil, content: []),
                ParsedPart(name: "file", filename: "tricky.bin", contentType: "application/octet-stream", content: Self.trickyContent),
                ParsedPart(name: "last", filename: nil, contentType: nil, content: Array("end".utf8)),
            ])
        }
    }

    @Test func filenamesInEveryEscapingStyle() throws {
        let cases: [(String, String?, String?)] = [
            ("form-data; name=\"f\"; filename=\"a%22b.txt\"", "f", "a\"b.txt"),
            ("form-data; name=\"f\"; filename=\"a\\\"b.txt\"", "f", "a\"b.txt"),
            ("form-data; name=\"f\"; filename=\"back\\\\slash.txt\"", "f", "back\\slash.txt"),
            ("form-data; name=\"f\"; filename=\"C:\\dir\\x.txt\"", "f", "C:\\dir\\x.txt"),
            ("form-data; name=\"line%0D%0Abreak\"; filename=\"x%0Ay.txt\"", "line\r\nbreak", "x\ny.txt"),
            ("form-data; name=\"f\"; filename=\"中文 文件.txt\"", "f", "中文 文件.txt"),
            ("form-data; name=\"f\"; filename=\"100%.txt\"", "f", "100%.txt"),
            ("form-data; name=\"f\"; filename=\"a;b=c.txt\"", "f", "a;b=c.txt"),
            ("form-data; name=f; filename=plain.txt", "f", "plain.txt"),
            ("form-data; NAME=\"upper\"; FileName=\"x.txt\"", "upper", "x.txt"),
            ("form-data; name=\"f\"; filename=\"fallback.txt\"; filename*=UTF-8''na%C3%AFve.txt", "f", "naïve.txt"),
            ("form-data; name=\"only\"", "only", nil),
            ("form-data; name=\"unterminated; filename=x", "unterminated; filename=x", nil),
        ]
        for (disposition, name, filename) in cases {
            let body = multipartBody(boundary: "b", parts: [("Content-Disposition: " + disposition, Array("x".utf8))])
            let parts = try parseAll(body, boundary: "b")
            #expect(parts.count == 1)
            #expect(parts.first?.name == name, "\(disposition)")
            #expect(parts.first?.filename == filename, "\(disposition)")
        }
    }

    @Test func partLargerThanTheBufferStreamsToAFile() throws {
        let directory = try TemporaryDirectory()
        let source = try directory.makeFile(named: "big.bin", size: 5_000_000)
        let content = try readWholeFile(source)
        let body = multipartBody(boundary: Self.boundary, parts: [
            ("Content-Disposition: form-data; name=\"before\"", Array("1".utf8)),
            ("Content-Disposition: form-data; name=\"big\"; filename=\"big.bin\"", content),
            ("Content-Disposition: form-data; name=\"after\"", Array("2".utf8)),
        ])
        guard let reader = MultipartReader(body: memoryBody(body, maxPerCall: 70_000),
                                           contentType: "multipart/form-data; boundary=\"\(Self.boundary)\"") else {
            throw TestFailure("no reader")
        }
        #expect(try reader.nextPart()?.readText() == "1")
        let big = try #require(try reader.nextPart())
        #expect(big.filename == "big.bin")
        let target = directory.path + "/copy.bin"
        let fd = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { close(fd) }
        #expect(try big.write(toFileDescriptor: fd) == 5_000_000)
        #expect(try filesAreEqual(source, target))
        #expect(try reader.nextPart()?.readText() == "2")
        #expect(try reader.nextPart() == nil)
    }

    @Test func unreadPartsAreSkippedAndStalePartsReadNothing() throws {
        let body = multipartBody(boundary: "xyz", parts: [
            ("Content-Disposition: form-data; name=\"a\"", Array(repeating: 65, count: 10_000)),
            ("Content-Disposition: form-data; name=\"b\"", Array("bee".utf8)),
        ])
        let reader = try #require(MultipartReader(body: memoryBody(body, maxPerCall: 333), contentType: "multipart/form-data; boundary=xyz"))
        let first = try #require(try reader.nextPart())
        var two = [UInt8](repeating: 0, count: 2)
        #expect(try two.withUnsafeMutableBytes { try first.read(into: $0) } == 2)
        let second = try #require(try reader.nextPart())
        #expect(try two.withUnsafeMutableBytes { try first.read(into: $0) } == 0)
        #expect(try first.readAll(limit: 100).isEmpty)
        #expect(second.name == "b")
        #expect(throws: HTTPServerError.bodyTooLarge) { try second.readAll(limit: 2) }
    }

    @Test func lineFeedOnlyBodiesAndTransportPadding() throws {
        let body = Array("--b  \t\nContent-Disposition: form-data; name=\"a\"\n\nvalue\n--b\nContent-Disposition: form-data; name=\"c\"\n\n\r\n--b--\n".utf8)
        let parts = try parseAll(body, boundary: "b")
        // RFC 2046 delimiters start with CRLF: "\n--b" is content, so the would-be second part
        // belongs to the first, and the padded, LF-ended first boundary still counts.
        #expect(parts.count == 1)
        #expect(parts.first?.name == "a")
        #expect(parts.first.map { String(decoding: $0.content, as: UTF8.self) }
            == "value\n--b\nContent-Disposition: form-data; name=\"c\"\n\n")
    }

    @Test func truncatedBodiesThrowAtEveryCutPoint() throws {
        let body = multipartBody(boundary: "bnd", parts: [
            ("Content-Disposition: form-data; name=\"a\"", Array("alpha".utf8)),
            ("Content-Disposition: form-data; name=\"f\"; filename=\"x\"", Self.trickyContent),
        ])
        for cut in 0..<body.count {
            #expect(throws: HTTPServerError.self, "cut at \(cut)") {
                _ = try parseAll(Array(body[..<cut]), boundary: "bnd", maxPerCall: 3, bufferSize: 200, readSize: 7)
            }
        }
        #expect(try parseAll(body, boundary: "bnd").count == 2)
    }

    @Test func malformedPartHeadersThrow() throws {
        for headers in ["No colon here", " folded: header", "Bad Name: x"] {
            let body = multipartBody(boundary: "b", parts: [(headers, Array("x".utf8))])
            #expect(throws: HTTPServerError.self) { _ = try parseAll(body, boundary: "b") }
        }
        let huge = multipartBody(boundary: "b", parts: [("X-Huge: " + String(repeating: "h", count: 20_000), [])])
        #expect(throws: HTTPServerError.malformed("multipart part headers too large")) { _ = try parseAll(huge, boundary: "b") }
    }

    /// Issue 20: a body of 10^6 tiny parts made every caller keep 10^6 records. The reader
    /// refuses the 1,001st part before reading its headers; 1,000 parts pass.
    @Test func partsBeyondTheLimitAreRefused() throws {
        let one = (#"Content-Disposition: form-data; name="f""#, Array("x".utf8))
        #expect(MultipartReader.defaultMaxParts == 1000)
        #expect(try parseAll(multipartBody(boundary: "b", parts: Array(repeating: one, count: 1000)), boundary: "b").count == 1000)
        let tooMany = multipartBody(boundary: "b", parts: Array(repeating: one, count: 1001))
        var refusal: (any Error)?
        do { _ = try parseAll(tooMany, boundary: "b") } catch { refusal = error }
        #expect(refusal.map { "\($0)" } == "more than 1000 parts in a multipart body")
        // A caller may choose its own limit.
        let reader = try #require(MultipartReader(body: memoryBody(tooMany), contentType: "multipart/form-data; boundary=b", maxParts: 2))
        _ = try reader.nextPart()
        _ = try reader.nextPart()
        #expect(throws: HTTPServerError.multipartTooLarge("more than 2 parts in a multipart body")) { _ = try reader.nextPart() }
        #expect(try reader.nextPart() == nil, "after a refusal the reader stays finished")
    }

    /// The header sections of all parts together are bounded too (1 MiB), so 1,000 parts of
    /// 16 KiB headers each cannot make a caller hold 16 MB of names.
    @Test func partHeadersBeyondOneMiBInAllAreRefused() throws {
        let wide = ("Content-Disposition: form-data; name=\"f\"\r\nX-Pad: " + String(repeating: "p", count: 8000), [UInt8]())
        #expect(try parseAll(multipartBody(boundary: "b", parts: Array(repeating: wide, count: 100)), boundary: "b").count == 100)
        var refusal: (any Error)?
        do { _ = try parseAll(multipartBody(boundary: "b", parts: Array(repeating: wide, count: 200)), boundary: "b") } catch { refusal = error }
        #expect(refusal.map { "\($0)" } == "multipart part headers larger than 1 MiB in all")
    }

    @Test func readerNeedsAMultipartTypeWithABoundary() {
        let body = HTTPRequestBody(bytes: [])
        #expect(MultipartReader(body: body, contentType: "application/json") == nil)
        #expect(MultipartReader(body: body, contentType: "multipart/form-data") == nil)
        #expect(MultipartReader(body: body, contentType: "multipart/form-data; boundary=") == nil)
        #expect(MultipartReader(body: body, contentType: "multipart/form-data; boundary=" + String(repeating: "b", count: 201)) == nil)
        #expect(MultipartReader(body: body, contentType: "Multipart/Mixed; charset=utf-8; Boundary=\"a b\"")?.boundary == "a b")
    }

    @Test func curlUploadsA50MBFileWithExpectContinue() throws {
        let directory = try TemporaryDirectory()
        let source = try directory.makeFile(named: "photo 1.jpg", size: 50_000_000)
        let received = directory.path + "/received"
        let handler: HTTPHandler = { request in
            guard let type = request.headers["Content-Type"],
                  let reader = MultipartReader(body: request.body, contentType: type) else {
                return .text(415, "not multipart")
            }
            var summary: [String] = []
            do {
                while let part = try reader.nextPart() {
                    if let filename = part.filename {
                        let fd = open(received, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
                        defer { close(fd) }
                        let size = try part.write(toFileDescriptor: fd)
                        summary.append("\(part.name ?? "?") file=\(filename) type=\(part.contentType ?? "-") size=\(size)")
                    } else {
                        summary.append("\(part.name ?? "?")=\(try part.readText())")
                    }
                }
            } catch {
                return .text(400, "\(error)")
            }
            return .text(200, summary.joined(separator: "\n"))
        }
        try withServer(handler: handler) { server in
            let result = try runCurl(["-v", "--expect100-timeout", "60", "-H", "Expect: 100-continue",
                                      "-F", "status=你好 world", "-F", "image=@\(source);type=image/jpeg",
                                      server.baseURL + "/shuo/v2/statuses/"])
            #expect(result.exitCode == 0, "\(result.stderr)")
            #expect(result.stderr.contains("HTTP/1.1 100 Continue"))
            #expect(String(decoding: result.stdout, as: UTF8.self)
                == "status=你好 world\nimage file=photo 1.jpg type=image/jpeg size=50000000")
        }
        #expect(try filesAreEqual(source, received))
    }
}
