import DouctlJSON
import DouctlSandbox
import DouctlTestSupport
import Foundation
import Testing

/// Coding-style profiles end to end: the same commands against the sandbox's Coding paths.
@Suite("Coding-style APIs")
struct CodingTests {
    func fixture() throws -> SandboxFixture {
        let fixture = try SandboxFixture()
        try fixture.douctl.run("profile", "use", "coding-sandbox")
        return fixture
    }

    /// Stores a Coding OAuth token for coding-sandbox.
    @discardableResult
    func login(_ fixture: SandboxFixture, user: String = "coder") throws -> String {
        let tokens = fixture.sandbox.issueCodingToken(user: user)
        try Credentials.write(["coding-sandbox": tokens.accessToken], in: fixture.douctl.configDirectory,
                              expiresAt: "2099-01-01T00:00:00Z", refreshTokens: ["coding-sandbox": tokens.refreshToken])
        return tokens.accessToken
    }

    // MARK: login

    @Test func oauthWebLoginSendsTokensInTheQuery() throws {
        let browser = try FakeBrowser()
        let fixture = try SandboxFixture(environment: ["BROWSER": browser.command("follow")])
        let result = try fixture.douctl.run("--profile", "coding-sandbox", "auth", "login", "--web")
        #expect(result.status == 0, "\(result)")
        #expect(try result.json()["user_name"]?.stringValue == "coder")
        let authorize = try #require(fixture.sandbox.requests.first)
        #expect(authorize.path == "/oauth_authorize.html")
        let exchange = try #require(fixture.sandbox.requests.first { $0.path == "/api/oauth/access_token" })
        #expect(exchange.formValue("grant_type") == "authorization_code")
        let me = try #require(fixture.sandbox.requests.last)
        #expect(me.path == "/api/account/current_user")
        #expect(me.queryValue("access_token") != nil)
        #expect(me.header("Authorization") == nil)
        let status = try fixture.douctl.run("--profile", "coding-sandbox", "auth", "status").json()
        #expect(status["expires_at"]?.stringValue != nil, "expires_in came as a string and was still understood")
    }

