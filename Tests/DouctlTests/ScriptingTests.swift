import DouctlJSON
import DouctlSandbox
import DouctlServer
import Foundation
import Testing
import DouctlTestSupport

/// douctl in shell scripts and `| jq` pipelines: the built binary against the sandbox or a
/// purpose-built server.
@Suite("Scripting")
struct ScriptingTests {
    // MARK: errors never poison a pipeline

    @Test func anErrorReplyStaysOffStdoutInAPipe() throws {
        let server = try TestServer(status: 404, json: #"{"msg":"uri_not_found","code":1001,"request":"GET /x"}"#)
        let douctl = Douctl()
        let piped = try douctl.run("api", "/x", "--api-base", server.baseURL)
        #expect(piped.status == 5)
        #expect(piped.stdout.isEmpty, "a script reading stdout never sees the error document")
        #expect(piped.stderr == "{\"msg\":\"uri_not_found\",\"code\":1001,\"request\":\"GET /x\"}\ndouctl: not found (uri_not_found, code 1001, GET /x)\n")
        let asked = try douctl.run("api", "/x", "--api-base", server.baseURL, "--error-body", "stdout")
        #expect(asked.stdoutText == "{\"msg\":\"uri_not_found\",\"code\":1001,\"request\":\"GET /x\"}\n")
        #expect(asked.stderr == "douctl: not found (uri_not_found, code 1001, GET /x)\n")
        let none = try douctl.run("api", "/x", "--api-base", server.baseURL, "--error-body", "none", "--include")
        #expect(none.stdout.isEmpty)
        #expect(none.stderr == "douctl: not found (uri_not_found, code 1001, GET /x)\n")
        let included = try douctl.run("api", "/x", "--api-base", server.baseURL, "--include")
        #expect(included.stdout.isEmpty)
        #expect(included.stderr.hasPrefix("HTTP/1.1 404"))
    }

    @Test func typedCommandsPrintTheBodyOnlyWhenAsked() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        let plain = try fixture.douctl.run("shuo", "get", "999999")
        #expect(plain.status == 5)
        #expect(plain.stdout.isEmpty)
        #expect(plain.stderr.components(separatedBy: "\n").filter { !$0.isEmpty }.count == 1, "one line: \(plain.stderr)")
        let asked = try fixture.douctl.run("shuo", "get", "999999", "--error-body", "stderr")
        #expect(asked.stdout.isEmpty)
        #expect(asked.stderr.hasPrefix("{\"msg\":\"uri_not_found\""))
    }

