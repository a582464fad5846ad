@testable import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 39 point 1, in process over the scripted transport: OpenID Connect checked to the
/// end — https for every endpoint of a non-loopback issuer, azp when several audiences,
/// the userinfo sub against the ID token's, a refresh's ID token checked whole, ID tokens
/// scrubbed from recordings, and the name from preferred_username, name, email, then sub.
@Suite("OIDC done fully")
struct OIDCCompleteTests {
    static let now = 1_700_000_000.0
    static let exp = Int(now) + 600

    static func jwt(_ claims: String) -> String { AnyAPIFirstTryTests.jwt(claims) }

    /// Exit 4's error.
    static func isAuthentication(_ error: DouctlError) -> Bool {
        if case .authentication = error { return true }
        return false
    }

    static func profile(_ extra: [(ProfileKey, ProfileValue)] = []) throws(DouctlError) -> ResolvedProfile {
        try AnyAPIFirstTryTests.plain([
            (.issuer, .text("https://id.example")), (.scopes, .list(["openid", "profile"])),
            (.deviceAuthorizationURL, .text("https://auth.example/device")),
            (.userURL, .text("https://id.example/userinfo")), (.userIDField, .text("sub")),
            (.userNameField, .text("preferred_username")),
        ] + extra)
    }

    // MARK: - https everywhere

