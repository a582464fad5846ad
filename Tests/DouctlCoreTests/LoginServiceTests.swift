@testable import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// `LoginService` over a scripted transport: what a login stores, what it replaces, and
/// what a logout removes and revokes, with no terminal, no sockets, no sandbox.
@Suite("Login service")
struct LoginServiceTests {
    static let now = 1_700_000_000.0

    /// A config directory with a credentials store and a cookie jar, a service for `profile`
    /// over `transport`, and what the service said, warned and dropped.
    struct Fixture {
        let directory: TemporaryDirectory
        let store: CredentialStore
        let jar: CookieJar
        let transport: ScriptedTransport
        let said = Recorder<String>()
        let warned = Recorder<String>()
        let dropped = Recorder<String>()
        let service: LoginService

        init(_ profile: ResolvedProfile, _ script: [ScriptedTransport.Answer] = [], answers: [String] = []) throws {
            directory = try TemporaryDirectory()
            let config = ConfigDirectory(path: directory.path)
            store = CredentialStore(directory: config)
            jar = CookieJar(directory: config, profile: profile.name)
            transport = ScriptedTransport(script)
            var requests = RequestSettings()
            requests.clock = RunClock(now: { LoginServiceTests.now }, sleep: { _, _ in })
            let clients = ClientFactory(profile: profile, http: HTTPClientConfiguration(), store: store, requests: requests, credential: .none)
            var typed = answers[...]
            let (said, warned, dropped) = (said, warned, dropped)
            let console = LoginConsole(
                say: { said.add($0) },
                readLine: { typed.popFirst() },
                openBrowser: nil, sleep: { _ in }, isCancelled: { false })
            service = LoginService(clients: clients, http: transport, console: console,
                                   warn: { warned.add($0) }, dropCachedReplies: { dropped.add($0) })
        }
    }

    static func corrupt(_ path: String) {
        _ = FileManager.default.createFile(atPath: path, contents: Data("{not json".utf8), attributes: [.posixPermissions: 0o600])
    }

    static let session = [Cookie(name: "sid", value: "s3ssion"), Cookie(name: "XSRF-TOKEN", value: "x")]

    // MARK: - login

