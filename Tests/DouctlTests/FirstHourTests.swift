import DouctlJSON
import DouctlSandbox
import DouctlTestSupport
import Foundation
import Testing

/// What a new user met in their first hour with a fresh config dir, one test each: the
/// built binary against the sandbox or a purpose-built server.
@Suite("The first hour")
struct FirstHourTests {
    // MARK: a login is checked before anything is sent

    @Test func typedCommandsRefuseWithoutALoginAndSendNothing() throws {
        let fixture = try SandboxFixture()
        let picture = try TemporaryDirectory.file(named: "p.png", bytes: PNGFixture.bytes)
        for arguments in [["shuo", "post", "hi"], ["user", "me"], ["shuo", "timeline"], ["upload", picture, picture]] {
            let result = try fixture.douctl.run(arguments)
            #expect(result.status == 4, "\(arguments): \(result)")
            #expect(result.stderr == "douctl: not logged in to sandbox; run: douctl auth login --profile sandbox\n", "\(arguments)")
            #expect(result.stdout.isEmpty)
        }
        #expect(fixture.sandbox.requests.isEmpty, "nothing reached the server")
        // `api` is curl-like: it sends anonymously, and the server's refusal says how to log in.
        let api = try fixture.douctl.run("api", "/v2/user/~me")
        #expect(api.status == 4)
        #expect(api.stderr.contains("not logged in; run: douctl auth login --profile sandbox"))
        #expect(fixture.sandbox.requests.count == 1)
    }

    // MARK: the Coding sandbox login can be done from the docs

    @Test func sandboxPrintsTheSeededAccountsAndWhereCodesAppear() throws {
        let douctl = Douctl()
        let running = try RunningDouctl(douctl, ["sandbox"])
        let stderr = try running.waitForStderr { $0.contains("Captcha and two-factor codes") }
        #expect(stderr.contains("Coding accounts: coder, twofa (two-factor), devmei, opszhang, password \(Sandbox.codingPassword)."))
        running.kill(SIGTERM)
        #expect(running.finish().status == 0)
        let help = try douctl.run("sandbox", "--help")
        #expect(help.stdoutText.contains("password \(Sandbox.codingPassword)"))
        #expect(help.stdoutText.contains("coding 2fa code for twofa: CODE"))
    }

    @Test func captchaPictureLivesInTheConfigDirectoryUntilAnswered() throws {
        let fixture = try SandboxFixture()
        try fixture.douctl.run("profile", "use", "coding-sandbox")
        let running = try RunningDouctl(fixture.douctl, ["auth", "login", "--password"])
        running.send("coder\n\(Sandbox.codingPassword)\n")
        let prompt = try running.waitForStderr { $0.contains("type the characters it shows:") }
        let picture = try #require(prompt.components(separatedBy: "A captcha is needed: open ").last?.split(separator: "\n").first.map(String.init))
        #expect(picture.hasPrefix(fixture.douctl.configDirectory + "/"), "\(picture)")
        #expect(FileManager.default.fileExists(atPath: picture))
        running.send((fixture.sandbox.lastCodingCaptcha ?? "") + "\n")
        let result = running.finish()
        #expect(result.status == 0, "\(result)")
        #expect(!FileManager.default.fileExists(atPath: picture), "removed after the login")
    }

    // MARK: --wait is the login's own; --timeout stays global

    @Test func loginWaitHasItsOwnName() throws {
        let fixture = try SandboxFixture { $0.approval = .manual }
        let help = try fixture.douctl.run("auth", "login", "--help")
        #expect(help.stdoutText.components(separatedBy: "--timeout SECONDS").count == 2, "one --timeout: the global one")
        #expect(help.stdoutText.contains("--wait SECONDS"))
        // The global --timeout (per request) no longer bounds the approval wait...
        let started = Date()
        let result = try fixture.douctl.run("--timeout", "30", "auth", "login", "--device", "--wait", "1")
        #expect(result.status == 4, "\(result)")
        #expect(result.errorLine.hasSuffix("gave up after 1s waiting for approval (auth login --wait sets how long)"))
        #expect(Date().timeIntervalSince(started) < 20)
        // ...and after the command it is still the global option, not the wait.
        let after = try fixture.douctl.run("auth", "login", "--device", "--timeout", "5", "--wait", "1")
        #expect(after.status == 4, "\(after)")
        #expect(after.errorLine.contains("gave up after 1s"))
    }

