import DouctlJSON
import DouctlSandbox
import Testing

/// Per-request authentication on Coding's paths: `?access_token=`, scopes, expiry, and the
/// separation from Douban's tokens.
@Suite struct CodingAuthTests {
    @Test func tokenInTheQueryIsAccepted() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let reply = try harness.codingGet("/api/account/current_user", token: harness.codingToken())
        #expect(reply.status == 200)
        #expect(reply.header("Content-Type") == "application/json; charset=utf-8")
        let body = try reply.json()
        #expect(body["code"] == 0)
        #expect(codingUserProblems(body["data"]) == [])
        #expect(body["data"]?["global_key"] == "coder")
        #expect(body["data"]?["name"] == "码农小王")
        #expect(body["data"]?["id"] == .int(try #require(harness.sandbox.codingUserID(of: "coder"))))
        #expect(body["data"]?["email"] == "coder@example.com")  // user:email is among the scopes
        #expect(body["msg"] == nil)
    }

    @Test func missingOrUnknownTokenIs1000() throws {
        let harness = try Harness()
        defer { harness.stop() }
        for token in [nil, "", "0123456789abcdef0123456789abcdef"] as [String?] {
            let reply = try harness.codingGet("/api/account/current_user", token: token)
            #expect(reply.status == 200)
            #expect(try reply.json() == ["code": 1000, "msg": ["user_not_login": "用户未登录"]])
        }
        // A Bearer header is not how Coding's legacy API takes tokens.
        let bearer = try harness.get("/api/account/current_user", token: harness.codingToken())
        #expect(bearer.code == 1000)
    }

    @Test func expiredTokenIs3207() throws {
        let clock = VirtualClock()
        let harness = try Harness { $0.clock = SandboxClock(now: clock.read) }
        defer { harness.stop() }
        let short = harness.sandbox.issueCodingToken(user: "coder", ttl: 0.05).accessToken
        clock.advance(0.1)
        let reply = try harness.codingGet("/api/tweet/public_tweets", token: short)
        #expect(reply.status == 200)
        #expect(try reply.json() == ["code": 3207, "msg": ["user_login_status_expired": "登录状态已过期"]])
        // The hook expires live tokens too.
        let live = harness.codingToken()
        #expect(try harness.codingGet("/api/account/current_user", token: live).code == 0)
        harness.sandbox.expireAccessTokens()
        #expect(try harness.codingGet("/api/account/current_user", token: live).code == 3207)
    }

    @Test func tokenTTLComesFromTheConfiguration() throws {
        let clock = VirtualClock()
        let harness = try Harness { $0.tokenTTL = 0.2; $0.clock = SandboxClock(now: clock.read) }
        defer { harness.stop() }
        let token = harness.codingToken()
        #expect(try harness.codingGet("/api/user/unread-count", token: token).code == 0)
        clock.advance(0.3)
        #expect(try harness.codingGet("/api/user/unread-count", token: token).code == 3207)
    }

    @Test func missingScopeIsPermissionDeniedNot1000() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let userOnly = harness.codingToken(scopes: ["user"])
        let socialOnly = harness.codingToken(scopes: ["social"])
        let denied: JSON = ["code": 403, "msg": ["permission_denied": "权限不足"]]
        // Reading tweets needs social.
        #expect(try harness.codingGet("/api/tweet/public_tweets", token: userOnly).json() == denied)
        #expect(try harness.codingGet("/api/tweet/public_tweets", token: socialOnly).code == 0)
        // Posting needs social:tweet.
        let post = try harness.codingPost("/api/tweet", form: [("content", "无权发布")], token: socialOnly)
        #expect(post.status == 200)
        #expect(try post.json() == denied)
        #expect(try harness.codingPost("/api/tweet/100001/like", token: socialOnly).json() == denied)
        #expect(try harness.codingPost("/api/tweet/100001/comment", form: [("content", "x")], token: socialOnly).json() == denied)
        #expect(try harness.codingDelete("/api/tweet/100001", token: socialOnly).json() == denied)
        // current_user needs user.
        #expect(try harness.codingGet("/api/account/current_user", token: socialOnly).json() == denied)
        // Without user:email the address is not shown.
        let me = try harness.codingGet("/api/account/current_user", token: userOnly)
        #expect(me.data?["email"] == "")
    }

    @Test func doubanAndCodingTokensDoNotCross() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let douban = harness.token()
        let coding = harness.codingToken()
        #expect(try harness.codingGet("/api/account/current_user", token: douban).code == 1000)
        let onDouban = try harness.get("/v2/user/~me", token: coding)
        #expect(onDouban.status == 400)
        #expect(onDouban.code == 103)
    }

    @Test func logoutWithATokenRevokesItsPair() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let pair = harness.sandbox.issueCodingToken(user: "devmei")
        #expect(try harness.codingGet("/api/account/current_user", token: pair.accessToken).data?["global_key"] == "devmei")
        #expect(try harness.codingPost("/api/account/logout", token: pair.accessToken).json() == ["code": 0])
        #expect(try harness.codingGet("/api/account/current_user", token: pair.accessToken).code == 1000)
        let refresh = try harness.codingTokenRequest(Harness.client + [("grant_type", "refresh_token"),
                                                                       ("refresh_token", pair.refreshToken)])
        #expect(refresh.oauthError == "invalid_grant")
    }

    @Test func unknownPathsAndMethodsAnswerInCodingsEnvelope() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.codingToken()
        let missing = try harness.codingGet("/api/no/such/thing", token: token)
        #expect(missing.status == 404)
        #expect(try missing.json() == ["code": 404, "msg": ["not_found": "接口不存在"]])
        let method = try harness.codingGet("/api/tweet", token: token)
        #expect(method.status == 405)
        #expect(method.codingMsg.keys.contains("method_not_allowed"))
        // A trailing slash is forgiven.
        #expect(try harness.codingGet("/api/account/current_user/", token: token).code == 0)
        #expect(try harness.codingGet("/api/user/unread-count", token: token).data
            == ["messages": 0, "notifications": 0, "project_update": 0])
    }

    @Test func injectedFaultsUseCodingsEnvelope() throws {
        let harness = try Harness { $0.faults = [SandboxFault(.status(429, probability: 1))] }
        defer { harness.stop() }
        let reply = try harness.codingGet("/api/account/current_user", token: harness.codingToken())
        #expect(reply.status == 429)
        #expect(reply.header("Retry-After") == "1")
        #expect(reply.code == 429)
        #expect(reply.codingMsg["request_too_frequent"] != nil)
    }
}
