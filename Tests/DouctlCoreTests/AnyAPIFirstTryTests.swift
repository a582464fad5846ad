@testable import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 32, first half, in process over the scripted transport: a profile from an
/// issuer's metadata (OIDC discovery, RFC 8414 with path insertion, the mix-up check), ID
/// tokens checked, the client-credentials grant fetched again when it expires, HTTP Basic
/// and API keys sent to the profile's origin only, and advice that names the right profile.
@Suite("any API, first try")
struct AnyAPIFirstTryTests {
    static let now = 1_700_000_000.0

    static func plain(_ extra: [(ProfileKey, ProfileValue)] = [], others: [(String, ProfileSettings)] = [], apiBase: String? = nil) throws(DouctlError) -> ResolvedProfile {
        var config = ConfigFile()
        config.setProfile("api", ProfileSettings([
            (.apiBase, .text("https://api.example")),
            (.tokenURL, .text("https://auth.example/token")),
            (.authorizeURL, .text("https://auth.example/authorize")),
            (.clientID, .text("cid")),
            (.clientSecret, .text("csecret")),
        ] + extra))
        for (name, settings) in others { config.setProfile(name, settings) }
        return try config.resolve("api", overrides: ProfileOverrides(apiBase: apiBase))
    }

    static func store() throws -> (TemporaryDirectory, CredentialStore) {
        let directory = try TemporaryDirectory()
        return (directory, CredentialStore(directory: ConfigDirectory(path: directory.path)))
    }

    static func jwt(_ claims: String) -> String {
        "eyJhbGciOiJSUzI1NiJ9." + Base64.encode(Array(claims.utf8), urlSafe: true).replacingAll("=", with: "") + ".c2ln"
    }

    /// The message of the error `body` throws ("" and a recorded issue when it throws none).
    static func failure(_ body: () throws(DouctlError) -> Void) -> String {
        do {
            try body()
        } catch {
            return error.message
        }
        Issue.record("expected an error")
        return ""
    }

    // MARK: - metadata

