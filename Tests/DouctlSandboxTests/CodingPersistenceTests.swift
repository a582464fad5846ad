import DouctlJSON
import DouctlSandbox
import DouctlSystem
import Testing

/// Coding's half of `--data DIR`: accounts, tweets, comments, likes, tokens, sessions and
/// pictures survive a restart; state files from before Coding load with Coding's seed.
@Suite struct CodingPersistenceTests {
    @Test func codingStateSurvivesARestart() throws {
        let directory = try TemporaryDirectory()
        var pair = (accessToken: "", refreshToken: "")
        var tweetID: Int64 = 0
        var pictureTarget = ""
        var sid = ""
        var xsrf = ""
        let png = Images.png(width: 8, height: 8, padding: 500)
        do {
            let first = try Harness { $0.dataDirectory = directory.path }
            pair = first.sandbox.issueCodingToken(user: "coder")
            var body = MultipartBody()
            body.addFile("tweetImg", filename: "p.png", contentType: "image/png", png)
            let url = try #require(try first.post(Harness.codingTarget("/api/tweet/insert_image", token: pair.accessToken),
                                                  multipart: body).data?.stringValue)
            pictureTarget = try target(of: url, base: first.base)
            let tweet = try first.postTweet("重启之后还在吗？ ![图片](\(url))", token: pair.accessToken)
            tweetID = try #require(tweet["id"]?.int64Value)
            #expect(try first.codingPost("/api/tweet/\(tweetID)/comment", form: [("content", "在的")],
                                         token: first.codingToken("devmei")).code == 0)
            #expect(try first.codingPost("/api/tweet/\(tweetID)/like", token: first.codingToken("opszhang")).code == 0)
            let browser = CodingBrowser(first)
            #expect(try browser.logIn("devmei", rememberMe: true).code == 0)
            sid = try #require(browser.sid)
            xsrf = try #require(browser.cookie("XSRF-TOKEN"))
            first.stop()
        }
        let saved = try JSONParser.parse(try FileIO.readFile(directory.path + "/state.json"))
        #expect(saved["coding"]?["tweets"]?.arrayValue?.contains { $0["id"] == .int(tweetID) } == true)
        #expect(saved["coding"]?["sessions"]?.arrayValue?.count == 1)

        let second = try Harness { $0.dataDirectory = directory.path }
        defer { second.stop() }
        let detail = try second.codingGet("/api/tweet/coder/\(tweetID)", token: pair.accessToken)
        #expect(detail.code == 0)
        #expect(detail.data?["comments"] == 1)
        #expect(detail.data?["likes"] == 1)
        #expect(detail.data?["content"]?.stringValue?.hasPrefix("<p>重启之后还在吗？") == true)
        let picture = try second.get(pictureTarget)
        #expect(picture.body == png)
        #expect(picture.header("Content-Type") == "image/png")
        // The session still works, XSRF token and all.
        let cookie = [("Cookie", "sid=\(sid); XSRF-TOKEN=\(xsrf)")]
        #expect(try second.get("/api/account/current_user", headers: cookie).data?["global_key"] == "devmei")
        #expect(try second.post("/api/tweet", form: [("content", "会话还在")], headers: cookie + [("X-XSRF-TOKEN", xsrf)]).code == 0)
        // The refresh token still rotates.
        let refreshed = try second.codingTokenRequest(Harness.client + [("grant_type", "refresh_token"),
                                                                        ("refresh_token", pair.refreshToken)])
        #expect(refreshed.status == 200)
        // New ids continue after the old ones.
        let next = try second.postTweet("新的一条", token: try #require(refreshed.json()["access_token"]?.stringValue))
        #expect((next["id"]?.int64Value ?? 0) > tweetID)
    }

    @Test func stateFilesFromBeforeCodingStillLoad() throws {
        let directory = try TemporaryDirectory()
        do {
            let first = try Harness { $0.dataDirectory = directory.path }
            _ = try first.postStatus("豆瓣的广播", token: first.token())
            first.stop()
        }
        // Strip the Coding half, as a file written by the Douban-only sandbox looks.
        let path = directory.path + "/state.json"
        guard case .object(var object) = try JSONParser.parse(try FileIO.readFile(path)) else { throw TestFailure("not an object") }
        object["coding"] = nil
        try AtomicFile.write(JSON.object(object).serialized(), to: path)

        let second = try Harness { $0.dataDirectory = directory.path }
        defer { second.stop() }
        let douban = try second.get("/shuo/v2/statuses/user_timeline/ahbei?count=1", token: second.token()).json()
        #expect(douban[0]?["text"] == "豆瓣的广播")
        let coding = try second.codingGet("/api/tweet/public_tweets", token: second.codingToken())
        #expect(coding.data?.arrayValue?.count == 8)
        // The seeded Coding half was written back at once.
        let rewritten = try JSONParser.parse(try FileIO.readFile(path))
        #expect(rewritten["coding"]?["users"]?.arrayValue?.count == 4)
    }

    @Test func corruptCodingHalfIsReported() throws {
        let directory = try TemporaryDirectory()
        do {
            let first = try Harness { $0.dataDirectory = directory.path }
            first.stop()
        }
        let path = directory.path + "/state.json"
        guard case .object(var object) = try JSONParser.parse(try FileIO.readFile(path)) else { throw TestFailure("not an object") }
        object["coding"] = ["users": [["id": "not a number"]]]
        let bytes = JSON.object(object).serialized()
        try AtomicFile.write(bytes, to: path)
        var configuration = SandboxConfiguration()
        configuration.dataDirectory = directory.path
        #expect(throws: SandboxError.self) { _ = try Sandbox(configuration) }
        #expect(try FileIO.readFile(path) == bytes)
    }
}