    /// The API refuses the new token: the login fails (exit 4), nothing is stored, the
    /// previous login and the cache stay as they were.
    @Test(arguments: [
        ScriptedTransport.Answer.json(400, #"{"code":103,"msg":"invalid_access_token: bad","request":"GET /v2/user/~me"}"#),
        ScriptedTransport.Answer.json(401, #"{"code":103,"msg":"invalid_access_token: bad"}"#),
    ])
    func aRefusedTokenStoresNothing(refusal: ScriptedTransport.Answer) throws {
        let fixture = try Fixture(try TestProfiles.douban(), [refusal])
        let before = Credential(accessToken: "old", refreshToken: "old-refresh", userID: "1")
        try fixture.store.update("sandbox") { $0 = before }
        #expect(throws: DouctlError.self) { try fixture.service.login(.token(read: { "bad" })) }
        #expect(try fixture.store.load("sandbox") == before)
        #expect(fixture.dropped.all.isEmpty)
        #expect(fixture.transport.requests.map(\.path) == ["http://127.0.0.1:8089/v2/user/~me"])
        #expect(fixture.transport.requests.first?.header("Authorization") == "Bearer bad")
    }

    @Test func aRefusedTokenIsAnAuthenticationError() throws {
        let fixture = try Fixture(try TestProfiles.douban(), [.json(400, #"{"code":103,"msg":"invalid_access_token: bad"}"#)])
        do {
            _ = try fixture.service.login(.token(read: { "bad" }))
            Issue.record("a refused token was stored")
        } catch {
            guard case .authentication(let message) = error else { throw TestFailure("not an authentication error: \(error)") }
            #expect(message.hasPrefix("the API refused this token"))
        }
        #expect(try fixture.store.load("sandbox") == nil)
    }

    /// One identity per profile: a token login on a Coding profile ends the cookie session
    /// on the server (with its cookies) and empties the jar.
    @Test func aTokenLoginReplacesACookieSession() throws {
        let fixture = try Fixture(try TestProfiles.coding(), [
            .json(200, #"{"code":0,"data":{"id":7,"global_key":"coder","name":"Coder"}}"#),
            .json(200, #"{"code":0}"#),
        ])
        try fixture.jar.save(Self.session, owner: Identity(id: "7", name: "coder", displayName: nil))
        let outcome = try fixture.service.login(.token(read: { "t0ken" }))
        guard case .token(let credential) = outcome else { throw TestFailure("not a token login: \(outcome)") }
        #expect(credential.accessToken == "t0ken")
        #expect(credential.userID == "7" && credential.userName == "coder")
        #expect(try fixture.store.load("coding-sandbox") == credential)
        #expect(try fixture.jar.load().isEmpty)
        let sent = fixture.transport.requests
        #expect(sent.map(\.path) == ["http://127.0.0.1:8089/api/account/current_user", "http://127.0.0.1:8089/api/account/logout"])
        #expect(sent[0].queryValue("access_token") == "t0ken", "Coding takes the token in the query")
        #expect(sent[0].header("Cookie") == nil, "the new token is checked alone")
        #expect(sent[1].method == "POST")
        #expect(sent[1].header("Cookie")?.contains("sid=s3ssion") == true)
        #expect(fixture.dropped.all == ["coding-sandbox"])
    }

    /// The server cannot end the session (offline): it is forgotten here all the same.
    @Test func anUnreachableServerStillForgetsTheSession() throws {
        let fixture = try Fixture(try TestProfiles.coding(), [
            .json(200, #"{"code":0,"data":{"id":7,"global_key":"coder"}}"#),
            .failure(.connectionLost("reset")),
        ])
        try fixture.jar.save(Self.session)
        _ = try fixture.service.login(.token(read: { "t0ken" }))
        #expect(try fixture.jar.load().isEmpty)
        #expect(try fixture.store.load("coding-sandbox")?.accessToken == "t0ken")
    }

    /// And the other way: a password login (a cookie session) drops the stored token.
    @Test func aPasswordLoginDropsTheStoredToken() throws {
        let fixture = try Fixture(try TestProfiles.coding(), [
            .json(200, #"{"code":0,"data":false}"#, headers: [HTTPHeader("Set-Cookie", "sid=s1; Path=/")]),
            .json(200, #"{"code":0,"data":{"id":7,"global_key":"coder","name":"Coder"}}"#, headers: [HTTPHeader("Set-Cookie", "sid=s2; Path=/")]),
        ], answers: ["coder@example.com", "secret"])
        try fixture.store.update("coding-sandbox") { $0 = Credential(accessToken: "old") }
        let outcome = try fixture.service.login(.password)
        #expect(outcome == .cookieSession(Identity(id: "7", name: "coder", displayName: "Coder")))
        #expect(try fixture.store.load("coding-sandbox") == nil)
        #expect(try fixture.jar.load().map(\.value) == ["s2"])
        #expect(fixture.transport.requests[1].formValue("password") == CodingPasswordLogin.hashPassword("secret"))
        #expect(fixture.dropped.all == ["coding-sandbox"])
    }

    @Test func aPasswordLoginIsCodingsOnly() throws {
        let fixture = try Fixture(try TestProfiles.douban())
        #expect(throws: DouctlError.unsupported("--password is Coding's login; profile 'sandbox' is douban-style (use --web, --device or --paste)")) {
            try fixture.service.login(.password)
        }
        #expect(fixture.transport.requests.isEmpty)
    }

    /// A corrupt store is reported before the token is read (or anything sent).
    @Test func aCorruptStoreIsReportedBeforeStdinIsRead() throws {
        let fixture = try Fixture(try TestProfiles.douban())
        Self.corrupt(fixture.store.path)
        let reads = Recorder<Int>()
        #expect(throws: DouctlError.self) {
            try fixture.service.login(.token(read: { () throws(DouctlError) in
                reads.add(1)
                return "t"
            }))
        }
        #expect(reads.all.isEmpty)
        #expect(fixture.transport.requests.isEmpty)
    }

    /// `--with-credentials`: stored as exported, nothing sent (a single-use refresh token
    /// is not spent); another API base is worth a warning.
    @Test func anExportIsStoredAsItIs() throws {
        let fixture = try Fixture(try TestProfiles.douban())
        let exported = #"{"douctl":"credentials","profile":"ci","api_base":"https://elsewhere.test","credential":{"access_token":"a","refresh_token":"r","user_id":"1"}}"#
        let outcome = try fixture.service.login(.exported(read: { Array(exported.utf8) }))
        #expect(outcome == .token(Credential(accessToken: "a", refreshToken: "r", userID: "1")))
        #expect(try fixture.store.load("sandbox")?.refreshToken == "r")
        #expect(fixture.transport.requests.isEmpty)
        #expect(fixture.warned.all == ["these credentials were exported for https://elsewhere.test; profile 'sandbox' uses http://127.0.0.1:8089"])
        #expect(throws: DouctlError.self) { try fixture.service.login(.exported(read: { Array("{}".utf8) })) }
    }

    // MARK: - logout

    /// RFC 7009: the refresh token, then the access token, at revoke_url; a server that
    /// does not confirm gets a report, and the local copy is deleted all the same.
    @Test func aFailedRevocationStillRemovesTheLocalCredential() throws {
        let fixture = try Fixture(try TestProfiles.douban(), [.json(500, "{}"), .failure(.connectionLost("reset"))])
        let stored = Credential(accessToken: "acc", refreshToken: "ref")
        try fixture.store.update("sandbox") { $0 = stored }
        let logout = try fixture.service.logout()
        #expect(logout.removed == stored)
        #expect(logout.revocationFailures.count == 2)
        #expect(logout.revocationFailures.first == "HTTP 500")
        #expect(try fixture.store.load("sandbox") == nil)
        let sent = fixture.transport.requests
        #expect(sent.map(\.path) == Array(repeating: "http://127.0.0.1:8089/service/auth2/revoke", count: 2))
        #expect(sent.map { $0.formValue("token") } == ["ref", "acc"])
        #expect(sent.map { $0.formValue("token_type_hint") } == ["refresh_token", "access_token"])
        #expect(fixture.dropped.all == ["sandbox"])
    }

    @Test func aConfirmedRevocationReportsNothing() throws {
        let fixture = try Fixture(try TestProfiles.douban(), [.json(200, "{}")])
        try fixture.store.update("sandbox") { $0 = Credential(accessToken: "acc") }
        let logout = try fixture.service.logout()
        #expect(logout.revocationFailures.isEmpty)
        #expect(fixture.transport.requests.map { $0.formValue("token") } == ["acc"])
    }

    @Test func nothingToLogOutOfSendsNothing() throws {
        let fixture = try Fixture(try TestProfiles.douban())
        let logout = try fixture.service.logout()
        #expect(logout == LoginService.Logout(removed: nil, endedSession: false, revocationFailures: []))
        #expect(fixture.transport.requests.isEmpty)
    }

    /// A corrupt credentials file is moved aside with a warning; nothing is revoked.
    @Test func aCorruptStoreIsMovedAside() throws {
        let fixture = try Fixture(try TestProfiles.douban())
        Self.corrupt(fixture.store.path)
        let logout = try fixture.service.logout()
        #expect(logout.removed == nil)
        #expect(!FileIO.fileExists(fixture.store.path))
        #expect(fixture.warned.all.count == 1)
        #expect(fixture.warned.all.first?.contains("is corrupt") == true)
        #expect(fixture.transport.requests.isEmpty)
    }

    /// A Coding cookie session: ended on the server, the jar emptied.
    @Test func logoutEndsACookieSession() throws {
        let fixture = try Fixture(try TestProfiles.coding(), [.json(200, #"{"code":0}"#)])
        try fixture.jar.save(Self.session)
        let logout = try fixture.service.logout()
        #expect(logout.removed == nil && logout.endedSession)
        #expect(try fixture.jar.load().isEmpty)
        #expect(fixture.transport.requests.map(\.path) == ["http://127.0.0.1:8089/api/account/logout"])
    }
}
