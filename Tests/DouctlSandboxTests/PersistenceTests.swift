import DouctlJSON
import DouctlSandbox
import DouctlSystem
import Testing

@Suite struct PersistenceTests {
    @Test func stateSurvivesARestart() throws {
        let directory = try TemporaryDirectory()
        let png = Images.png(width: 20, height: 10, padding: 300)
        var statusID: Int64 = 0
        var pictureTarget = ""
        var pair = (accessToken: "", refreshToken: "")
        var expiredPair = (accessToken: "", refreshToken: "")
        let clock = VirtualClock()
        do {
            let first = try Harness { $0.dataDirectory = directory.path; $0.clock = SandboxClock(now: clock.read) }
            pair = first.sandbox.issueToken(user: "ahbei")
            var body = MultipartBody()
            body.add("text", "重启之后还在吗？")
            body.addFile("image", filename: "p.png", contentType: "image/png", png)
            let status = try first.post("/shuo/v2/statuses/", multipart: body, token: pair.accessToken).json()
            statusID = try #require(status["id"]?.int64Value)
            pictureTarget = try target(of: status["attachments"]?[0]?["media"]?[0]?["src"]?.stringValue ?? "", base: first.base)
            _ = try first.post("/shuo/v2/statuses/\(statusID)/comments", form: [("text", "在的")], token: pair.accessToken)
            _ = try first.post("/shuo/v2/statuses/\(statusID)/like", token: first.token("linglu"))
            _ = try first.post("/shuo/v2/friendships/create", form: [("user_id", "wangdali")], token: pair.accessToken)
            expiredPair = first.sandbox.issueToken(user: "chenmo", ttl: 0.05)
            first.stop()
        }
        let stateFile = try FileIO.status(directory.path + "/state.json")
        #expect(stateFile.mode == 0o600)

        clock.advance(0.1)
        let second = try Harness { $0.dataDirectory = directory.path; $0.clock = SandboxClock(now: clock.read) }
        defer { second.stop() }
        let reply = try second.get("/shuo/v2/statuses/\(statusID)", token: pair.accessToken)
        #expect(reply.status == 200)
        let status = try reply.json()
        #expect(status["text"] == .string("重启之后还在吗？"))
        #expect(status["comments_count"] == .number("1"))
        #expect(status["like_count"] == .number("1"))
        #expect(status["is_follow"] == false)  // own status
        // The picture comes back from disk, at the new port's URL.
        let picture = try second.get(pictureTarget)
        #expect(picture.status == 200)
        #expect(picture.body == png)
        #expect(try second.get("/v2/user/wangdali", token: pair.accessToken).json()["relation"] == .string("contact"))
        // Tokens: the live one works, the expired one is still known as expired, refresh works.
        #expect(try second.get("/shuo/v2/statuses/home_timeline", token: expiredPair.accessToken).code == 106)
        #expect(try second.refresh(expiredPair.refreshToken).status == 200)
        #expect(try second.refresh(pair.refreshToken).code == 124)
        // New ids continue after the old ones.
        let next = try second.postStatus("新的一条", token: pair.accessToken)
        #expect((next["id"]?.int64Value ?? 0) > statusID)
    }

    @Test func deletionIsPersistedToo() throws {
        let directory = try TemporaryDirectory()
        var token = ""
        do {
            let first = try Harness { $0.dataDirectory = directory.path }
            token = first.token()
            #expect(try first.delete("/shuo/v2/statuses/1402640300", token: token).status == 200)
            first.stop()
        }
        let second = try Harness { $0.dataDirectory = directory.path }
        defer { second.stop() }
        #expect(try second.get("/shuo/v2/statuses/1402640300", token: token).code == 1001)
    }

    @Test func stateIsWrittenAfterEachChangeNotOnlyAtStop() throws {
        let directory = try TemporaryDirectory()
        let harness = try Harness { $0.dataDirectory = directory.path }
        defer { harness.stop() }
        let token = harness.token()
        let status = try harness.postStatus("立即保存", token: token)
        let saved = try JSONParser.parse(try FileIO.readFile(directory.path + "/state.json"))
        #expect(saved["format"] == .string("douctl-sandbox-state"))
        let texts = saved["statuses"]?.arrayValue?.compactMap { $0["text"]?.stringValue } ?? []
        #expect(texts.contains("立即保存"))
        let tokens = saved["access_tokens"]?.arrayValue?.compactMap { $0["token"]?.stringValue } ?? []
        #expect(tokens.contains(token))
        #expect(status["id"] != nil)
    }

    @Test func corruptStateIsReportedAndLeftAlone() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/state.json"
        let garbage = Array("{\"format\":\"douctl-sandbox-state\",\"version\":1,\"users\":[".utf8)
        try AtomicFile.write(garbage, to: path)
        var configuration = SandboxConfiguration()
        configuration.dataDirectory = directory.path
        do {
            _ = try Sandbox(configuration)
            Issue.record("a corrupt state file was accepted")
        } catch let error as SandboxError {
            #expect(error.message.contains(path))
            #expect(error.message.contains("corrupt"))
        }
        #expect(try FileIO.readFile(path) == garbage)

        try AtomicFile.write(Array("{\"format\":\"something-else\"}".utf8), to: path)
        #expect(throws: SandboxError.self) { _ = try Sandbox(configuration) }
        try AtomicFile.write(Array("{\"format\":\"douctl-sandbox-state\",\"version\":1,\"users\":[{\"id\":\"x\"}]}".utf8), to: path)
        #expect(throws: SandboxError.self) { _ = try Sandbox(configuration) }
    }
}
