import DouctlJSON
import DouctlSandbox
import DouctlServer
import DouctlTestSupport
import Foundation
import Testing

/// Live secrets stay out of what douctl writes or prints: recordings (`--record`), `config
/// get|list`, and the response cache, which never answers for another identity.
@Suite("Secrets at rest")
struct SecretsTests {
    static let access = "at-0123456789abcdef"
    static let refresh = "rt-0123456789abcdef"
    static let clientSecret = "cs-0123456789abcdef"
    static let cookie = "ck-0123456789abcdef"

    /// Echoes every secret it knows of, everywhere a reply can hold one: a header, a JSON
    /// body under an innocent key and inside longer text, a text body, binary bytes.
    static func echoServer() throws -> TestServer {
        try TestServer { received in
            let echoed = [access, refresh, clientSecret, cookie].joined(separator: " ")
            let headers = [("X-Debug-Seen", echoed), ("Set-Cookie", "sid=\(cookie); Path=/")]
            switch received.path {
            case "/text":
                return HTTPServerResponse(status: 200, headers: [("Content-Type", "text/plain")] + headers, body: .bytes(Array("you sent \(echoed)".utf8)))
            case "/bin":
                return HTTPServerResponse(status: 200, headers: [("Content-Type", "application/octet-stream")] + headers,
                                          body: .bytes([0xFF, 0xFE] + Array(echoed.utf8) + [0x00]))
            default:
                let json = #"{"seen":"Bearer \#(access)","list":["x \#(refresh) y",{"deep":"\#(clientSecret)"}],"c":"\#(cookie)","\#(access)":1}"#
                return HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json")] + headers, body: .bytes(Array(json.utf8)))
            }
        }
    }