    @Test func oidcDiscoveryFillsTheEndpointsAndTheClientAuthentication() throws {
        let document = #"""
        {"issuer":"https://id.example","authorization_endpoint":"https://id.example/auth","token_endpoint":"https://id.example/token",
         "device_authorization_endpoint":"https://id.example/device","revocation_endpoint":"https://id.example/revoke",
         "userinfo_endpoint":"https://id.example/userinfo","token_endpoint_auth_methods_supported":["client_secret_post"],
         "code_challenge_methods_supported":["plain"]}
        """#
        let transport = ScriptedTransport([.json(200, document)])
        let metadata = try ProviderMetadata.discover(issuer: "https://id.example", http: transport)
        #expect(transport.requests.map(\.url) == ["https://id.example/.well-known/openid-configuration"])
        let settings = Dictionary(uniqueKeysWithValues: metadata.settings(hasSecret: true).map { ($0.0, $0.1.display) })
        #expect(settings[.issuer] == "https://id.example")
        #expect(settings[.authorizeURL] == "https://id.example/auth")
        #expect(settings[.tokenURL] == "https://id.example/token")
        #expect(settings[.deviceAuthorizationURL] == "https://id.example/device")
        #expect(settings[.revokeURL] == "https://id.example/revoke")
        #expect(settings[.userURL] == "https://id.example/userinfo")
        #expect(settings[.userIDField] == "sub")
        #expect(settings[.tokenAuth] == "post")
        #expect(settings[.pkce] == "false", "no S256 listed")
        #expect(metadata.tokenAuth(hasSecret: false) == nil)
    }

    /// RFC 8414 §3.1: for the issuer https://h/tenant the document is at
    /// https://h/.well-known/oauth-authorization-server/tenant, tried after OIDC's own place.
    @Test func rfc8414MetadataIsFoundByPathInsertion() throws {
        let transport = ScriptedTransport([
            .json(404, #"{"error":"not found"}"#),
            .json(200, #"{"issuer":"https://h.example/tenant","token_endpoint":"https://h.example/tenant/token","token_endpoint_auth_methods_supported":["none","client_secret_basic"],"code_challenge_methods_supported":["S256"]}"#),
        ])
        let metadata = try ProviderMetadata.discover(issuer: "https://h.example/tenant", http: transport)
        #expect(transport.requests.map(\.url) == [
            "https://h.example/tenant/.well-known/openid-configuration",
            "https://h.example/.well-known/oauth-authorization-server/tenant",
        ])
        #expect(metadata.tokenEndpoint == "https://h.example/tenant/token")
        #expect(metadata.tokenAuth(hasSecret: true) == .basic)
        #expect(metadata.tokenAuth(hasSecret: false) == TokenAuth.none)
        #expect(metadata.supportsPKCE == true)
    }

    /// RFC 8414 §3.3: a document naming another issuer is refused (the mix-up attack).
    @Test func aDocumentNamingAnotherIssuerIsRefused() throws {
        let transport = ScriptedTransport([.json(200, #"{"issuer":"https://evil.example","token_endpoint":"https://evil.example/token"}"#)])
        let message = Self.failure { () throws(DouctlError) in _ = try ProviderMetadata.discover(issuer: "https://id.example", http: transport) }
        #expect(message.contains("names issuer 'https://evil.example', not 'https://id.example'"), "\(message)")
        #expect(throws: DouctlError.self) { try ProviderMetadata.discover(issuer: "https://id.example?x=1", http: ScriptedTransport()) }
    }

    // MARK: - ID tokens

    @Test func anIDTokenIsCheckedForIssuerAudienceExpiryAndNonce() throws {
        func grant(_ claims: String) -> TokenGrant? {
            TokenGrant(json: .object(JSONObject([("access_token", "a"), ("id_token", .string(Self.jwt(claims)))])))
        }
        let exp = Int(Self.now) + 600
        let good = try #require(grant(#"{"iss":"https://id.example","aud":"cid","exp":\#(exp),"nonce":"n1","sub":"u-7"}"#))
        #expect(good.subject == "u-7")
        #expect(good.idTokenProblem(issuer: "https://id.example", clientID: "cid", nonce: "n1", now: Self.now) == nil)
        #expect(good.idTokenProblem(issuer: "https://other.example", clientID: "cid", nonce: "n1", now: Self.now)?.contains("issuer") == true)
        #expect(good.idTokenProblem(issuer: "https://id.example", clientID: "someone-else", nonce: "n1", now: Self.now)?.contains("meant for") == true)
        #expect(good.idTokenProblem(issuer: "https://id.example", clientID: "cid", nonce: "n2", now: Self.now)?.contains("nonce") == true)
        #expect(good.idTokenProblem(issuer: "https://id.example", clientID: "cid", nonce: "n1", now: Self.now + 3600)?.contains("expired") == true)
        let audiences = try #require(grant(#"{"iss":"https://id.example","aud":["x","cid"],"azp":"cid","exp":\#(exp),"nonce":"n1","sub":"u-7"}"#))
        #expect(audiences.idTokenProblem(issuer: "https://id.example", clientID: "cid", nonce: "n1", now: Self.now) == nil)
        let none = TokenGrant(accessToken: "a")
        #expect(none.idTokenProblem(issuer: nil, clientID: "cid", nonce: "n1", now: Self.now) != nil)
    }

    @Test func theAuthorizationRequestCarriesANonceWhenOpenIDIsAsked() throws {
        let profile = try Self.plain([(.scopes, .list(["openid", "profile"]))])
        let url = OAuthLogin.authorizationURL(base: "https://auth.example/authorize", profile: profile, redirectURI: "http://127.0.0.1:1/cb", state: "s", pkce: PKCE(), nonce: "n-123")
        #expect(URLParts(url)?.value("nonce") == "n-123")
        #expect(URLParts(url)?.value("code_challenge") != nil)
        let noPKCE = try Self.plain([(.pkce, .text("false"))])
        let plainURL = OAuthLogin.authorizationURL(base: "https://auth.example/authorize", profile: noPKCE, redirectURI: "http://127.0.0.1:1/cb", state: "s", pkce: PKCE())
        #expect(URLParts(plainURL)?.value("code_challenge") == nil)
        #expect(URLParts(plainURL)?.value("nonce") == nil)
    }

    // MARK: - client credentials

    @Test func aClientCredentialsLoginIsFetchedAgainWhenItExpires() throws {
        let (directory, store) = try Self.store()
        defer { withExtendedLifetime(directory) {} }
        let profile = try Self.plain([(.tokenAuth, .text("basic")), (.scopes, .list(["read"]))])
        let transport = ScriptedTransport([.json(200, #"{"access_token":"cc-1","token_type":"Bearer","expires_in":60,"scope":"read"}"#)])
        var requests = RequestSettings()
        requests.clock = RunClock(now: { Self.now }, sleep: { _, _ in })
        let clients = ClientFactory(profile: profile, http: HTTPClientConfiguration(), store: store, requests: requests, credential: .none)
        let console = LoginConsole(say: { _ in }, readLine: { nil }, openBrowser: nil, sleep: { _ in }, isCancelled: { false })
        let service = LoginService(clients: clients, http: transport, console: console, warn: { _ in })
        guard case .token(let credential) = try service.login(.clientCredentials) else { throw TestFailure("no token") }
        #expect(credential.isClientCredentials)
        #expect(credential.refreshToken == nil)
        let sent = try #require(transport.requests.first)
        #expect(sent.formValue("grant_type") == "client_credentials")
        #expect(sent.formValue("scope") == "read")
        #expect(sent.header("Authorization") == "Basic " + Base64.encode(Array("cid:csecret".utf8)))

        // Past its expiry: a new token, asked for again under the lock, and used.
        transport.then(.json(200, #"{"access_token":"cc-2","token_type":"Bearer","expires_in":60}"#), .json(200, #"{"ok":true}"#))
        let tokens = StoredTokens(profile: profile, store: store, http: transport, now: { Self.now + 120 })
        let client = APIClient(profile: profile, http: transport, tokens: tokens)
        _ = try client.send(APIRequest(path: "/things"))
        #expect(transport.requests[1].formValue("grant_type") == "client_credentials")
        #expect(transport.requests[2].header("Authorization") == "Bearer cc-2")
        let stored = try #require(try store.load("api"))
        #expect(stored.accessToken == "cc-2")
        #expect(stored.isClientCredentials)
        #expect(stored.refreshToken == nil)
    }

    // MARK: - Basic and API keys

    @Test func basicIsSentToTheProfilesOriginOnlyAndNeverRevoked() throws {
        let (directory, store) = try Self.store()
        defer { withExtendedLifetime(directory) {} }
        let profile = try Self.plain([(.revokeURL, .text("https://auth.example/revoke"))])
        try store.update("api") { $0 = Credential.basic(user: "ann", password: "s3cret:pw") }
        let transport = ScriptedTransport([.json(200, "{}"), .json(200, "{}")])
        let client = APIClient(profile: profile, http: transport, tokens: StoredTokens(profile: profile, store: store, http: transport))
        _ = try client.send(APIRequest(path: "/me"))
        _ = try client.send(APIRequest(path: "https://elsewhere.example/x"))
        #expect(transport.requests[0].header("Authorization") == "Basic " + Base64.encode(Array("ann:s3cret:pw".utf8)))
        #expect(transport.requests[1].header("Authorization") == nil)
        #expect(StoredTokens(profile: profile, store: store, http: transport).liveSecrets().contains("s3cret:pw"))

        let clients = ClientFactory(profile: profile, http: HTTPClientConfiguration(), store: store, requests: RequestSettings(), credential: .none)
        let console = LoginConsole(say: { _ in }, readLine: { nil }, openBrowser: nil, sleep: { _ in }, isCancelled: { false })
        let logout = try LoginService(clients: clients, http: transport, console: console, warn: { _ in }).logout()
        #expect(logout.removed?.userName == "ann")
        #expect(transport.requests.count == 2, "the password went to no revocation endpoint")
        #expect(try store.load("api") == nil)
    }

    @Test(arguments: [("header", "X-API-Key"), ("query", "key")])
    func anAPIKeyGoesWhereTheProfileSaysAndIsASecret(placement: String, name: String) throws {
        let key: ProfileKey = placement == "header" ? .tokenHeader : .tokenQuery
        let profile = try Self.plain([(key, .text(name))])
        let client = APIClient(profile: profile, http: ScriptedTransport(), tokens: FixedToken("k-123456"))
        let own = try client.httpRequest(APIRequest(path: "/v1/things"), token: "k-123456")
        if placement == "header" {
            #expect(own.header("X-API-Key") == "k-123456")
        } else {
            #expect(own.queryValue("key") == "k-123456")
        }
        #expect(own.header("Authorization") == nil)
        #expect(Redaction.credentials(of: own).contains("k-123456"))
        let other = try client.httpRequest(APIRequest(path: "https://elsewhere.example/v1"), token: "k-123456")
        #expect(other.header("X-API-Key") == nil && other.queryValue("key") == nil)
        #expect(throws: DouctlError.self) { try ProfileKey.tokenHeader.parse("Bad Header") }
    }

    // MARK: - advice

    @Test func adviceNamesTheProfileThatWouldSendCredentialsOrNothing() throws {
        let gh = ProfileSettings([(.apiBase, .text("https://api.github.example"))])
        let profile = try Self.plain(others: [("gh", gh)])
        let client = APIClient(profile: profile, http: ScriptedTransport(), tokens: nil)
        let error = APIError(kind: .authentication, httpStatus: 401, code: nil, message: "no")
        #expect(client.authenticationHint(for: error, url: "https://nowhere.example/x") == nil)
        #expect(client.authenticationHint(for: error, url: "https://api.github.example/user") == "profile gh sends credentials there: add --profile gh")

        // --api-base elsewhere with no login: nothing says to log in to this profile.
        let moved = try Self.plain(others: [("gh", gh)], apiBase: "https://api.github.example")
        #expect(moved.apiBaseOverridden)
        let movedClient = APIClient(profile: moved, http: ScriptedTransport(), tokens: NoStoredLogin(profile: "api"))
        let hint = movedClient.authenticationHint(for: error, url: "https://api.github.example/user")
        #expect(hint == "profile gh sends credentials there: add --profile gh")
        let message = Self.failure { () throws(DouctlError) in try movedClient.requireLogin() }
        #expect(!message.contains("--profile api"), "\(message)")
        #expect(message.contains("--profile gh"), "\(message)")
        let unmoved = try Self.plain(apiBase: "https://api.example")
        #expect(!unmoved.apiBaseOverridden)
    }
}
