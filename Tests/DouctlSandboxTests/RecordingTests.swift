import DouctlJSON
import DouctlSandbox
import DouctlSystem
import Testing

@Suite struct RecordingTests {
    @Test func requestsAreRecordedAsSent() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.token()
        _ = try harness.get("/shuo/v2/statuses/home_timeline?count=5&since_id=1", token: token, headers: [("X-Test", "yes")])
        _ = try harness.post("/shuo/v2/statuses/", form: [("text", "记录 me"), ("source", "abc")], token: token)
        let requests = harness.sandbox.requests
        #expect(requests.count == 2)
        let get = requests[0]
        #expect(get.method == "GET")
        #expect(get.path == "/shuo/v2/statuses/home_timeline")
        #expect(get.rawTarget == "/shuo/v2/statuses/home_timeline?count=5&since_id=1")
        #expect(get.queryValue("count") == "5")
        #expect(get.header("x-test") == "yes")
        #expect(get.header("Authorization") == "Bearer \(token)")
        #expect(get.status == 200)
        #expect(get.bodySize == 0)
        let post = requests[1]
        #expect(post.formValue("text") == "记录 me")
        #expect(post.formValue("source") == "abc")
        #expect(post.contentType == "application/x-www-form-urlencoded; charset=UTF-8")
        #expect(post.contentLength == post.bodySize)
        #expect(!post.isChunked)
        #expect(post.status == 200)
        harness.sandbox.clearRequests()
        #expect(harness.sandbox.requests.isEmpty)
    }

    @Test func bodiesAreRecordedEvenWhereNoEndpointReadsThem() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let reply = try harness.post("/v2/unknown", form: [("a", "1"), ("b", "两")])
        #expect(reply.status == 404)
        var multipart = MultipartBody()
        multipart.add("field", "value")
        multipart.addFile("file", filename: "x.bin", contentType: "application/octet-stream", [1, 2, 3])
        _ = try harness.post("/nowhere", multipart: multipart)
        let requests = harness.sandbox.requests
        #expect(requests[0].form.map { "\($0.name)=\($0.value)" } == ["a=1", "b=两"])
        #expect(requests[0].status == 404)
        #expect(requests[1].parts.map(\.name) == ["field", "file"])
        #expect(requests[1].part("file")?.bytes == [1, 2, 3])
        #expect(requests[1].part("file")?.filename == "x.bin")
        #expect(requests[1].part("field")?.text == "value")
    }

    @Test func chunkedUploadIsRecordedWithItsSize() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.token()
        let body = Form.encode([("text", "分块上传")])
        let half = body.count / 2
        let crlf: [UInt8] = [13, 10]
        var chunked: [UInt8] = Array(String(half, radix: 16).utf8) + crlf
        chunked += body[..<half]
        chunked += crlf
        chunked += Array(String(body.count - half, radix: 16).utf8) + crlf
        chunked += body[half...]
        chunked += crlf
        chunked += Array("0\r\n\r\n".utf8)
        let reply = try TestHTTP.request(port: harness.port, method: "POST", target: "/shuo/v2/statuses/",
                                         headers: [("Authorization", "Bearer \(token)"),
                                                   ("Content-Type", "application/x-www-form-urlencoded"),
                                                   ("Transfer-Encoding", "chunked")],
                                         body: nil) { fd in try TestHTTP.sendAll(fd, chunked) }
        #expect(reply.status == 200)
        #expect(try reply.json()["text"] == .string("分块上传"))
        let recorded = try #require(harness.sandbox.requests.last)
        #expect(recorded.isChunked)
        #expect(recorded.contentLength == nil)
        #expect(recorded.bodySize == Int64(body.count))
    }

    @Test func logLinePerRequest() throws {
        let lines = LockedValue<[String]>([])
        let harness = try Harness { $0.log = { line in lines.withLock { $0.append(line) } } }
        defer { harness.stop() }
        _ = try harness.postStatus("日志", token: harness.token())
        _ = try harness.get("/nope")
        let logged = lines.value
        #expect(logged.count == 2)
        #expect(logged[0].hasPrefix("POST /shuo/v2/statuses/ 200 "))
        #expect(logged[0].hasSuffix("ms"))
        #expect(logged[1].hasPrefix("GET /nope 404 "))
    }
}
