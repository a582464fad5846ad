import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// `douctl sandbox` as a user runs it: its own process, profiles written for it, logs on
/// stderr, clean shutdown, state kept with --data.
@Suite("douctl sandbox")
struct SandboxCommandTests {
    func start(_ douctl: Douctl, _ extra: [String] = []) throws -> (RunningDouctl, String) {
        let running = try RunningDouctl(douctl, ["sandbox"] + extra)
        let firstLine = try running.waitForStdout { $0.contains("\n") }
        return (running, String(firstLine.prefix { $0 != "\n" }))
    }

    @Test func printsItsURLWritesProfilesAndServesLoggedInCalls() throws {
        let douctl = Douctl()
        let (sandbox, base) = try start(douctl)
        #expect(base.hasPrefix("http://127.0.0.1:"))
        let profile = try douctl.run("profile", "show", "sandbox").json()
        #expect(profile["api_base"]?.stringValue == base)
        #expect(profile["token_url"]?.stringValue == base + "/service/auth2/token")
        #expect(profile["client_id"]?.stringValue == "douctl-sandbox")
        #expect(try douctl.run("profile", "show", "coding-sandbox").json()["style"]?.stringValue == "coding")

        let before = try douctl.run("--profile", "sandbox", "api", "/v2/user/~me")
        #expect(before.status == 4, "\(before)")
        #expect(before.errorLine == "douctl: authentication failed (access_token_is_missing, code 102, GET /v2/user/~me); not logged in; run: douctl auth login --profile sandbox")
        #expect(try douctl.run("--profile", "sandbox", "auth", "login", "--device", "--no-browser").status == 0)
        let me = try douctl.run("--profile", "sandbox", "api", "/v2/user/~me")
        #expect(me.status == 0, "\(me)")
        #expect(try me.json()["uid"]?.stringValue == "ahbei")
        try sandbox.waitForStderr { $0.contains("GET /v2/user/~me 200") }

        sandbox.kill(SIGTERM)
        let result = sandbox.finish()
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.contains("Stopping the sandbox."))
    }

    @Test func dataDirectoryKeepsStatusesAndTokensAcrossRestarts() throws {
        let douctl = Douctl()
        let data = TemporaryDirectory.make(prefix: "sandbox-data")
        var (sandbox, _) = try start(douctl, ["--data", data])
        #expect(try douctl.run("--profile", "sandbox", "auth", "login", "--device", "--no-browser").status == 0)
        let id = try #require(try douctl.run("--profile", "sandbox", "shuo", "post", "记得我").json()["id"]?.scalarText)
        // A second sandbox on the same directory would overwrite the first one's state.
        let second = try douctl.run("sandbox", "--data", data)
        #expect(second.status == 3, "\(second)")
        #expect(second.errorLine == "douctl: cannot start the sandbox (another sandbox is using the data directory \(data))")
        sandbox.kill(SIGINT)
        _ = sandbox.finish()

        (sandbox, _) = try start(douctl, ["--data", data])
        let read = try douctl.run("--profile", "sandbox", "shuo", "get", id)
        #expect(read.status == 0, "\(read)")
        #expect(try read.json()["text"]?.stringValue == "记得我")
        sandbox.kill(SIGINT)
        _ = sandbox.finish()
    }

    @Test func faultsAreInjectedAndBadSpecsRefused() throws {
        let douctl = Douctl()
        let bad = try douctl.run("sandbox", "--fault", "503:2")
        #expect(bad.status == 2)
        #expect(bad.errorLine.hasPrefix("douctl: invalid --fault"))
        let (sandbox, _) = try start(douctl, ["--fault", "503:1"])
        let result = try douctl.run("--profile", "sandbox", "api", "/v2/user/ahbei")
        #expect(result.status == 1, "\(result)")
        #expect(result.errorLine.contains("HTTP 503"))
        let log = try sandbox.waitForStderr { $0.components(separatedBy: "GET /v2/user/ahbei 503").count == 4 }
        #expect(log.components(separatedBy: "GET /v2/user/ahbei 503").count == 4, "three tries")
        sandbox.kill(SIGINT)
        _ = sandbox.finish()
    }

    @Test func helpDocumentsFaults() throws {
        let help = try Douctl().run("sandbox", "--help").stdoutText
        #expect(help.contains("latency:DURATION"))
        #expect(help.contains("slow-down[:N]"))
        #expect(!help.contains("--seed"), "benchmark-only options stay hidden")
    }
}
