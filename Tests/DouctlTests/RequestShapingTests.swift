import DouctlJSON
import DouctlSandbox
import DouctlServer
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Profile-wide request shaping end to end: common params and headers, signing against a
/// sandbox that checks signatures, the response cache, record and replay, the client-side
/// rate limit and reply validation.
@Suite("Request shaping")
struct RequestShapingTests {
    // MARK: common params and headers

    @Test func commonParamsAndHeadersGoWithEveryRequest() throws {
        let server = try TestServer(json: "{}")
        let douctl = Douctl(environment: ["DOUCTL_TOKEN": "t", "DEVICE_ID": "dev-42"])
        #expect(try douctl.run("profile", "add", "shaped", "--preset", "douban", "--api-base", server.baseURL,
                               "--common-params", #"{"udid":"$DEVICE_ID","lang":"zh"}"#, "--common-headers", "X-App=douctl-test").status == 0)
        #expect(try douctl.run("--profile", "shaped", "api", "/v2/a").status == 0)
        let get = try #require(server.received.last)
        #expect(get.queryValue("udid") == "dev-42", "\"$VAR\" is read from the environment at send time")
        #expect(get.queryValue("lang") == "zh")
        #expect(get.header("X-App") == "douctl-test")

        #expect(try douctl.run("--profile", "shaped", "api", "/v2/b", "-f", "text=hi", "-f", "lang=en", "-H", "X-App: mine").status == 0)
        let post = try #require(server.received.last)
        #expect(post.form.map { "\($0.name)=\($0.value)" } == ["text=hi", "lang=en", "udid=dev-42"], "a field of the call wins")
        #expect(post.headers.values("X-App") == ["mine"], "a header of the call wins")
        #expect(post.query.isEmpty)

        let dry = try douctl.run("--profile", "shaped", "api", "/v2/a", "--dry-run")
        #expect(dry.stdoutText.contains("udid=dev-42") && dry.stdoutText.contains("X-App: douctl-test"))
        let other = try TestServer(json: "{}")
        #expect(try douctl.run("--profile", "shaped", "api", "\(other.baseURL)/x").status == 0)
        #expect(other.received.first?.queryValue("udid") == nil, "only the API's own origin gets them")
    }

    // MARK: signing

    func signedFixture(_ scheme: String, secret: String = "s3cret") throws -> SandboxFixture {
        let fixture = try SandboxFixture { $0.signing = "\(scheme):\(secret)" }
        try fixture.login()
        #expect(try fixture.douctl.run("config", "set", "signing", scheme, "--profile", "sandbox").status == 0)
        return fixture
    }

    @Test(arguments: ["hmac-sha1", "md5-sorted"])
    func signedRequestsPassTheSandboxsCheck(scheme: String) throws {
        let fixture = try signedFixture(scheme)
        let unsigned = try fixture.douctl.run("config", "unset", "signing", "--profile", "sandbox")
        #expect(unsigned.status == 0)
        let refused = try fixture.douctl.run("user", "me")
        #expect(refused.status == 1, "\(refused)")
        #expect(refused.errorLine.contains("invalid_signature"))

        #expect(try fixture.douctl.run("config", "set", "signing", scheme, "--profile", "sandbox").status == 0)
        let missing = try fixture.douctl.run("user", "me")
        #expect(missing.status == 3)
        #expect(missing.errorLine.contains("has no signing_secret"))
        #expect(try fixture.douctl.run(["config", "set", "signing_secret", "-", "--profile", "sandbox"], input: Array("s3cret\n".utf8)).status == 0)
        #expect(try fixture.douctl.run("user", "me").status == 0)
        let posted = try fixture.douctl.run("shuo", "post", "签名 & sign")
        #expect(posted.status == 0, "\(posted)")
        let request = try #require(fixture.sandbox.requests.last)
        #expect(request.queryValue(scheme == "hmac-sha1" ? "_sig" : "sign") != nil)
        // The secret never shows: not in config show, not in -v, not in a dry run.
        #expect(!(try fixture.douctl.run("profile", "show").stdoutText.contains("s3cret")))
        let verbose = try fixture.douctl.run("-v", "user", "me")
        #expect(!verbose.stderr.contains("s3cret"))

        #expect(try fixture.douctl.run(["config", "set", "signing_secret", "-", "--profile", "sandbox"], input: Array("wrong\n".utf8)).status == 0)
        #expect(try fixture.douctl.run("user", "me").status == 1)
    }

