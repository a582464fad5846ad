import DouctlJSON
import DouctlSandbox
import DouctlTestSupport
import Testing

/// Whole commands run in-process through `Douctl.main` against a sandbox on 127.0.0.1:
/// what reaches stdout and stderr, and the exit codes. The same paths run through the
/// binary in DouctlTests; here they take milliseconds.
@Suite("Commands run in-process")
struct RunTests {
    @Test func configListShowsTheProfileWithSecretsMasked() throws {
        let run = try SandboxRun()
        defer { run.stop() }
        let base = run.sandbox.baseURL
        let listed = try run.douctl.run("config", "list")
        #expect(listed.status == 0, "\(listed)")
        #expect(listed.stdoutText == """
            preset=sandbox
            api_base=\(base)
            authorize_url=\(base)/service/auth2/auth
            token_url=\(base)/service/auth2/token
            device_authorization_url=\(base)/service/auth2/device
            revoke_url=\(base)/service/auth2/revoke
            client_id=douctl-sandbox
            client_secret=sand********

            """)
        #expect(try run.douctl.run("config", "list", "--show-secrets").stdoutText.contains("client_secret=sandbox-secret\n"))
        #expect(try run.douctl.run("config", "get", "api_base", "--profile", "coding-sandbox").stdoutText == base + "\n")
    }

    @Test func configSetWritesTheFileAndTheNextRunSeesIt() throws {
        let douctl = try InProcessDouctl()
        #expect(try douctl.run("profile", "add", "work", "--preset", "douban").status == 0)
        #expect(try douctl.run("config", "set", "api_base", "http://127.0.0.1:9", "--profile", "work").status == 0)
        #expect(try douctl.run("config", "get", "api_base", "--profile", "work").stdoutText == "http://127.0.0.1:9\n")
        let unknown = try douctl.run("config", "get", "api_base", "--profile", "wrok")
        #expect(unknown.status == 2)
        #expect(unknown.errorLine.hasPrefix("douctl: no profile named 'wrok'"))
    }

    @Test func authStatusBeforeAndAfterALogin() throws {
        let run = try SandboxRun()
        defer { run.stop() }
        let before = try run.douctl.run("auth", "status")
        #expect(before.status == 4, "\(before)")
        let token = try run.login()
        let after = try run.douctl.run("auth", "status")
        #expect(after.status == 0, "\(after)")
        let status = try after.json()
        #expect(status["logged_in"]?.boolValue == true)
        #expect(status["token"]?.stringValue == String(token.prefix(4)) + "********")
        #expect(status["credentials_path"]?.stringValue == run.douctl.configDirectory + "/credentials.json")
        #expect(!after.stdoutText.contains(token))
        #expect(try run.douctl.run("auth", "token").stdoutText == token + "\n")
    }

    @Test func apiCallsTheEndpointWithTheStoredToken() throws {
        let run = try SandboxRun()
        defer { run.stop() }
        let anonymous = try run.douctl.run("api", "/v2/user/~me")
        #expect(anonymous.status == 4, "\(anonymous)")
        #expect(anonymous.errorLine == "douctl: authentication failed (access_token_is_missing, code 102, GET /v2/user/~me); not logged in; run: douctl auth login --profile sandbox")
        let token = try run.login()
        let me = try run.douctl.run("api", "/v2/user/~me")
        #expect(me.status == 0, "\(me)")
        #expect(try me.json()["uid"]?.stringValue == "ahbei")
        #expect(me.stdoutText.hasSuffix("}\n"), "compact JSON on a file")
        let sent = try #require(run.sandbox.requests.last)
        #expect(sent.path == "/v2/user/~me")
        #expect(sent.header("Authorization") == "Bearer \(token)")
    }

    @Test func shuoPostThenGet() throws {
        let run = try SandboxRun()
        defer { run.stop() }
        try run.login()
        let posted = try run.douctl.run(["shuo", "post", "-"], input: Array("从管道来的\n".utf8))
        #expect(posted.status == 0, "\(posted)")
        let id = try #require(try posted.json()["id"]?.scalarText)
        let read = try run.douctl.run("shuo", "get", id)
        #expect(read.status == 0, "\(read)")
        #expect(try read.json()["text"]?.stringValue == "从管道来的")
        let missing = try run.douctl.run("shuo", "get", "999999999")
        #expect(missing.status == 5, "\(missing)")
    }

    @Test func exitCodesSayWhatWentWrong() throws {
        let run = try SandboxRun()
        defer { run.stop() }
        try run.login()
        let notFound = try run.douctl.run("api", "/v2/user/nobody-at-all")
        #expect(notFound.status == 5, "\(notFound)")
        // api sends anonymously where --api-base points (issue 39: the stored login stays home).
        let refused = try run.douctl.run("api", "/v2/user/~me", "--api-base", "http://127.0.0.1:\(refusingPort())", "--no-retry")
        #expect(refused.status == 7, "\(refused)")
        #expect(refused.errorLine.hasPrefix("douctl: cannot connect: "))
        let missingFile = try run.douctl.run("shuo", "post", "x", "--image", run.douctl.home.path + "/no-such.png")
        #expect(missingFile.status == 3, "\(missingFile)")
        let version = try run.douctl.run("--version")
        #expect(version.status == 0)
        #expect(version.stdoutText.hasPrefix("douctl "))
    }

    @Test func dryRunPrintsTheRequestAndSendsNothing() throws {
        let run = try SandboxRun()
        defer { run.stop() }
        let before = run.sandbox.requests.count
        let result = try run.douctl.run("api", "/v2/user/~me", "--dry-run")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText.hasPrefix("curl "))
        #expect(result.stdoutText.contains("$DOUCTL_TOKEN"))
        #expect(run.sandbox.requests.count == before)
    }
}