    @Test func aWalkThatFailsKeepsWhatItPrintedAndNamesThePage() throws {
        let server = try TestServer { received in
            let start = Int(received.queryValue("start") ?? "0") ?? 0
            if start >= 4 { return HTTPServerResponse(status: 500, headers: [("Content-Type", "application/json")], body: .bytes(Array(#"{"msg":"boom","code":999}"#.utf8))) }
            let items = (start..<start + 2).map { #"{"id":\#($0)}"# }.joined(separator: ",")
            return HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(Array("[\(items)]".utf8)))
        }
        let douctl = Douctl()
        let result = try douctl.run("api", "/list", "-f", "count=2", "--paginate", "--api-base", server.baseURL, "--no-retry")
        #expect(result.status == 1)
        #expect(result.stdoutText == "{\"id\":0}\n{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n")
        #expect(result.stderr.hasSuffix("douctl: the API answered HTTP 500 (boom, code 999, GET /list); page 3 failed; the 4 items before it were printed\n"))
        let slurped = try douctl.run("api", "/list", "-f", "count=2", "--paginate", "--slurp", "--api-base", server.baseURL, "--no-retry")
        #expect(slurped.status == 1)
        #expect(try slurped.json() == JSONParser.parse(Array("[{\"id\":0},{\"id\":1},{\"id\":2},{\"id\":3}]".utf8)), "the array is closed, so it still parses")
        let firstPage = try douctl.run("api", "/list", "-f", "start=4", "-f", "count=2", "--paginate", "--slurp", "--api-base", server.baseURL, "--no-retry")
        #expect(firstPage.status == 1)
        #expect(firstPage.stdout.isEmpty, "nothing printed, nothing to close: stdout stays empty on the error")
        let empty = try TestServer(json: "[]")
        let none = try douctl.run("api", "/list", "--paginate", "--slurp", "--api-base", empty.baseURL)
        #expect(none.stdoutText == "[]\n")
    }

    // MARK: JSON request bodies

    @Test func jsonBodiesCarryTypesNestingAndRawValues() throws {
        let server = try TestServer(json: "{}")
        let douctl = Douctl()
        let result = try douctl.run("api", "/x", "--json", "-f", "name=007", "-F", "count=3", "-F", "ok=true", "-F", "none=null",
                                    "-F", "user[name]=阿北", "-F", "user[age]=40", "-F", "tags[]=a", "-F", "tags[]=b",
                                    "-F", #"raw:={"x":[1,2]}"#, "--api-base", server.baseURL)
        #expect(result.status == 0, "\(result)")
        let request = try #require(server.received.first)
        #expect(request.method == "POST")
        #expect(request.header("Content-Type") == "application/json")
        #expect(request.bodyText == #"{"name":"007","count":3,"ok":true,"none":null,"user":{"name":"阿北","age":40},"tags":["a","b"],"raw":{"x":[1,2]}}"#)
        let bad = try douctl.run("api", "/x", "--json", "-F", "raw:={nope", "--api-base", server.baseURL)
        #expect(bad.status == 2)
        #expect(server.received.count == 1)
    }

    @Test func bodyFormatMakesJSONTheProfileDefault() throws {
        let server = try TestServer(json: "{}")
        let douctl = Douctl()
        #expect(try douctl.run("profile", "add", "open", "--preset", "coding", "--api-base", server.baseURL, "--body-format", "json").status == 0)
        let result = try douctl.run("--profile", "open", "api", "/open-api", "-F", "Action=DescribeProject", "-F", "ProjectId=7")
        #expect(result.status == 0, "\(result)")
        #expect(server.received.first?.header("Content-Type") == "application/json")
        #expect(server.received.first?.bodyText == #"{"Action":"DescribeProject","ProjectId":7}"#)
    }

    @Test(arguments: [("  {\"a\": 1}", "application/json"), ("[1]", "application/json"), ("plain text", "application/octet-stream")])
    func inputFromAPipeIsLabelledJSONWhenItIs(body: String, expected: String) throws {
        let server = try TestServer(json: "{}")
        let result = try Douctl().run(["api", "/blob", "--input", "-", "--api-base", server.baseURL], input: Array(body.utf8))
        #expect(result.status == 0, "\(result)")
        #expect(server.received.first?.header("Content-Type") == expected)
        #expect(server.received.first?.bodyText == body, "the bytes read to look are sent too")
    }

    // MARK: --slurp

    @Test func slurpPrintsOneArrayOfEveryItem() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        let lines = try fixture.douctl.run("shuo", "timeline", "--all", "--count", "3").lines()
        #expect(lines.count > 3, "more than one page")
        let slurped = try fixture.douctl.run("shuo", "timeline", "--all", "--count", "3", "--slurp")
        #expect(slurped.status == 0)
        #expect(try slurped.json() == .array(lines))
        let pretty = try fixture.douctl.run("shuo", "timeline", "--all", "--count", "3", "--slurp", "--pretty")
        #expect(try pretty.json() == .array(lines))
        #expect(pretty.stdoutText.hasPrefix("[\n  {\n    \"id\""))
        let alone = try fixture.douctl.run("shuo", "timeline", "--slurp")
        #expect(alone.status == 2)
    }

    // MARK: retries you can tune

    @Test(arguments: [(["--retry", "0"], 1), (["--no-retry"], 1), ([String](), 3), (["--retry", "4"], 5)])
    func retryCountIsTunable(options: [String], attempts: Int) throws {
        let server = try TestServer(status: 503, json: "{}", headers: [("Retry-After", "0")])
        let result = try Douctl().run(["api", "/x", "--api-base", server.baseURL] + options)
        #expect(result.status == 1, "\(result)")
        #expect(server.received.count == attempts)
    }

    @Test func retryMaxTimeStopsRetrying() throws {
        let server = try TestServer(status: 503, json: "{}", headers: [("Retry-After", "2")])
        let result = try Douctl().run("api", "/x", "--api-base", server.baseURL, "--retry", "5", "--retry-max-time", "1")
        #expect(result.status == 1)
        #expect(server.received.count == 1, "the first retry would start after 2 s, past the 1 s budget")
    }

    @Test func maxTimeBoundsTheWholeCommand() throws {
        let server = try TestServer { _ in
            Thread.sleep(forTimeInterval: 10)
            return HTTPServerResponse(status: 200, headers: [], body: .bytes(Array("{}".utf8)))
        }
        let started = Date()
        let result = try Douctl().run("api", "/slow", "--api-base", server.baseURL, "--max-time", "1")
        #expect(result.status == 7, "\(result)")
        #expect(result.errorLine == "douctl: timed out: the command ran longer than --max-time 1s")
        #expect(Date().timeIntervalSince(started) < 8)
    }

    @Test func waitOnRateLimitWaitsAndGoesOn() throws {
        let calls = Counter()
        let server = try TestServer { _ in
            if calls.next() < 2 {
                return HTTPServerResponse(status: 429, headers: [("Content-Type", "application/json"), ("Retry-After", "1")],
                                          body: .bytes(Array(#"{"msg":"rate_limit_exceeded1","code":111}"#.utf8)))
            }
            return HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(Array(#"{"id":1}"#.utf8)))
        }
        // A POST is waited out too: a rate-limited request was not processed.
        let result = try Douctl().run("api", "/post", "-f", "text=hi", "--api-base", server.baseURL, "--wait-on-rate-limit")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == "{\"id\":1}\n")
        #expect(result.stderr.contains("douctl: rate limited (Retry-After: 1; before try 2); waiting 1s"))
        #expect(server.received.count == 3)
        let without = try Douctl().run("api", "/post", "-f", "text=hi", "--api-base", server.baseURL)
        #expect(without.status == 0, "the counter moved on; this one is answered")
    }

    /// `download --wait-on-rate-limit` waits as `api` does (before: exit 6 at the first 429).
    /// `--no-retry` kept from when the HTTP layer retried 429s itself; now the quota layer alone does.
    @Test func downloadWaitsOnRateLimitToo() throws {
        let calls = Counter()
        let server = try TestServer { _ in
            if calls.next() < 1 {
                return HTTPServerResponse(status: 429, headers: [("Content-Type", "application/json"), ("Retry-After", "1")],
                                          body: .bytes(Array(#"{"msg":"rate_limit_exceeded1","code":111}"#.utf8)))
            }
            return HTTPServerResponse(status: 200, headers: [("Content-Type", "application/octet-stream")], body: .bytes(Array("payload".utf8)))
        }
        let directory = TemporaryDirectory.make(prefix: "dl-ratelimit")
        let result = try Douctl().run("download", server.baseURL + "/x.bin", "-o", directory + "/x.bin", "--wait-on-rate-limit", "--no-retry")
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.contains("douctl: rate limited (Retry-After: 1; before try 2); waiting 1s"), "\(result)")
        #expect(server.received.count == 2)
        #expect(try String(contentsOfFile: directory + "/x.bin", encoding: .utf8) == "payload")
    }

    // MARK: --dry-run

    /// `--dry-run` never changes which errors a user sees: a malformed `--cache` is exit 2
    /// with its line and the usage line both ways, and nothing reaches the server. Before
    /// issue 38 the dry run exited 0 (the duration was read only when a cache was built).
    @Test func aMalformedCacheDurationIsExit2WithAndWithoutDryRun() throws {
        let server = try TestServer(json: #"{"id":1}"#)
        let douctl = Douctl(environment: ["DOUCTL_TOKEN": "tok-123"])
        var stderrs: [String] = []
        for extra in [[], ["--dry-run"]] {
            let result = try douctl.run(["api", "/v2/x", "--cache", "5q", "--api-base", server.baseURL] + extra)
            #expect(result.status == 2, "\(extra): \(result)")
            #expect(result.stderr.hasPrefix("douctl: invalid value '5q' for --cache: expected a duration such as 30s, 5m, 1h\nusage: douctl api"), "\(result.stderr)")
            #expect(result.stdout.isEmpty)
            stderrs.append(result.stderr)
        }
        #expect(stderrs[0] == stderrs[1])
        #expect(server.received.isEmpty, "nothing sent")
        let valid = try douctl.run("api", "/v2/x", "--cache", "5m", "--api-base", server.baseURL, "--dry-run")
        #expect(valid.status == 0, "\(valid)")
    }

    @Test func dryRunPrintsACurlCommandThatSendsTheSameRequest() throws {
        try Tools.require("curl")
        let server = try TestServer(json: #"{"id":1,"text":"hello","created_at":"2026-11-23 19:00:00"}"#)
        let picture = try TemporaryDirectory.file(named: "my pic.png", bytes: PNGFixture.bytes)
        let douctl = Douctl(environment: ["DOUCTL_TOKEN": "tok-123"])
        let cases: [[String]] = [
            ["api", "/v2/x", "-f", "text=it's $HOME & 你好", "-F", "n=1"],
            ["api", "/v2/x", "--json", "-F", "a[b]=1", "-f", "q=\"quoted\""],
            ["api", "-X", "DELETE", "/v2/x/1", "-f", "reason=a b"],
            ["api", "/shuo/v2/statuses/", "-f", "text=图", "--attach", "image=\(picture)"],
            ["shuo", "post", "hello", "--image", picture],
        ]
        for arguments in cases {
            let real = try douctl.run(arguments + ["--api-base", server.baseURL])
            #expect(real.status == 0, "\(arguments): \(real)")
            let sent = try #require(server.received.last)
            let before = server.received.count
            let dry = try douctl.run(arguments + ["--api-base", server.baseURL, "--dry-run"])
            #expect(dry.status == 0, "\(dry)")
            #expect(server.received.count == before, "a dry run sends nothing")
            #expect(!dry.stdoutText.contains("tok-123"), "the token is a variable in the command")
            #expect(dry.stdoutText.contains("$DOUCTL_TOKEN"))
            // Run the printed command as a shell would; the request must match.
            #expect(try Self.runAsAShellWould(dry.stdoutText) == 0, "\(dry.stdoutText)")
            let replayed = try #require(server.received.last)
            #expect(replayed.method == sent.method, "\(arguments)")
            #expect(replayed.target == sent.target, "\(arguments)")
            #expect(replayed.header("Authorization") == sent.header("Authorization"))
            #expect(replayed.header("User-Agent") == sent.header("User-Agent"))
            if sent.header("Content-Type")?.hasPrefix("multipart/") == true {
                let a = try #require(multipartParts(sent.body, contentType: sent.header("Content-Type")))
                let b = try #require(multipartParts(replayed.body, contentType: replayed.header("Content-Type")))
                #expect(a.map(\.disposition) == b.map(\.disposition), "\(arguments)")
                #expect(a.map(\.contentType) == b.map(\.contentType))
                #expect(a.map(\.body) == b.map(\.body))
            } else {
                #expect(replayed.header("Content-Type") == sent.header("Content-Type"), "\(arguments)")
                #expect(replayed.body == sent.body, "\(arguments): \(replayed.bodyText) vs \(sent.bodyText)")
            }
        }
    }

    /// Runs a printed `--dry-run` command with `sh -e` (the text ends in a newline, so a
    /// "> /dev/null" appended after it would be a command of its own and hide curl's exit
    /// status), the token in the environment; its exit status.
    static func runAsAShellWould(_ command: String, token: String = "tok-123") throws -> Int32 {
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-ec", command]
        shell.standardOutput = FileHandle.nullDevice
        shell.environment = ["DOUCTL_TOKEN": token, "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"]
        try shell.runAlone()
        shell.waitUntilExit()
        return shell.terminationStatus
    }

    /// curl splits -F values at `;` and `,`: a file named `we;ird,"name".png` must be quoted
    /// inside the -F value (`-F 'image=@"we;ird,\"name\".png";…'`) for the printed line to run.
    /// Before: curl failed (exit 26, "Failed to open/read local data").
    @Test func dryRunCurlLineRunsForAFileNameWithSemicolonCommaAndQuotes() throws {
        try Tools.require("curl")
        let server = try TestServer(json: #"{"id":1,"text":"hello","created_at":"2026-11-23 19:00:00"}"#)
        let picture = try TemporaryDirectory.file(named: #"we;ird,"name".png"#, bytes: PNGFixture.bytes)
        let douctl = Douctl(environment: ["DOUCTL_TOKEN": "tok-123"])
        for arguments in [["api", "/shuo/v2/statuses/", "-f", "text=图", "--attach", "image=\(picture)"], ["shuo", "post", "hello", "--image", picture]] {
            let real = try douctl.run(arguments + ["--api-base", server.baseURL])
            #expect(real.status == 0, "\(arguments): \(real)")
            let sent = try #require(server.received.last)
            let dry = try douctl.run(arguments + ["--api-base", server.baseURL, "--dry-run"])
            #expect(dry.status == 0, "\(dry)")
            #expect(try Self.runAsAShellWould(dry.stdoutText) == 0, "\(dry.stdoutText)")
            let replayed = try #require(server.received.last)
            #expect(replayed.target == sent.target)
            let a = try #require(multipartParts(sent.body, contentType: sent.header("Content-Type")))
            let b = try #require(multipartParts(replayed.body, contentType: replayed.header("Content-Type")))
            #expect(a.map(\.disposition) == b.map(\.disposition), "\(arguments): \(dry.stdoutText)")
            #expect(a.map(\.contentType) == b.map(\.contentType))
            #expect(a.map(\.body) == b.map(\.body))
        }
    }

    /// The same against the sandbox, which keeps the pictures it is sent: the printed line,
    /// run with the sandbox's token in DOUCTL_TOKEN, posts the file's own bytes.
    @Test func dryRunCurlLinePostsThePictureOfAFileNamedWithSemicolonCommaAndQuotes() throws {
        try Tools.require("curl")
        let fixture = try SandboxFixture()
        defer { fixture.stop() }
        let token = try fixture.login().access
        let picture = try TemporaryDirectory.file(named: #"we;ird,"name".png"#, bytes: PNGFixture.bytes)
        let storedBefore = Set(try FileManager.default.contentsOfDirectory(atPath: fixture.sandbox.pictureDirectory))
        let requestsBefore = fixture.sandbox.requests.count
        let dry = try fixture.douctl.run("shuo", "post", "x", "--image", picture, "--dry-run")
        #expect(dry.status == 0, "\(dry)")
        #expect(dry.stderr.isEmpty, "\(dry)")
        #expect(fixture.sandbox.requests.count == requestsBefore, "a dry run sends nothing")
        #expect(dry.stdoutText.contains(#"-F 'image=@"\#(picture.replacingOccurrences(of: "\"", with: "\\\""))";type=image/png;"#), "\(dry.stdoutText)")
        #expect(try Self.runAsAShellWould(dry.stdoutText, token: token) == 0, "\(dry.stdoutText)")
        let posted = try #require(fixture.sandbox.requests.last)
        #expect(posted.method == "POST" && posted.path.hasPrefix("/shuo/v2/statuses"), "\(posted)")
        let stored = Set(try FileManager.default.contentsOfDirectory(atPath: fixture.sandbox.pictureDirectory)).subtracting(storedBefore)
        #expect(stored.count == 1, "\(stored)")
        let name = try #require(stored.first)
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: fixture.sandbox.pictureDirectory + "/" + name))) == PNGFixture.bytes,
                "the sandbox received the picture's bytes")
    }

    @Test func dryRunTouchesNeitherTheNetworkNorTheTokenStore() throws {
        let douctl = Douctl()
        // A corrupt store: reading it would fail the command.
        try FileManager.default.createDirectory(atPath: douctl.configDirectory, withIntermediateDirectories: true)
        try Data("{corrupt".utf8).write(to: URL(fileURLWithPath: douctl.configDirectory + "/credentials.json"))
        chmod(douctl.configDirectory + "/credentials.json", 0o600)
        let unreachable = "http://127.0.0.1:\(refusingPort())"
        let result = try douctl.run("shuo", "delete", "1", "2", "--api-base", unreachable, "--dry-run")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText.components(separatedBy: "\n").filter { $0.hasPrefix("curl ") }.count == 2, "one command per request")
        #expect(try String(contentsOfFile: douctl.configDirectory + "/credentials.json", encoding: .utf8) == "{corrupt")
        let refused = try douctl.run("auth", "login", "--dry-run")
        #expect(refused.status == 2)
    }

    /// Whether a command takes --dry-run is one declaration in the command tree, which the
    /// parser and help read: a command that does not call the API refuses it like any
    /// option it does not take, exit 2 with its usage line, before anything runs. Before:
    /// `auth status --dry-run` parsed, was listed in its help, then was refused at run time
    /// without the usage line (while `config list --dry-run` was refused by the parser).
    @Test func dryRunIsAnOptionOfTheCommandsThatCallTheAPIOnly() throws {
        let douctl = Douctl()
        for (arguments, path) in [(["auth", "status", "--dry-run"], "auth status"), (["--dry-run", "auth", "login"], "auth login"),
                                  (["config", "list", "--dry-run"], "config list"), (["sandbox", "--dry-run"], "sandbox"), (["demo", "--dry-run"], "demo")] {
            let refused = try douctl.run(arguments)
            #expect(refused.status == 2, "\(arguments): \(refused)")
            #expect(refused.stdout.isEmpty)
            let lines = refused.stderr.split(separator: "\n").map(String.init)
            #expect(lines.first == "douctl: option '--dry-run' does not apply to 'douctl \(path)'", "\(arguments): \(refused)")
            #expect(lines.count == 2 && lines[1].hasPrefix("usage: douctl \(path)"), "\(arguments): \(refused)")
            let help = try douctl.run(path.split(separator: " ").map(String.init) + ["--help"])
            #expect(help.status == 0 && !help.stdoutText.contains("--dry-run"), "\(path) --help: \(help.stdoutText)")
        }
        let unreachable = "http://127.0.0.1:\(refusingPort())"
        let api = try douctl.run("api", "/v2/x", "--api-base", unreachable, "--dry-run")
        #expect(api.status == 0 && api.stdoutText.hasPrefix("curl "), "\(api)")
        #expect(try douctl.run("api", "--help").stdoutText.contains("--dry-run"))
    }

    // MARK: {me}

    @Test func meIsTheLoggedInUser() throws {
        let fixture = try SandboxFixture()
        try fixture.login(user: "linglu")
        let me = try fixture.douctl.run("api", "/v2/user/{me}")
        #expect(me.status == 0, "\(me)")
        #expect(try me.json()["uid"]?.stringValue == "linglu")
        let user = try fixture.douctl.run("user", "get", "{me}")
        #expect(try user.json()["uid"]?.stringValue == "linglu")
        let timeline = try fixture.douctl.run("shuo", "timeline", "--user", "{me}")
        #expect(timeline.status == 0, "\(timeline)")
        let request = try #require(fixture.sandbox.requests.last)
        #expect(request.path.contains("/user_timeline/"), "\(request.path)")
        #expect(!request.path.contains("{me}") && !request.path.contains("%7Bme%7D"))
    }

    // MARK: credentials for CI

    @Test func exportAndImportMoveALoginWithoutArgv() throws {
        let fixture = try SandboxFixture()
        let tokens = try fixture.login()
        let exported = try fixture.douctl.run("auth", "export")
        #expect(exported.status == 0)
        let json = try exported.json()
        #expect(json["credential"]?["refresh_token"]?.stringValue == tokens.refresh)

        let other = Douctl()
        try SandboxProfiles.write(base: fixture.sandbox.baseURL, in: other.configDirectory)
        let imported = try other.run(["auth", "login", "--with-credentials"], input: exported.stdout)
        #expect(imported.status == 0, "\(imported)")
        #expect(try other.run("user", "me").json()["uid"]?.stringValue == "ahbei")
        #expect(fixture.sandbox.requests.filter { $0.path == "/service/auth2/token" }.isEmpty, "nothing was refreshed or spent")

        let junk = try other.run(["auth", "login", "--with-credentials"], input: Array("{\"access_token\":\"x\"}".utf8))
        #expect(junk.status == 2)
        let argv = try other.run("auth", "login", "--with-credentials", "{\"k\":\"zz9-hidden\"}")
        #expect(argv.status == 2)
        #expect(!argv.stderr.contains("zz9-hidden"))
    }

    @Test
    func exportAsksBeforePrintingSecretsOnATerminal() throws {
        let fixture = try SandboxFixture()
        let tokens = try fixture.login()
        let screen = try runUnderScript("\(Douctl.binary) auth export; echo \"exit=$?\"", environment: fixture.douctl.environment)
        #expect(screen.contains("exit=2"), "\(screen)")
        #expect(!screen.contains(tokens.refresh))
        // --yes-i-know prints it there: TerminalViewInProcessTests, on an injected terminal.
    }

    // MARK: progress for api uploads

    @Test
    func apiUploadsShowProgressOnATerminal() throws {
        let server = try TestServer { _ in
            Thread.sleep(forTimeInterval: 0.3)
            return HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(Array("{}".utf8)))
        }
        let file = try TemporaryDirectory.file(named: "payload.bin", bytes: [UInt8](repeating: 7, count: 2 << 20))
        let douctl = Douctl()
        let screen = try runUnderScript("\(Douctl.binary) api /up --attach f=\(file) --api-base \(server.baseURL) > /dev/null", environment: douctl.environment)
        #expect(screen.contains("payload.bin"), "\(screen)")
        #expect(screen.contains("sent 2.0 MiB"))
        let quiet = try douctl.run("api", "/up", "--input", file, "--api-base", server.baseURL)
        #expect(quiet.stderr.isEmpty, "no progress without a terminal")
    }
}
