import DouctlJSON
import DouctlSandbox
import Foundation
import Testing
import DouctlTestSupport

/// `douctl auth`: every login flow against the sandbox, the token store, refresh, and secrecy.
@Suite("douctl auth")
struct AuthTests {
    // MARK: browser + loopback listener

    @Test func webLoginThroughTheLoopbackListener() throws {
        let browser = try FakeBrowser()
        let fixture = try SandboxFixture(environment: ["BROWSER": browser.command("follow")])
        let result = try fixture.douctl.run("auth", "login", "--web", "-v")
        #expect(result.status == 0, "\(result)")
        let identity = try result.json()
        #expect(identity["profile"]?.stringValue == "sandbox")
        #expect(identity["user_id"]?.stringValue == "1000001")
        #expect(identity["user_name"]?.stringValue == "ahbei")
        #expect(result.stderr.contains("Logged in to sandbox as ahbei (1000001)."))

        let authorize = try #require(fixture.sandbox.requests.first { $0.path == "/service/auth2/auth" })
        func query(_ name: String) -> String? { authorize.query.first { $0.name == name }?.value }
        #expect(query("response_type") == "code")
        #expect(query("code_challenge_method") == "S256")
        #expect((query("code_challenge")?.count ?? 0) == 43)
        #expect((query("state")?.count ?? 0) >= 32)
        let redirect = try #require(query("redirect_uri"))
        #expect(redirect.hasPrefix("http://127.0.0.1:") && redirect.hasSuffix("/callback/sandbox"))
        let exchange = try #require(fixture.sandbox.requests.first { $0.path == "/service/auth2/token" })
        func form(_ name: String) -> String? { exchange.form.first { $0.name == name }?.value }
        #expect(form("grant_type") == "authorization_code")
        #expect(form("redirect_uri") == redirect)
        #expect((form("code_verifier")?.count ?? 0) >= 43)
        #expect(exchange.status == 200)

        // The listener was bound to 127.0.0.1 only, the browser got the page, and the
        // browser's argv carried no secret.
        let record = browser.waitForRecord(containing: "done")
        #expect(record.contains("listen=0100007F:"))
        #expect(record.contains("followed=200 True"))
        // Secrets never reach -v output.
        let stored = fixture.credentials
        let token = try #require(try JSONParser.parse(stored)["profiles"]?["sandbox"]?["access_token"]?.stringValue)
        let refresh = try #require(try JSONParser.parse(stored)["profiles"]?["sandbox"]?["refresh_token"]?.stringValue)
        for secret in [token, refresh, "sandbox-secret", form("code") ?? "-", form("code_verifier") ?? "-"] {
            #expect(!result.stderr.contains(secret), "stderr leaks \(secret)")
            #expect(!record.contains(secret))
        }
        #expect(result.stderr.contains("> POST /service/auth2/token HTTP/1.1"))
        // The listener is gone once douctl has finished.
        let port = try #require(URLComponents(string: redirect)?.port)
        #expect(!canConnect(port: UInt16(port)))
    }

