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

    /// Issue 20: a second sandbox on the same config directory rewrote 'sandbox' and
    /// 'coding-sandbox' to its own port, and left them on a dead port when it stopped while
    /// the first still ran. Now it writes 'sandbox-2' and 'coding-sandbox-2', says so, and
    /// removes them (and their tokens) when it stops.
    @Test func aSecondSandboxLeavesTheFirstOnesProfilesAlone() throws {
        let douctl = Douctl()
        let config = douctl.configDirectory + "/config.json"
        func profiles() throws -> JSON { try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: config))))["profiles"] ?? .null }
        let (first, firstBase) = try start(douctl)
        let (second, secondBase) = try start(douctl, ["--fault", "latency:1ms"])
        #expect(secondBase.hasPrefix("http://127.0.0.1:") && secondBase != firstBase)
        let notes = try second.waitForStderr { $0.contains("douctl sandbox listening") }
        #expect(notes.contains("Another sandbox (\(firstBase)) already serves the profiles 'sandbox' and 'coding-sandbox' on this config directory; they are left to it. This one writes 'sandbox-2' and 'coding-sandbox-2' and removes them when it stops."), "\(notes)")
        #expect(notes.contains("profiles 'sandbox-2' and 'coding-sandbox-2' point here"), "\(notes)")
        #expect(try profiles()["sandbox"]?["api_base"]?.stringValue == firstBase)
        #expect(try profiles()["coding-sandbox"]?["api_base"]?.stringValue == firstBase)
        #expect(try profiles()["sandbox-2"]?["api_base"]?.stringValue == secondBase)
        #expect(try profiles()["coding-sandbox-2"]?["api_base"]?.stringValue == secondBase)

        // Each profile reaches its own sandbox.
        #expect(try douctl.run("--profile", "sandbox-2", "auth", "login", "--device", "--no-browser").status == 0)
        #expect(try douctl.run("--profile", "sandbox-2", "api", "/v2/user/~me").status == 0)
        try second.waitForStderr { $0.contains("GET /v2/user/~me 200") }
        #expect(try douctl.run("--profile", "sandbox", "auth", "login", "--device", "--no-browser").status == 0)
        try first.waitForStderr { $0.contains("POST /service/auth2/token 200") }

        second.kill(SIGTERM)
        #expect(second.finish().status == 0)
        // Its own profiles and tokens are gone; the first one's still point at the live first.
        #expect(try profiles()["sandbox-2"] == nil)
        #expect(try profiles()["coding-sandbox-2"] == nil)
        let credentials = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: douctl.configDirectory + "/credentials.json"))))
        #expect(credentials["profiles"]?["sandbox-2"] == nil)
        #expect(credentials["profiles"]?["sandbox"] != nil)
        #expect(try profiles()["sandbox"]?["api_base"]?.stringValue == firstBase)
        let me = try douctl.run("--profile", "sandbox", "api", "/v2/user/~me")
        #expect(me.status == 0, "\(me)")

        // Once the first has stopped, the next sandbox takes 'sandbox' over as before.
        first.kill(SIGTERM)
        #expect(first.finish().status == 0)
        let (third, thirdBase) = try start(douctl)
        #expect(try profiles()["sandbox"]?["api_base"]?.stringValue == thirdBase)
        #expect(try profiles()["sandbox-2"] == nil)
        third.kill(SIGTERM)
        _ = third.finish()
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
