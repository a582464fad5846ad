@testable import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlTestSupport
import Testing

/// `RunSession`: one run's configuration, credential and clients, decided once from its
/// settings, with every client over the settings' transport.
@Suite struct RunSessionTests {
    /// A session over a config directory (the directory lives as long as the caller keeps it) with the sandbox profiles pointing at `base`.
    func session(_ transport: ScriptedTransport, environment: [String: String] = [:], configure: (inout SessionSettings) -> Void = { _ in }) throws -> (RunSession, TemporaryDirectory) {
        let home = try TemporaryDirectory(prefix: "douctl-session")
        try SandboxProfiles.write(base: "http://api.test", in: home.path + "/config")
        var settings = SessionSettings(environment: ["HOME": home.path].merging(environment) { $1 }, userAgent: "douctl/test") { _ in transport }
        settings.configDirectory = home.path + "/config"
        configure(&settings)
        return (RunSession(settings), home)
    }

    @Test func theRunsClientGoesThroughTheSettingsTransportWithTheEnvironmentToken() throws {
        let transport = ScriptedTransport([.json(200, #"{"uid":"ahbei"}"#)])
        let (session, home) = try session(transport, environment: ["DOUCTL_TOKEN": "env-token"])
        defer { withExtendedLifetime(home) {} }
        #expect(try session.credentialInForce() == .environmentToken("env-token"))
        let reply = try session.api().send(APIRequest(path: "/v2/user/~me"))
        #expect(try reply.requireJSON()["uid"]?.stringValue == "ahbei")
        #expect(transport.requests.map(\.url) == ["http://api.test/v2/user/~me"])
        #expect(transport.requests.first?.header("Authorization") == "Bearer env-token")
    }

    @Test func everythingIsDecidedOnce() throws {
        let (session, home) = try session(ScriptedTransport())
        defer { withExtendedLifetime(home) {} }
        #expect(try session.api() === session.api(), "one client per run")
        #expect(try session.http() === session.http())
        #expect(try session.profile().name == "sandbox")
        #expect(try session.credentialInForce() == .none)
    }

    @Test func theProfileComesFromTheSettingElseTheEnvironment() throws {
        let (fromEnvironment, home1) = try session(ScriptedTransport(), environment: ["DOUCTL_PROFILE": "coding-sandbox"])
        defer { withExtendedLifetime(home1) {} }
        #expect(try fromEnvironment.profile().name == "coding-sandbox")
        let (fromOption, home2) = try session(ScriptedTransport(), environment: ["DOUCTL_PROFILE": "coding-sandbox"]) { $0.profile = "sandbox" }
        defer { withExtendedLifetime(home2) {} }
        #expect(try fromOption.profile().name == "sandbox")
        let (empty, home3) = try session(ScriptedTransport(), environment: ["DOUCTL_PROFILE": ""])
        defer { withExtendedLifetime(home3) {} }
        #expect(empty.settings.requestedProfile == nil)
    }

    @Test func aBadAPIBaseIsAUsageError() throws {
        let (session, home) = try session(ScriptedTransport()) { $0.apiBase = "api.test" }
        defer { withExtendedLifetime(home) {} }
        #expect(throws: DouctlError.usage("invalid value 'api.test' for --api-base: expected an http:// or https:// URL")) { try session.profile() }
    }

    @Test func aDryRunReadsNoCredential() throws {
        let printer = DryRunPrinter(userAgent: "douctl/test") { _ in }
        let (session, home) = try session(ScriptedTransport(), environment: ["DOUCTL_TOKEN": "env-token"]) { $0.dryRun = printer }
        defer { withExtendedLifetime(home) {} }
        #expect(try session.credentialInForce() == .none)
    }

    @Test func aConfigWriteIsDecidedAgain() throws {
        let (session, home) = try session(ScriptedTransport())
        defer { withExtendedLifetime(home) {} }
        #expect(try session.profile().apiBase == "http://api.test")
        try session.updateConfig { (config: inout ConfigFile) throws(DouctlError) in
            var settings = config.profile(named: "sandbox") ?? ProfileSettings()
            settings[.apiBase] = .text("http://other.test")
            config.setProfile("sandbox", settings)
        }
        #expect(try session.profile().apiBase == "http://other.test")
    }
}
