@testable import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlTestSupport
import Testing

/// A third API style, written here as a user of the core would: replies `{"ok": true,
/// "result": …}`, errors `{"ok": false, "error": {"code", "message"}}` (with HTTP 200, as
/// such APIs answer), lists walked by an `after` cursor, pictures in `files`. Nothing in
/// the core knows it: one type, set on a profile.
struct OkResultStyle: APIStyleRules {
    func read(_ json: JSON, status: Int, request: String) -> ReplyReading {
        guard case .bool(let ok)? = json["ok"] else {
            return ReplyDecoder.readCommonDialects(json, status: status, request: request, rules: self)
        }
        if ok, status < 400 { return .payload(json["result"] ?? .null) }
        let code = errorCode(in: json)
        return .error(APIError(
            kind: ReplyDecoder.kind(status: status, code: code, rules: self), httpStatus: status, code: code,
            message: json["error"]?["message"]?.scalarText ?? "", request: request))
    }

    func errorCode(in json: JSON) -> String? { json["error"]?["code"]?.scalarText }

    func kind(ofCode code: String) -> APIError.Kind? {
        switch code {
        case "not_authed", "token_expired", "token_revoked": return .authentication
        case "ratelimited": return .rateLimited
        case "not_found": return .notFound
        default: return nil
        }
    }

    func isExpiredToken(code: String, status: Int) -> Bool { code == "token_expired" }

    func pageScheme(guessedFrom payload: JSON) -> PageScheme { .cursor(key: "after", itemKey: "id") }

    func service(for client: APIClient) -> SocialService { DoubanService(client: client) }

    func pictureURLs(in status: JSON) -> [String] {
        (status["files"]?.arrayValue ?? []).compactMap(\.stringValue)
    }
}

@Suite("API styles")
struct APIStyleTests {
    static func client(_ answers: [ScriptedTransport.Answer], tokens: AccessTokenSource = FixedToken("t1"))
        throws -> (APIClient, ScriptedTransport) {
        var profile = try TestProfiles.douban()
        profile.rules = OkResultStyle()
        let transport = ScriptedTransport(answers)
        return (APIClient(profile: profile, http: transport, tokens: tokens), transport)
    }

    static func apiError(_ body: () throws(DouctlError) -> Void) -> APIError? {
        do {
            try body()
        } catch {
            if case .api(let apiError) = error { return apiError }
        }
        return nil
    }

    // MARK: a third style

