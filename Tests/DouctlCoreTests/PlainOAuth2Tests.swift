@testable import DouctlCore
import DouctlTestSupport
import DouctlHTTP
import DouctlJSON
import DouctlSystem
import Testing

/// A profile with no preset is a plain OAuth2 API and speaks the RFCs; presets keep their
/// conventions. Over the scripted transport, in process.
@Suite("plain OAuth2 profiles")
struct PlainOAuth2Tests {
    static func plain(_ extra: [(ProfileKey, ProfileValue)] = []) throws(DouctlError) -> ResolvedProfile {
        var config = ConfigFile()
        config.setProfile("dot", ProfileSettings([
            (.apiBase, .text("http://127.0.0.1:9")),
            (.authorizeURL, .text("http://127.0.0.1:9/o/authorize/")),
            (.tokenURL, .text("http://127.0.0.1:9/o/token/")),
            (.deviceAuthorizationURL, .text("http://127.0.0.1:9/o/device-authorization/")),
            (.clientID, .text("dotx")),
            (.scopes, .list(["read", "write"])),
        ] + extra))
        return try config.resolve("dot")
    }

    static func query(_ url: String, _ name: String) -> String? { URLParts(url)?.value(name) }

    // MARK: scopes

    @Test func aPlainProfileJoinsScopesWithSpacesAPresetWithCommas() throws {
        let plain = try Self.plain()
        #expect(plain.isPlainOAuth2)
        #expect(plain.scopeParameter == "read write")
        let pkce = PKCE()
        let plainURL = OAuthLogin.authorizationURL(base: "http://127.0.0.1:9/o/authorize/", profile: plain, redirectURI: "http://127.0.0.1:1/cb", state: "s", pkce: pkce)
        #expect(plainURL.contains("scope=read%20write&"))
        #expect(Self.query(plainURL, "scope") == "read write")

        let douban = try ConfigFile().resolve("douban")
        #expect(!douban.isPlainOAuth2)
        let doubanURL = OAuthLogin.authorizationURL(base: "https://www.douban.com/service/auth2/auth", profile: douban, redirectURI: "https://example.com/back", state: "s", pkce: pkce)
        #expect(Self.query(doubanURL, "scope") == "douban_basic_common,shuo_basic_r,shuo_basic_w")
        #expect(try TestProfiles.coding().scopeParameter == "user,social,social:tweet")
        // A profile that names a style keeps that style's convention.
        #expect(try !Self.plain([(.style, .text("douban"))]).isPlainOAuth2)
    }