    @Test func aSecretComesFromStdinOrTheEnvironmentNeverArgv() throws {
        let fixture = try signedFixture("hmac-sha1")
        let argv = try fixture.douctl.run("config", "set", "signing_secret", "s3cret", "--profile", "sandbox")
        #expect(argv.status == 2)
        #expect(!argv.stderr.contains("s3cret"))
        #expect(try fixture.douctl.run("config", "set", "signing_secret", "$SANDBOX_SECRET", "--profile", "sandbox").status == 0)
        #expect(try fixture.douctl.run(["user", "me"], environment: ["SANDBOX_SECRET": "s3cret"]).status == 0)
        let unset = try fixture.douctl.run("user", "me")
        #expect(unset.status == 3)
        #expect(unset.errorLine.contains("$SANDBOX_SECRET, which is not set"))
    }

    @Test func aSigningCommandAddsWhatItPrints() throws {
        let server = try TestServer(json: "{}")
        let directory = TemporaryDirectory.make(prefix: "signer")
        let script = directory + "/sign.sh"
        try Data("""
        #!/bin/sh
        cat > '\(directory)/canonical.json'
        printf '{"headers":{"X-Signature":"sig-1"},"params":{"nonce":"n1"}}'
        """.utf8).write(to: URL(fileURLWithPath: script))
        chmod(script, 0o755)
        let douctl = Douctl(environment: ["DOUCTL_TOKEN": "t"])
        #expect(try douctl.run("profile", "add", "cmd", "--preset", "douban", "--api-base", server.baseURL,
                               "--signing", "command", "--signing-command", script).status == 0)
        let result = try douctl.run("--profile", "cmd", "api", "/v2/thing", "-f", "a=1")
        #expect(result.status == 0, "\(result)")
        let received = try #require(server.received.first)
        #expect(received.header("X-Signature") == "sig-1")
        #expect(received.queryValue("nonce") == "n1")
        let canonical = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/canonical.json"))))
        #expect(canonical["method"]?.stringValue == "POST")
        #expect(canonical["path"]?.stringValue == "/v2/thing")
        #expect(canonical["query"] == [["a", "1"]])

        try Data("#!/bin/sh\nexit 3\n".utf8).write(to: URL(fileURLWithPath: script))
        let failing = try douctl.run("--profile", "cmd", "api", "/v2/thing")
        #expect(failing.status == 3)
        #expect(failing.errorLine.hasPrefix("douctl: the signing command failed"))
        #expect(server.received.count == 1, "nothing unsigned went out")
    }

    // MARK: the response cache

    @Test func cacheServesRepeatsAndHonoursItsRules() throws {
        let calls = Counter()
        let flakyCalls = Counter()
        let server = try TestServer { received in
            let count = calls.next()
            if received.path == "/nostore" {
                return HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body: .bytes(Array("{}".utf8)))
            }
            if received.path == "/flaky", flakyCalls.next() > 0 {
                return HTTPServerResponse(status: 503, headers: [("Content-Type", "application/json")], body: .bytes(Array("{}".utf8)))
            }
            return HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(Array(#"{"n":\#(count)}"#.utf8)))
        }
        let cacheHome = TemporaryDirectory.make(prefix: "cache")
        let douctl = Douctl(environment: ["DOUCTL_TOKEN": "token-a", "XDG_CACHE_HOME": cacheHome])
        let first = try douctl.run("api", "/x", "--cache", "1m", "--api-base", server.baseURL)
        let second = try douctl.run("api", "/x", "--cache", "1m", "--api-base", server.baseURL)
        #expect(first.stdoutText == second.stdoutText)
        #expect(server.received.filter { $0.path == "/x" }.count == 1, "the second came from the cache")
        // One reply; beside it only the hit counts of `cache info` and their lock.
        let all = try FileManager.default.contentsOfDirectory(atPath: cacheHome + "/douctl")
        let files = all.filter { $0.hasSuffix(".reply") }
        #expect(files.count == 1)
        #expect(Set(all).subtracting(files).isSubset(of: ["counts.json", ".counts.lock"]), "\(all)")
        let mode = (try FileManager.default.attributesOfItem(atPath: cacheHome + "/douctl/" + (files.first ?? ""))[.posixPermissions] as? NSNumber)?.intValue
        #expect(mode == 0o600)
        let onDisk = try String(contentsOfFile: cacheHome + "/douctl/" + (files.first ?? ""), encoding: .utf8)
        #expect(!onDisk.contains("token-a"), "the key hashes the token; the token is not stored")
        // Another token is another user: no sharing.
        #expect(try douctl.run(["api", "/x", "--cache", "1m", "--api-base", server.baseURL], environment: ["DOUCTL_TOKEN": "token-b"]).status == 0)
        #expect(server.received.filter { $0.path == "/x" }.count == 2)
        // no-store, --cache-only, stale-if-error.
        try douctl.run("api", "/nostore", "--cache", "1m", "--api-base", server.baseURL)
        let notStored = try douctl.run("api", "/nostore", "--cache-only", "--api-base", server.baseURL)
        // Nothing was contacted: not a network error (7) but "not in the cache", exit 5.
        #expect(notStored.status == 5, "\(notStored)")
        #expect(notStored.errorLine == "douctl: not in the cache: GET /nostore (--cache-only sends nothing; nothing was contacted)", "\(notStored)")
        let cacheOnly = try douctl.run("api", "/x", "--cache-only", "--api-base", server.baseURL)
        #expect(cacheOnly.stdoutText == first.stdoutText)
        let warm = try douctl.run("api", "/flaky", "--cache", "1m", "--api-base", server.baseURL)
        let stale = try douctl.run("api", "/flaky", "--cache", "0s", "--no-retry", "--api-base", server.baseURL)
        #expect(stale.status == 0, "\(stale)")
        #expect(stale.stdoutText == warm.stdoutText)
        #expect(stale.stderr.contains("douctl: warning: the server answered HTTP 503; using the cached reply"))
        // info and clear.
        let info = try douctl.run("cache", "info").json()
        #expect(info["entries"]?.intValue == 3)
        #expect(try douctl.run("cache", "clear").status == 0)
        #expect(try douctl.run("cache", "info").json()["entries"]?.intValue == 0)
    }

    @Test func cacheStaysWithinItsBoundLeastRecentlyUsedFirst() throws {
        let big = String(repeating: "x", count: 600)
        let server = try TestServer(json: #"{"pad":"\#(big)"}"#)
        let cacheHome = TemporaryDirectory.make(prefix: "cache")
        let douctl = Douctl(environment: ["DOUCTL_TOKEN": "t", "XDG_CACHE_HOME": cacheHome])
        #expect(try douctl.run("profile", "add", "small", "--preset", "douban", "--api-base", server.baseURL, "--cache-max-mb", "0.002").status == 0)
        for path in ["/a", "/b", "/c"] {
            #expect(try douctl.run("--profile", "small", "api", path, "--cache", "1h").status == 0)
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(try douctl.run("--profile", "small", "cache", "info").json()["entries"]?.intValue == 2, "2 kB holds two ~800-byte replies")
        let before = server.received.count
        try douctl.run("--profile", "small", "api", "/c", "--cache", "1h")
        #expect(server.received.count == before, "the newest stayed")
        try douctl.run("--profile", "small", "api", "/a", "--cache", "1h")
        #expect(server.received.count == before + 1, "the oldest went first")
    }

    // MARK: record and replay

    @Test func aRecordedSessionBecomesAFakeServer() throws {
        let fixture = try SandboxFixture()
        let tokens = try fixture.login()
        let recordings = TemporaryDirectory.make(prefix: "recorded")
        let me = try fixture.douctl.run("user", "me", "--record", recordings)
        let status = try fixture.douctl.run("shuo", "get", "1402640309", "--record", recordings)
        let missing = try fixture.douctl.run("shuo", "get", "999999", "--record", recordings)
        #expect(me.status == 0 && status.status == 0 && missing.status == 5)
        let files = try FileManager.default.contentsOfDirectory(atPath: recordings).sorted()
        #expect(files == ["0001-GET-v2_user_~me.json", "0002-GET-shuo_v2_statuses_1402640309.json", "0003-GET-shuo_v2_statuses_999999.json"])
        for file in files {
            let text = try String(contentsOfFile: recordings + "/" + file, encoding: .utf8)
            #expect(!text.contains(tokens.access), "\(file) holds no token")
        }

        let replayed = Douctl()
        let server = try RunningDouctl(replayed, ["sandbox", "--replay", recordings])
        let url = try server.waitForStdout { $0.contains("\n") }.trimmingCharacters(in: .whitespacesAndNewlines)
        let other = Douctl(environment: ["DOUCTL_TOKEN": "anything"])
        #expect(try other.run("user", "me", "--api-base", url).stdout == me.stdout)
        #expect(try other.run("shuo", "get", "1402640309", "--api-base", url).stdout == status.stdout)
        let notFound = try other.run("shuo", "get", "999999", "--api-base", url)
        #expect(notFound.status == 5)
        let unknown = try other.run("api", "/v2/never", "--api-base", url)
        #expect(unknown.status == 5)
        #expect(unknown.errorLine.contains("no_recording"))
        server.kill(SIGTERM)
        _ = server.finish()
    }

    // MARK: client-side rate limit

    /// The quota holds across processes. The window (10 minutes) is far longer than any
    /// scheduling delay on a loaded machine, so the check is exact: of the attempts from 3
    /// processes racing, exactly 4 reach the server, whenever each one ran; the others wait
    /// for the window and are stopped by --max-time (exit 7). (The earlier version timed 12
    /// requests against a 2 s window by the server's clock and failed under load.) How the
    /// waits are timed is checked on a clock the test owns: RateLimiterTests.
    @Test func theRateLimitHoldsAcrossProcesses() throws {
        let server = try TestServer(json: "{}")
        let douctl = Douctl(environment: ["DOUCTL_TOKEN": "t"])
        #expect(try douctl.run("profile", "add", "quota", "--preset", "douban", "--api-base", server.baseURL, "--rate-limit", "4/10min").status == 0)
        let results = LockedValue<[(status: Int32, line: String)]>([])
        let group = DispatchGroup()
        for _ in 0..<3 {
            group.enter()
            DispatchQueue.global().async {
                // Each process sends until one is held back past --max-time: at most the
                // whole quota (4) and then the held one, whichever process ran first.
                for _ in 0..<5 {
                    guard let result = try? douctl.run(["--profile", "quota", "--max-time", "15", "api", "/x"], timeout: 120) else { break }
                    results.withLock { $0.append((result.status, result.errorLine)) }
                    if result.status != 0 { break }
                }
                group.leave()
            }
        }
        group.wait()
        let all = results.value
        #expect(server.received.count == 4, "the quota, exactly: \(server.received.count) requests arrived")
        #expect(all.filter { $0.status == 0 }.count == 4)
        let held = all.filter { $0.status != 0 }
        #expect(held.count == 3, "each process's next request waits for the window")
        for result in held {
            #expect(result.status == 7 && result.line.contains("--max-time 15s"), "exit \(result.status): \(result.line)")
        }
        let state = try JSONParser.parse(FileIO.readFile(douctl.configDirectory + "/.ratelimit-quota.json"))
        #expect(state["sent"]?.arrayValue?.count == 4, "the shared record holds the four sends")
    }

    @Test func theSandboxQuotaSwitch() throws {
        let fixture = try SandboxFixture { $0.quota = "3/1min" }
        try fixture.login()
        for _ in 0..<3 { #expect(try fixture.douctl.run("user", "me").status == 0) }
        let over = try fixture.douctl.run("user", "me", "--no-retry")
        #expect(over.status == 6, "\(over)")
        #expect(over.errorLine.contains("rate_limit_exceeded1"))
    }

    // MARK: reply validation

    @Test(arguments: [
        (["shuo", "get", "1"], #"{"id":1,"text":"x"}"#, "douctl: the status in the reply has no 'created_at' (GET /shuo/v2/statuses/1)"),
        (["user", "me"], #"{"id":"1","name":"阿北"}"#, "douctl: the user in the reply has no 'uid' (GET /v2/user/~me)"),
        (["shuo", "post", "hi"], #"[]"#, "douctl: the new status in the reply is not a JSON object (POST /shuo/v2/statuses/)"),
    ])
    func typedCommandsRefuseABrokenReply(arguments: [String], reply: String, line: String) throws {
        let server = try TestServer(json: reply)
        let result = try Douctl(environment: ["DOUCTL_TOKEN": "t"]).run(arguments + ["--api-base", server.baseURL])
        #expect(result.status == 8, "\(result)")
        #expect(result.errorLine == line)
        #expect(result.stdout.isEmpty)
    }
}
