import DouctlJSON
import DouctlSandbox
import DouctlServer
import DouctlTestSupport
import Foundation
import Testing

/// One decision of the credential in force (DOUCTL_TOKEN, a stored token, a cookie
/// session, none), and one place API clients are built, end to end against real servers.
@Suite("Credential in force")
struct CredentialInForceTests {
    /// A Coding password login (no captcha), with common_params {"x": "$VAR"} on the profile.
    func codingSessionFixture() throws -> SandboxFixture {
        let fixture = try SandboxFixture({ $0.codingCaptchaRequired = false }, environment: ["VAR": "bar"])
        #expect(try fixture.douctl.run("profile", "use", "coding-sandbox").status == 0)
        #expect(try fixture.douctl.run("config", "set", "common_params", #"{"x":"$VAR"}"#, "--profile", "coding-sandbox").status == 0)
        let login = try fixture.douctl.run(["auth", "login", "--password"], input: Array("coder\n\(Sandbox.codingPassword)\n".utf8))
        #expect(login.status == 0, "\(login)")
        return fixture
    }

    @Test func aCookieSessionIsTheCredentialForStatusTokenAndProfileList() throws {
        let fixture = try codingSessionFixture()
        defer { fixture.stop() }
        let status = try fixture.douctl.run("auth", "status", "--no-check")
        #expect(status.status == 0, "\(status)")
        #expect(try status.json()["credential"]?.stringValue == "cookie session")

        // Before: "douctl: not logged in to coding-sandbox; run: …", as if there were no login.
        let token = try fixture.douctl.run("auth", "token")
        #expect(token.status == 4, "\(token)")
        #expect(token.stdoutText.isEmpty)
        #expect(token.errorLine == "douctl: coding-sandbox is logged in with a cookie session (auth login --password), which has no access token to print; for a token, run: douctl auth login --web --profile coding-sandbox")
        let refresh = try fixture.douctl.run("auth", "refresh")
        #expect(refresh.status == 4, "\(refresh)")
        #expect(refresh.errorLine == "douctl: coding-sandbox is logged in with a cookie session (auth login --password), which has no token to refresh")

        // Before: "logged_in": false.
        let list = try fixture.douctl.run("profile", "list")
        #expect(list.status == 0, "\(list)")
        let lines = try list.stdoutText.split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)) }
        let coding = try #require(lines.first { $0["name"]?.stringValue == "coding-sandbox" })
        #expect(coding["logged_in"]?.boolValue == true, "\(list.stdoutText)")
        #expect(lines.first { $0["name"]?.stringValue == "sandbox" }?["logged_in"]?.boolValue == false)
    }

    @Test func douctlTokenWinsOverACookieJar() throws {
        let fixture = try codingSessionFixture()
        defer { fixture.stop() }
        let token = fixture.sandbox.issueCodingToken(user: "coder").accessToken
        // Before: the request carried the token and the session's Cookie header both.
        let me = try fixture.douctl.run(["user", "me"], environment: ["DOUCTL_TOKEN": token])
        #expect(me.status == 0, "\(me)")
        let sent = try #require(fixture.sandbox.requests.last)
        #expect(sent.queryValue("access_token") == token)
        #expect(sent.header("Cookie") == nil, "the environment's token is the one credential sent")
        #expect(sent.header("X-XSRF-TOKEN") == nil)
        let status = try fixture.douctl.run(["auth", "status", "--no-check"], environment: ["DOUCTL_TOKEN": token])
        #expect(try status.json()["credential"]?.stringValue == "DOUCTL_TOKEN")
        let list = try fixture.douctl.run(["profile", "list"], environment: ["DOUCTL_TOKEN": token])
        let lines = try list.stdoutText.split(separator: "\n").map { try JSONParser.parse(Array($0.utf8)) }
        #expect(lines.first { $0["name"]?.stringValue == "coding-sandbox" }?["logged_in"]?.boolValue == true)
    }

    /// "$VAR" values in common_params reach the password login's requests (query or form)
    /// and the logout's end-of-session request, as they reach `user me`'s.
    @Test func passwordLoginAndLogoutCarryTheEnvironmentsValues() throws {
        let fixture = try codingSessionFixture()
        defer { fixture.stop() }
        let login = fixture.sandbox.requests.filter { $0.path.hasPrefix("/api/") }
        #expect(!login.isEmpty)
        for request in login {
            // Before: "x=" (the login's clients had no environment).
            #expect((request.queryValue("x") ?? request.formValue("x")) == "bar", "\(request.method) \(request.path)")
        }
        #expect(try fixture.douctl.run("user", "me").status == 0)
        #expect(fixture.sandbox.requests.last?.queryValue("x") == "bar")
        #expect(try fixture.douctl.run("auth", "logout").status == 0)
        let logout = try #require(fixture.sandbox.requests.last)
        #expect(logout.path == "/api/account/logout")
        #expect((logout.queryValue("x") ?? logout.formValue("x")) == "bar")
    }

    /// `auth login --with-token` asks the API who the token belongs to: that request carries
    /// the profile's "$VAR" common params as `user me` does.
    @Test func loginIdentityRequestCarriesTheEnvironmentsValues() throws {
        let server = try TestServer(json: #"{"id":"1000001","uid":"ahbei","name":"阿北"}"#)
        let douctl = Douctl(environment: ["VAR": "bar"])
        #expect(try douctl.run("profile", "add", "shaped", "--preset", "douban", "--api-base", server.baseURL,
                               "--common-params", #"{"x":"$VAR"}"#).status == 0)
        let login = try douctl.run(["--profile", "shaped", "auth", "login", "--with-token"], input: Array("tok-1\n".utf8))
        #expect(login.status == 0, "\(login)")
        let identity = try #require(server.received.last)
        #expect(identity.path == "/v2/user/~me")
        // Before: "x=" here, while user me sent "x=bar".
        #expect(identity.queryValue("x") == "bar")
        #expect(try douctl.run("--profile", "shaped", "user", "me").status == 0)
        #expect(server.received.last?.queryValue("x") == "bar")
    }
}