    @Test func recordingsScrubEveryLiveSecretWhereverTheServerEchoesIt() throws {
        let server = try Self.echoServer()
        let douctl = Douctl()
        #expect(try douctl.run("profile", "add", "echo", "--preset", "douban", "--api-base", server.baseURL, "--client-secret", "-", input: Self.clientSecret).status == 0)
        try Credentials.write(["echo": Self.access], in: douctl.configDirectory, expiresAt: "2099-01-01T00:00:00Z", refreshTokens: ["echo": Self.refresh])
        let recordings = TemporaryDirectory.make(prefix: "recorded")
        for arguments in [["api", "/v2/echo/\(Self.access)", "-f", "q=\(Self.refresh)", "-X", "GET"], ["api", "/text", "-f", "note=\(Self.clientSecret)"],
                          ["api", "/bin", "-H", "X-Mine: \(Self.access)"]] {
            let result = try douctl.run(["--profile", "echo", "--record", recordings] + arguments)
            #expect(result.status == 0, "\(arguments): \(result)")
        }
        try Self.expectScrubbed(recordings, count: 3, secrets: [Self.access, Self.refresh, Self.clientSecret])

        // A cookie session (Coding's password login): the cookie's value is a live secret too.
        let coding = Douctl()
        #expect(try coding.run("profile", "add", "coder", "--preset", "coding-sandbox", "--api-base", server.baseURL, "--client-secret", "-", input: Self.clientSecret).status == 0)
        let jar = coding.configDirectory + "/cookies-coder.json"
        try Data(#"{"cookies":[{"name":"sid","value":"\#(Self.cookie)","path":"/"}]}"#.utf8).write(to: URL(fileURLWithPath: jar))
        chmod(jar, 0o600)
        let codingRecordings = TemporaryDirectory.make(prefix: "recorded")
        let result = try coding.run("--profile", "coder", "--record", codingRecordings, "api", "/api/echo/\(Self.cookie)", "--raw")
        #expect(result.status == 0, "\(result)")
        try Self.expectScrubbed(codingRecordings, count: 1, secrets: [Self.cookie, Self.clientSecret])
    }

    static func expectScrubbed(_ directory: String, count: Int, secrets: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(files.count == count, sourceLocation: sourceLocation)
        for file in files {
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/" + file)))
            let text = String(decoding: bytes, as: UTF8.self)
            for secret in secrets {
                #expect(!text.contains(secret), "\(file) holds \(secret):\n\(text)", sourceLocation: sourceLocation)
            }
            // Base64 bodies are decoded and checked too.
            let json = try JSONParser.parse(bytes)
            if let base64 = json["response"]?["body"]?["base64"]?.stringValue, let decoded = Data(base64Encoded: base64) {
                let raw = String(decoding: decoded, as: UTF8.self)
                for secret in secrets {
                    #expect(!raw.contains(secret), "\(file)'s base64 body holds \(secret)", sourceLocation: sourceLocation)
                }
                #expect(raw.contains("REDACTED"), sourceLocation: sourceLocation)
            }
            #expect(text.contains("REDACTED"), sourceLocation: sourceLocation)
        }
    }

    /// A URL's own credentials (`http://alice:PW@host/x`, sent as Basic by libcurl) echoed
    /// back by the server: neither the password nor the Basic value is left in a recording
    /// or in the `-v` body, as the request header already shows `***`.
    @Test func urlCredentialsEchoedBackAreScrubbedFromRecordingsAndVerbose() throws {
        let password = "pw-0123456789abcdef"
        let basic = Data("alice:\(password)".utf8).base64EncodedString()
        let server = try TestServer { received in
            let auth = received.header("Authorization") ?? ""
            let decoded = auth.hasPrefix("Basic ") ? String(decoding: Data(base64Encoded: String(auth.dropFirst(6))) ?? Data(), as: UTF8.self) : ""
            let json = #"{"authorization":"\#(auth)","decoded":"\#(decoded)","note":"you are \#(decoded.split(separator: ":").last ?? "")"}"#
            return HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json"), ("X-Seen", auth)], body: .bytes(Array(json.utf8)))
        }
        let douctl = Douctl()
        let recordings = TemporaryDirectory.make(prefix: "recorded")
        let url = server.baseURL.replacingOccurrences(of: "http://", with: "http://alice:\(password)@") + "/echo"
        let result = try douctl.run("--record", recordings, "-v", "api", url)
        #expect(result.status == 0, "\(result)")
        #expect(server.received.first?.header("Authorization") == "Basic \(basic)", "the credentials were sent")
        #expect(result.stdoutText.contains(password), "stdout is the reply, as asked")
        for secret in [password, basic] {
            #expect(!result.stderr.contains(secret), "-v shows \(secret):\n\(result.stderr)")
        }
        #expect(result.stderr.contains("Authorization: Basic ***"), "\(result.stderr)")
        try Self.expectScrubbed(recordings, count: 1, secrets: [password, basic])
    }

    @Test func configGetAndListMaskTheProxyPasswordAndSecrets() throws {
        let server = try TestServer(json: #"{"ok":true}"#)
        let douctl = Douctl()
        let proxy = "http://alice:s3cret-pass@127.0.0.1:\(unusedPort())"
        #expect(try douctl.run("profile", "add", "behind", "--api-base", server.baseURL, "--proxy", proxy, "--client-secret", "-", input: Self.clientSecret).status == 0)
        let get = try douctl.run("config", "get", "proxy", "--profile", "behind")
        #expect(get.status == 0, "\(get)")
        #expect(get.stdoutText == "http://alice:***@127.0.0.1:\(proxy.split(separator: ":").last ?? "")\n", "\(get)")
        let secret = try douctl.run("config", "get", "client_secret", "--profile", "behind")
        #expect(secret.stdoutText == "cs-0********\n", "\(secret)")
        let list = try douctl.run("config", "list", "--profile", "behind")
        #expect(!list.stdoutText.contains("s3cret-pass") && !list.stdoutText.contains(Self.clientSecret), "\(list)")
        #expect(list.stdoutText.contains("proxy=http://alice:***@127.0.0.1:"), "\(list)")
        // Asked for: in clear.
        #expect(try douctl.run("config", "get", "proxy", "--show-secrets", "--profile", "behind").stdoutText == proxy + "\n")
        #expect(try douctl.run("config", "get", "client_secret", "--show-secrets", "--profile", "behind").stdoutText == Self.clientSecret + "\n")
        #expect(try douctl.run("config", "list", "--show-secrets", "--profile", "behind").stdoutText.contains("proxy=" + proxy))
        // The proxy is used (and fails: nothing listens): neither the error nor -v shows the password.
        let sent = try douctl.run("--profile", "behind", "api", "/x", "-v", "--no-retry")
        #expect(sent.status == 7, "\(sent)")
        #expect(!sent.stderr.contains("s3cret-pass"), "\(sent)")
        #expect(server.received.isEmpty)
    }

    // MARK: the response cache and identities

    /// Logs in to coding-sandbox with the password flow (no captcha in this sandbox).
    static func passwordLogin(_ fixture: SandboxFixture, user: String) throws {
        let result = try fixture.douctl.run(["--profile", "coding-sandbox", "auth", "login", "--password"], input: Array("\(user)\n\(Sandbox.codingPassword)\n".utf8))
        #expect(result.status == 0, "\(result)")
    }

    @Test func theCacheNeverAnswersForAnotherCookieSessionOrAfterLogout() throws {
        let cacheHome = TemporaryDirectory.make(prefix: "cache")
        let fixture = try SandboxFixture({ $0.codingCaptchaRequired = false }, environment: ["XDG_CACHE_HOME": cacheHome])
        try fixture.douctl.run("profile", "use", "coding-sandbox")
        try Self.passwordLogin(fixture, user: "coder")
        let first = try fixture.douctl.run("user", "me", "--cache", "10m")
        #expect(try first.json()["global_key"]?.stringValue == "coder", "\(first)")
        let sent = fixture.sandbox.requests.count
        let again = try fixture.douctl.run("user", "me", "--cache", "10m")
        #expect(again.stdout == first.stdout)
        #expect(fixture.sandbox.requests.count == sent, "the same cookie session is served from the cache")

        // Nothing on disk names the session, and no Set-Cookie was kept.
        let jar = try String(contentsOfFile: fixture.douctl.configDirectory + "/cookies-coding-sandbox.json", encoding: .utf8)
        let sid = try #require((try JSONParser.parse(Array(jar.utf8)))["cookies"]?.arrayValue?.first { $0["name"]?.stringValue == "sid" }?["value"]?.stringValue)
        for file in try FileManager.default.contentsOfDirectory(atPath: cacheHome + "/douctl") {
            let text = try String(contentsOfFile: cacheHome + "/douctl/" + file, encoding: .utf8)
            #expect(!text.contains(sid), "\(file) holds the session cookie")
            #expect(!text.lowercased().contains("set-cookie"), "\(file) holds a Set-Cookie")
        }

        // Another account: its own reply, not the first one's.
        try Self.passwordLogin(fixture, user: "devmei")
        let other = try fixture.douctl.run("user", "me", "--cache", "10m")
        #expect(try other.json()["global_key"]?.stringValue == "devmei", "\(other)")

        // Logged out: not logged in, whatever the cache holds.
        #expect(try fixture.douctl.run("auth", "logout").status == 0)
        let after = try fixture.douctl.run("user", "me", "--cache", "10m")
        #expect(after.status == 4, "\(after)")
        #expect(!after.stdoutText.contains("devmei"))
        let cacheOnly = try fixture.douctl.run("user", "me", "--cache-only")
        #expect(cacheOnly.status == 4, "\(cacheOnly)")
        #expect(try fixture.douctl.run("cache", "info").json()["entries"]?.intValue == 0, "logout dropped the profile's replies")
    }

    @Test func loginAndLogoutDropOnlyTheirProfilesCachedReplies() throws {
        let cacheHome = TemporaryDirectory.make(prefix: "cache")
        let fixture = try SandboxFixture({ $0.codingCaptchaRequired = false }, environment: ["XDG_CACHE_HOME": cacheHome])
        try fixture.login()
        #expect(try fixture.douctl.run("--profile", "sandbox", "user", "me", "--cache", "10m").status == 0)
        try Self.passwordLogin(fixture, user: "coder")
        _ = try fixture.douctl.run("--profile", "coding-sandbox", "user", "me", "--cache", "10m")
        #expect(try fixture.douctl.run("cache", "info").json()["entries"]?.intValue == 2)
        // A new login of coding-sandbox drops coding-sandbox's replies, not sandbox's.
        try Self.passwordLogin(fixture, user: "coder")
        #expect(try fixture.douctl.run("cache", "info").json()["entries"]?.intValue == 1)
        let before = fixture.sandbox.requests.count
        #expect(try fixture.douctl.run("--profile", "sandbox", "user", "me", "--cache", "10m").status == 0)
        #expect(fixture.sandbox.requests.count == before, "sandbox's reply is still cached")
        #expect(try fixture.douctl.run("--profile", "sandbox", "auth", "logout").status == 0)
        #expect(try fixture.douctl.run("cache", "info").json()["entries"]?.intValue == 0)
    }
}
