import DouctlJSON
import DouctlServer
import DouctlTestSupport
import Foundation
import Testing

/// Issue 32, first half, with the built binary: a profile from an issuer and an OpenID
/// Connect login, and the client-credentials grant, against Django OAuth Toolkit (a real
/// provider nobody here wrote); a metadata document naming another issuer, HTTP Basic, API
/// keys and login advice against listeners written here.
@Suite("any API, first try (binary)", .serialized)
struct AnyAPIBinaryTests {
    // MARK: listeners written here

    /// RFC 8414 §3.3: metadata whose issuer is another server's is refused, and the profile
    /// is not written.
    @Test func metadataNamingAnotherIssuerIsRefused() throws {
        let server = try TestServer(json: #"{"issuer":"https://evil.example","authorization_endpoint":"https://evil.example/authorize","token_endpoint":"https://evil.example/token"}"#)
        let douctl = Douctl()
        let add = try douctl.run(["profile", "add", "mixed", "--issuer", server.baseURL, "--client-id", "c"])
        #expect(add.status == 8, "\(add)")
        #expect(add.errorLine.contains("names issuer 'https://evil.example'"), "\(add)")
        #expect(try douctl.run(["profile", "show", "mixed"]).status == 2, "no profile was written")
    }

    /// OIDC Core §3.1.3.7 against a hostile provider: its ID token carries a nonce this
    /// login never sent (a token injected from another login). Refused, exit 4, nothing stored.
    @Test func anIDTokenWithAnotherNonceIsRefused() throws {
        let claims = #"{"iss":"x","aud":"c","exp":4102444800,"sub":"mallory","nonce":"not-yours"}"#
        let idToken = "eyJhbGciOiJub25lIn0." + Data(claims.utf8).base64EncodedString()
            .replacingOccurrences(of: "=", with: "").replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_") + ".c2ln"
        let server = try TestServer { request in
            if request.path == "/authorize" {
                let location = (request.queryValue("redirect_uri") ?? "") + "?code=abc&state=" + (request.queryValue("state") ?? "")
                return HTTPServerResponse(status: 302, headers: [("Location", location)], body: .bytes([]))
            }
            let reply = #"{"access_token":"injected-token","token_type":"Bearer","id_token":"\#(idToken)"}"#
            return HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(Array(reply.utf8)))
        }
        let browser = try FakeBrowser()
        let douctl = Douctl(environment: ["BROWSER": browser.command("follow")])
        #expect(try douctl.run("profile", "add", "o", "--api-base", server.baseURL, "--authorize-url", server.baseURL + "/authorize",
                               "--token-url", server.baseURL + "/token", "--client-id", "c", "--token-auth", "none", "--scopes", "openid").status == 0)
        let login = try douctl.run(["--profile", "o", "auth", "login", "--web", "--wait", "60"], timeout: 120)
        #expect(login.status == 4, "\(login)")
        #expect(login.errorLine.contains("nonce"), "\(login)")
        let authorize = try #require(server.received.first { $0.path == "/authorize" })
        #expect(authorize.queryValue("nonce")?.count ?? 0 >= 32)
        let stored = (try? String(contentsOfFile: douctl.configDirectory + "/credentials.json", encoding: .utf8)) ?? ""
        #expect(!stored.contains("injected-token"))
    }

    /// auth login --basic: user:password on stdin, stored 0600, sent as Basic to the
    /// profile's origin only, never in -v or --record; status names the user; logout forgets.
    @Test func basicCredentialsStayWithTheProfilesOrigin() throws {
        let expected = "Basic " + Data("ann:pa55-word".utf8).base64EncodedString()
        let server = try TestServer { request in
            let ok = request.header("Authorization") == expected
            return HTTPServerResponse(status: ok ? 200 : 401, headers: [("Content-Type", "application/json")],
                                      body: .bytes(Array((ok ? #"{"ok":true}"# : #"{"error":"who"}"#).utf8)))
        }
        let douctl = Douctl()
        #expect(try douctl.run("profile", "add", "b", "--api-base", server.baseURL).status == 0)
        let login = try douctl.run(["--profile", "b", "auth", "login", "--basic"], input: Array("ann:pa55-word\n".utf8))
        #expect(login.status == 0, "\(login)")
        var info = stat()
        #expect(stat(douctl.configDirectory + "/credentials.json", &info) == 0 && info.st_mode & 0o777 == 0o600)
        let status = try douctl.run("--profile", "b", "auth", "status", "--no-check")
        #expect(try status.json()["user_name"]?.stringValue == "ann")
        #expect(try status.json()["credential"]?.stringValue == "basic")

        let recordings = TemporaryDirectory.make(prefix: "douctl-basic-rec")
        let api = try douctl.run("--profile", "b", "api", "/things", "-v", "--record", recordings)
        #expect(api.status == 0, "\(api)")
        #expect(!api.stderr.contains("pa55-word") && !api.stderr.contains(Data("ann:pa55-word".utf8).base64EncodedString()), "\(api.stderr)")
        for file in try FileManager.default.contentsOfDirectory(atPath: recordings) {
            let text = try String(contentsOfFile: recordings + "/" + file, encoding: .utf8)
            #expect(!text.contains("pa55-word") && !text.contains(Data("ann:pa55-word".utf8).base64EncodedString()), "\(file)")
        }
        // Another origin (localhost is not 127.0.0.1) gets nothing.
        let elsewhere = try douctl.run("--profile", "b", "api", "http://localhost:\(server.port)/x")
        #expect(elsewhere.status == 4, "\(elsewhere)")
        #expect(server.received.last?.header("Authorization") == nil)

        #expect(try douctl.run("--profile", "b", "auth", "logout").status == 0)
        #expect(try douctl.run("--profile", "b", "auth", "status", "--no-check").status == 4)
        let text = (try? String(contentsOfFile: douctl.configDirectory + "/credentials.json", encoding: .utf8)) ?? ""
        #expect(!text.contains("ann"))
    }

    /// An API key in the header or query parameter the API chose (token_header,
    /// token_query), read with --with-token: never in -v or --record, never to another origin.
    @Test(arguments: [("--token-header", "X-API-Key"), ("--token-query", "key")])
    func anAPIKeyGoesWhereTheAPIWantsIt(option: String, name: String) throws {
        let key = "k3y-0123456789"
        let landing = try TestServer(json: #"{"landed":true}"#)
        let server = try TestServer { request in
            if request.path == "/hop" {
                return HTTPServerResponse(status: 302, headers: [("Location", landing.baseURL + "/landed?page=2")], body: .bytes([]))
            }
            let ok = request.header("X-API-Key") == key || request.queryValue("key") == key
            return HTTPServerResponse(status: ok ? 200 : 401, headers: [("Content-Type", "application/json")],
                                      body: .bytes(Array((ok ? #"{"ok":true}"# : #"{"error":"key"}"#).utf8)))
        }
        let douctl = Douctl()
        #expect(try douctl.run("profile", "add", "k", "--api-base", server.baseURL, option, name).status == 0)
        let login = try douctl.run(["--profile", "k", "auth", "login", "--with-token"], input: Array((key + "\n").utf8))
        #expect(login.status == 0, "\(login)")
        let recordings = TemporaryDirectory.make(prefix: "douctl-key-rec")
        let api = try douctl.run("--profile", "k", "api", "/v1/things", "-v", "--record", recordings)
        #expect(api.status == 0, "\(api)")
        #expect(server.received.last?.header("Authorization") == nil)
        #expect(!api.stderr.contains(key), "\(api.stderr)")
        for file in try FileManager.default.contentsOfDirectory(atPath: recordings) {
            #expect(!(try String(contentsOfFile: recordings + "/" + file, encoding: .utf8)).contains(key), "\(file)")
        }
        let elsewhere = try douctl.run("--profile", "k", "api", "http://localhost:\(server.port)/v1/things")
        #expect(elsewhere.status == 4, "\(elsewhere)")
        #expect(server.received.last?.header("X-API-Key") == nil && server.received.last?.queryValue("key") == nil)
        // A redirect to another origin does not carry the key along (header or query).
        let hop = try douctl.run("--profile", "k", "api", "/hop")
        #expect(hop.status == 0, "\(hop)")
        let landed = try #require(landing.received.last)
        #expect(landed.header("X-API-Key") == nil && landed.queryValue("key") == nil, "\(landed.target)")
    }

    /// --api-base elsewhere, or a URL outside the profile, with no login: no advice to log in
    /// to douban and no sentence naming douban's api_base; the profile whose credentials go
    /// there is named when there is one.
    @Test func adviceNamesTheProfileThatWouldSendCredentials() throws {
        let server = try TestServer(status: 401, json: #"{"error":"unauthorized"}"#)
        let douctl = Douctl()
        for arguments in [["api", "/private", "--api-base", server.baseURL], ["api", "http://localhost:\(server.port)/private"],
                          ["user", "me", "--api-base", server.baseURL]] {
            let result = try douctl.run(arguments)
            #expect(result.status == 4, "\(result)")
            #expect(!result.stderr.contains("--profile douban"), "\(arguments): \(result)")
            #expect(!result.stderr.contains("api.douban.com"), "\(arguments): \(result)")
        }
        #expect(try douctl.run("profile", "add", "mine", "--api-base", server.baseURL).status == 0)
        let named = try douctl.run("api", "/private", "--api-base", server.baseURL)
        #expect(named.errorLine.contains("--profile mine"), "\(named)")
    }
}

/// The Django OAuth Toolkit cases run in its suite, which is serialized: the provider and
/// its request log are shared.
extension OAuth2ProviderTests {
    /// profile add --issuer reads DOT's OpenID Connect discovery; the web login asks for
    /// openid with a nonce, checks the ID token and keeps its sub as the user.
    @Test func aProfileFromAnIssuerLogsInWithOpenIDConnect() throws {
        let provider = try DOTProvider.shared()
        let browser = try FakeBrowser()
        let douctl = Douctl(environment: ["BROWSER": browser.command("follow")])
        let issuer = provider.base + "/o"
        let add = try douctl.run(["profile", "add", "oidc", "--issuer", issuer, "--client-id", "doto",
                                  "--redirect-uri", "http://127.0.0.1/callback/doto", "--scopes", "openid,read"])
        #expect(add.status == 0, "\(add)")
        let profile = try add.json()
        #expect(profile["issuer"]?.stringValue == issuer)
        #expect(profile["authorize_url"]?.stringValue == issuer + "/authorize/")
        #expect(profile["token_url"]?.stringValue == issuer + "/token/")
        #expect(profile["user_url"]?.stringValue == issuer + "/userinfo/")
        #expect(profile["api_base"]?.stringValue == provider.base)
        #expect(provider.requests.contains("GET /o/.well-known/openid-configuration 200"), "\(provider.log)")

        let before = provider.requests.count
        let login = try douctl.run(["--profile", "oidc", "auth", "login", "--web", "--wait", "120"], timeout: 180)
        #expect(login.status == 0, "\(login)\n\(provider.log)")
        #expect(try login.json()["user_id"]?.stringValue == "1", "the ID token's sub (and userinfo's)")
        // The provider is shared with other suites' logins (some by other clients, running
        // meanwhile): douctl's authorization request is among those since this login began.
        let authorizations = provider.requests.dropFirst(before).filter { $0.hasPrefix("GET /o/authorize/") && $0.contains("client_id=doto") }
        #expect(authorizations.contains { $0.contains("nonce=") && $0.contains("scope=openid%20read") }, "\(authorizations)")
        let stored = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: douctl.configDirectory + "/credentials.json"))))
        #expect(stored["profiles"]?["oidc"]?["sub"]?.stringValue == "1")
    }

    /// auth login --client-credentials (RFC 6749 §4.4) with DOT's confidential client: no
    /// refresh token; once expired, a new token is fetched under the credentials lock, so six
    /// jobs finding it expired at once send one token request between them.
    @Test func aClientCredentialsLoginIsFetchedAgainByOneOfSixRacingJobs() throws {
        let provider = try DOTProvider.shared()
        let douctl = Douctl(environment: ["DOUCTL_CLIENT_SECRET": "dotcc-secret"])
        let add = try douctl.run(["profile", "add", "cc", "--api-base", provider.base, "--token-url", provider.base + "/o/token/",
                                  "--client-id", "dotcc", "--token-auth", "basic", "--scopes", "read"])
        #expect(add.status == 0, "\(add)")
        let login = try douctl.run(["--profile", "cc", "auth", "login", "--client-credentials"], timeout: 120)
        #expect(login.status == 0, "\(login)\n\(provider.log)")
        #expect(login.stderr.contains("client credentials"), "\(login)")
        let api = try douctl.run(["--profile", "cc", "api", "/api/client"], timeout: 120)
        #expect(api.status == 0, "\(api)")
        #expect(try api.json()["client_id"]?.stringValue == "dotcc")
        let status = try douctl.run(["--profile", "cc", "auth", "status", "--no-check"])
        #expect(try status.json()["credential"]?.stringValue == "client credentials", "\(status)")

        // Expired, as far as douctl knows: six jobs at once fetch one new token between them.
        let path = douctl.configDirectory + "/credentials.json"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let expired = text.replacingOccurrences(of: #""expires_at"\s*:\s*"[^"]*""#, with: #""expires_at":"2001-01-01T00:00:00Z""#, options: .regularExpression)
        try #require(expired != text)
        try expired.write(toFile: path, atomically: true, encoding: .utf8)
        try #require(chmod(path, 0o600) == 0)
        let tokenRequests = { provider.requests.filter { $0.hasPrefix("POST /o/token/") }.count }
        let sentBefore = tokenRequests()
        let results = try RunningDouctl.racingOnTheCredentialsLock(douctl, ["--profile", "cc", "api", "/api/client"])
        #expect(results.allSatisfy { $0.status == 0 }, "\(results.filter { $0.status != 0 })\n\(provider.log)")
        #expect(tokenRequests() - sentBefore == 1, "one new token fetched: \(provider.log)")
        let after = try String(contentsOfFile: path, encoding: .utf8)
        #expect(!after.contains("2001-01-01"))
        #expect(!after.contains("refresh_token"))
    }

}
