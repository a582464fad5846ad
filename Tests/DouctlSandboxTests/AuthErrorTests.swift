import DouctlJSON
import DouctlSandbox
import Testing

@Suite struct AuthErrorTests {
    @Test func missingTokenIs102() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let reply = try harness.get("/v2/user/~me")
        #expect(reply.status == 400)
        #expect(try reply.json() == ["msg": "access_token_is_missing", "code": 102, "request": "GET /v2/user/~me"])
        #expect(try harness.get("/shuo/v2/statuses/home_timeline", headers: [("Authorization", "Bearer ")]).code == 102)
        #expect(try harness.get("/shuo/v2/statuses/home_timeline", headers: [("Authorization", "Basic YTpi")]).code == 102)
        // Douban reads the token from the header only.
        let token = harness.token()
        #expect(try harness.get("/shuo/v2/statuses/home_timeline?access_token=\(token)").code == 102)
        let post = try harness.post("/shuo/v2/statuses/", form: [("text", "hi")])
        #expect(try post.json()["request"] == .string("POST /shuo/v2/statuses/"))
    }

    @Test func unknownTokenIs103() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let reply = try harness.get("/v2/user/~me", token: "4b19728adfd624be")
        #expect(reply.status == 400)
        #expect(try reply.json() == ["msg": "invalid_access_token: 4b19728adfd624be", "code": 103, "request": "GET /v2/user/~me"])
    }

    @Test func expiredTokenIs106() throws {
        let clock = VirtualClock()
        let harness = try Harness { $0.clock = SandboxClock(now: clock.read) }
        defer { harness.stop() }
        let token = harness.sandbox.issueToken(ttl: 0.05).accessToken
        clock.advance(0.15)
        let reply = try harness.get("/shuo/v2/statuses/home_timeline", token: token)
        #expect(reply.status == 400)
        #expect(reply.code == 106)
        #expect(reply.msg == "access_token_has_expired: \(token)")
    }

    @Test func missingScopeIs1000() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let readOnly = harness.token(scopes: ["douban_basic_common", "shuo_basic_r"])
        let post = try harness.post("/shuo/v2/statuses/", form: [("text", "hi")], token: readOnly)
        #expect(post.status == 403)
        #expect(try post.json() == ["msg": "need_permission", "code": 1000, "request": "POST /shuo/v2/statuses/"])
        #expect(try harness.get("/shuo/v2/statuses/home_timeline", token: readOnly).status == 200)
        for (method, target) in [("DELETE", "/shuo/v2/statuses/1402640300"), ("POST", "/shuo/v2/statuses/1402640300/like"),
                                 ("POST", "/shuo/v2/statuses/1402640300/comments"), ("POST", "/shuo/v2/statuses/1402640300/reshare"),
                                 ("POST", "/shuo/v2/friendships/create")] {
            #expect(try harness.send(method, target, token: readOnly).code == 1000, "\(method) \(target)")
        }
        let shuoOnly = harness.token(scopes: ["shuo_basic_r", "shuo_basic_w"])
        let me = try harness.get("/v2/user/~me", token: shuoOnly)
        #expect(me.status == 403)
        #expect(me.code == 1000)
        #expect(try harness.get("/v2/user?q=a", token: shuoOnly).code == 1000)
        let userOnly = harness.token(scopes: ["douban_basic_common"])
        #expect(try harness.get("/shuo/v2/statuses/home_timeline", token: userOnly).status == 403)
        #expect(try harness.get("/shuo/v2/users/ahbei/followers", token: userOnly).code == 1000)
    }

    @Test func unknownAndRemovedPathsAre1001() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.token()
        for (method, target) in [("GET", "/v2/nothing"), ("GET", "/shuo/v2/users/ahbei/follow_in_common"),
                                 ("POST", "/shuo/v2/users/ahbei/block"), ("GET", "/shuo/v2/friendships/show"),
                                 ("GET", "/shuo/v2/statuses/mentions"), ("DELETE", "/shuo/v2/statuses/1402640303/reshare"),
                                 ("GET", "/shuo/v2/statuses/abc"), ("POST", "/shuo/v2/statuses"), ("GET", "/v2/user/~me/")] {
            let reply = try harness.send(method, target, token: token)
            #expect(reply.status == 404, "\(method) \(target)")
            #expect(reply.code == 1001)
            #expect(reply.msg == "uri_not_found")
            #expect(try reply.json()["request"] == .string("\(method) \(target)"))
        }
        let missingStatus = try harness.get("/shuo/v2/statuses/999", token: token)
        #expect(missingStatus.status == 404)
        #expect(missingStatus.code == 1001)
    }

    @Test func wrongMethodIs101() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.token()
        for (method, target) in [("DELETE", "/v2/user/~me"), ("PUT", "/shuo/v2/statuses/"), ("POST", "/shuo/v2/statuses/home_timeline"),
                                 ("GET", "/shuo/v2/friendships/create"), ("PUT", "/shuo/v2/statuses/1402640300/like")] {
            let reply = try harness.send(method, target, token: token)
            #expect(reply.status == 400, "\(method) \(target)")
            #expect(reply.code == 101)
            #expect(reply.msg == "invalid_request_method: \(method)")
        }
    }

    @Test func rateLimitHeadersAnd111() throws {
        let harness = try Harness { $0.rateLimitPerHour = 3 }
        defer { harness.stop() }
        let token = harness.token()
        for remaining in [2, 1, 0] {
            let reply = try harness.get("/v2/user/~me", token: token)
            #expect(reply.status == 200)
            #expect(reply.header("X-Ratelimit-Limit") == "3")
            #expect(reply.header("X-Ratelimit-Remaining") == String(remaining))
        }
        let over = try harness.get("/v2/user/~me", token: token)
        #expect(over.status == 429)
        #expect(over.code == 111)
        #expect(over.msg == "rate_limit_exceeded1")
        let retryAfter = try #require(over.header("Retry-After").flatMap { Int($0) })
        #expect(retryAfter > 0 && retryAfter <= 3600)
        // Another token has its own quota.
        #expect(try harness.get("/v2/user/~me", token: harness.token()).status == 200)
    }

    @Test func publicUserEndpointNeedsNoToken() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let reply = try harness.get("/v2/user/ahbei")
        #expect(reply.status == 200)
        #expect(try reply.json()["relation"] == nil)
        #expect(try harness.get("/v2/user/ahbei?apikey=\(Sandbox.clientID)").status == 200)
        let wrongKey = try harness.get("/v2/user/ahbei?apikey=0b5405e19c58e4cc21fc11a4d50aae64")
        #expect(wrongKey.status == 400)
        #expect(wrongKey.code == 104)
        #expect(try harness.get("/v2/user/ahbei", token: "bogus").code == 103)
        // douban-client sends an empty Bearer header when it has no token.
        #expect(try harness.get("/v2/user/ahbei", headers: [("Authorization", "Bearer ")]).status == 200)
        #expect(try harness.get("/v2/user/ahbei", token: harness.token()).json()["relation"] == .string("self"))
    }
}