    @Test func theThirdStylesEnvelopeIsUnwrapped() throws {
        let (client, transport) = try Self.client([.json(200, #"{"ok":true,"result":{"id":"7","name":"ann"}}"#)])
        let reply = try client.send(APIRequest(path: "/users.me"))
        #expect(reply.payload == .object(JSONObject([("id", .string("7")), ("name", .string("ann"))])))
        #expect(reply.isEnvelope)
        #expect(transport.requests.first?.header("Authorization") == "Bearer t1")
    }

    @Test(arguments: [
        // (reply body, its kind: authentication is exit 4, rate limited 7, not found 5, general 1)
        (#"{"ok":false,"error":{"code":"not_authed","message":"who are you"}}"#, APIError.Kind.authentication),
        (#"{"ok":false,"error":{"code":"token_revoked","message":"revoked"}}"#, .authentication),
        (#"{"ok":false,"error":{"code":"ratelimited","message":"slow down"}}"#, .rateLimited),
        (#"{"ok":false,"error":{"code":"not_found","message":"no such channel"}}"#, .notFound),
        (#"{"ok":false,"error":{"code":"invalid_arguments","message":"bad"}}"#, .general),
    ])
    func theThirdStylesErrorsAreClassifiedByItsCodes(body: String, kind: APIError.Kind) throws {
        let (client, _) = try Self.client([.json(200, body)])
        let error = try #require(Self.apiError { () throws(DouctlError) in _ = try client.send(APIRequest(path: "/chat.post")) })
        #expect(error.kind == kind)
        #expect(error.httpStatus == 200)
        #expect(!error.message.isEmpty)
    }

    @Test func theThirdStylesAuthErrorIsExit4sWithTheLoginHint() throws {
        let (client, _) = try Self.client([.json(200, #"{"ok":false,"error":{"code":"not_authed","message":"who are you"}}"#)])
        let error = try #require(Self.apiError { () throws(DouctlError) in _ = try client.send(APIRequest(path: "/users.me")) })
        #expect(error.kind == .authentication)
        #expect(error.code == "not_authed")
        #expect(error.message == "who are you")
        #expect(error.hint == FixedToken("t1").rejectionHint)
        #expect(error.body == Array(#"{"ok":false,"error":{"code":"not_authed","message":"who are you"}}"#.utf8))
    }

    @Test func theThirdStylesExpiredTokenIsRefreshedAndTheRequestReplayed() throws {
        let tokens = ScriptedTokens("t1", refreshes: ["t2"])
        let (client, transport) = try Self.client([
            .json(200, #"{"ok":false,"error":{"code":"token_expired","message":"expired"}}"#),
            .json(200, #"{"ok":true,"result":{"id":"7"}}"#),
        ], tokens: tokens)
        let reply = try client.send(APIRequest(path: "/users.me"))
        #expect(reply.payload?["id"] == .string("7"))
        #expect(tokens.refreshed == ["t1"])
        #expect(transport.requests.map { $0.header("Authorization") } == ["Bearer t1", "Bearer t2"])
    }

    @Test func aRevokedTokenIsNotRefreshed() throws {
        let tokens = ScriptedTokens("t1", refreshes: ["t2"])
        let (client, transport) = try Self.client([.json(200, #"{"ok":false,"error":{"code":"token_revoked","message":"revoked"}}"#)], tokens: tokens)
        let error = try #require(Self.apiError { () throws(DouctlError) in _ = try client.send(APIRequest(path: "/users.me")) })
        #expect(error.kind == .authentication)
        #expect(tokens.refreshed.isEmpty)
        #expect(transport.requests.count == 1)
    }

    @Test func theThirdStylesRateLimitIsSeenByTheWait() {
        let rules = OkResultStyle()
        func response(_ status: Int, _ body: String) -> HTTPResponse {
            HTTPResponse(head: HTTPResponseHead(status: status, headers: []), body: Array(body.utf8))
        }
        #expect(rules.meansRateLimited(response(420, #"{"ok":false,"error":{"code":"ratelimited"}}"#)))
        #expect(rules.meansRateLimited(response(429, "")))
        #expect(!rules.meansRateLimited(response(400, #"{"ok":false,"error":{"code":"invalid_arguments"}}"#)))
        // Douban's code 111 means nothing to this style.
        #expect(!rules.meansRateLimited(response(400, #"{"code":111,"msg":"rate_limit_exceeded2"}"#)))
    }

    @Test func aWalkWithoutASchemeUsesTheThirdStylesPaging() throws {
        let (client, transport) = try Self.client([
            .json(200, #"{"ok":true,"result":[{"id":"1"},{"id":"2"}]}"#),
            .json(200, #"{"ok":true,"result":{"members":[{"id":"3"}]}}"#),
            .json(200, #"{"ok":true,"result":[]}"#),
        ])
        var items: [String] = []
        try Paginator(client: client).walk(APIRequest(path: "/users.list")) { (item: JSON) throws(DouctlError) in
            items.append(item["id"]?.scalarText ?? "?")
        }
        #expect(items == ["1", "2", "3"])
        #expect(transport.requests.map { $0.queryValue("after") } == [nil, "2", "3"])
        #expect(transport.unused == 0)
    }

    @Test func theServiceAsksTheStyleForPictures() throws {
        let (client, _) = try Self.client([])
        let status = try JSONParser.parse(#"{"id":"1","files":["https://f/1.png","https://f/2.png"]}"#)
        #expect(client.service.pictureURLs(in: status) == ["https://f/1.png", "https://f/2.png"])
    }

    // MARK: the built-in styles

    @Test func eachProfileGetsItsStylesRules() throws {
        func rules(_ name: String, _ settings: [(ProfileKey, ProfileValue)] = []) throws -> any APIStyleRules {
            var config = ConfigFile()
            if !settings.isEmpty { config.setProfile(name, ProfileSettings([(.apiBase, .text("http://127.0.0.1:9"))] + settings)) }
            return try config.resolve(name).rules
        }
        #expect(try rules("douban") is DoubanStyle)
        #expect(try rules("sandbox") is DoubanStyle)
        #expect(try rules("coding") is CodingStyle)
        #expect(try rules("coding-openapi") is CodingStyle)
        #expect(try rules("coding-sandbox") is CodingStyle)
        #expect(try rules("gitlab", [(.clientID, .text("x"))]) is PlainStyle)
        #expect(try rules("mine", [(.style, .text("douban"))]) is DoubanStyle)
        #expect(try rules("mine", [(.style, .text("coding"))]) is CodingStyle)
    }

    @Test func whatEachBuiltInStyleSays() throws {
        let douban = DoubanStyle(), coding = CodingStyle(), plain = PlainStyle()
        #expect(coding.hasCookieSessions && !douban.hasCookieSessions && !plain.hasCookieSessions)
        #expect([douban.scopeSeparator, coding.scopeSeparator, plain.scopeSeparator] == [",", ",", " "])
        #expect(plain.warnsWhenTheEndIsAGuess && !douban.warnsWhenTheEndIsAGuess && !coding.warnsWhenTheEndIsAGuess)
        let bareArray = JSON.array([.object(JSONObject([("id", .string("1"))]))])
        #expect(douban.pageScheme(guessedFrom: bareArray) == .offset())
        #expect(plain.pageScheme(guessedFrom: bareArray) == .offset())
        #expect(coding.pageScheme(guessedFrom: bareArray) == .cursor())
        let pageable = try JSONParser.parse(#"{"list":[],"page":1,"totalPage":1}"#)
        let all: [any APIStyleRules] = [douban, coding, plain]
        #expect(all.allSatisfy { $0.pageScheme(guessedFrom: pageable) == .pageNumber() })
        let permission = APIError(kind: .authentication, httpStatus: 400, code: "1000", message: "need_permission")
        // Douban's need_permission is Douban's: a plain API's code 1000 means nothing.
        #expect(douban.refusesPermission(permission) && !plain.refusesPermission(permission) && !coding.refusesPermission(permission))
        #expect(coding.hint(forCode: "907")?.contains("type=3") == true)
        #expect(douban.hint(forCode: "907") == nil)
        var refused: DouctlError?
        do { try douban.checkStatusID("abc") } catch { refused = error }
        #expect(refused == .usage("invalid status id 'abc': a Douban status id is a number"))
        try douban.checkStatusID("123")
        try coding.checkStatusID("abc")
        try plain.checkStatusID("abc")
    }

    /// The sandbox settings come from the styles' conventions, in the order they are written.
    @Test func sandboxSettingsKeepTheirOrder() {
        let douban = Preset.sandboxSettings(style: .douban, base: "http://h").map(\.0)
        #expect(douban == [.preset, .apiBase, .authorizeURL, .tokenURL, .deviceAuthorizationURL, .revokeURL, .clientID, .clientSecret])
        let coding = Preset.sandboxSettings(style: .coding, base: "http://h")
        #expect(coding.map(\.0) == [.preset, .apiBase, .authorizeURL, .tokenURL, .deviceAuthorizationURL, .clientID, .clientSecret])
        #expect(coding.first?.1 == .text("coding-sandbox"))
        #expect(coding[2].1 == .text("http://h/oauth_authorize.html"))
        #expect(Preset.codingSandbox.settings[.tokenPlacement] == .text("query"))
        #expect(Preset.sandbox.summary == "the local fake Douban server of `douctl sandbox`")
    }
}