    // MARK: one identity per profile

    @Test func aNewLoginReplacesTheOtherCredential() throws {
        let fixture = try SandboxFixture()
        try fixture.douctl.run("profile", "use", "coding-sandbox")
        let token = fixture.sandbox.issueCodingToken(user: "coder")
        try Credentials.write(["coding-sandbox": token.accessToken], in: fixture.douctl.configDirectory, expiresAt: "2099-01-01T00:00:00Z")
        #expect(try fixture.douctl.run("user", "me").json()["global_key"]?.stringValue == "coder")

        let running = try RunningDouctl(fixture.douctl, ["auth", "login", "--password"])
        running.send("twofa\n\(Sandbox.codingPassword)\n")
        try running.waitForStderr { $0.contains("type the characters it shows:") }
        running.send((fixture.sandbox.lastCodingCaptcha ?? "") + "\n")
        try running.waitForStderr { $0.contains("Two-factor code:") }
        running.send((fixture.sandbox.lastCodingTwoFactorCode ?? "") + "\n")
        #expect(running.finish().status == 0)

        #expect(try fixture.douctl.run("user", "me").json()["global_key"]?.stringValue == "twofa")
        #expect(!fixture.credentials.contains(token.accessToken), "the token was replaced")
        let status = try fixture.douctl.run("auth", "status").json()
        #expect(status["credential"]?.stringValue == "cookie session")
        #expect(status["user_name"]?.stringValue == "twofa")
        #expect(status["session"]?["cookie_jar"]?.stringValue != nil)

        // And back: a token login replaces the cookie session.
        let coder = fixture.sandbox.issueCodingToken(user: "coder")
        let withToken = try fixture.douctl.run(["auth", "login", "--with-token"], input: Array(coder.accessToken.utf8))
        #expect(withToken.status == 0, "\(withToken)")
        #expect(!FileManager.default.fileExists(atPath: fixture.douctl.configDirectory + "/cookies-coding-sandbox.json"))
        let after = try fixture.douctl.run("auth", "status").json()
        #expect(after["credential"]?.stringValue == "token")
        #expect(after["user_name"]?.stringValue == "coder")
        #expect(after["session"] == nil)
    }

    // MARK: a corrupt credentials.json

    @Test func corruptCredentialsAreExplainedBeforeALoginAndMovedAsideByLogout() throws {
        let fixture = try SandboxFixture()
        let path = fixture.douctl.configDirectory + "/credentials.json"
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        let login = try fixture.douctl.run("auth", "login", "--device")
        #expect(login.status == 3, "\(login)")
        #expect(login.errorLine.hasPrefix("douctl: \(path) is corrupt ("))
        #expect(login.errorLine.contains("move it aside, then log in again: mv '\(path)' '\(path).bad'"))
        #expect(fixture.sandbox.requests.isEmpty, "no flow was started")

        let logout = try fixture.douctl.run("auth", "logout")
        #expect(logout.status == 0, "\(logout)")
        #expect(logout.stderr.contains("douctl: warning: \(path) is corrupt"))
        #expect(!FileManager.default.fileExists(atPath: path))
        let aside = try FileManager.default.contentsOfDirectory(atPath: fixture.douctl.configDirectory).filter { $0.hasPrefix("credentials.json.corrupt-") }
        #expect(aside.count == 1)
        let kept = try String(contentsOfFile: fixture.douctl.configDirectory + "/" + (aside.first ?? ""), encoding: .utf8)
        #expect(kept == "{not json", "nothing is lost")
        #expect(try fixture.douctl.run("auth", "login", "--device").status == 0)
    }

    // MARK: a corrupt cookie jar

