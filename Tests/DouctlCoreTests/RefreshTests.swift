@testable import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlTestSupport
import Testing

/// The one refresh-and-replay: an expired token is refreshed once and the request sent
/// again; a second refusal is reported, never looped on.
@Suite("Refresh and replay")
struct RefreshTests {
    static let me = APIRequest(path: "/v2/user/~me")
    static let expired = ScriptedTransport.Answer.json(400, #"{"msg":"access_token_has_expired","code":106,"request":"GET /v2/user/~me"}"#)
    static let granted = ScriptedTransport.Answer.json(200, #"{"access_token":"new-access","refresh_token":"new-refresh","expires_in":3600,"douban_user_id":"1000001"}"#)

    /// A credentials store in a fresh directory, holding `credential` for the sandbox profile.
    struct Store {
        let directory: TemporaryDirectory
        let store: CredentialStore

        init(_ credential: Credential?) throws {
            directory = try TemporaryDirectory()
            store = CredentialStore(directory: ConfigDirectory(path: directory.path))
            if let credential { try store.update("sandbox") { $0 = credential } }
        }
    }

    static let now = 1_700_000_000.0

    func client(_ transport: ScriptedTransport, _ store: Store) throws(DouctlError) -> APIClient {
        let profile = try TestProfiles.douban()
        let tokens = StoredTokens(profile: profile, store: store.store, http: transport, now: { Self.now })
        return APIClient(profile: profile, http: transport, tokens: tokens)
    }

    @Test func anExpiredTokenIsRefreshedOnceAndTheRequestReplayed() throws {
        let store = try Store(Credential(accessToken: "old-access", refreshToken: "old-refresh", expiresAt: Self.now + 600, userID: "1000001"))
        let transport = ScriptedTransport([Self.expired, Self.granted, .json(200, #"{"uid":"ahbei"}"#)])
        let reply = try client(transport, store).send(Self.me)
        #expect(try reply.requireJSON()["uid"]?.stringValue == "ahbei")
        let sent = transport.requests
        #expect(sent.count == 3)
        #expect(sent.map(\.path) == ["http://127.0.0.1:8089/v2/user/~me", "http://127.0.0.1:8089/service/auth2/token", "http://127.0.0.1:8089/v2/user/~me"])
        #expect(sent[0].header("Authorization") == "Bearer old-access")
        #expect(sent[1].method == "POST")
        #expect(sent[1].header("Authorization") == nil, "the token endpoint gets client credentials, not the token")
        #expect(sent[1].formValue("grant_type") == "refresh_token")
        #expect(sent[1].formValue("refresh_token") == "old-refresh")
        #expect(sent[1].formValue("client_id") == "douctl-sandbox")
        #expect(sent[1].formValue("client_secret") == "sandbox-secret")
        #expect(sent[1].formValue("redirect_uri") == "http://127.0.0.1/callback")
        #expect(sent[2].header("Authorization") == "Bearer new-access")
        let stored = try #require(try store.store.load("sandbox"))
        #expect(stored.accessToken == "new-access")
        #expect(stored.refreshToken == "new-refresh")
        #expect(stored.expiresAt == Self.now + 3600)
        #expect(stored.userID == "1000001")
    }

    /// Another process rotated the tokens while this one waited for the lock: the new token
    /// is used as it is, even one whose short life puts it inside the 30 s margin, and no
    /// refresh is sent (Douban would answer 124, or the rotated refresh token would be spent).
    @Test func tokensAnotherProcessRotatedAreUsedWithoutARefresh() throws {
        let store = try Store(Credential(accessToken: "rotated-access", refreshToken: "rotated-refresh", expiresAt: Self.now + 10))
        let transport = ScriptedTransport()
        let tokens = StoredTokens(profile: try TestProfiles.douban(), store: store.store, http: transport, now: { Self.now })
        #expect(try tokens.refresh(rejected: "old-access") == "rotated-access")
        #expect(transport.requests.isEmpty)
        #expect(try store.store.load("sandbox")?.refreshToken == "rotated-refresh")
    }

    @Test func aSecondRefusalIsReportedNotLoopedOn() throws {
        let store = try Store(Credential(accessToken: "old-access", refreshToken: "old-refresh", expiresAt: Self.now + 600))
        let transport = ScriptedTransport([Self.expired, Self.granted, Self.expired])
        do {
            _ = try client(transport, store).send(Self.me)
            Issue.record("a refused replay succeeded")
        } catch .api(let error) {
            #expect(error.kind == .authentication)
            #expect(error.code == "106")
            #expect(error.hint == "run: douctl auth login --profile sandbox")
        }
        #expect(transport.requests.count == 3, "one refresh, one replay, nothing more")
        #expect(transport.unused == 0)
    }

    @Test func aRefusedRefreshSaysToLogInAgain() throws {
        let store = try Store(Credential(accessToken: "old-access", refreshToken: "spent"))
        let transport = ScriptedTransport([Self.expired, .json(400, #"{"msg":"invalid_refresh_token: spent","code":119,"request":"POST /service/auth2/token"}"#)])
        #expect(throws: DouctlError.authentication("the login expired and could not be refreshed (invalid_refresh_token, code 119); run: douctl auth login --profile sandbox")) {
            try client(transport, store).send(Self.me)
        }
        #expect(transport.requests.count == 2)
        #expect(try store.store.load("sandbox")?.accessToken == "old-access", "a refused refresh changes nothing stored")
    }

    @Test func withoutARefreshTokenTheRefusalStands() throws {
        let store = try Store(Credential(accessToken: "old-access"))
        let transport = ScriptedTransport([Self.expired])
        do {
            _ = try client(transport, store).send(Self.me)
            Issue.record("an expired token succeeded")
        } catch .api(let error) {
            #expect(error.code == "106")
        }
        #expect(transport.requests.count == 1)
    }

    @Test func aTokenPastItsExpiryIsRefreshedBeforeSending() throws {
        let store = try Store(Credential(accessToken: "old-access", refreshToken: "old-refresh", expiresAt: Self.now - 1))
        let transport = ScriptedTransport([Self.granted, .json(200, #"{"uid":"ahbei"}"#)])
        _ = try client(transport, store).send(Self.me)
        #expect(transport.requests.count == 2)
        #expect(transport.requests.first?.formValue("grant_type") == "refresh_token")
        #expect(transport.requests.last?.header("Authorization") == "Bearer new-access")
    }

    @Test func doubansNotYetExpiredAnswerKeepsTheCurrentToken() throws {
        let store = try Store(Credential(accessToken: "still-good", refreshToken: "r", expiresAt: Self.now - 1))
        let transport = ScriptedTransport([
            .json(400, #"{"msg":"access_token_has_not_expired","code":124,"request":"POST /service/auth2/token"}"#),
            .json(200, "{}"),
        ])
        _ = try client(transport, store).send(Self.me)
        #expect(transport.requests.last?.header("Authorization") == "Bearer still-good")
    }

    @Test func aPipedBodyCannotBeReplayed() throws {
        let tokens = ScriptedTokens("old", refreshes: ["new"])
        let transport = ScriptedTransport([Self.expired])
        let api = APIClient(profile: try TestProfiles.douban(), http: transport, tokens: tokens)
        let piped = APIRequest(method: "POST", path: "/shuo/v2/statuses/", body: .raw(.stream(fileDescriptor: -1), contentType: "text/plain"))
        #expect(throws: DouctlError.authentication("the token had expired and is now refreshed, but the request body came from a pipe and cannot be sent again; run the command again")) {
            try api.send(piped)
        }
        #expect(tokens.refreshed == ["old"])
        #expect(transport.requests.count == 1)
    }

    @Test func aStreamedDownloadIsReplayedOnceToo() throws {
        let tokens = ScriptedTokens("old", refreshes: ["new", "newer"])
        let transport = ScriptedTransport([
            .json(401, "{}"),
            .reply(HTTPResponse(head: HTTPResponseHead(status: 200), body: Array("picture bytes".utf8))),
        ])
        let api = APIClient(profile: try TestProfiles.douban(), http: transport, tokens: tokens)
        var streamed: [UInt8] = []
        var heads: [Int] = []
        let response = try api.stream(APIRequest(path: "/pics/1.jpg"), head: { heads.append($0.status) }) { chunk in
            streamed += chunk
            return true
        }
        #expect(response.status == 200)
        #expect(response.body.isEmpty, "a streamed body is not held")
        #expect(String(decoding: streamed, as: UTF8.self) == "picture bytes")
        #expect(heads == [200], "an error reply's head is not announced to the download")
        #expect(tokens.refreshed == ["old"])
        #expect(transport.requests.map { $0.header("Authorization") } == ["Bearer old", "Bearer new"])
    }
}
