@testable import DouctlCore
import DouctlTestSupport
import DouctlHTTP
import DouctlJSON
import Testing

/// `APIClient` against a scripted transport: what goes out, and what replies become.
@Suite("API client")
struct APIClientTests {
    static let me = APIRequest(path: "/v2/user/~me")

    func client(_ transport: ScriptedTransport, profile: ResolvedProfile? = nil, token: String? = "tok-1") throws(DouctlError) -> APIClient {
        let resolved: ResolvedProfile
        if let profile { resolved = profile } else { resolved = try TestProfiles.douban() }
        return APIClient(profile: resolved, http: transport, tokens: token.map(FixedToken.init))
    }

    /// The API error `body` throws.
    func apiError(_ body: () throws(DouctlError) -> Void) -> APIError? {
        do {
            try body()
        } catch .api(let error) {
            return error
        } catch {
            Issue.record("expected an API error, got \(error)")
            return nil
        }
        Issue.record("expected an API error, got success")
        return nil
    }

    // MARK: what goes out

    @Test func sendsTheTokenAsABearerHeaderAndAsksForJSON() throws {
        let transport = ScriptedTransport([.json(200, #"{"uid":"ahbei"}"#)])
        let reply = try client(transport).send(Self.me)
        #expect(try reply.requireJSON()["uid"]?.stringValue == "ahbei")
        let sent = try #require(transport.requests.first)
        #expect(sent.method == "GET")
        #expect(sent.url == "http://127.0.0.1:8089/v2/user/~me")
        #expect(sent.header("Authorization") == "Bearer tok-1")
        #expect(sent.header("Accept") == "application/json")
        #expect(transport.requests.count == 1)
    }

    @Test func aQueryPlacementProfileSendsTheTokenAsAccessToken() throws {
        let transport = ScriptedTransport([.json(200, #"{"code":0,"data":{"global_key":"coder"}}"#)])
        let reply = try client(transport, profile: TestProfiles.coding()).send(APIRequest(path: "/api/current_user", query: [("a", "b c")]))
        #expect(try reply.requireJSON()["global_key"]?.stringValue == "coder", "the Coding envelope is unwrapped")
        let sent = try #require(transport.requests.first)
        #expect(sent.queryValue("access_token") == "tok-1")
        #expect(sent.queryValue("a") == "b c")
        #expect(sent.header("Authorization") == nil)
    }

    @Test func theTokenNeverGoesToAnotherOrigin() throws {
        let transport = ScriptedTransport([.json(200, "{}"), .json(200, "{}")])
        let api = try client(transport)
        _ = try api.send(APIRequest(path: "https://elsewhere.example/v2/user/~me"))
        _ = try api.send(APIRequest(path: "http://127.0.0.1:8090/v2/user/~me"))
        #expect(transport.requests.allSatisfy { $0.header("Authorization") == nil })
    }

    @Test func aFormBodyIsURLEncodedWithItsContentType() throws {
        let transport = ScriptedTransport([.json(200, #"{"id":1}"#)])
        _ = try client(transport).send(APIRequest(method: "post", path: "/shuo/v2/statuses/", body: .form([("text", "你好 & hi")])))
        let sent = try #require(transport.requests.first)
        #expect(sent.method == "POST")
        #expect(sent.header("Content-Type") == "application/x-www-form-urlencoded")
        #expect(sent.formValue("text") == "你好 & hi")
    }

    @Test func withoutATokenATypedCommandSendsNothing() throws {
        let transport = ScriptedTransport()
        let api = try client(transport, token: nil)
        #expect(throws: DouctlError.notLoggedIn("sandbox")) { try api.send(Self.me) }
        #expect(transport.requests.isEmpty)
        // `douctl api` may send anonymously.
        transport.then(.json(200, "{}"))
        _ = try api.with { $0.allowsAnonymous = true }.send(Self.me)
        #expect(transport.requests.count == 1)
        #expect(transport.requests.first?.header("Authorization") == nil)
    }

    // MARK: what replies become

    @Test func doubansAuthErrorsAre400WithACode() throws {
        let transport = ScriptedTransport([.json(400, #"{"msg":"access_token_is_missing","code":102,"request":"GET /v2/user/~me"}"#)])
        let api = try client(transport, token: nil).with { $0.allowsAnonymous = true }
        let error = try #require(apiError { () throws(DouctlError) in _ = try api.send(Self.me) })
        #expect(error.kind == .authentication)
        #expect(error.httpStatus == 400)
        #expect(error.code == "102")
        #expect(error.message == "access_token_is_missing")
        #expect(error.hint == "not logged in; run: douctl auth login --profile sandbox")
    }

    @Test func aRefusedTokenNamesWhereItCameFromAndIsScrubbedFromTheMessage() throws {
        let transport = ScriptedTransport([.json(400, #"{"msg":"invalid_access_token: tok-1","code":103,"request":"GET /v2/user/~me"}"#)])
        let error = try #require(apiError { () throws(DouctlError) in _ = try client(transport).send(Self.me) })
        #expect(error.kind == .authentication)
        #expect(error.code == "103")
        #expect(!error.message.contains("tok-1"))
        #expect(error.hint == "the token in DOUCTL_TOKEN was refused")
        #expect(transport.requests.count == 1, "a fixed token is never refreshed, so nothing is replayed")
    }

    @Test(arguments: [
        (404, #"{"msg":"user_not_found","code":1001,"request":"GET /v2/user/x"}"#, APIError.Kind.notFound),
        (429, #"{"msg":"rate_limit_exceeded2","code":112,"request":"GET /v2/user/x"}"#, .rateLimited),
        (500, #"{"msg":"unknown","code":999,"request":"GET /v2/user/x"}"#, .general),
        (403, "{}", .permission),  // a refused permission (exit 4 still), not a failed login
    ])
    func errorRepliesBecomeTypedErrors(status: Int, body: String, kind: APIError.Kind) throws {
        let transport = ScriptedTransport([.json(status, body)])
        let error = try #require(apiError { () throws(DouctlError) in _ = try client(transport).send(APIRequest(path: "/v2/user/x")) })
        #expect(error.kind == kind)
        #expect(error.httpStatus == status)
        #expect(error.body == Array(body.utf8))
    }

    @Test func aCodingEnvelopeWithAnErrorCodeIsAnErrorAtHTTP200() throws {
        let transport = ScriptedTransport([.json(200, #"{"code":1,"msg":{"tweet_not_exists":"冒泡不存在"}}"#)])
        let error = try #require(apiError { () throws(DouctlError) in
            _ = try client(transport, profile: TestProfiles.coding()).send(APIRequest(path: "/api/tweet/1/1"))
        })
        #expect(error.kind == .general)
        #expect(error.code == "1")
        #expect(error.message == "冒泡不存在")
        #expect(error.messageKeys == ["tweet_not_exists"])
    }

    @Test func anHTMLPageWhereJSONWasDueIsABadReply() throws {
        let transport = ScriptedTransport([.reply(HTTPResponse(head: HTTPResponseHead(status: 200, headers: [HTTPHeader("Content-Type", "text/html")]),
                                                               body: Array("<html>".utf8)))])
        #expect(throws: DouctlError.badReply("the reply is HTML, not JSON (HTTP 200, text/html)", httpStatus: 200)) {
            try client(transport).send(Self.me).requireJSON()
        }
    }

    @Test(arguments: [
        (TransportError.timedOut("no bytes for 30s"), DouctlError.transport(.timedOut("no bytes for 30s"))),
        (.cannotConnect("refused"), .transport(.cannotConnect("refused"))),
        (.interrupted, .transport(.interrupted)),
        (.bodyFile("cannot read a.png"), .transport(.bodyFile("cannot read a.png"))),
    ])
    /// The client passes transport failures on as they are; `ExitStatus` alone turns them into
    /// exit codes (DouctlCommandsTests checks that map).
    func transportFailuresKeepTheirKind(failure: TransportError, expected: DouctlError) throws {
        let transport = ScriptedTransport([.failure(failure)])
        #expect(throws: expected) { try client(transport).send(Self.me) }
    }

    // MARK: --wait-on-rate-limit

    @Test func aRateLimitedReplyIsWaitedOutAndSentAgain() throws {
        let transport = ScriptedTransport([
            .json(429, #"{"msg":"rate_limit_exceeded2","code":112}"#, headers: [HTTPHeader("Retry-After", "7")]),
            .json(200, #"{"id":1}"#),
        ])
        let recorded = RecordedWaits()
        let api = try client(transport).with { $0.requests.rateLimitWait = RateLimitWait(maximum: 60) { seconds, reason in
            recorded.add(seconds, reason)
            return true
        } }
        let reply = try api.send(APIRequest(method: "POST", path: "/shuo/v2/statuses/", body: .form([("text", "x")])))
        let waits = recorded.all
        #expect(try reply.requireJSON()["id"]?.intValue == 1)
        #expect(transport.requests.count == 2, "a rate-limited POST was not processed, so it is sent again")
        #expect(waits.map(\.0) == [7])
        #expect(waits.map(\.1) == ["Retry-After: 7; before try 2"])
    }

    /// The streamed path (downloads) goes through the same refresh-and-replay as `send`, rate-limit wait included.
    @Test func aStreamedRequestWaitsOutARateLimitToo() throws {
        let transport = ScriptedTransport([
            .json(429, #"{"msg":"rate_limit_exceeded2","code":112}"#, headers: [HTTPHeader("Retry-After", "3")]),
            .reply(HTTPResponse(head: HTTPResponseHead(status: 200, headers: [HTTPHeader("Content-Type", "image/png")]), body: [1, 2, 3])),
        ])
        let recorded = RecordedWaits()
        let api = try client(transport).with { $0.requests.rateLimitWait = RateLimitWait(maximum: 60) { seconds, reason in
            recorded.add(seconds, reason)
            return true
        } }
        var streamed: [UInt8] = []
        let response = try api.stream(APIRequest(path: "/pics/1.png"), head: { _ in }, sink: { chunk in
            streamed += chunk
            return true
        })
        // Before: the 429 came back at once, no wait, one request.
        #expect(response.status == 200)
        #expect(streamed == [1, 2, 3], "the 429's body never reaches the sink")
        #expect(transport.requests.count == 2)
        #expect(recorded.all.map(\.0) == [3])
    }

    @Test func waitsStopAddingUpAtTheMaximum() throws {
        let limited = ScriptedTransport.Answer.json(429, "{}", headers: [HTTPHeader("Retry-After", "40")])
        let transport = ScriptedTransport([limited, limited, limited])
        let recorded = RecordedWaits()
        let api = try client(transport).with { $0.requests.rateLimitWait = RateLimitWait(maximum: 60) { seconds, reason in
            recorded.add(seconds, reason)
            return true
        } }
        let error = try #require(apiError { () throws(DouctlError) in _ = try api.send(Self.me) })
        #expect(error.kind == .rateLimited)
        #expect(transport.requests.count == 2, "40 s waited once; another 40 would pass the 60 s budget")
        #expect(recorded.all.map(\.0) == [40])
    }
}

/// Waits a `RateLimitWait` was asked for.
final class RecordedWaits: @unchecked Sendable {
    private(set) var all: [(Double, String)] = []
    func add(_ seconds: Double, _ reason: String) { all.append((seconds, reason)) }
}
