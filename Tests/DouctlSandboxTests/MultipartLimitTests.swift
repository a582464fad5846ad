import DouctlJSON
import DouctlSandbox
import DouctlSystem
import Testing

/// Issue 20: a multipart body of 10^6 one-byte parts (59 MB) made the sandbox keep a record
/// per part (~100 MB per request, never given back). Now a body is refused past 1,000 parts,
/// 1 MiB of part headers or 4 MiB of fields held in memory, with a 413 that says which.
/// Peak RSS is measured in the sandbox's own process: DouctlTests/SandboxMemoryTests.
@Suite struct MultipartLimitTests {
    static let boundary = "----douctl-many-parts"

    /// `count` parts `name="f"` with the content "x": 59 bytes each with this boundary.
    static func tinyParts(_ count: Int, boundary: String = boundary) -> [UInt8] {
        let part = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nx\r\n".utf8)
        var body: [UInt8] = []
        body.reserveCapacity(part.count * count + boundary.count + 6)
        for _ in 0..<count { body += part }
        body += Array("--\(boundary)--\r\n".utf8)
        return body
    }

    static func post(_ harness: Harness, _ target: String, _ body: [UInt8], token: String? = nil) throws -> TestResponse {
        var headers = [("Content-Type", "multipart/form-data; boundary=\(boundary)")]
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        return try TestHTTP.request(port: harness.port, method: "POST", target: target, headers: headers, body: body)
    }

    @Test(.timeLimit(.minutes(3)))
    func aMillionPartsAreRefusedAndNotRecorded() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.token()
        let body = Self.tinyParts(1_000_000)
        #expect(body.count > 59_000_000)
        let reply = try Self.post(harness, "/shuo/v2/statuses/", body, token: token)
        #expect(reply.status == 413, "\(reply.text.prefix(300))")
        #expect(reply.code == 999)
        #expect(reply.msg == "unknow_v2_error: more than 1000 parts in a multipart body")
        let recorded = try #require(harness.sandbox.requests.last { $0.path == "/shuo/v2/statuses/" })
        #expect(recorded.parts.count == 1000)
        #expect(recorded.bodySize == Int64(body.count), "the rest was read (and dropped) so the client got its reply")

        // A path with no handler for the body: the record of what was sent is bounded too.
        let stray = try Self.post(harness, "/v2/no/such/path", body)
        #expect(stray.status == 404)
        let strayRecord = try #require(harness.sandbox.requests.last { $0.path == "/v2/no/such/path" })
        #expect(strayRecord.parts.count == 1000)
    }

    @Test func exactly1000PartsStillPost() throws {
        let harness = try Harness()
        defer { harness.stop() }
        var body = MultipartBody()
        body.add("text", "一千个字段")
        for index in 1..<1000 { body.add("f\(index)", "x") }
        let reply = try harness.post("/shuo/v2/statuses/", multipart: body, token: harness.token())
        #expect(reply.status == 200, "\(reply.text.prefix(300))")
        #expect(try reply.json()["text"]?.stringValue == "一千个字段")
    }

    /// Each field may be 1 MiB (as a urlencoded form), but not five of them in one request.
    @Test func fieldsBeyond4MiBInAllAre413() throws {
        let harness = try Harness()
        defer { harness.stop() }
        var body = MultipartBody()
        body.add("text", "字段太多")
        for index in 0..<5 { body.add("pad\(index)", String(repeating: "p", count: 1_000_000)) }
        let reply = try harness.post("/shuo/v2/statuses/", multipart: body, token: harness.token())
        #expect(reply.status == 413, "\(reply.text.prefix(300))")
        #expect(reply.msg == "unknow_v2_error: multipart fields larger than 4 MiB in all")
        let mine = try harness.get("/shuo/v2/statuses/user_timeline/ahbei?count=1", token: harness.token()).json()
        #expect(mine[0]?["text"] != .string("字段太多"), "nothing was posted")
    }

    @Test func codingImageUploadWithTooManyPartsIs413() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let target = Harness.codingTarget("/api/tweet/insert_image", token: harness.codingToken())
        let reply = try Self.post(harness, target, Self.tinyParts(1001))
        #expect(reply.status == 413, "\(reply.text.prefix(300))")
        let json = try reply.json()
        #expect(json["code"]?.intValue == 413)
        #expect(json["msg"]?["request_too_large"]?.stringValue == "请求体过大 (more than 1000 parts in a multipart body)")
    }
}
