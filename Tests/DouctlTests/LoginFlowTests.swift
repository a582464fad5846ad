import DouctlJSON
import DouctlSandbox
import DouctlServer
import DouctlTestSupport
import Foundation
import Testing

/// `auth login` and `auth refresh` when the server is dead, hostile or picky: the built
/// binary against the sandbox or a listener written for the test.
@Suite("douctl auth login: failures and races")
struct LoginFlowTests {
    /// A profile `p` whose OAuth endpoints are on `base`.
    static func deviceProfile(_ douctl: Douctl, base: String) throws {
        try douctl.run("profile", "add", "p", "--api-base", base, "--token-url", base + "/token",
                       "--device-authorization-url", base + "/device", "--client-id", "x")
    }

    static func json(_ status: Int, _ text: String) -> HTTPServerResponse {
        .bytes(status, Array(text.utf8), contentType: "application/json")
    }

    // MARK: device flow against a dead or hostile server

    @Test func aDeadDeviceEndpointFailsAtOnceWithTheNetworkError() throws {
        let douctl = Douctl()
        try Self.deviceProfile(douctl, base: "http://127.0.0.1:\(unusedPort())")
        let result = try douctl.run(["auth", "login", "--device", "--no-browser", "--profile", "p"], timeout: 120)
        #expect(result.status == 7, "\(result)")
        #expect(result.errorLine.contains("cannot connect"), "\(result)")
        // Before: five tries backing off 1, 2, 4, 8 s (21 s in all), each announced. Now only
        // the HTTP client's own --retry (2 retries of a connection that never opened), each said.
        let retries = result.stderr.split(separator: "\n").filter { $0.contains("trying again") }
        #expect(retries.count == 2 && retries.allSatisfy { $0.contains("of 3)") }, "\(result)")
    }