    @Test func aCorruptCookieJarIsReportedNotTakenForALogout() throws {
        let fixture = try SandboxFixture()
        try fixture.douctl.run("profile", "use", "coding-sandbox")
        let path = fixture.douctl.configDirectory + "/cookies-coding-sandbox.json"
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        for arguments in [["user", "me"], ["shuo", "timeline"], ["auth", "status"]] {
            let result = try fixture.douctl.run(arguments)
            #expect(result.status == 3, "\(arguments): \(result)")
            #expect(result.errorLine.hasPrefix("douctl: bad configuration file \(path) ("), "\(arguments): \(result)")
            #expect(!result.stderr.contains("not logged in"), "\(arguments)")
        }
        #expect(fixture.sandbox.requests.isEmpty, "nothing was sent")

        // Logging out deletes it, saying why; then the profile is plainly logged out.
        let logout = try fixture.douctl.run("auth", "logout")
        #expect(logout.status == 0, "\(logout)")
        #expect(logout.stderr.contains("douctl: warning: \(path) is corrupt ("))
        #expect(logout.stderr.contains("Logged out of coding-sandbox."))
        #expect(!FileManager.default.fileExists(atPath: path))
        let after = try fixture.douctl.run("user", "me")
        #expect(after.status == 4, "\(after)")
        #expect(after.errorLine == "douctl: not logged in to coding-sandbox; run: douctl auth login --profile coding-sandbox")
    }

    // MARK: device login rides out transient failures

    @Test func deviceLoginRetriesTransientFailures() throws {
        let fixture = try SandboxFixture { configuration in
            configuration.faults = (try? SandboxFault.parseList("502:0.5")) ?? []
            configuration.faultSeed = 16
        }
        let result = try fixture.douctl.run("auth", "login", "--device")
        #expect(result.status == 0, "\(result)")
        let deviceCalls = fixture.sandbox.requests.filter { $0.path == "/service/auth2/device" || $0.path == "/service/auth2/token" }
        #expect(deviceCalls.contains { $0.status == 502 }, "the fault did strike the login's own requests")
        #expect(fixture.credentials.contains("\"access_token\""), "the login was stored")
    }

    // MARK: profiles: one list, with suggestions

    @Test func profileNamesAreOneListWithSuggestions() throws {
        let fixture = try SandboxFixture()
        let typo = try fixture.douctl.run("--profile", "sandbx", "user", "me")
        #expect(typo.status == 2)
        #expect(typo.errorLine == "douctl: no profile named 'sandbx' (known: sandbox, coding-sandbox, douban, coding, coding-openapi); did you mean 'sandbox'?")
        let list = try fixture.douctl.run("profile", "list").lines()
        #expect(list.compactMap { $0["name"]?.stringValue } == ["sandbox", "coding-sandbox", "douban", "coding", "coding-openapi"])
        #expect(list.compactMap { $0["configured"]?.boolValue } == [true, true, false, false, false])
        #expect(try fixture.douctl.run("--profile", "coding", "profile", "show").status == 0, "every listed name is accepted")
    }

    // MARK: auth status can ask the server

    @Test func statusCheckAsksTheServer() throws {
        let fixture = try SandboxFixture()
        // A token the server no longer knows (as after a sandbox restart without --data).
        try Credentials.write(["sandbox": "forgotten-token"], in: fixture.douctl.configDirectory, expiresAt: "2099-01-01T00:00:00Z")
        let offline = try fixture.douctl.run("auth", "status")
        #expect(offline.status == 0)
        #expect(try offline.json()["valid"] == nil, "no --check: nothing is sent")
        #expect(fixture.sandbox.requests.isEmpty)

        let checked = try fixture.douctl.run("auth", "status", "--check")
        #expect(checked.status == 4, "\(checked)")
        #expect(try checked.json()["valid"]?.boolValue == false)
        #expect(checked.errorLine.hasPrefix("douctl: the server refused the stored login of sandbox ("))
        #expect(checked.errorLine.hasSuffix("run: douctl auth login --profile sandbox"))
        #expect(!checked.stderr.contains("forgotten-token"))

        try fixture.login()
        let good = try fixture.douctl.run("auth", "status", "--check")
        #expect(good.status == 0, "\(good)")
        #expect(try good.json()["valid"]?.boolValue == true)
        #expect(try good.json()["credential"]?.stringValue == "token")
    }

    // MARK: smaller things

    @Test func aStrayArgumentAfterWithTokenIsNeverEchoed() throws {
        let result = try Douctl().run("auth", "login", "--with-token", "s3cr3t-token-value")
        #expect(result.status == 2)
        #expect(!result.stderr.contains("s3cr3t"))
        #expect(result.stderr.hasPrefix("douctl: unexpected argument after --with-token (not shown"))
    }

