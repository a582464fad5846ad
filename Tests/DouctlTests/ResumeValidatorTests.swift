import DouctlServer
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 40 #16: a cut download resumed with `If-Range` and the Last-Modified date although
/// the first reply carried a strong ETag; Apache, whose file was a second old, answered 200
/// and the whole file came again. The built binary against a server that honours `If-Range`
/// as Apache does: a strong ETag compared strongly; a date only when it equals the file's and
/// is at least one second before the request's time, else 200 with the whole file.
@Suite("If-Range as Apache reads it")
struct ResumeValidatorTests {
    /// Serves `body` with `etag` and a Last-Modified equal to the reply's Date (a file written
    /// this second); the first reply is cut after `cutAfter` bytes.
    static func apacheLike(_ body: [UInt8], etag: String, cutAfter: Int) throws -> TestServer {
        let count = LockedValue(0)
        let written = HTTPDate.now()
        return try TestServer { received in
            let number = count.withLock { value -> Int in
                defer { value += 1 }
                return value
            }
            var headers: [(String, String)] = [("Content-Type", "application/octet-stream"), ("Accept-Ranges", "bytes"),
                                               ("ETag", etag), ("Last-Modified", written), ("Date", written)]
            var start = 0
            var status = 200
            // Apache's ap_condition_if_range: an entity tag matches only strongly; a date never
            // here, since the file is not a second older than the request.
            let matches = received.header("If-Range").map { $0.hasPrefix("\"") && $0 == etag } ?? true
            if matches, let range = received.header("Range"), range.hasPrefix("bytes="), range.hasSuffix("-"),
               let first = Int(range.dropFirst(6).dropLast()), first < body.count {
                start = first
                status = 206
                headers.append(("Content-Range", "bytes \(first)-\(body.count - 1)/\(body.count)"))
            }
            let rest = Array(body[start...])
            return HTTPServerResponse(status: status, headers: headers, body: .stream(length: Int64(rest.count)) { writer in
                guard number == 0 else { return try writer.write(rest) }
                try writer.write(Array(rest.prefix(cutAfter)))
                Thread.sleep(forTimeInterval: 0.3)  // let the client read them first
                try writer.abortConnection()
            })
        }
    }

    @Test func aStrongETagBesideAFreshLastModifiedIsWhatIfRangeCarries() throws {
        let body = DownloadTests.content(800_000)
        let server = try Self.apacheLike(body, etag: "\"2a-5f3a\"", cutAfter: 300_000)
        let directory = TemporaryDirectory.make(prefix: "dl-if-range-etag")
        let result = try Douctl().run("download", server.baseURL + "/big.bin", "-d", directory)
        #expect(result.status == 0, "\(result)")
        let requests = server.received
        #expect(requests.count == 2)
        #expect(requests.last?.header("If-Range") == "\"2a-5f3a\"", "the strong ETag, not the date")
        let range = try #require(requests.last?.header("Range"))
        let from = try #require(Int(range.dropFirst(6).dropLast()))
        #expect(from > 0, "the rest only: the server answered 206")
        #expect(DownloadTests.read(directory + "/big.bin") == body, "byte-identical")
    }

    @Test func aWeakETagAndADateOfThisSecondAreNoValidator() throws {
        let body = DownloadTests.content(600_000)
        let server = try Self.apacheLike(body, etag: "W/\"2a-5f3a\"", cutAfter: 200_000)
        let directory = TemporaryDirectory.make(prefix: "dl-if-range-weak")
        let result = try Douctl().run("download", server.baseURL + "/big.bin", "-d", directory)
        #expect(result.status == 0, "\(result)")
        let requests = server.received
        #expect(requests.count == 2)
        #expect(requests.last?.header("If-Range") == nil, "a date this fresh is weak (RFC 9110 §8.8.2.2): not sent")
        #expect(requests.last?.header("Range") == nil, "no validator: the whole file, never an unchecked splice")
        #expect(DownloadTests.read(directory + "/big.bin") == body, "byte-identical")
    }
}