    @Test func theDeviceRequestSendsSpaceSeparatedScopesInAPlainForm() throws {
        let transport = ScriptedTransport([
            .json(200, #"{"device_code":"d","user_code":"U","verification_uri":"http://127.0.0.1:9/device","interval":1,"expires_in":60}"#),
            .json(200, #"{"access_token":"a","token_type":"Bearer"}"#),
        ])
        let clock = VirtualClock()
        let console = LoginConsole(say: { _ in }, readLine: { nil }, openBrowser: nil, now: { clock.now },
                                   sleep: { clock.sleep($0) }, isCancelled: { false }, approvalTimeout: 300)
        let grant = try OAuthLogin(profile: try Self.plain(), http: transport, console: console).device()
        #expect(grant.accessToken == "a")
        let device = try #require(transport.requests.first)
        #expect(device.formValue("scope") == "read write")
        #expect(device.header("Content-Type") == "application/x-www-form-urlencoded")
        #expect(transport.requests.allSatisfy { $0.header("Content-Type") == "application/x-www-form-urlencoded" })
    }

    // MARK: redirect URIs (RFC 8252 §7.3)

    @Test func aRegisteredRedirectURIKeepsItsHostAndPath() throws {
        let registered = LoopbackRedirect(redirectURI: "http://127.0.0.1/callback/dotx", profile: "dot", asRegistered: true)
        #expect(registered.port == 0)
        #expect(registered.path == "/callback/dotx")
        #expect(registered.uri(port: 5000) == "http://127.0.0.1:5000/callback/dotx")
        #expect(registered.bindHost == "127.0.0.1")

        let zero = LoopbackRedirect(redirectURI: "http://127.0.0.1:0/cb?app=1", profile: "dot", asRegistered: true)
        #expect(zero.uri(port: 7) == "http://127.0.0.1:7/cb?app=1")
        let fixed = LoopbackRedirect(redirectURI: "http://127.0.0.1:8080/cb", profile: "dot", asRegistered: true)
        #expect(fixed.port == 8080)
        #expect(fixed.uri(port: 8080) == "http://127.0.0.1:8080/cb")

        let v6 = LoopbackRedirect(redirectURI: "http://[::1]/cb", profile: "dot", asRegistered: true)
        #expect(v6.uri(port: 5000) == "http://[::1]:5000/cb")
        #expect(v6.bindHost == "::1")
        let named = LoopbackRedirect(redirectURI: "http://localhost/cb", profile: "dot", asRegistered: true)
        #expect(named.uri(port: 5000) == "http://localhost:5000/cb")
        #expect(named.bindHost == "127.0.0.1")

        // No path, or a preset's template: the per-profile path of today.
        #expect(LoopbackRedirect(redirectURI: "http://127.0.0.1", profile: "dot", asRegistered: true).path == "/callback/dot")
        #expect(LoopbackRedirect(redirectURI: "http://127.0.0.1/callback", profile: "sandbox").path == "/callback/sandbox")
    }

    @Test func onlyTheProfilesOwnRedirectURICountsAsRegistered() throws {
        #expect(try Self.plain([(.redirectURI, .text("http://127.0.0.1/callback/dotx"))]).redirectURIIsRegistered)
        #expect(try !TestProfiles.douban().redirectURIIsRegistered)
        #expect(try !Self.plain().redirectURIIsRegistered)
    }

    // MARK: identity

    @Test func aPlainProfileWithoutUserURLAsksNobody() throws {
        let transport = ScriptedTransport([])
        let client = APIClient(profile: try Self.plain(), http: transport, tokens: FixedToken("t"))
        #expect(try Identity.fetch(with: client) == nil)
        #expect(transport.requests.isEmpty)
    }

    @Test func userURLAndItsFieldsSayWhoTheTokenBelongsTo() throws {
        let transport = ScriptedTransport([
            .json(200, #"{"id":7,"login":"octocat","name":"The Octocat"}"#),
            .json(200, #"{"code":0,"data":{"user":{"uid":"u-9","handle":"alice"}}}"#),
            .json(200, #"{"nothing":"here"}"#),
        ])
        let github = APIClient(profile: try Self.plain([(.userURL, .text("/user"))]), http: transport, tokens: FixedToken("t"))
        #expect(try Identity.fetch(with: github) == Identity(id: "7", name: "octocat", displayName: "The Octocat"))
        let sent = try #require(transport.requests.first)
        #expect(sent.url == "http://127.0.0.1:9/user")
        #expect(sent.header("Authorization") == "Bearer t")

        let nested = APIClient(profile: try Self.plain([(.userURL, .text("http://127.0.0.1:9/api/me")), (.userIDField, .text("data.user.uid")),
                                                         (.userNameField, .text("data.user.handle"))]), http: transport, tokens: FixedToken("t"))
        #expect(try Identity.fetch(with: nested) == Identity(id: "u-9", name: "alice", displayName: nil))
        #expect(transport.requests.last?.url == "http://127.0.0.1:9/api/me")

        #expect(throws: DouctlError.self) { try Identity.fetch(with: github) }
    }

    @Test func theUserKeysAreFlagsAndConfigKeys() throws {
        #expect(ProfileKey(rawValue: "user_url")?.flagName == "user-url")
        #expect(ProfileKey(rawValue: "user_id_field")?.flagName == "user-id-field")
        #expect(ProfileKey(rawValue: "user_name_field")?.flagName == "user-name-field")
        let profile = try Self.plain([(.userURL, .text("/api/v4/user")), (.userNameField, .text("username"))])
        #expect(profile.value(.userURL) == .text("/api/v4/user"))
        #expect(profile.value(.userNameField) == .text("username"))
        #expect(profile.value(.userIDField) == nil)
    }
}
