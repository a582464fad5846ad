import DouctlJSON
import DouctlSandbox
import DouctlServer
import DouctlSystem
import DouctlTestSupport
import Testing

/// `sandbox --replay DIR`: what a request must share with a recording to get its reply
/// (issue 41, part 2), on a real socket.
@Suite struct ReplayMatchingTests {
    /// A recording directory holding `exchanges`, one douctl recording each.
    static func directory(_ exchanges: [JSON]) throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory(prefix: "replay")
        for (index, exchange) in exchanges.enumerated() {
            let name = directory.path + "/" + format4(index + 1) + "-x.json"
            try AtomicFile.write(exchange.serialized(.pretty), to: name)
        }
        return directory
    }

    static func format4(_ number: Int) -> String {
        let text = String(number)
        return String(repeating: "0", count: max(0, 4 - text.count)) + text
    }

    static func exchange(_ method: String, _ path: String, query: [(String, String)] = [], headers: [(String, String)] = [],
                         body: JSON = .null, significant: [String] = [], status: Int = 200, reply: JSON) -> JSON {
        var request = JSONObject()
        request["method"] = .string(method)
        request["path"] = .string(path)
        request["query"] = .array(query.map { .array([.string($0.0), .string($0.1)]) })
        request["headers"] = .array(headers.map { .array([.string($0.0), .string($0.1)]) })
        request["body"] = body
        if !significant.isEmpty { request["significant_headers"] = .array(significant.map { .string($0) }) }
        var response = JSONObject()
        response["status"] = .int(status)
        response["headers"] = .array([.array(["Content-Type", "application/json"])])
        response["body"] = .object(JSONObject([("json", reply)]))
        return .object(JSONObject([("request", .object(request)), ("response", .object(response))]))
    }

    static func harness(_ exchanges: [JSON], log: LockedValue<[String]>? = nil, faults: String? = nil) throws -> (Harness, TemporaryDirectory) {
        let directory = try directory(exchanges)
        let harness = try Harness { configuration in
            configuration.replayDirectory = directory.path
            if let log { configuration.log = { line in log.withLock { $0.append(line) } } }
            if let faults, let parsed = try? SandboxFault.parseList(faults) { configuration.faults = parsed }
            configuration.faultSeed = 1
        }
        return (harness, directory)
    }

    @Test func theQueryMatchesInAnyOrder() throws {
        let (harness, _) = try Self.harness([Self.exchange("GET", "/items", query: [("a", "1"), ("b", "2")], reply: ["ok": true])])
        defer { harness.stop() }
        #expect(try harness.get("/items?b=2&a=1").status == 200)
        #expect(try harness.get("/items?a=1&b=2").status == 200)
        let other = try harness.get("/items?a=1&b=3")
        #expect(other.status == 501)
        #expect(try other.json()["differences"] == ["query b: recorded '2', sent '3'"])
    }

    @Test func aJSONBodyMatchesAsJSON() throws {
        let recorded: JSON = ["name": "x", "tags": ["a", "b"], "n": 1]
        let (harness, _) = try Self.harness([
            Self.exchange("POST", "/items", headers: [("Content-Type", "application/json")],
                          body: .object(JSONObject([("json", recorded)])), status: 201, reply: ["id": 7]),
        ])
        defer { harness.stop() }
        let json = [("Content-Type", "application/json")]
        let reordered = try harness.send("POST", "/items", headers: json, body: Array(#"{ "n" : 1.0, "tags":["a","b"],"name":"x" }"#.utf8))
        #expect(reordered.status == 201, "key order, whitespace and 1.0 for 1 do not matter")
        let changed = try harness.send("POST", "/items", headers: json, body: Array(#"{"n":1,"tags":["a","c"],"name":"x","extra":true}"#.utf8))
        #expect(changed.status == 501)
        #expect(try changed.json()["differences"] == [#"body .tags[1]: recorded "b", sent "c""#, "body .extra not recorded"])
        #expect(try changed.json()["closest"] == "POST /items (0001-x.json)")
    }

    @Test func aFormMatchesAsAForm() throws {
        let (harness, _) = try Self.harness([
            Self.exchange("POST", "/login", body: ["form": [["user", "ahbei"], ["password", "REDACTED"], ["remember", "1"]]], reply: ["ok": 1]),
        ])
        defer { harness.stop() }
        #expect(try harness.post("/login", form: [("remember", "1"), ("password", "anything"), ("user", "ahbei")]).status == 200,
                "fields in any order, the scrubbed password matching any")
        let wrong = try harness.post("/login", form: [("remember", "1"), ("user", "linglu")])
        #expect(wrong.status == 501)
        #expect(try wrong.json()["differences"] == ["form field user: recorded 'ahbei', sent 'linglu'"])
    }

    @Test func multipartMatchesByParts() throws {
        var recorded = MultipartBody(boundary: "AAA")
        recorded.add("title", "hello")
        recorded.addFile("file", filename: "a.txt", contentType: "text/plain", Array("content".utf8))
        let (harness, _) = try Self.harness([
            Self.exchange("POST", "/upload", headers: [("Content-Type", recorded.contentType)],
                          body: ["text": .string(String(decoding: recorded.bytes, as: UTF8.self))], reply: ["ok": 1]),
        ])
        defer { harness.stop() }
        var sameParts = MultipartBody(boundary: "ZZZ-other")
        sameParts.addFile("file", filename: "a.txt", contentType: "text/plain", Array("content".utf8))
        sameParts.add("title", "hello")
        #expect(try harness.post("/upload", multipart: sameParts).status == 200, "another boundary, parts in another order")
        var otherFile = MultipartBody(boundary: "AAA")
        otherFile.add("title", "hello")
        otherFile.addFile("file", filename: "b.txt", contentType: "text/plain", Array("content".utf8))
        let refused = try harness.post("/upload", multipart: otherFile)
        #expect(refused.status == 501)
        #expect(try refused.json()["differences"] == ["part 'file': recorded file name 'a.txt', sent 'b.txt'"])
    }

    @Test func significantHeadersMustMatch() throws {
        let (harness, _) = try Self.harness([
            Self.exchange("GET", "/v", headers: [("Accept", "application/vnd.v2+json")], significant: ["Accept"], reply: ["v": 2]),
            Self.exchange("GET", "/v", headers: [("Accept", "application/vnd.v1+json")], significant: ["accept"], reply: ["v": 1]),
            Self.exchange("GET", "/free", headers: [("Accept", "text/html")], reply: ["free": true]),
        ])
        defer { harness.stop() }
        #expect(try harness.get("/v", headers: [("Accept", "application/vnd.v1+json")]).json()["v"] == 1)
        #expect(try harness.get("/v", headers: [("Accept", "application/vnd.v2+json")]).json()["v"] == 2)
        let none = try harness.get("/v")
        #expect(none.status == 501)
        #expect(try none.json()["differences"] == ["header accept: recorded 'application/vnd.v2+json', sent 'none'"])
        #expect(try harness.get("/free", headers: [("Accept", "*/*")]).status == 200, "unmarked headers are not compared")
    }

    @Test func repeatedRequestsGetTheRecordedRepliesInOrderThenTheLast() throws {
        let (harness, _) = try Self.harness([
            Self.exchange("GET", "/job", reply: ["state": "queued"]),
            Self.exchange("POST", "/other", reply: [:]),
            Self.exchange("GET", "/job", reply: ["state": "running"]),
            Self.exchange("GET", "/job", reply: ["state": "done"]),
        ])
        defer { harness.stop() }
        let states = try (0..<5).map { _ in try harness.get("/job").json()["state"]?.stringValue ?? "?" }
        #expect(states == ["queued", "running", "done", "done", "done"])
    }

    @Test func anUnmatchedRequestNamesTheClosestRecordingInTheReplyAndTheLog() throws {
        let log = LockedValue<[String]>([])
        let (harness, _) = try Self.harness([
            Self.exchange("GET", "/users", query: [("page", "1")], reply: []),
            Self.exchange("GET", "/users", query: [("page", "2")], reply: []),
            Self.exchange("DELETE", "/users/1", reply: [:]),
        ], log: log)
        defer { harness.stop() }
        let reply = try harness.get("/users?page=3")
        #expect(reply.status == 501)
        let body = try reply.json()
        #expect(body["msg"] == "no_recording")
        #expect(body["request"] == "GET /users?page=3")
        #expect(body["closest"] == "GET /users?page=1 (0001-x.json)")
        #expect(body["differences"] == ["query page: recorded '1', sent '3'"])
        let method = try harness.get("/users/1")
        #expect(try method.json()["closest"] == "DELETE /users/1 (0003-x.json)")
        #expect(try method.json()["differences"] == ["method: recorded DELETE, sent GET"])
        let lines = log.value
        #expect(lines.contains("replay: no recording matches GET /users?page=3; closest: GET /users?page=1 (0001-x.json): query page: recorded '1', sent '3'"),
                "\(lines)")
    }

    @Test func faultsApplyToReplayedRoutes() throws {
        let (harness, _) = try Self.harness([Self.exchange("GET", "/items", reply: ["ok": true])], faults: "503:1")
        defer { harness.stop() }
        let reply = try harness.get("/items")
        #expect(reply.status == 503)
        #expect(reply.header("Retry-After") == "1")
        let (healthy, _) = try Self.harness([Self.exchange("GET", "/items", reply: ["ok": true])], faults: "latency:1ms")
        defer { healthy.stop() }
        #expect(try healthy.get("/items").json()["ok"] == true)
    }

    @Test func anOAuthStepTheRecordingLacksIsServedWithItsBodyIntact() throws {
        let (harness, _) = try Self.harness([Self.exchange("GET", "/v2/user/~me", reply: ["uid": "ahbei"])])
        defer { harness.stop() }
        // The replay read the body to compare it; the sandbox's own token endpoint still sees every field.
        let code = try harness.authorizationCode()
        let reply = try harness.tokenRequest(Harness.client + [("grant_type", "authorization_code"), ("code", code),
                                                               ("redirect_uri", Harness.loopbackRedirect)])
        #expect(reply.status == 200, "\(reply.text)")
        #expect(try reply.json()["access_token"]?.stringValue != nil)
    }

    @Test func aDiscoveryDocumentPointsAtTheReplay() throws {
        let document: JSON = ["issuer": "https://login.example.com", "token_endpoint": "https://login.example.com/oauth/token",
                              "jwks_uri": "https://login.example.com/jwks", "scopes_supported": ["openid"],
                              "service_documentation": "https://docs.example.net/x"]
        let (harness, _) = try Self.harness([Self.exchange("GET", "/.well-known/openid-configuration", reply: document)])
        defer { harness.stop() }
        let served = try harness.get("/.well-known/openid-configuration").json()
        #expect(served["issuer"] == .string(harness.base))
        #expect(served["token_endpoint"] == .string(harness.base + "/oauth/token"))
        #expect(served["jwks_uri"] == .string(harness.base + "/jwks"))
        #expect(served["service_documentation"] == "https://docs.example.net/x", "another origin is left alone")
        #expect(served["scopes_supported"] == ["openid"])
    }
}