    @Test func passwordLoginWithCaptchaRetryAndCookieSession() throws {
        let fixture = try fixture()
        let running = try RunningDouctl(fixture.douctl, ["auth", "login", "--password"])
        running.send("coder\n\(Sandbox.codingPassword)\n")
        let prompt = try running.waitForStderr { $0.contains("type the characters it shows:") }
        let picture = try #require(prompt.components(separatedBy: "A captcha is needed: open ").last?.split(separator: "\n").first.map(String.init))
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: picture)))
        #expect(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]), "the captcha is saved as a PNG")
        running.send("XXXX\n") // wrong on purpose
        try running.waitForStderr { $0.contains("The captcha was wrong; here is a new one.") && $0.components(separatedBy: "type the characters").count == 3 }
        let captcha = try #require(fixture.sandbox.lastCodingCaptcha)
        running.send(captcha + "\n")
        let result = running.finish()
        #expect(result.status == 0, "\(result)")
        #expect(try result.json()["session"]?.stringValue == "cookie")

        let logins = fixture.sandbox.requests.filter { $0.path == "/api/v2/account/login" }
        #expect(logins.count == 2)
        #expect(logins.last?.formValue("password") == Sandbox.codingPasswordHash(Sandbox.codingPassword))
        #expect(logins.last?.formValue("password")?.count == 40)
        #expect(logins.last?.header("X-XSRF-TOKEN") != nil)
        #expect(fixture.sandbox.requests.first?.path == "/api/captcha/login", "the captcha is asked for first")

        let jar = fixture.douctl.configDirectory + "/cookies-coding-sandbox.json"
        let mode = (try FileManager.default.attributesOfItem(atPath: jar)[.posixPermissions] as? NSNumber)?.intValue
        #expect(mode == 0o600)
        let cookies = try String(contentsOfFile: jar, encoding: .utf8)
        #expect(cookies.contains("\"sid\"") && cookies.contains("XSRF-TOKEN"))

        // The session works for reads and (with X-XSRF-TOKEN) for writes.
        #expect(try fixture.douctl.run("user", "me").json()["global_key"]?.stringValue == "coder")
        let posted = try fixture.douctl.run("shuo", "post", "cookie 会话")
        #expect(posted.status == 0, "\(posted)")
        let post = try #require(fixture.sandbox.requests.last)
        #expect(post.header("Cookie")?.contains("sid=") == true)
        #expect(post.header("X-XSRF-TOKEN") != nil)
        #expect(post.queryValue("access_token") == nil)

        let status = try fixture.douctl.run("auth", "status")
        #expect(status.status == 0, "\(status)")
        #expect(try status.json()["session"]?["cookie_jar"]?.stringValue == jar)
        #expect(try fixture.douctl.run("auth", "logout").status == 0)
        #expect(fixture.sandbox.requests.last?.path == "/api/account/logout")
        #expect(!FileManager.default.fileExists(atPath: jar))
        #expect(try fixture.douctl.run("user", "me").status == 4)
    }

    @Test func passwordLoginWithTwoFactor() throws {
        let fixture = try fixture()
        let running = try RunningDouctl(fixture.douctl, ["auth", "login", "--password"])
        running.send("twofa\n\(Sandbox.codingPassword)\n")
        try running.waitForStderr { $0.contains("type the characters it shows:") }
        running.send((fixture.sandbox.lastCodingCaptcha ?? "") + "\n")
        try running.waitForStderr { $0.contains("Two-factor code:") }
        running.send((fixture.sandbox.lastCodingTwoFactorCode ?? "") + "\n")
        let result = running.finish()
        #expect(result.status == 0, "\(result)")
        #expect(try result.json()["user_name"]?.stringValue == "twofa")
        #expect(fixture.sandbox.requests.contains { $0.path == "/api/check_two_factor_auth_code" })
    }

    @Test func wrongPasswordExitsFour() throws {
        let fixture = try SandboxFixture { $0.codingCaptchaRequired = false }
        let result = try fixture.douctl.run(["--profile", "coding-sandbox", "auth", "login", "--password"], input: Array("coder\nnot-the-password\n".utf8))
        #expect(result.status == 4, "\(result)")
        #expect(result.errorLine.hasSuffix("douctl: wrong account or password"))
        #expect(!FileManager.default.fileExists(atPath: fixture.douctl.configDirectory + "/cookies-coding-sandbox.json"))
    }

    /// expect_user pins the account for a cookie session too (issue 39): a password login as
    /// another account is exit 4 and no cookie jar is kept.
    @Test func aPasswordLoginAsAnotherAccountThanExpectUserStoresNothing() throws {
        let fixture = try SandboxFixture { $0.codingCaptchaRequired = false }
        try fixture.douctl.run(["config", "set", "expect_user", "someone-else", "--profile", "coding-sandbox"])
        let result = try fixture.douctl.run(["--profile", "coding-sandbox", "auth", "login", "--password"], input: Array("coder\n\(Sandbox.codingPassword)\n".utf8))
        #expect(result.status == 4, "\(result)")
        #expect(result.errorLine.contains("expects 'someone-else'"), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: fixture.douctl.configDirectory + "/cookies-coding-sandbox.json"))
    }

    @Test func passwordLoginIsRefusedForDoubanProfiles() throws {
        let fixture = try SandboxFixture()
        let result = try fixture.douctl.run("--profile", "sandbox", "auth", "login", "--password")
        #expect(result.status == 2)
    }

    // MARK: commands

    @Test func usersAndTweets() throws {
        let fixture = try fixture()
        try login(fixture)
        #expect(try fixture.douctl.run("user", "me").json()["global_key"]?.stringValue == "coder")
        #expect(try fixture.douctl.run("user", "get", "devmei").json()["global_key"]?.stringValue == "devmei")
        #expect(fixture.sandbox.requests.last?.path == "/api/user/key/devmei")

        let picture = try TemporaryDirectory.file(named: "pic.png", bytes: PNGFixture.bytes)
        let posted = try fixture.douctl.run("shuo", "post", "hi 冒泡", "--image", picture)
        #expect(posted.status == 0, "\(posted)")
        let upload = try #require(fixture.sandbox.requests.first { $0.path == "/api/tweet/insert_image" })
        #expect(upload.parts.map(\.name) == ["tweetImg"])
        #expect(upload.parts.first?.bytes == PNGFixture.bytes)
        let create = try #require(fixture.sandbox.requests.last)
        #expect(create.path == "/api/tweet")
        let content = try #require(create.formValue("content"))
        #expect(content.hasPrefix("hi 冒泡\n ![图片](http://127.0.0.1:"))
        let id = try #require(try posted.json()["id"]?.scalarText)

        let got = try fixture.douctl.run("shuo", "get", id)
        #expect(got.status == 0, "\(got)")
        #expect(fixture.sandbox.requests.last?.path == "/api/tweet/coder/\(id)")
        #expect(try fixture.douctl.run("shuo", "like", id).status == 0)
        #expect(fixture.sandbox.requests.last.map { "\($0.method) \($0.path)" } == "POST /api/tweet/\(id)/like")
        #expect(try fixture.douctl.run("shuo", "unlike", id).status == 0)
        #expect(fixture.sandbox.requests.last.map { "\($0.method) \($0.path)" } == "POST /api/tweet/\(id)/unlike")

        let comment = try fixture.douctl.run("shuo", "comment", id, "评论一下")
        #expect(comment.status == 0, "\(comment)")
        #expect(fixture.sandbox.requests.last?.formValue("content") == "评论一下")
        try fixture.douctl.run("shuo", "comment", id, "第二条")
        let comments = try fixture.douctl.run("shuo", "comments", id, "--count", "1", "--all").lines()
        #expect(comments.count == 2)
        #expect(fixture.sandbox.requests.filter { $0.path == "/api/tweet/\(id)/comments" }.map { $0.queryValue("page") } == [nil, "2"])
        let commentID = try #require(try comment.json()["id"]?.scalarText)
        let missingStatus = try fixture.douctl.run("shuo", "uncomment", commentID)
        #expect(missingStatus.status == 2)
        #expect(try fixture.douctl.run("shuo", "uncomment", commentID, "--status", id).status == 0)
        #expect(fixture.sandbox.requests.last.map { "\($0.method) \($0.path)" } == "DELETE /api/tweet/\(id)/comment/\(commentID)")

        #expect(try fixture.douctl.run("shuo", "delete", id).status == 0)
        #expect(fixture.sandbox.requests.last.map { "\($0.method) \($0.path)" } == "DELETE /api/tweet/\(id)")
        let gone = try fixture.douctl.run("shuo", "get", id)
        #expect(gone.status == 5, "\(gone)")
    }

    @Test func timelinesWalkTheCursor() throws {
        let fixture = try fixture()
        try login(fixture)
        fixture.sandbox.seedTweets(count: 45, user: "coder")
        let page = try fixture.douctl.run("shuo", "timeline", "--user", "coder", "--count", "10")
        #expect(page.status == 0, "\(page)")
        #expect(try page.json().arrayValue?.count == 10)
        let first = try #require(fixture.sandbox.requests.last)
        #expect(first.path == "/api/tweet/user_public")
        #expect(first.queryValue("global_key") == "coder")
        #expect(first.queryValue("last_id") == "99999999")

        let all = try fixture.douctl.run("shuo", "timeline", "--user", "coder", "--count", "10", "--all")
        let ids = try all.lines().compactMap { $0["id"]?.int64Value }
        #expect(ids.count >= 45)
        #expect(Set(ids).count == ids.count)
        #expect(ids == ids.sorted(by: >))
        #expect(try fixture.douctl.run("shuo", "timeline").status == 0)
        #expect(fixture.sandbox.requests.last?.path == "/api/activities/user_tweet")
        #expect(try fixture.douctl.run("shuo", "timeline", "--public").status == 0)
        #expect(fixture.sandbox.requests.last?.path == "/api/tweet/public_tweets")
        // douctl api --paginate follows the same cursor on a bare array.
        let api = try fixture.douctl.run("api", "/api/tweet/user_public", "-f", "global_key=coder", "-f", "pageSize=20", "--paginate")
        #expect(try api.lines().count == ids.count)
    }

    @Test func uploadUsesCodingsField() throws {
        let fixture = try fixture()
        try login(fixture)
        let picture = try TemporaryDirectory.file(named: "a.png", bytes: PNGFixture.bytes)
        let result = try fixture.douctl.run("upload", picture)
        #expect(result.status == 0, "\(result)")
        let line = try #require(try result.lines().first)
        #expect(line["reply"]?.stringValue?.hasPrefix("http://127.0.0.1:") == true)
        #expect(fixture.sandbox.requests.last?.path == "/api/tweet/insert_image")
        #expect(fixture.sandbox.requests.last?.parts.first?.name == "tweetImg")
    }

    @Test(arguments: [
        (["user", "search", "x"], "user search has no Coding equivalent"),
        (["user", "follow", "devmei"], "user follow has no Coding equivalent"),
        (["shuo", "reshare", "1"], "reshare has no Coding equivalent"),
        (["shuo", "post", "x", "--rec-url", "https://example.com"], "a recommended link (--rec-*) has no Coding equivalent"),
        (["shuo", "get", "1", "--packed"], "--packed has no Coding equivalent"),
    ])
    func unsupportedCommandsSaySoWithoutSending(arguments: [String], message: String) throws {
        let fixture = try fixture()
        try login(fixture)
        let result = try fixture.douctl.run(arguments)
        #expect(result.status == 2, "\(result)")
        #expect(result.errorLine == "douctl: \(message) (profile 'coding-sandbox' is coding-style)")
        #expect(fixture.sandbox.requests.isEmpty)
    }

    // MARK: errors, refresh, captcha

    @Test func notLoggedInAndEnvelopeErrors() throws {
        let fixture = try fixture()
        // Typed commands stop before sending; `api` shows the server's own envelope error.
        let local = try fixture.douctl.run("user", "me", "--error-format", "json")
        #expect(local.status == 4)
        #expect(try JSONParser.parse(local.errorLine)["error"]?.stringValue == "not logged in to coding-sandbox; run: douctl auth login --profile coding-sandbox")
        #expect(fixture.sandbox.requests.isEmpty)
        let result = try fixture.douctl.run("api", "/api/account/current_user", "--error-format", "json")
        #expect(result.status == 4)
        let error = try JSONParser.parse(result.errorLine)
        #expect(error["code"]?.stringValue == "1000")
        #expect(error["keys"] == ["user_not_login"])
        try login(fixture)
        let missing = try fixture.douctl.run("shuo", "get", "coder/42")
        #expect(missing.status == 5, "\(missing)")
        #expect(missing.errorLine.contains("code 1101"))
    }

    @Test func expiredTokenIsRefreshedAndReplayed() throws {
        let fixture = try fixture()
        let before = try login(fixture)
        fixture.sandbox.expireAccessTokens()
        let result = try fixture.douctl.run("user", "me")
        #expect(result.status == 0, "\(result)")
        let trail = fixture.sandbox.requests.map { "\($0.method) \($0.path)" }
        #expect(trail == ["GET /api/account/current_user", "POST /api/oauth/access_token", "GET /api/account/current_user"])
        #expect(fixture.sandbox.requests[1].formValue("grant_type") == "refresh_token")
        #expect(!fixture.credentials.contains(before))
    }

    @Test func actionCaptchaSaysHowToPassIt() throws {
        let fixture = try fixture()
        try login(fixture)
        fixture.sandbox.requireCodingActionCaptcha()
        let result = try fixture.douctl.run("shuo", "post", "太快了")
        #expect(result.status == 1, "\(result)")
        #expect(result.errorLine.contains("code 907"))
        #expect(result.errorLine.contains("douctl api /api/request_valid -X POST -f type=3 -f j_captcha=TEXT"))
    }
}
