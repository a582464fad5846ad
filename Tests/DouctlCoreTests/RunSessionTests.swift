@testable import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// `RunSession`: one run's configuration, credential and clients, decided once from its
/// settings, with every client over the settings' transport.
@Suite struct RunSessionTests {
    /// A session over a config directory (the directory lives as long as the caller keeps it) with the sandbox profiles pointing at `base`.
    func session(_ transport: any HTTPTransport & Sendable, environment: [String: String] = [:], configure: (inout SessionSettings) -> Void = { _ in }) throws -> (RunSession, TemporaryDirectory) {
        let home = try TemporaryDirectory(prefix: "douctl-session")
        try SandboxProfiles.write(base: "http://api.test", in: home.path + "/config")
        var settings = SessionSettings(requests: RequestSettings(environment: ["HOME": home.path].merging(environment) { $1 }, userAgent: "douctl/test") { _ in transport })
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

    /// `--dry-run` is the settings' transport and nothing else: the run's one client goes
    /// through `DryRunTransport` with `$DOUCTL_TOKEN`, and reads no store, cache or
    /// recording. Before, the session asked "is this a dry run?" in four places and built
    /// the dry client another way.
    @Test func aDryRunIsTheTransportThatPrintsAndReadsNoCredential() throws {
        let lines = Recorder<String>()
        let printer = DryRunPrinter(userAgent: "douctl/test") { lines.add($0) }
        let transport = ScriptedTransport()
        let (session, home) = try session(transport, environment: ["DOUCTL_TOKEN": "env-token"]) { settings in
            settings.requests.recorder = ExchangeRecorder(directory: "/nonexistent/recorded")
            settings.cache = 300
            settings = settings.printingRequests(to: printer)
        }
        defer { withExtendedLifetime(home) {} }
        #expect(try session.credentialInForce() == .placeholder(DryRunPrinter.tokenPlaceholder, scheme: nil))
        let client = try session.api()
        #expect(!client.sendsRequests && client.requests.recorder == nil && client.cachePolicy == nil && client.rateLimiter == nil)
        _ = try client.send(APIRequest(path: "/v2/user/~me"))
        #expect(lines.all == [#"curl -sS -g 'http://api.test/v2/user/~me' -A douctl/test -H 'Accept: application/json' -H "Authorization: Bearer $DOUCTL_TOKEN""#])
        #expect(transport.requests.isEmpty)
    }

    /// `--dry-run` for a profile logged in with a user name and password prints the scheme
    /// that login is sent with (`Basic $DOUCTL_TOKEN`, not Bearer); DOUCTL_TOKEN, which a
    /// real run would send instead, is sent in the profile's scheme. Only the kind of the
    /// stored login is read: a corrupt store is a run with no login, as before.
    @Test func aDryRunPrintsTheSchemeTheCredentialInForceGoesIn() throws {
        let lines = Recorder<String>()
        let printer = DryRunPrinter(userAgent: "douctl/test") { lines.add($0) }
        let (basic, home) = try self.session(ScriptedTransport()) { $0 = $0.printingRequests(to: printer) }
        defer { withExtendedLifetime(home) {} }
        try basic.credentialStore().update("sandbox") { (entry: inout Credential?) throws(DouctlError) in entry = .basic(user: "ann", password: "pw-1234") }
        #expect(try basic.credentialInForce() == .placeholder(DryRunPrinter.tokenPlaceholder, scheme: "Basic"))
        _ = try basic.api().send(APIRequest(path: "/x"))
        #expect(lines.all.last?.contains(#"-H "Authorization: Basic $DOUCTL_TOKEN""#) == true, "\(lines.all)")

        let (overridden, home2) = try self.session(ScriptedTransport(), environment: ["DOUCTL_TOKEN": "t"]) { $0 = $0.printingRequests(to: printer) }
        defer { withExtendedLifetime(home2) {} }
        try overridden.credentialStore().update("sandbox") { (entry: inout Credential?) throws(DouctlError) in entry = .basic(user: "ann", password: "pw-1234") }
        #expect(try overridden.credentialInForce() == .placeholder(DryRunPrinter.tokenPlaceholder, scheme: nil))

        let (corrupt, home3) = try self.session(ScriptedTransport()) { $0 = $0.printingRequests(to: printer) }
        defer { withExtendedLifetime(home3) {} }
        _ = FileManager.default.createFile(atPath: home3.path + "/config/credentials.json", contents: Data("{corrupt".utf8), attributes: [.posixPermissions: 0o600])
        #expect(try corrupt.credentialInForce() == .placeholder(DryRunPrinter.tokenPlaceholder, scheme: nil))
    }

    /// The request settings reach every client unchanged: the run's own, a worker's.
    @Test func everyClientGetsTheRunsRequestSettings() throws {
        let wait = RateLimitWait(maximum: 7) { _, _ in true }
        let (session, home) = try session(ScriptedTransport(), environment: ["DOUCTL_TOKEN": "t", "SECRET": "s"]) { settings in
            settings.requests.rateLimitWait = wait
            settings.requests.recorder = ExchangeRecorder(directory: "/tmp/recorded")
        }
        defer { withExtendedLifetime(home) {} }
        for client in [try session.api(), try session.clientFactory().make()] {
            #expect(client.requests.rateLimitWait?.maximum == 7)
            #expect(client.requests.recorder?.directory == "/tmp/recorded")
            #expect(client.requests.environment["SECRET"] == "s")
            #expect(client.sendsRequests)
        }
    }

    /// The session hands out a paginator ready to walk: items key, the page cap it is given,
    /// warnings through the settings, and worker clients over the settings' transport
    /// that fetch numbered pages several at a time.
    @Test func theSessionHandsOutAReadyPaginator() throws {
        let warnings = Recorder<String>()
        let transport = ParallelPagesTests.ListTransport(total: 60, pageSize: 10)
        let (session, home) = try session(transport, environment: ["DOUCTL_TOKEN": "t", "DOUCTL_MAX_PAGES": "5"]) { settings in
            settings.warn = { warnings.add($0) }
        }
        defer { withExtendedLifetime(home) {} }
        let paginator = try session.paginator(itemsKey: "users", parallel: 4, maximumPages: 50)
        #expect(paginator.itemsKey == "users" && paginator.maximumPages == 50 && paginator.parallel?.width == 4)
        paginator.warn?("w")
        #expect(warnings.all == ["w"])
        var ids: [Int] = []
        try paginator.walk(APIRequest(path: "/v2/list", query: [("count", "10")]), scheme: .offset()) { (item: JSON) throws(DouctlError) in
            ids.append(Int(item["id"]?.scalarText ?? "") ?? -1)
        }
        #expect(ids == Array(0..<60))
        #expect(transport.snapshot.mostInFlight > 1, "pages fetched by the session's workers at once")
        #expect(try session.paginator(parallel: 1).parallel == nil)
        #expect(try session.paginator(parallel: 1).maximumPages == Paginator.defaultMaximumPages, "the old hidden variable sets nothing")
        let anonymous = try session.api(allowsAnonymous: true)
        #expect(try session.paginator(over: anonymous, parallel: 4).client === anonymous)
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
