import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// Issue 41, item 1 with the built douctl: a real login against Django OAuth Toolkit with
/// OpenID Connect discovery, recorded with `--record DIR` (discovery, device authorization,
/// the token polls, the identity call, the API call, a refresh), holds none of the login's
/// secrets; replayed with `douctl sandbox --replay DIR`, it logs a new douctl (a fresh config
/// directory) in with no provider in the loop, and that douctl reaches the recorded API route.
/// In the DOT suite (serialized: the provider is shared).
extension OAuth2ProviderTests {
    static func recordingFiles(_ directory: String) throws -> (names: [String], text: String) {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".json") }.sorted()
        let text = try names.map { try String(contentsOfFile: directory + "/" + $0, encoding: .utf8) }.joined(separator: "\n")
        // Without the pretty printing's spaces and newlines: `"grant_type","refresh_token"`.
        return (names, String(text.unicodeScalars.filter { $0 != " " && $0 != "\n" }))
    }

    /// The browser flow with PKCE against DOT, recorded: the code exchange is in the
    /// recording with its code and code_verifier scrubbed, and the tokens DOT issued are not.
    @Test func aRecordedBrowserLoginOfARealProviderHoldsNoCodeVerifierNorToken() throws {
        let provider = try DOTProvider.shared()
        let browser = try FakeBrowser()
        let recording = TemporaryDirectory.make(prefix: "dot-web-record")
        let douctl = Douctl(environment: ["BROWSER": browser.command("follow")])
        try provider.addProfile(douctl, name: "dotwebrec", client: "dotx", extra: ["--redirect-uri", "http://127.0.0.1/callback/dotx", "--user-url", "/api/user"])
        let login = try douctl.run(["--record", recording, "--profile", "dotwebrec", "auth", "login", "--web", "--wait", "120"], timeout: 180)
        #expect(login.status == 0, "\(login)\n\(provider.log)")
        let tokens = try stored(douctl, "dotwebrec")
        let (names, text) = try Self.recordingFiles(recording)
        #expect(names == ["0001-POST-o_token.json", "0002-GET-api_user.json"], "\(names)")
        #expect(text.contains(#"["grant_type","authorization_code"]"#) && text.contains(#"["code","REDACTED"]"#)
                && text.contains(#"["code_verifier","REDACTED"]"#), "\(text)")
        #expect(!text.contains(tokens.access) && !text.contains(tokens.refresh), "\(text)")
    }

    @Test func aRecordedDeviceLoginOfARealProviderHoldsNoSecretAndReplaysForANewDouctl() throws {
        let provider = try DOTProvider.shared()
        let browser = try FakeBrowser()
        let recording = TemporaryDirectory.make(prefix: "dot-login-record")
        let douctl = Douctl(environment: ["BROWSER": browser.command("follow")])
        let issuer = provider.base + "/o"
        // DOT's discovery names no device endpoint, and its userinfo wants the openid scope:
        // both given on the command line, which wins over the document.
        let add = try douctl.run(["--record", recording, "profile", "add", "dotrec", "--issuer", issuer, "--client-id", "dotd",
                                  "--device-authorization-url", issuer + "/device-authorization/", "--user-url", "/api/user", "--user-id-field", "id", "--user-name-field", "username",
                                  "--scopes", "read", "--token-auth", "none"])
        #expect(add.status == 0, "\(add)")
        let login = try douctl.run(["--record", recording, "--profile", "dotrec", "auth", "login", "--device", "--wait", "120"], timeout: 180)
        #expect(login.status == 0, "\(login)\n\(provider.log)")
        #expect(try login.json()["user_name"]?.stringValue == "alice")
        let first = try stored(douctl, "dotrec")
        let api = try douctl.run(["--record", recording, "--profile", "dotrec", "api", "/api/user"], timeout: 120)
        #expect(api.status == 0, "\(api)")
        let refresh = try douctl.run(["--record", recording, "--profile", "dotrec", "auth", "refresh"], timeout: 120)
        #expect(refresh.status == 0, "\(refresh)")
        let second = try stored(douctl, "dotrec")
        #expect(second.access != first.access)

        let (names, text) = try Self.recordingFiles(recording)
        #expect(names.first == "0001-GET-o_.well-known_openid-configuration.json", "\(names)")
        #expect(names.contains { $0.hasSuffix("-POST-o_device-authorization.json") }, "\(names)")
        #expect(names.filter { $0.hasSuffix("-POST-o_token.json") }.count >= 2, "the device grant and the refresh: \(names)")
        #expect(names.filter { $0.hasSuffix("-GET-api_user.json") }.count == 2, "the login's identity call and the API call: \(names)")
        #expect(text.contains(#""jwks_uri""#) && text.contains(#""grant_type","refresh_token""#), "\(text)")
        #expect(text.contains(#""device_code":"REDACTED""#), "the device code DOT issued is scrubbed: \(text)")
        for secret in [first.access, first.refresh, second.access, second.refresh] {
            #expect(!text.contains(secret), "a token is in the recording: \(secret)")
        }

        // The recording, replayed, is the whole provider for a new douctl.
        let (replay, url) = try FakeAnyAPITests.startReplay(Douctl(), ["--replay", recording])
        defer {
            replay.kill(SIGTERM)
            _ = replay.finish()
        }
        let fresh = Douctl()
        let replayed = try fresh.run(["profile", "add", "r", "--issuer", url + "/o", "--client-id", "dotd",
                                      "--device-authorization-url", url + "/o/device-authorization/", "--user-url", "/api/user", "--user-id-field", "id", "--user-name-field", "username",
                                      "--scopes", "read", "--token-auth", "none"])
        #expect(replayed.status == 0, "\(replayed)")
        let tokenURL = try fresh.run(["config", "get", "token_url", "--profile", "r"]).stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(tokenURL == url + "/o/token/", "the replayed discovery points at the replay")
        let again = try fresh.run(["--profile", "r", "auth", "login", "--device", "--no-browser", "--wait", "60"], timeout: 120)
        #expect(again.status == 0, "\(again)")
        #expect(try again.json()["user_name"]?.stringValue == "alice")
        let token = try stored(fresh, "r")
        #expect(token.access != "REDACTED" && token.access != first.access, "a fresh token the replay issued")
        let me = try fresh.run(["--profile", "r", "api", "/api/user"])
        #expect(me.status == 0, "\(me)")
        #expect(try me.json()["username"]?.stringValue == "alice")
        #expect(try fresh.run(["--profile", "r", "auth", "refresh"]).status == 0)
        #expect(try fresh.run(["--profile", "r", "api", "/api/user"]).status == 0, "the refreshed token is the replay's too")
        let other = try fresh.run(["--profile", "r", "api", "/api/user"], environment: ["DOUCTL_TOKEN": "not-issued-by-the-replay"])
        #expect(other.status == 4, "a token the replay did not issue is refused: \(other)")
    }
}