    @Test func aPlainHTTPIssuerOffLoopbackIsRefusedBeforeAnythingIsSent() {
        let transport = ScriptedTransport()
        let message = AnyAPIFirstTryTests.failure { () throws(DouctlError) in _ = try ProviderMetadata.discover(issuer: "http://id.example", http: transport) }
        #expect(message.contains("refused issuer 'http://id.example'") && message.contains("https://"), "\(message)")
        #expect(transport.requests.isEmpty)
        // On this machine plain http is allowed (the sandbox, a local provider).
        let local = ScriptedTransport([.json(200, #"{"issuer":"http://127.0.0.1:8000","token_endpoint":"http://127.0.0.1:8000/token"}"#)])
        #expect(throws: Never.self) { try ProviderMetadata.discover(issuer: "http://127.0.0.1:8000", http: local) }
    }

    @Test(arguments: ["token_endpoint", "userinfo_endpoint", "authorization_endpoint", "revocation_endpoint"])
    func anHTTPSIssuerWhoseDocumentPointsAnEndpointAtPlainHTTPIsRefused(key: String) {
        var fields = ["authorization_endpoint": "https://id.example/auth", "token_endpoint": "https://id.example/token",
                      "userinfo_endpoint": "https://id.example/userinfo", "revocation_endpoint": "https://id.example/revoke"]
        fields[key] = key == "userinfo_endpoint" ? "http://127.0.0.1:9/userinfo" : "http://id.example/\(key)"
        let document = "{\"issuer\":\"https://id.example\"," + fields.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\"\($0.value)\"" }.joined(separator: ",") + "}"
        let message = AnyAPIFirstTryTests.failure { () throws(DouctlError) in
            _ = try ProviderMetadata.discover(issuer: "https://id.example", http: ScriptedTransport([.json(200, document)]))
        }
        #expect(message.contains("puts \(key) at 'http://") && message.contains("nothing was changed"), "\(message)")
    }

    // MARK: - ID token claims

    @Test func severalAudiencesNeedAnAzpNamingThisClient() throws {
        func grant(_ claims: String) throws -> TokenGrant {
            try #require(TokenGrant(json: .object(JSONObject([("access_token", "a"), ("id_token", .string(Self.jwt(claims)))]))))
        }
        let other = try grant(#"{"iss":"https://id.example","aud":["other-client","cid"],"azp":"other-client","exp":\#(Self.exp),"sub":"u"}"#)
        #expect(other.idTokenProblem(issuer: "https://id.example", clientID: "cid", nonce: nil, now: Self.now)?.contains("issued to client 'other-client' (azp)") == true)
        let noAzp = try grant(#"{"iss":"https://id.example","aud":["other-client","cid"],"exp":\#(Self.exp),"sub":"u"}"#)
        #expect(noAzp.idTokenProblem(issuer: "https://id.example", clientID: "cid", nonce: nil, now: Self.now)?.contains("no azp") == true)
        let ours = try grant(#"{"iss":"https://id.example","aud":["other-client","cid"],"azp":"cid","exp":\#(Self.exp),"sub":"u"}"#)
        #expect(ours.idTokenProblem(issuer: "https://id.example", clientID: "cid", nonce: nil, now: Self.now) == nil)
        let single = try grant(#"{"iss":"https://id.example","aud":"cid","exp":\#(Self.exp),"sub":"u"}"#)
        #expect(single.idTokenProblem(issuer: "https://id.example", clientID: "cid", nonce: nil, now: Self.now) == nil)
        let noSub = try grant(#"{"iss":"https://id.example","aud":"cid","exp":\#(Self.exp)}"#)
        #expect(noSub.idTokenProblem(issuer: "https://id.example", clientID: "cid", nonce: nil, now: Self.now)?.contains("sub") == true)
    }

    static func deviceLogin(_ userinfo: String, idToken: String) throws -> (ScriptedTransport, Result<LoginService.Outcome, DouctlError>, CredentialStore, TemporaryDirectory) {
        let (directory, store) = try AnyAPIFirstTryTests.store()
        let transport = ScriptedTransport([
            .json(200, #"{"device_code":"d","user_code":"U","verification_uri":"https://auth.example/device","interval":1,"expires_in":60}"#),
            .json(200, #"{"access_token":"at-123456","token_type":"Bearer","refresh_token":"rt-123456","id_token":"\#(idToken)"}"#),
            .json(200, userinfo),
        ])
        let clock = VirtualClock()
        var requests = RequestSettings()
        requests.clock = RunClock(now: { Self.now }, sleep: { _, _ in })
        let profile = try Self.profile()
        let clients = ClientFactory(profile: profile, http: HTTPClientConfiguration(), store: store, requests: requests, credential: .none)
        let console = LoginConsole(say: { _ in }, readLine: { nil }, openBrowser: nil, now: { Self.now + clock.now - VirtualClock.start },
                                   sleep: { clock.sleep($0) }, isCancelled: { false }, approvalTimeout: 300)
        let service = LoginService(clients: clients, http: transport, console: console, warn: { _ in })
        let result: Result<LoginService.Outcome, DouctlError>
        do throws(DouctlError) {
            result = .success(try service.login(LoginService.Source.device))
        } catch {
            result = .failure(error)
        }
        return (transport, result, store, directory)
    }

    @Test func aUserinfoSubOtherThanTheIDTokensIsRefusedAndNothingStored() throws {
        let idToken = Self.jwt(#"{"iss":"https://id.example","aud":"cid","exp":\#(Self.exp),"sub":"alice-1"}"#)
        let (transport, result, store, directory) = try Self.deviceLogin(#"{"sub":"mallory-9","preferred_username":"mallory"}"#, idToken: idToken)
        defer { withExtendedLifetime(directory) {} }
        guard case .failure(let error) = result else { throw TestFailure("the login was stored: \(result)") }
        #expect(error.message.contains("names subject 'mallory-9', the ID token 'alice-1'") && error.message.contains("nothing was stored"), "\(error.message)")
        #expect(Self.isAuthentication(error))
        #expect(transport.requests.count == 3)
        #expect(try store.load("api") == nil)
    }

    @Test(arguments: [
        (#"{"sub":"alice-1","preferred_username":"al","name":"Alice A","email":"a@x"}"#, "al"),
        (#"{"sub":"alice-1","name":"Alice A","email":"a@x"}"#, "Alice A"),
        (#"{"sub":"alice-1","email":"a@x"}"#, "a@x"),
        (#"{"sub":"alice-1"}"#, "alice-1"),
    ])
    func theNameIsPreferredUsernameThenNameThenEmailThenSub(userinfo: String, name: String) throws {
        let idToken = Self.jwt(#"{"iss":"https://id.example","aud":"cid","exp":\#(Self.exp),"sub":"alice-1"}"#)
        let (_, result, store, directory) = try Self.deviceLogin(userinfo, idToken: idToken)
        defer { withExtendedLifetime(directory) {} }
        guard case .success(.token(let credential)) = result else { throw TestFailure("not logged in: \(result)") }
        #expect(credential.userID == "alice-1")
        #expect(credential.userName == name)
        #expect(try store.load("api")?.userName == name)
    }

    // MARK: - refresh (OIDC Core §12.2)

    @Test(arguments: [
        (#"{"iss":"https://evil.example","aud":"cid","exp":EXP,"sub":"alice-1"}"#, "issuer"),
        (#"{"iss":"https://id.example","aud":"someone-else","exp":EXP,"sub":"alice-1"}"#, "meant for"),
        (#"{"iss":"https://id.example","aud":"cid","exp":1000,"sub":"alice-1"}"#, "expired"),
        (#"{"iss":"https://id.example","aud":"cid","exp":EXP,"sub":"bob-2"}"#, "another account"),
        (#"{"iss":"https://id.example","aud":"cid","exp":EXP,"sub":"alice-1"}"#, ""),
    ])
    func aRefreshsIDTokenIsCheckedForIssuerAudienceExpiryAndSubject(claims: String, refusal: String) throws {
        let (directory, store) = try AnyAPIFirstTryTests.store()
        defer { withExtendedLifetime(directory) {} }
        let profile = try Self.profile()
        var login = Credential(accessToken: "old-access", refreshToken: "old-refresh", expiresAt: Self.now - 10, scopes: ["openid"], userID: "alice-1")
        login.extra[TokenGrant.subjectKey] = .string("alice-1")
        login.extra[TokenGrant.issuerKey] = .string("https://id.example")
        try store.update("api") { $0 = login }
        let idToken = Self.jwt(claims.replacingAll("EXP", with: String(Self.exp)))
        let transport = ScriptedTransport([
            .json(200, #"{"access_token":"new-access","refresh_token":"new-refresh","token_type":"Bearer","expires_in":3600,"id_token":"\#(idToken)"}"#),
            .json(200, #"{"ok":true}"#),
        ])
        let tokens = StoredTokens(profile: profile, store: store, http: transport, now: { Self.now })
        let client = APIClient(profile: profile, http: transport, tokens: tokens)
        if refusal.isEmpty {
            _ = try client.send(APIRequest(path: "/things"))
            #expect(try store.load("api")?.accessToken == "new-access")
            return
        }
        do {
            _ = try client.send(APIRequest(path: "/things"))
            Issue.record("the refresh was accepted")
        } catch {
            #expect(error.message.contains(refusal) && error.message.contains("the login was kept as it was"), "\(error.message)")
            #expect(Self.isAuthentication(error))
        }
        #expect(transport.requests.count == 1, "nothing sent with the refused token")
        #expect(try store.load("api")?.accessToken == "old-access")
    }

    // MARK: - recordings

    @Test func anIDTokenIsScrubbedFromARecording() throws {
        let directory = try TemporaryDirectory()
        let recorder = ExchangeRecorder(directory: directory.path)
        let idToken = Self.jwt(#"{"iss":"https://id.example","aud":"cid","exp":\#(Self.exp),"sub":"alice-1","email":"alice@example.com"}"#)
        let request = HTTPRequest(method: "POST", url: "https://id.example/token", headers: [HTTPHeader("Content-Type", "application/x-www-form-urlencoded")],
                                  body: .bytes(Array("grant_type=refresh_token&id_token_hint=\(idToken)".utf8)))
        let response = HTTPResponse(head: HTTPResponseHead(status: 200, headers: [HTTPHeader("Content-Type", "application/json")]),
                                    body: Array(#"{"access_token":"at-123456","id_token":"\#(idToken)"}"#.utf8))
        try recorder.record(request, response)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        let text = try files.map { try String(contentsOfFile: directory.path + "/" + $0, encoding: .utf8) }.joined()
        #expect(!files.isEmpty)
        #expect(!text.contains(idToken.split(separator: ".")[1]), "\(text)")
        #expect(text.contains("REDACTED"))
    }
}