    @Test func anErrorNamesTheFileOnce() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        let missing = TemporaryDirectory.make(prefix: "gone") + "/nope.png"
        let result = try fixture.douctl.run("upload", missing)
        #expect(result.status == 3)
        #expect(result.stderr == "douctl: cannot read \(missing): No such file or directory\n")
        let other = try fixture.douctl.run("upload", missing, "--to", "/x")
        #expect(other.stderr.components(separatedBy: missing).count == 2, "\(other.stderr)")
    }

    @Test func statusIDsAreChecked() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        for option in ["--since-id", "--until-id"] {
            let result = try fixture.douctl.run("shuo", "timeline", option, "abc")
            #expect(result.status == 2, "\(result)")
            #expect(result.stderr.hasPrefix("douctl: invalid value 'abc' for \(option)"))
        }
        #expect(fixture.sandbox.requests.isEmpty)
    }

    @Test func aJSONErrorKeepsTheStatusOfANonJSONReply() throws {
        let server = try TestServer { _ in .bytes(502, Array("<html>Bad Gateway</html>".utf8), contentType: "text/html") }
        let result = try Douctl().run("api", "/x", "--api-base", server.baseURL, "--error-format", "json", "--no-retry")
        #expect(result.status == 1, "the status decides, not the body (issue 22)")
        let error = try JSONParser.parse(result.errorLine)
        #expect(error["http_status"]?.intValue == 502)
    }

    @Test func theBrowserMessageSaysWhatHappens() throws {
        let fixture = try SandboxFixture(environment: ["BROWSER": "true"])
        let result = try fixture.douctl.run("auth", "login", "--web", "--wait", "1")
        #expect(result.status == 4)
        #expect(result.stderr.contains("Opening a browser to log in; if none appears, open this URL:\n  http"))
        #expect(!result.stderr.contains("Open this URL in a browser"))
        let printed = try fixture.douctl.run("auth", "login", "--web", "--wait", "1", "--no-browser")
        #expect(printed.stderr.contains("Open this URL in a browser to log in:\n  http"))
    }

    @Test
    func progressFitsANarrowTerminal() throws {
        let server = try TestServer { _ in
            Thread.sleep(forTimeInterval: 0.6)
            return .bytes(200, Array("{}".utf8), contentType: "application/json")
        }
        let file = try TemporaryDirectory.file(named: "a-rather-long-file-name-for-a-narrow-terminal.bin", bytes: [UInt8](repeating: 1, count: 3 << 20))
        let douctl = Douctl()
        let command = "stty cols 60; \(Douctl.binary) upload \(file) --to /u --api-base \(server.baseURL) > /dev/null"
        let screen = try runUnderScript(command, environment: douctl.environment)
        let lines = screen.replacingOccurrences(of: "\r", with: "\n").components(separatedBy: "\n")
            .map { $0.replacingOccurrences(of: "\u{1B}\\[[0-9;]*[A-Za-z]", with: "", options: .regularExpression) }
            .filter { $0.contains("MiB") && !$0.contains("done") }
        #expect(!lines.isEmpty, "\(screen)")
        for line in lines {
            #expect(line.count <= 59, "\(line.debugDescription)")
            // Every figure is whole: the line ends in a unit, a percent or a clock, never mid-number.
            #expect(line.hasSuffix("B") || line.hasSuffix("/s") || line.hasSuffix("%") || line.contains("ETA"), "\(line)")
        }
    }

    @Test
    func severalPublicPostsAskFirstOnATerminal() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        let a = try TemporaryDirectory.file(named: "a.png", bytes: PNGFixture.bytes)
        let b = try TemporaryDirectory.file(named: "b.png", bytes: PNGFixture.bytes)
        let command = "\(Douctl.binary) upload \(a) \(b) > /dev/null; echo \"exit=$?\""
        let declined = try runUnderScript(command, environment: fixture.douctl.environment, input: "n\n")
        #expect(declined.contains("Post 2 files as 2 public statuses on sandbox? [y/N]"), "\(declined)")
        #expect(declined.contains("exit=2"))
        #expect(fixture.sandbox.requests.isEmpty)
        // "y" posts both: TerminalViewInProcessTests, on an injected terminal. No terminal does not ask.
        let piped = try fixture.douctl.run("upload", a, b)
        #expect(piped.status == 0)
        #expect(!piped.stderr.contains("[y/N]"))
        let help = try fixture.douctl.run("upload", "--help")
        #expect(help.stdoutText.contains("PUBLIC"))
    }
}