    /// A device endpoint that grants a code with these timings and a token endpoint that
    /// answers "authorization_pending" for ever.
    static func pendingDeviceServer(expiresIn: String, interval: String) throws -> TestServer {
        try TestServer { received in
            received.path == "/device"
                ? Self.json(200, #"{"device_code":"d","user_code":"ABCD-EFGH","verification_uri":"http://x/v","expires_in":\#(expiresIn),"interval":\#(interval)}"#)
                : Self.json(400, #"{"error":"authorization_pending"}"#)
        }
    }

    @Test func aHugeIntervalDoesNotOutlastTheWait() throws {
        let server = try Self.pendingDeviceServer(expiresIn: "1e308", interval: "1e308")
        let douctl = Douctl()
        try Self.deviceProfile(douctl, base: server.baseURL)
        // Before: the 1e308 s interval was cut to a 300 s sleep, and --wait was checked only after it.
        let result = try douctl.run(["auth", "login", "--device", "--no-browser", "--profile", "p", "--wait", "3"], timeout: 120)
        #expect(result.status == 4, "\(result)")
        #expect(result.errorLine == "douctl: gave up after 3s waiting for approval (auth login --wait sets how long)")
        #expect(server.received.filter { $0.path == "/token" }.isEmpty, "the first poll would have come after --wait")
    }

    @Test func aServerThatDiesMidWaitEndsWithTheNetworkError() throws {
        let server = try Self.pendingDeviceServer(expiresIn: "600", interval: "1")
        let douctl = Douctl()
        try Self.deviceProfile(douctl, base: server.baseURL)
        let running = try RunningDouctl(douctl, ["auth", "login", "--device", "--no-browser", "--profile", "p", "--wait", "60"])
        let deadline = Date().addingTimeInterval(60)
        while !server.received.contains(where: { $0.path == "/token" }) && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        server.stop() // the server dies after the first poll
        // Before: it polled on until --wait ran out (72 s) and said "gave up waiting", exit 4.
        let result = running.finish(timeout: 150)
        #expect(result.status == 7, "\(result)")
        #expect(result.errorLine.contains("cannot connect"), "\(result)")
        #expect(!result.stderr.contains("gave up"), "\(result)")
        #expect(result.stderr.components(separatedBy: "The token endpoint did not answer").count - 1 == 2,
                "two backed-off polls, then the third failure ends it: \(result)")
    }

    // MARK: Coding's two-factor code

    @Test func aWrongTwoFactorCodeIsAskedForAgain() throws {
        let fixture = try SandboxFixture { $0.codingCaptchaRequired = false }
        let running = try RunningDouctl(fixture.douctl, ["--profile", "coding-sandbox", "auth", "login", "--password"])
        running.send("twofa\n\(Sandbox.codingPassword)\n")
        try running.waitForStderr { $0.contains("Two-factor code:") }
        running.send("000000\n") // wrong on purpose
        // Before: "douctl: the two-factor code was refused (验证码错误)", exit 4.
        try running.waitForStderr { $0.contains("The two-factor code was wrong; try again (2 more).") && $0.components(separatedBy: "Two-factor code:").count == 3 }
        running.send((fixture.sandbox.lastCodingTwoFactorCode ?? "") + "\n")
        let result = running.finish()
        #expect(result.status == 0, "\(result)")
        #expect(try result.json()["user_name"]?.stringValue == "twofa")
        #expect(fixture.sandbox.requests.filter { $0.path == "/api/check_two_factor_auth_code" }.count == 2)
    }

    @Test func threeWrongTwoFactorCodesEndTheLogin() throws {
        let fixture = try SandboxFixture { $0.codingCaptchaRequired = false }
        let result = try fixture.douctl.run(["--profile", "coding-sandbox", "auth", "login", "--password"],
                                            input: Array("twofa\n\(Sandbox.codingPassword)\n000000\n000001\n000002\n000003\n".utf8))
        #expect(result.status == 4, "\(result)")
        #expect(result.errorLine.hasPrefix("douctl: the two-factor code was refused"), "\(result)")
        #expect(fixture.sandbox.requests.filter { $0.path == "/api/check_two_factor_auth_code" }.count == 3)
    }

    // MARK: expiry and refresh

    @Test func aPastedTokensExpiryIsUnknownNotNever() throws {
        let fixture = try SandboxFixture { $0.tokenTTL = 600 }
        let issued = fixture.sandbox.issueToken(user: "linglu")
        let login = try fixture.douctl.run(["auth", "login", "--with-token"], input: Array((issued.accessToken + "\n").utf8))
        #expect(login.status == 0, "\(login)")
        let status = try fixture.douctl.run("auth", "status", "--no-check")
        #expect(status.status == 0, "\(status)")
        // Before: "never", for a token the sandbox expires in 10 minutes.
        #expect(try status.json()["expires"]?.stringValue == "unknown")
        #expect(try status.json()["expires_at"]?.isNull == true)
    }

    @Test func refreshHelpSaysWhatDoubansRefusalMeans() throws {
        let result = try Douctl().run("auth", "refresh", "--help")
        #expect(result.status == 0, "\(result)")
        let text = result.stdoutText.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(text.contains("code 124"), "\(result)")
        #expect(text.contains("\"keep using the current one\""), "\(result)")
        #expect(text.contains("keeps the stored token"), "\(result)")
    }

    /// Processes that all found the token expired wait for the credentials lock (held here
    /// until all of them are queued on it); the first refreshes, the others must take its
    /// tokens. The sandbox's tokens live 25 s, less than douctl's 30 s safety margin, so the
    /// winner's new token looks due too: before, each loser sent a refresh anyway (and
    /// Douban's answer was 124, "keep using the current one").
    @Test func racingProcessesSendOneRefresh() throws {
        let fixture = try SandboxFixture { $0.tokenTTL = 25 }
        try fixture.login(expiresAt: "2001-01-01T00:00:00Z")
        fixture.sandbox.expireAccessTokens()
        let results = try RunningDouctl.racingOnTheCredentialsLock(fixture.douctl, ["user", "me"])

        #expect(results.allSatisfy { $0.status == 0 }, "\(results.filter { $0.status != 0 })")
        let refreshes = fixture.sandbox.requests.filter { request in
            request.path == "/service/auth2/token" && request.form.contains { $0.name == "grant_type" && $0.value == "refresh_token" }
        }
        #expect(refreshes.count == 1, "\(refreshes.map(\.status))")
        let stored = try JSONParser.parse(fixture.credentials)
        let latest = try #require(stored["profiles"]?["sandbox"]?["access_token"]?.stringValue)
        #expect(fixture.sandbox.requests.filter { $0.path == "/v2/user/~me" }.allSatisfy {
            $0.headers.first { $0.name.lowercased() == "authorization" }?.value == "Bearer \(latest)"
        })
    }
}
