import DouctlHTTP
import Foundation
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Testing
@testable import DouctlCommands

/// Issue 41, item 1 in process: `--record DIR` on a login records every exchange of it
/// (issuer discovery, device authorization, the token endpoint's code, device, client
/// credentials and refresh grants, the identity call, revocation), through the one recording
/// layer, with no secret of the login in the recording.
@Suite struct LoginRecordingCommandTests {
    static let clientSecret = "client-secret-4242"

    /// The recording's file names and all its text.
    static func recorded(_ directory: TemporaryDirectory) throws -> (names: [String], text: String) {
        let names = try FileIO.listDirectory(directory.path).filter { $0.hasSuffix(".json") }.sorted()
        var text = ""
        for name in names { text += String(decoding: try FileIO.readFile(directory.path + "/" + name), as: UTF8.self) + "\n" }
        // Without the pretty printing's spaces and newlines: `"grant_type","refresh_token"`.
        return (names, String(text.unicodeScalars.filter { $0 != " " && $0 != "\n" }))
    }

    static func expectNone(of secrets: [String], in text: String, _ what: String) {
        for secret in secrets { #expect(!text.contains(secret), "\(what): '\(secret)' is in the recording:\n\(text)") }
    }

    /// A plain OAuth2 profile `gen` on https://api.test, its client secret from the environment.
    static func douctl(_ transport: ScriptedTransport, tokenAuth: String = "post") throws -> InProcessDouctl {
        let douctl = try InProcessDouctl(environment: ["DOUCTL_CLIENT_SECRET": clientSecret], transport: transport)
        let add = try douctl.run(["profile", "add", "gen", "--api-base", "https://api.test", "--authorize-url", "https://api.test/o/authorize/",
                                  "--token-url", "https://api.test/o/token/", "--device-authorization-url", "https://api.test/o/device/",
                                  "--revoke-url", "https://api.test/o/revoke/", "--redirect-uri", "http://127.0.0.1/callback",
                                  "--client-id", "c", "--token-auth", tokenAuth, "--user-url", "/api/user"])
        #expect(add.status == 0, "\(add)")
        return douctl
    }

    static func grant(_ access: String, _ refresh: String?) -> ScriptedTransport.Answer {
        .json(200, #"{"access_token":"\#(access)","token_type":"Bearer","expires_in":3600"# + (refresh.map { #","refresh_token":"\#($0)""# } ?? "") + "}")
    }

    static let identity = ScriptedTransport.Answer.json(200, #"{"id":"7","name":"ann"}"#)

    @Test func profileAddIssuerRecordsTheDiscoveryDocument() throws {
        let document = #"{"issuer":"https://login.test/o","authorization_endpoint":"https://login.test/o/authorize/","#
            + #""token_endpoint":"https://login.test/o/token/","jwks_uri":"https://login.test/o/jwks/","response_types_supported":["code"]}"#
        let transport = ScriptedTransport([.json(200, document)])
        let douctl = try InProcessDouctl(transport: transport)
        let recording = try TemporaryDirectory(prefix: "login-record")
        let add = try douctl.run(["--record", recording.path, "profile", "add", "oidc", "--issuer", "https://login.test/o", "--client-id", "c"])
        #expect(add.status == 0, "\(add)")
        let (names, text) = try Self.recorded(recording)
        #expect(names == ["0001-GET-o_.well-known_openid-configuration.json"], "\(names)")
        #expect(text.contains("https://login.test/o/jwks/"), "the document as served: \(text)")
    }

    @Test func aPastedCodeLoginRefreshAndLogoutAreRecordedWithNoSecret() throws {
        let transport = ScriptedTransport([Self.grant("access-tok-1111", "refresh-tok-2222"), Self.identity])
        let douctl = try Self.douctl(transport)
        let recording = try TemporaryDirectory(prefix: "login-record")
        let login = try douctl.run(["--record", recording.path, "--profile", "gen", "auth", "login", "--paste", "--no-browser"], input: Array("the-auth-code-777\n".utf8))
        #expect(login.status == 0, "\(login)")
        let verifier = try #require(transport.requests.first?.formValue("code_verifier"))
        var (names, text) = try Self.recorded(recording)
        #expect(names == ["0001-POST-o_token.json", "0002-GET-api_user.json"], "\(names)")
        #expect(text.contains(#""grant_type","authorization_code""#) && text.contains(#""name":"ann""#), "\(text)")

        transport.then(Self.grant("access-tok-6666", "refresh-tok-7777"))
        let refresh = try douctl.run(["--record", recording.path, "--profile", "gen", "auth", "refresh"])
        #expect(refresh.status == 0, "\(refresh)")
        transport.then(.json(200, "{}"), .json(200, "{}"))
        let logout = try douctl.run(["--record", recording.path, "--profile", "gen", "auth", "logout"])
        #expect(logout.status == 0, "\(logout)")
        #expect(transport.unused == 0)
        (names, text) = try Self.recorded(recording)
        #expect(names.count == 5 && names[2] == "0003-POST-o_token.json" && names[3] == "0004-POST-o_revoke.json", "\(names)")
        #expect(text.contains(#""grant_type","refresh_token""#) && text.contains(#""token_type_hint","access_token""#), "\(text)")
        Self.expectNone(of: [Self.clientSecret, "the-auth-code-777", verifier, "access-tok-1111", "refresh-tok-2222", "access-tok-6666", "refresh-tok-7777"],
                        in: text, "paste, refresh, logout")
    }

    @Test func aDeviceLoginIsRecordedWholeWithNoDeviceCode() throws {
        let transport = ScriptedTransport([
            .json(200, #"{"device_code":"device-code-3333","user_code":"WDJB-MJHT","verification_uri":"https://api.test/device","interval":5,"expires_in":600}"#),
            .json(400, #"{"error":"authorization_pending"}"#),
            Self.grant("access-tok-8888", "refresh-tok-9999"),
            Self.identity,
        ])
        var douctl = try Self.douctl(transport)
        let clock = VirtualClock()
        douctl.configure = { $0.clock = clock.run }
        let recording = try TemporaryDirectory(prefix: "login-record")
        let login = try douctl.run(["--record", recording.path, "--profile", "gen", "auth", "login", "--device", "--no-browser"])
        #expect(login.status == 0, "\(login)")
        let (names, text) = try Self.recorded(recording)
        #expect(names == ["0001-POST-o_device.json", "0002-POST-o_token.json", "0003-POST-o_token.json", "0004-GET-api_user.json"], "\(names)")
        #expect(text.contains("authorization_pending") && text.contains("WDJB-MJHT"), "\(text)")
        Self.expectNone(of: [Self.clientSecret, "device-code-3333", "access-tok-8888", "refresh-tok-9999"], in: text, "device")
    }

    @Test func aClientCredentialsLoginIsRecordedWithNoBasicCredential() throws {
        let transport = ScriptedTransport([Self.grant("cc-access-5555", nil)])
        let douctl = try Self.douctl(transport, tokenAuth: "basic")
        let recording = try TemporaryDirectory(prefix: "login-record")
        let login = try douctl.run(["--record", recording.path, "--profile", "gen", "auth", "login", "--client-credentials"])
        #expect(login.status == 0, "\(login)")
        let basic = try #require(transport.requests.first?.header("Authorization"))
        #expect(basic.hasPrefix("Basic "), "the cell proves nothing without the Basic credential sent")
        let (names, text) = try Self.recorded(recording)
        #expect(names == ["0001-POST-o_token.json"], "\(names)")
        #expect(text.contains(#""grant_type","client_credentials""#), "\(text)")
        Self.expectNone(of: [Self.clientSecret, String(basic.dropFirst(6)), "cc-access-5555"], in: text, "client credentials")
    }

    /// `auth login URL` (RFC 9728 → RFC 8414 → RFC 7591): the probe, both metadata documents
    /// and the registration are recorded; the client secret the registration issued is not.
    @Test func aLoginFromTheAPIsURLRecordsItsDiscoveryAndRegistration() throws {
        let transport = ScriptedTransport([ResourceLoginCommandTests.challenge(), ResourceLoginCommandTests.resourceMetadata(), .json(404, "{}"),
                                           ResourceLoginCommandTests.serverMetadata(),
                                           .json(201, #"{"client_id":"registered-7","client_secret":"reg-secret-31337","client_name":"douctl"}"#)])
        let douctl = try InProcessDouctl(transport: transport)
        let recording = try TemporaryDirectory(prefix: "login-record")
        let login = try douctl.run(["--record", recording.path, "auth", "login", ResourceLoginCommandTests.api, "--with-token"], input: Array("the-token-555\n".utf8))
        #expect(login.status == 0, "\(login)")
        let (names, text) = try Self.recorded(recording)
        #expect(names == ["0001-GET-root.json", "0002-GET-.well-known_oauth-protected-resource.json", "0003-GET-.well-known_openid-configuration.json",
                          "0004-GET-.well-known_oauth-authorization-server.json", "0005-POST-register.json"], "\(names)")
        #expect(text.contains(#""client_id":"registered-7""#), "\(text)")
        Self.expectNone(of: ["reg-secret-31337", "the-token-555"], in: text, "discovery and registration")
    }

    /// A call that finds the stored token expired refreshes it first: with --record, the
    /// refresh is recorded before the call, neither token in it.
    @Test func aRefreshACallMakesIsRecordedBeforeTheCall() throws {
        let transport = ScriptedTransport([Self.grant("access-tok-1111", "refresh-tok-2222"), Self.identity])
        let douctl = try Self.douctl(transport)
        let login = try douctl.run(["--profile", "gen", "auth", "login", "--paste", "--no-browser"], input: Array("the-auth-code-777\n".utf8))
        #expect(login.status == 0, "\(login)")
        let path = douctl.configDirectory + "/credentials.json"
        let stored = String(decoding: try FileIO.readFile(path), as: UTF8.self)
        let expired = stored.replacingOccurrences(of: #""expires_at"\s*:\s*"[^"]*""#, with: #""expires_at":"2001-01-01T00:00:00Z""#, options: .regularExpression)
        try #require(expired != stored)
        try AtomicFile.write(Array(expired.utf8), to: path)
        transport.then(Self.grant("access-tok-6666", "refresh-tok-7777"), .json(200, #"{"id":"7","name":"ann"}"#))
        let recording = try TemporaryDirectory(prefix: "login-record")
        let call = try douctl.run(["--record", recording.path, "--profile", "gen", "api", "/api/user"])
        #expect(call.status == 0, "\(call)")
        #expect(transport.requests.suffix(2).first?.formValue("grant_type") == "refresh_token", "the call refreshed first")
        let (names, text) = try Self.recorded(recording)
        #expect(names == ["0001-POST-o_token.json", "0002-GET-api_user.json"], "\(names)")
        Self.expectNone(of: [Self.clientSecret, "access-tok-1111", "refresh-tok-2222", "access-tok-6666", "refresh-tok-7777"], in: text, "refresh")
    }

    /// `--record x.har` on a login: one HAR 1.2 log holding the device authorization, the
    /// token polls and the identity call, none of the login's secrets.
    @Test func aDeviceLoginRecordedAsHARHoldsItsEntriesAndNoSecret() throws {
        let transport = ScriptedTransport([
            .json(200, #"{"device_code":"device-code-3333","user_code":"WDJB-MJHT","verification_uri":"https://api.test/device","interval":5,"expires_in":600}"#),
            Self.grant("access-tok-8888", "refresh-tok-9999"),
            Self.identity,
        ])
        var douctl = try Self.douctl(transport)
        let clock = VirtualClock()
        douctl.configure = { $0.clock = clock.run }
        let directory = try TemporaryDirectory(prefix: "login-har")
        let har = directory.path + "/login.har"
        let login = try douctl.run(["--record", har, "--profile", "gen", "auth", "login", "--device", "--no-browser"])
        #expect(login.status == 0, "\(login)")
        let text = String(decoding: try FileIO.readFile(har), as: UTF8.self)
        let log = try JSONParser.parse(Array(text.utf8))["log"]
        #expect(log?["version"]?.stringValue == "1.2")
        let urls = (log?["entries"]?.arrayValue ?? []).compactMap { $0["request"]?["url"]?.stringValue }
        #expect(urls == ["https://api.test/o/device/", "https://api.test/o/token/", "https://api.test/api/user"], "\(urls)")
        Self.expectNone(of: [Self.clientSecret, "device-code-3333", "access-tok-8888", "refresh-tok-9999"], in: text, "HAR")
    }

    /// A refused login with --record: exit 4, nothing on stdout, the refusal recorded
    /// without the client secret it repeats.
    @Test func aRefusedLoginIsRecordedAndLeavesStdoutEmpty() throws {
        let transport = ScriptedTransport([.json(401, #"{"error":"invalid_client","error_description":"secret \#(Self.clientSecret) is wrong"}"#)])
        let douctl = try Self.douctl(transport)
        let recording = try TemporaryDirectory(prefix: "login-record")
        let login = try douctl.run(["--record", recording.path, "--profile", "gen", "auth", "login", "--client-credentials"])
        #expect(login.status == 4, "\(login)")
        #expect(login.stdout.isEmpty)
        #expect(!login.stderr.contains(Self.clientSecret))
        let (names, text) = try Self.recorded(recording)
        #expect(names == ["0001-POST-o_token.json"], "\(names)")
        #expect(text.contains("invalid_client"))
        Self.expectNone(of: [Self.clientSecret], in: text, "refusal")
    }
}