    @Test func webLoginIgnoresACallbackWithTheWrongState() throws {
        let browser = try FakeBrowser()
        let fixture = try SandboxFixture(environment: ["BROWSER": browser.command("forge")])
        let result = try fixture.douctl.run("auth", "login", "--web")
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.contains("Ignored a callback whose state does not match this login"))
        #expect(browser.waitForRecord(containing: "done").contains("forged=400"))
        #expect(fixture.credentials.contains("access_token"))
    }

    @Test func webLoginDeniedExitsFour() throws {
        let browser = try FakeBrowser()
        let fixture = try SandboxFixture(environment: ["BROWSER": browser.command("deny")])
        let result = try fixture.douctl.run("auth", "login", "--web")
        #expect(result.status == 4, "\(result)")
        #expect(result.errorLine.hasSuffix("douctl: the login was refused in the browser (access_denied)"))
        #expect(!fixture.credentials.contains("access_token"))
    }

    @Test func webLoginTimesOut() throws {
        let browser = try FakeBrowser()
        let fixture = try SandboxFixture(environment: ["BROWSER": browser.command("none")])
        let result = try fixture.douctl.run("auth", "login", "--web", "--wait", "1")
        #expect(result.status == 4, "\(result)")
        #expect(result.errorLine.hasSuffix("douctl: gave up after 1s waiting for the browser (auth login --wait sets how long)"))
    }

    @Test func noBrowserOnlyPrintsTheURL() throws {
        let fixture = try SandboxFixture(environment: ["BROWSER": "/bin/false"])
        let running = try RunningDouctl(fixture.douctl, ["auth", "login", "--web", "--no-browser", "--timeout", "20"])
        let text = try running.waitForStderr { $0.contains("Waiting for the browser") }
        let url = try #require(text.split(separator: "\n").first { $0.hasPrefix("  http") }).trimmingCharacters(in: .whitespaces)
        // The "user" opens the printed URL themselves.
        _ = try curl(["-s", "-L", "-o", "/dev/null", url])
        let result = running.finish()
        #expect(result.status == 0, "\(result)")
    }

    // MARK: device flow

    @Test func deviceLoginHonoursSlowDown() throws {
        let fixture = try SandboxFixture { configuration in
            configuration.faults = try! SandboxFault.parseList("slow-down:1")
            configuration.deviceInterval = 1
        }
        let started = Date()
        let result = try fixture.douctl.run("auth", "login", "--device", "--no-browser")
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.contains("and enter the code: "))
        let polls = fixture.sandbox.requests.filter { $0.path == "/service/auth2/token" }
        #expect(polls.count == 2)
        #expect(polls.first?.form.first { $0.name == "grant_type" }?.value == "urn:ietf:params:oauth:grant-type:device_code")
        #expect(elapsed >= 6, "a slow_down must add 5 s to the 1 s interval")
    }

    @Test func deviceLoginDenied() throws {
        let fixture = try SandboxFixture { $0.approval = .manual }
        let running = try RunningDouctl(fixture.douctl, ["auth", "login", "--device", "--no-browser"])
        let text = try running.waitForStderr { $0.contains("enter the code: ") && $0.contains("\n(or open") }
        let code = try #require(text.components(separatedBy: "enter the code: ").last?.prefix(9))
        #expect(fixture.sandbox.denyDevice(userCode: String(code)))
        let result = running.finish()
        #expect(result.status == 4, "\(result)")
        #expect(result.errorLine.hasSuffix("douctl: the login was denied"))
    }

    @Test func deviceCodeExpires() throws {
        let fixture = try SandboxFixture { configuration in
            configuration.approval = .manual
            configuration.deviceCodeLifetime = 2
        }
        let result = try fixture.douctl.run("auth", "login", "--device", "--no-browser")
        #expect(result.status == 4, "\(result)")
        #expect(result.errorLine.hasSuffix("douctl: the device code expired before it was approved; run douctl auth login again"))
    }

    @Test func deviceIsChosenWhenNoBrowserCanOpen() throws {
        let fixture = try SandboxFixture()
        let result = try fixture.douctl.run("auth", "login") // no BROWSER, no DISPLAY
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.contains("and enter the code: "))
    }

    // MARK: paste

    @Test func pasteFlowReadsTheRedirectedURL() throws {
        let fixture = try SandboxFixture()
        try fixture.douctl.run("config", "set", "redirect_uri", "https://example.com/back")
        // A browser can open here and the redirect is not loopback: the automatic choice is paste.
        let running = try RunningDouctl(fixture.douctl, ["auth", "login"], environment: ["BROWSER": "/bin/true"])
        let text = try running.waitForStderr { $0.contains("paste the address") }
        let url = try #require(text.split(separator: "\n").first { $0.hasPrefix("  http") }).trimmingCharacters(in: .whitespaces)
        let location = try curl(["-s", "-o", "/dev/null", "-w", "%{redirect_url}", url])
        #expect(location.hasPrefix("https://example.com/back?code="))
        running.send(location + "\n")
        let result = running.finish()
        #expect(result.status == 0, "\(result)")
        #expect(try result.json()["user_name"]?.stringValue == "ahbei")
        let exchange = try #require(fixture.sandbox.requests.first { $0.path == "/service/auth2/token" })
        #expect(exchange.form.first { $0.name == "redirect_uri" }?.value == "https://example.com/back")
    }

    @Test func pasteFlowRejectsAnotherLoginsState() throws {
        let fixture = try SandboxFixture()
        try fixture.douctl.run("config", "set", "redirect_uri", "https://example.com/back")
        let result = try fixture.douctl.run(["auth", "login", "--paste"], input: Array("https://example.com/back?code=abc&state=someone-else\n".utf8))
        #expect(result.status == 4)
        #expect(result.errorLine.hasSuffix("belongs to another login attempt (its state does not match); run douctl auth login again"))
    }

    // MARK: token from stdin, status, token, refresh, logout

    @Test func withTokenReadsStdinAndChecksIt() throws {
        let fixture = try SandboxFixture()
        let issued = fixture.sandbox.issueToken(user: "linglu")
        let result = try fixture.douctl.run(["auth", "login", "--with-token"], input: Array((issued.accessToken + "\n").utf8))
        #expect(result.status == 0, "\(result)")
        #expect(try result.json()["user_name"]?.stringValue == "linglu")
        let bad = try fixture.douctl.run(["auth", "login", "--with-token", "--profile", "sandbox"], input: Array("0123456789abcdef0123456789abcdef\n".utf8))
        #expect(bad.status == 4)
        #expect(!bad.stderr.contains("0123456789abcdef0123456789abcdef"))
        // The earlier login is untouched by the refused one.
        #expect(fixture.credentials.contains(issued.accessToken))
    }

    @Test func loginRefusedWhileDOUCTLTokenIsSet() throws {
        let fixture = try SandboxFixture()
        let result = try fixture.douctl.run(["auth", "login"], environment: ["DOUCTL_TOKEN": "x"])
        #expect(result.status == 2)
        #expect(result.errorLine == "douctl: DOUCTL_TOKEN is set, so douctl would ignore a stored login; unset it first")
    }

    @Test func statusTokenRefreshLogout() throws {
        let fixture = try SandboxFixture()
        #expect(try fixture.douctl.run("auth", "status").status == 4)
        let tokens = try fixture.login()

        let status = try fixture.douctl.run("auth", "status")
        #expect(status.status == 0)
        let json = try status.json()
        #expect(json["logged_in"]?.boolValue == true)
        #expect(json["token"]?.stringValue == String(tokens.access.prefix(4)) + "********")
        #expect(json["credentials_path"]?.stringValue == fixture.douctl.configDirectory + "/credentials.json")
        #expect(!status.stdoutText.contains(tokens.access))
        #expect(try fixture.douctl.run("auth", "status", "--show-token").json()["token"]?.stringValue == tokens.access)
        #expect(try fixture.douctl.run("auth", "token").stdoutText == tokens.access + "\n")

        // A live Douban token: refresh answers 124 and douctl keeps it.
        #expect(try fixture.douctl.run("auth", "refresh").status == 0)
        #expect(fixture.credentials.contains(tokens.access))
        // An expired one is replaced, and the refresh token rotates.
        fixture.sandbox.expireAccessTokens()
        #expect(try fixture.douctl.run("auth", "refresh").status == 0)
        #expect(!fixture.credentials.contains(tokens.access))
        #expect(!fixture.credentials.contains(tokens.refresh))

        let fresh = try fixture.douctl.run("auth", "token").stdoutText.trimmingCharacters(in: .newlines)
        let logout = try fixture.douctl.run("auth", "logout")
        #expect(logout.status == 0, "\(logout)")
        #expect(fixture.sandbox.requests.contains { $0.path == "/service/auth2/revoke" })
        #expect(!fixture.credentials.contains(fresh))
        #expect(try fixture.douctl.run("auth", "status").status == 4)
        // Revoked on the server too.
        let revoked = try fixture.douctl.run(["user", "me"], environment: ["DOUCTL_TOKEN": fresh])
        #expect(revoked.status == 4)
        #expect(!revoked.stderr.contains(fresh), "the token must be scrubbed from Douban's error text")
    }

    // MARK: refresh and replay

    @Test func refreshesTransparentlyAfterA106AndReplays() throws {
        let fixture = try SandboxFixture()
        let before = try fixture.login()
        fixture.sandbox.expireAccessTokens()
        let result = try fixture.douctl.run("user", "me")
        #expect(result.status == 0, "\(result)")
        #expect(try result.json()["uid"]?.stringValue == "ahbei")
        let trail = fixture.sandbox.requests.map { "\($0.method) \($0.path) \($0.status)" }
        #expect(trail == ["GET /v2/user/~me 400", "POST /service/auth2/token 200", "GET /v2/user/~me 200"])
        #expect(!fixture.credentials.contains(before.access))
    }

    @Test func refreshesBeforeTheCallWhenPastExpiry() throws {
        let fixture = try SandboxFixture()
        try fixture.login(expiresAt: "2001-01-01T00:00:00Z")
        fixture.sandbox.expireAccessTokens()
        let result = try fixture.douctl.run("user", "me")
        #expect(result.status == 0, "\(result)")
        #expect(fixture.sandbox.requests.map { "\($0.method) \($0.path) \($0.status)" } == ["POST /service/auth2/token 200", "GET /v2/user/~me 200"])
    }

    @Test func stillLiveTokenPastLocalExpiryIsKept() throws {
        let fixture = try SandboxFixture()
        let tokens = try fixture.login(expiresAt: "2001-01-01T00:00:00Z")
        let result = try fixture.douctl.run("user", "me")
        #expect(result.status == 0, "\(result)")
        let refresh = try #require(fixture.sandbox.requests.first { $0.path == "/service/auth2/token" })
        #expect(refresh.status == 400) // 124 access_token_has_not_expired
        #expect(fixture.credentials.contains(tokens.access))
    }

    @Test func failedRefreshSaysToLogIn() throws {
        let fixture = try SandboxFixture()
        let tokens = fixture.sandbox.issueToken()
        try Credentials.write(["sandbox": tokens.accessToken], in: fixture.douctl.configDirectory, refreshTokens: ["sandbox": "0000000000000000000000000000dead"])
        fixture.sandbox.expireAccessTokens()
        let result = try fixture.douctl.run("user", "me")
        #expect(result.status == 4, "\(result)")
        #expect(result.errorLine.hasSuffix("run: douctl auth login --profile sandbox"))
        #expect(result.errorLine.contains("invalid_refresh_token"))
    }

    @Test func anUploadIsReplayedAfterARefresh() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        fixture.sandbox.expireAccessTokens()
        let picture = try TemporaryDirectory.file(named: "pic.png", bytes: PNGFixture.bytes)
        let result = try fixture.douctl.run("shuo", "post", "重放", "--image", picture)
        #expect(result.status == 0, "\(result)")
        let posts = fixture.sandbox.requests.filter { $0.path == "/shuo/v2/statuses/" }
        #expect(posts.map(\.status) == [400, 200])
        #expect(posts.map { $0.parts.first { $0.name == "image" }?.bytes } == [PNGFixture.bytes, PNGFixture.bytes])
        #expect(posts.map { $0.parts.first { $0.name == "text" }?.bytes } == [Array("重放".utf8), Array("重放".utf8)])
    }

    // MARK: the token store under pressure

    @Test func twentyProcessesRefreshExactlyOnce() throws {
        let fixture = try SandboxFixture()
        try fixture.login(expiresAt: "2001-01-01T00:00:00Z")
        fixture.sandbox.expireAccessTokens()
        let results = LockedResults()
        DispatchQueue.concurrentPerform(iterations: 20) { _ in
            results.append(try? fixture.douctl.run("user", "me"))
        }
        #expect(results.all.count == 20)
        #expect(results.all.allSatisfy { $0?.status == 0 }, "\(results.all.compactMap { $0 }.filter { $0.status != 0 })")
        let refreshes = fixture.sandbox.requests.filter { request in
            request.path == "/service/auth2/token" && request.form.contains { $0.name == "grant_type" && $0.value == "refresh_token" }
        }
        #expect(refreshes.count == 1)
        let stored = try JSONParser.parse(fixture.credentials)
        let latest = try #require(stored["profiles"]?["sandbox"]?["access_token"]?.stringValue)
        #expect(fixture.sandbox.requests.filter { $0.path == "/v2/user/~me" }.allSatisfy {
            $0.headers.first { $0.name.lowercased() == "authorization" }?.value == "Bearer \(latest)"
        })
    }

    @Test func killedBetweenTempWriteAndRenameLeavesTheFileIntact() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        let before = fixture.credentials
        let issued = fixture.sandbox.issueToken(user: "linglu")
        let running = try RunningDouctl(fixture.douctl, ["auth", "login", "--with-token"], environment: ["DOUCTL_TEST_HOLD_BEFORE_RENAME": "20"])
        running.send(issued.accessToken + "\n")
        let directory = fixture.douctl.configDirectory
        let deadline = Date().addingTimeInterval(15)
        var temporary: [String] = []
        while temporary.isEmpty && Date() < deadline {
            temporary = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix(".credentials.json.tmp-") }
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(!temporary.isEmpty, "the writer never reached its temp file")
        running.kill(SIGKILL)
        _ = running.finish()
        #expect(fixture.credentials == before)
        #expect((try? JSONParser.parse(fixture.credentials)) != nil)
        #expect(try fixture.douctl.run("user", "me").status == 0)
    }

    @Test func filesAndDirectoryArePrivate() throws {
        let fixture = try SandboxFixture()
        let issued = fixture.sandbox.issueToken()
        try FileManager.default.removeItem(atPath: fixture.douctl.configDirectory + "/config.json")
        try FileManager.default.removeItem(atPath: fixture.douctl.configDirectory)
        try SandboxProfiles.write(base: fixture.sandbox.baseURL, in: fixture.douctl.configDirectory)
        chmod(fixture.douctl.configDirectory, 0o755)
        #expect(try fixture.douctl.run(["auth", "login", "--with-token"], input: Array(issued.accessToken.utf8)).status == 0)
        let attributes = { (path: String) in (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue }
        #expect(attributes(fixture.douctl.configDirectory) == 0o700)
        #expect(attributes(fixture.douctl.configDirectory + "/credentials.json") == 0o600)
    }
}

final class LockedResults: @unchecked Sendable {
    private let lock = NSLock()
    private var results: [Douctl.Result?] = []
    func append(_ result: Douctl.Result?) {
        lock.lock()
        results.append(result)
        lock.unlock()
    }
    var all: [Douctl.Result?] {
        lock.lock()
        defer { lock.unlock() }
        return results
    }
}

/// Runs /usr/bin/curl and returns its stdout.
@discardableResult
func curl(_ arguments: [String]) throws -> String {
    let curl = try Tools.require("curl")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: curl)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.runAlone()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}

/// True when something accepts connections on 127.0.0.1:port.
func canConnect(port: UInt16) -> Bool {
    guard let fd = try? LoopbackSocket.connect(port: port, receiveTimeout: 1) else { return false }
    close(fd)
    return true
}

/// A tiny valid PNG.
enum PNGFixture {
    static let bytes: [UInt8] = [
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
        0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
        0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0xF8, 0xCF, 0xC0, 0xF0,
        0x1F, 0x00, 0x05, 0x00, 0x01, 0xFF, 0x89, 0x99, 0x3D, 0x1D, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
        0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
    ]
}
