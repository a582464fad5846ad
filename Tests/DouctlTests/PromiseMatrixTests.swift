#if canImport(Glibc)
import Glibc
#endif
import DouctlJSON
import DouctlServer
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 38's table, row by row: one promise, every feature that could break it, each cell a
/// run of the built binary against listeners on 127.0.0.1 written to test it (a server that
/// records what it was sent, one that fails, one that stalls). A feature added later adds its
/// argument list to each row.
@Suite("Features × promises: the table")
struct PromiseMatrixTests {
    static let token = "tok-7f3a9c2e51"

    /// A server answering by path: `/pages` links to a second page (Link: rel=next), `/flaky`
    /// fails once with 503, `/limited` answers 429 once, `/to-elsewhere` redirects to
    /// `elsewhere`, `/fail` is a 500 echoing what it was sent, anything else a small JSON list.
    static func server(elsewhere: String = "http://127.0.0.1:9") throws -> HostileListener {
        let seen = LockedValue<[String: Int]>([:])
        return try HostileListener { connection, listener in
            let head = listener.heads.last ?? ""
            let target = head.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
            let path = String(target.prefix { $0 != "?" })
            let count = seen.withLock { $0[path, default: 0] += 1; return $0[path, default: 0] }
            let answer: String
            switch path {
            case "/pages":
                answer = PromiseTableTests.reply("200 OK", "Link: <\(listener.baseURL)/pages2>; rel=\"next\"\r\n", "[{\"id\":1}]")
            case "/flaky" where count == 1:
                answer = PromiseTableTests.reply("503 Service Unavailable", "Retry-After: 0\r\n", #"{"error":"busy"}"#)
            case "/limited" where count == 1:
                answer = PromiseTableTests.reply("429 Too Many Requests", "Retry-After: 1\r\n", #"{"error":"slow"}"#)
            case "/to-elsewhere":
                answer = PromiseTableTests.reply("302 Found", "Location: \(elsewhere)/landed\r\n", "")
            case "/fail":
                let echoed = head.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\r\n", with: " ")
                answer = PromiseTableTests.reply("500 Internal Server Error", "", "{\"error\":\"failed\",\"error_description\":\"you sent: \(echoed)\"}")
            case "/graphql":
                // A GraphQL failure: HTTP 200, errors and no data (issue 43).
                answer = PromiseTableTests.reply("200 OK", "", #"{"data":null,"errors":[{"message":"failed","path":["x"]}]}"#)
            case "/fail-text":
                // A text error body, quoted on the error line by its first lines (issue 40).
                let sent = head.components(separatedBy: "\r\n").filter { $0.lowercased().hasPrefix("authorization") }.joined(separator: " ")
                let body = "failed\nyou sent: \(sent)\n"
                answer = "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
            default:
                answer = PromiseTableTests.reply("200 OK", "", "[{\"id\":2}]")
            }
            HostileListener.send(connection, answer)
        }
    }

    static func douctl() -> Douctl {
        Douctl(environment: ["DOUCTL_TOKEN": token, "XDG_CACHE_HOME": TemporaryDirectory.make(prefix: "matrix-cache")])
    }

    static func file(_ text: String = "picture") throws -> String {
        let path = TemporaryDirectory.make(prefix: "matrix-file") + "/a.png"
        try Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(text.utf8)).write(to: URL(fileURLWithPath: path))
        return path
    }

    // MARK: a credential goes only to its origin, and an explicit one wins

    /// Features that send the request `api` builds: every request that reaches the server
    /// carries your Authorization and only it.
    @Test(arguments: [
        ("api", ["api", "/x"]),
        ("paging", ["api", "/pages", "--paginate"]),
        ("cache", ["api", "/x", "--cache", "5m"]),
        ("record", ["api", "/x", "--record", "RECORD"]),
        ("retry", ["api", "/flaky"]),
        ("quota wait", ["api", "/limited", "--wait-on-rate-limit"]),
        ("head", ["api", "/x", "-I"]),
        ("include", ["api", "/x", "-i"]),
        ("raw", ["api", "/x", "--raw"]),
    ])
    func explicitCredentialWins(feature: String, arguments: [String]) throws {
        let server = try Self.server()
        let record = TemporaryDirectory.make(prefix: "matrix-record")
        let result = try Self.douctl().run(arguments.map { $0 == "RECORD" ? record : $0 } + ["--api-base", server.baseURL, "-H", "Authorization: Bearer mine"])
        #expect(result.status == 0, "\(feature): \(result)")
        let sent = PromiseTableTests.authorizations(server)
        #expect(!sent.isEmpty && sent.allSatisfy { $0 == ["Bearer mine"] }, "\(feature): \(sent)")
        #expect(!server.heads.joined().contains(Self.token), "\(feature): the stored credential went too")
    }

    @Test func dryRun_credential_printsYourAuthorizationAlone() throws {
        let result = try Self.douctl().run("api", "/x", "--api-base", "http://127.0.0.1:9", "-H", "Authorization: Bearer mine", "--dry-run")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText.contains("Authorization: Bearer mine") && !result.stdoutText.contains("DOUCTL_TOKEN"), "\(result.stdoutText)")
    }

    /// Features that may reach another origin: none carries the profile's credential there.
    @Test(arguments: [
        ("absolute URL", ["api", "ELSEWHERE/x"]),
        ("redirect", ["api", "/to-elsewhere"]),
        ("download", ["download", "ELSEWHERE/file.bin", "-o", "OUT"]),
        ("download redirect", ["download", "/to-elsewhere", "-o", "OUT"]),
        ("cache", ["api", "ELSEWHERE/x", "--cache", "5m"]),
        ("record", ["api", "ELSEWHERE/x", "--record", "RECORD"]),
        ("head", ["api", "ELSEWHERE/x", "-I"]),
        ("api -o --force", ["api", "ELSEWHERE/x", "-o", "OUT", "--force"]),
    ])
    func credentialStaysWithItsOrigin(feature: String, arguments: [String]) throws {
        let elsewhere = try Self.server()
        let api = try Self.server(elsewhere: elsewhere.baseURL)
        let out = TemporaryDirectory.make(prefix: "matrix-out") + "/file.bin"
        let record = TemporaryDirectory.make(prefix: "matrix-record")
        let resolved = arguments.map { $0.replacingOccurrences(of: "ELSEWHERE", with: elsewhere.baseURL).replacingOccurrences(of: "OUT", with: out).replacingOccurrences(of: "RECORD", with: record) }
        let result = try Self.douctl().run(resolved + ["--api-base", api.baseURL])
        #expect(result.status == 0, "\(feature): \(result)")
        #expect(elsewhere.requestCount >= 1, "\(feature): never reached the other origin")
        #expect(!elsewhere.heads.joined().contains(Self.token), "\(feature): the token went to another origin: \(elsewhere.heads)")
        #expect(PromiseTableTests.authorizations(elsewhere).allSatisfy { $0.isEmpty }, "\(feature)")
    }

    /// Issue 39: a stored login belongs to the origin it was obtained for (the profile's own
    /// api_base). `--api-base` to another origin sends none of it, whatever the feature;
    /// a command that needs a login says which profile sends credentials there, or how to
    /// log in there. DOUCTL_TOKEN, given for this run, still goes where --api-base says.
    @Test(arguments: [
        ("api", ["api", "/x"]),
        ("paginate", ["api", "/pages", "--paginate"]),
        ("cache", ["api", "/x", "--cache", "5m"]),
        ("record", ["api", "/x", "--record", "RECORD"]),
        ("download", ["download", "/file.bin", "-o", "OUT"]),
    ])
    func credential_apiBase_aStoredLoginStaysWithItsOwnOrigin(feature: String, arguments: [String]) throws {
        let own = try Self.server()
        let typo = try Self.server()
        let douctl = Douctl(environment: ["XDG_CACHE_HOME": TemporaryDirectory.make(prefix: "matrix-cache")])
        #expect(try douctl.run("profile", "add", "p", "--api-base", own.baseURL).status == 0)
        try Credentials.write(["p": Self.token], in: douctl.configDirectory)
        let record = TemporaryDirectory.make(prefix: "matrix-record")
        func resolved() -> [String] {
            let out = TemporaryDirectory.make(prefix: "matrix-out") + "/file.bin"
            return arguments.map { $0.replacingOccurrences(of: "OUT", with: out).replacingOccurrences(of: "RECORD", with: record) }
        }
        let result = try douctl.run(["--profile", "p"] + resolved() + ["--api-base", typo.baseURL])
        #expect(result.status == 0, "\(feature): \(result)")
        #expect(typo.requestCount >= 1, "\(feature): never reached --api-base")
        #expect(!typo.heads.joined().contains(Self.token), "\(feature): the stored token followed --api-base: \(typo.heads)")
        // Its own origin still gets it.
        let home = try douctl.run(["--profile", "p"] + resolved())
        #expect(home.status == 0, "\(feature): \(home)")
        #expect(own.heads.joined().contains(Self.token), "\(feature): \(own.heads)")
        // DOUCTL_TOKEN is this run's, for wherever --api-base sends it.
        let explicit = try douctl.run(["--profile", "p"] + resolved() + ["--api-base", typo.baseURL], environment: ["DOUCTL_TOKEN": "env-tok-123456"])
        #expect(explicit.status == 0, "\(feature): \(explicit)")
        #expect(typo.heads.joined().contains("env-tok-123456"), "\(feature)")
    }

    /// A command that needs a login, sent elsewhere by --api-base: one line naming the profile
    /// whose login goes there, nothing sent with the stored token.
    @Test func credential_apiBase_aLoginCommandElsewhereNamesTheProfileForIt() throws {
        let own = try Self.server()
        let other = try Self.server()
        let douctl = Douctl()
        #expect(try douctl.run("profile", "add", "p", "--preset", "douban", "--api-base", own.baseURL).status == 0)
        #expect(try douctl.run("profile", "add", "q", "--preset", "douban", "--api-base", other.baseURL).status == 0)
        try Credentials.write(["p": Self.token], in: douctl.configDirectory)
        let result = try douctl.run("--profile", "p", "user", "me", "--api-base", other.baseURL)
        #expect(result.status == 4, "\(result)")
        #expect(result.errorLine.contains("profile q sends credentials there: use --profile q"), "\(result)")
        #expect(result.stderr.split(separator: "\n").count == 1 && result.stdout.isEmpty, "\(result)")
        #expect(!other.heads.joined().contains(Self.token))
        let nobody = try Self.server()
        let unknown = try douctl.run("--profile", "p", "user", "me", "--api-base", nobody.baseURL)
        #expect(unknown.status == 4, "\(unknown)")
        #expect(unknown.errorLine.contains("douctl profile add NAME --api-base \(nobody.baseURL)"), "\(unknown)")
        #expect(nobody.requestCount == 0)
    }

    // MARK: stdout stays empty on an error

    @Test(arguments: [
        ("api", ["api", "/fail", "--error-body", "stderr"]),
        ("api --raw", ["api", "/fail", "--raw", "--error-body", "stderr"]),
        ("paging", ["api", "/fail", "--paginate"]),
        ("cache", ["api", "/fail", "--cache", "5m", "--error-body", "none"]),
        ("record", ["api", "/fail", "--record", "RECORD", "--error-body", "none"]),
        ("record har", ["api", "/fail", "--record", "RECORD/x.har", "--error-body", "none"]),
        ("jq", ["api", "/fail", "--jq", ".", "--error-body", "stderr"]),
        ("text error", ["api", "/fail-text"]),
        ("graphql", ["api", "graphql", "-f", "query={ x }", "--error-body", "stderr"]),
        ("graphql paging", ["api", "graphql", "-f", "query={ x }", "--paginate"]),
        ("download", ["download", "/fail", "-o", "-"]),
        ("user", ["user", "get", "1"]),
        ("shuo", ["shuo", "get", "1"]),
        ("upload", ["upload", "FILE", "--to", "/fail"]),
    ])
    func stdoutIsEmptyOnAnError(feature: String, arguments: [String]) throws {
        let server = try Self.server()
        let file = try Self.file()
        let record = TemporaryDirectory.make(prefix: "matrix-record")
        let result = try Self.douctl().run(arguments.map { $0 == "FILE" ? file : $0 == "RECORD" ? record : $0 == "RECORD/x.har" ? record + "/x.har" : $0 } + ["--api-base", server.baseURL])
        #expect(result.status != 0, "\(feature): \(result)")
        Self.expectNothingButReportLines(result, feature)
    }

    /// Stdout empty, except a batch's documented report (upload, shuo delete: one JSON line
    /// per item, `"ok": false` for a failed one, with douctl's error line), never the body.
    static func expectNothingButReportLines(_ result: Douctl.Result, _ feature: String) {
        let lines = result.stdoutText.split(separator: "\n")
        #expect(lines.allSatisfy { $0.hasPrefix("{") && $0.contains(#""ok":false"#) && !$0.contains(#"{"error":"failed""#) }, "\(feature): \(result.stdoutText)")
        if !feature.hasPrefix("upload") { #expect(result.stdout.isEmpty, "\(feature): \(result.stdoutText)") }
    }

    /// Issue 42: an operation of an API description is api with its path filled in, so it
    /// keeps api's promises: an explicit credential wins, stdout stays empty on an error,
    /// --max-time stops it within a second.
    static func operations(_ douctl: Douctl, base: String) throws {
        let file = TemporaryDirectory.make(prefix: "matrix-openapi") + "/api.json"
        try Data(##"{"openapi": "3.0.3", "info": {"title": "M", "version": "1"}, "servers": [{"url": "BASE"}], "paths": {"/x": {"get": {"operationId": "getX"}}, "/fail": {"get": {"operationId": "failIt"}}, "/up": {"post": {"operationId": "upLoad", "requestBody": {"content": {"multipart/form-data": {"schema": {"type": "object", "properties": {"doc": {"type": "string", "format": "binary"}}}}}}}}}}"##
            .replacingOccurrences(of: "BASE", with: base).utf8).write(to: URL(fileURLWithPath: file))
        let added = try douctl.run(["profile", "add", "m", "--openapi", file])
        #expect(added.status == 0, "\(added)")
    }

    @Test func operation_credential_stdout_maxTime_keepApisPromises() throws {
        let server = try Self.server()
        let douctl = Self.douctl()
        try Self.operations(douctl, base: server.baseURL)
        let mine = try douctl.run(["m", "get-x", "-H", "Authorization: Bearer mine"])
        #expect(mine.status == 0, "\(mine)")
        let sent = PromiseTableTests.authorizations(server)
        #expect(!sent.isEmpty && sent.allSatisfy { $0 == ["Bearer mine"] }, "\(sent)")
        #expect(!server.heads.joined().contains(Self.token), "the stored credential went too")
        let failed = try douctl.run(["m", "fail-it"])
        #expect(failed.status != 0, "\(failed)")
        Self.expectNothingButReportLines(failed, "operation")

        let stalling = try Self.stalling()
        let slow = Self.douctl()
        try Self.operations(slow, base: stalling.baseURL)
        let started = Date()
        let stopped = try slow.run(["m", "get-x", "--max-time", "1"])
        #expect(stopped.status == 7, "\(stopped)")
        #expect(Date().timeIntervalSince(started) < 3)
        #expect(stopped.stdout.isEmpty)
        // A form operation's file field (multipart, as --attach) stops within a second too.
        let uploadStarted = Date()
        let upload = try slow.run(["m", "up-load", "--doc", "@" + (try Self.file()), "--max-time", "1"])
        #expect(upload.status == 7, "\(upload)")
        #expect(Date().timeIntervalSince(uploadStarted) < 3)
        Self.expectNothingButReportLines(upload, "operation upload")
    }

    // MARK: --max-time stops anything within a second

    /// A server that takes the request and never answers.
    static func stalling() throws -> HostileListener {
        try HostileListener { _, _ in Thread.sleep(forTimeInterval: 20) }
    }

    @Test(arguments: [
        ("api", ["api", "/x"]),
        ("paging", ["api", "/x", "--paginate"]),
        ("cache", ["api", "/x", "--cache", "5m"]),
        ("record", ["api", "/x", "--record", "RECORD"]),
        ("download", ["download", "/x", "-o", "-"]),
        ("upload", ["upload", "FILE"]),
        ("user", ["user", "get", "1"]),
        ("jq", ["api", "/x", "--jq", "."]),
        ("graphql paging", ["api", "graphql", "-f", "query={ x }", "--paginate"]),
        ("stream follow", ["api", "/x", "--follow"]),
    ])
    func maxTimeStopsWithinASecond(feature: String, arguments: [String]) throws {
        let server = try Self.stalling()
        let file = try Self.file()
        let record = TemporaryDirectory.make(prefix: "matrix-record")
        let started = Date()
        let result = try Self.douctl().run(arguments.map { $0 == "FILE" ? file : $0 == "RECORD" ? record : $0 } + ["--api-base", server.baseURL, "--max-time", "1"])
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.status == 7, "\(feature): \(result)")
        #expect(elapsed < 3, "\(feature): took \(elapsed)s")
        Self.expectNothingButReportLines(result, feature)
    }

    @Test func quotaWait_stop_maxTimeEndsARateLimitWait() throws {
        let server = try HostileListener { connection, _ in
            HostileListener.send(connection, PromiseTableTests.reply("429 Too Many Requests", "Retry-After: 30\r\n", #"{"error":"slow"}"#))
        }
        let started = Date()
        let result = try Self.douctl().run("api", "/x", "--api-base", server.baseURL, "--wait-on-rate-limit", "--max-time", "1")
        #expect(result.status == 7, "\(result)")
        #expect(Date().timeIntervalSince(started) < 3)
    }

    // MARK: SIGINT stops anything within a second

    @Test(arguments: [
        ("api", ["api", "/x"]),
        ("download", ["download", "/x", "-o", "-"]),
        ("paging", ["api", "/x", "--paginate"]),
        ("stream follow", ["api", "/x", "--follow"]),
        ("graphql paging", ["api", "graphql", "-f", "query={ x }", "--paginate"]),
    ])
    func interruptStopsWithinASecond(feature: String, arguments: [String]) throws {
        let server = try Self.stalling()
        let running = try RunningDouctl(Self.douctl(), arguments + ["--api-base", server.baseURL])
        let deadline = Date().addingTimeInterval(10)
        while server.requestCount == 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        let interrupted = Date()
        running.kill(SIGINT)
        let result = running.finish(timeout: 5)
        #expect(result.status == 130, "\(feature): \(result)")
        #expect(Date().timeIntervalSince(interrupted) < 1.5, "\(feature)")
        #expect(result.stdout.isEmpty, "\(feature)")
    }

    // MARK: a JSON array reformatted on its own thread (issue 44.3)

    /// A server that sends 2.5 MB of a JSON array and then stalls without ending it.
    static func stallingArray() throws -> HostileListener {
        try HostileListener { connection, _ in
            let elements = (0..<40_000).map { #"{"id":\#($0),"u":"https:\/\/x.example\/\#($0)","t":"\u4e2d\#($0)"}"# }.joined(separator: ",")
            guard HostileListener.send(connection, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n[" + elements + ",") else { return }
            Thread.sleep(forTimeInterval: 20)
        }
    }

    /// --max-time and Ctrl-C stop an array stream whose reformat runs beside the receive
    /// within a second, with what was reformatted so far on stdout (as when it ran on one
    /// thread) and nothing of it mangled: a prefix of the whole array's compact form.
    @Test func arrayStream_stop_maxTimeAndInterruptStopWithinASecond() throws {
        let server = try Self.stallingArray()
        let started = Date()
        let timed = try Self.douctl().run("api", "/array", "--compact", "--api-base", server.baseURL, "--max-time", "1")
        #expect(timed.status == 7, "\(timed)")
        #expect(Date().timeIntervalSince(started) < 3)
        let whole = (0..<40_000).map { #"{"id":\#($0),"u":"https://x.example/\#($0)","t":"中\#($0)"}"# }.joined(separator: ",")
        #expect(timed.stdout.count > 1 << 20, "what arrived was reformatted and written")
        let prefix = Array(("[" + whole).utf8).starts(with: timed.stdout)
        #expect(prefix, "stdout is not the array's start")

        let running = try RunningDouctl(Self.douctl(), ["api", "/array", "--compact", "--api-base", server.baseURL])
        try running.waitForStdout { $0.utf8.count > 1 << 20 }
        let interrupted = Date()
        running.kill(SIGINT)
        let result = running.finish(timeout: 5)
        #expect(result.status == 130, "\(result)")
        #expect(Date().timeIntervalSince(interrupted) < 1.5)
        let interruptedPrefix = Array(("[" + whole).utf8).starts(with: result.stdout)
        #expect(interruptedPrefix, "stdout is not the array's start")
    }

    // MARK: no secret in douctl's own lines

    /// The server repeats what it was sent in its error; douctl's own lines never show the token.
    @Test(arguments: [
        ("api", ["api", "/fail", "--error-body", "none"]),
        ("paging", ["api", "/fail", "--paginate", "--error-body", "none"]),
        ("user", ["user", "get", "1"]),
        ("download", ["download", "/fail", "-o", "-"]),
        ("verbose", ["api", "/fail", "-v", "--error-body", "none"]),
        ("json errors", ["api", "/fail", "--error-format", "json", "--error-body", "none"]),
        ("text error", ["api", "/fail-text", "--error-body", "stderr"]),
        ("upload", ["upload", "FILE", "--to", "/fail"]),
        ("api -o --force", ["api", "/fail", "-o", "OUTFILE", "--force", "--error-body", "none"]),
        ("record har", ["api", "/fail", "--record", "HARFILE", "--error-body", "none"]),
    ])
    func noSecretInDouctlsLines(feature: String, arguments: [String]) throws {
        let server = try Self.server()
        let file = try Self.file()
        let out = TemporaryDirectory.make(prefix: "matrix-out") + "/reply.json"
        let har = TemporaryDirectory.make(prefix: "matrix-har") + "/session.har"
        let result = try Self.douctl().run(arguments.map { $0 == "FILE" ? file : $0 == "OUTFILE" ? out : $0 == "HARFILE" ? har : $0 } + ["--api-base", server.baseURL])
        #expect(result.status != 0, "\(feature): \(result)")
        #expect(server.heads.joined().contains(Self.token), "\(feature): the token was not sent, so the cell proves nothing")
        #expect(!result.stderr.contains(Self.token), "\(feature): \(result.stderr)")
        if feature == "text error" { #expect(result.stderr.contains("you sent: Authorization: Bearer"), "the body is quoted, so the cell proves something: \(result.stderr)") }
        #expect(!result.stdoutText.contains(Self.token), "\(feature): the report line: \(result.stdoutText)")
        if feature == "record har" {
            let recorded = (try? String(contentsOfFile: har, encoding: .utf8)) ?? ""
            #expect(recorded.contains("\"entries\"") && !recorded.contains(Self.token), "the HAR holds the exchange, not the token: \(recorded)")
        }
    }

    /// A replayed login (issue 41): a token the replay issued, sent as RFC 6750's
    /// `access_token` query parameter to a route the recording lacks, is in neither the
    /// replay's 501 nor its log lines; one it did not issue is refused before it is matched.
    @Test func replayedLogin_secret_aQueryTokenStaysOutOfTheReplaysLinesAndReplies() throws {
        let curl = try Tools.require("curl")
        let recordings = TemporaryDirectory.make(prefix: "matrix-replay")
        try (#"{"request":{"method":"POST","path":"/token","query":[],"headers":[["Content-Type","application/x-www-form-urlencoded"]],"#
            + #""body":{"form":[["grant_type","client_credentials"],["client_id","c"]]}},"response":{"status":200,"#
            + #""headers":[["Content-Type","application/json"]],"body":{"json":{"access_token":"REDACTED","token_type":"Bearer"}}}}"#)
            .write(toFile: recordings + "/0001-POST-token.json", atomically: true, encoding: .utf8)
        let (replay, url) = try FakeAnyAPITests.startReplay(Douctl(), ["--replay", recordings])
        let granted = try FakeAnyAPITests.run(curl, ["-sS", "--max-time", "10", "-d", "grant_type=client_credentials&client_id=c", url + "/token"])
        let token = try #require(try JSONParser.parse(granted.stdout)["access_token"]?.stringValue)
        let unmatched = try FakeAnyAPITests.run(curl, ["-sS", "--max-time", "10", "-w", "\n%{http_code}", url + "/not-recorded?access_token=" + token + "&page=2"])
        let foreign = try FakeAnyAPITests.run(curl, ["-sS", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}", url + "/not-recorded?access_token=" + Self.token])
        replay.kill(SIGTERM)
        let stopped = replay.finish()
        let reply = String(decoding: unmatched.stdout, as: UTF8.self)
        #expect(reply.hasSuffix("\n501") && reply.contains("access_token=REDACTED&page=2"), "the 501 names the request: \(reply)")
        #expect(!reply.contains(token), "\(reply)")
        #expect(String(decoding: foreign.stdout, as: UTF8.self) == "401")
        #expect(stopped.stderr.contains("replay: no recording matches GET /not-recorded?access_token=REDACTED"), "the log names it: \(stopped.stderr)")
        #expect(!stopped.stderr.contains(token) && !stopped.stderr.contains(Self.token), "\(stopped.stderr)")
    }

    /// The recording proxy (issue 41) logs each request it passes on, a credential in the
    /// query (RFC 6750's `access_token`, an `api_key`) shown as REDACTED, not its value.
    @Test func recordingProxy_secret_aQueryTokenStaysOutOfTheProxysLines() throws {
        let curl = try Tools.require("curl")
        let server = try Self.server()
        let recordings = TemporaryDirectory.make(prefix: "matrix-proxy")
        let (proxy, url) = try FakeAnyAPITests.startReplay(Douctl(), ["--proxy-to", server.baseURL, "--record", recordings])
        let passed = try FakeAnyAPITests.run(curl, ["-sS", "--max-time", "10", url + "/items?access_token=" + Self.token + "&api_key=" + Self.clientSecret + "&page=2"])
        proxy.kill(SIGTERM)
        let stopped = proxy.finish()
        #expect(passed.status == 0)
        #expect(server.heads.joined().contains(Self.token), "the token went upstream, so the cell proves something")
        #expect(stopped.stderr.contains("GET /items?access_token=REDACTED&api_key=REDACTED&page=2 200 (proxied)"), "\(stopped.stderr)")
        #expect(!stopped.stderr.contains(Self.token) && !stopped.stderr.contains(Self.clientSecret), "\(stopped.stderr)")
    }

    // MARK: each login kind

    static let clientSecret = "cs-4b1d9e77aa"

    /// A profile `p` whose OAuth endpoints are on `base` (a device endpoint, a token endpoint).
    static func loginProfile(_ douctl: Douctl, base: String) throws {
        let add = try douctl.run("profile", "add", "p", "--api-base", base, "--token-url", base + "/token",
                                 "--device-authorization-url", base + "/device", "--authorize-url", base + "/authorize", "--client-id", "x")
        try #require(add.status == 0, "\(add)")
    }

    /// Logins that wait on a server or a person: --max-time stops each within a second, and
    /// nothing reaches stdout.
    @Test(arguments: [
        ("device", ["auth", "login", "--device", "--no-browser"]),
        ("client credentials", ["auth", "login", "--client-credentials"]),
        ("browser", ["auth", "login", "--no-browser"]),
    ])
    func login_stop_maxTimeStopsALoginWithinASecond(kind: String, arguments: [String]) throws {
        let server = try TestServer { received in
            if received.path == "/device" {
                return .bytes(200, Array(#"{"device_code":"d","user_code":"ABCD-EFGH","verification_uri":"http://x/v","expires_in":600,"interval":5}"#.utf8), contentType: "application/json")
            }
            Thread.sleep(forTimeInterval: 20)
            return .bytes(400, Array(#"{"error":"authorization_pending"}"#.utf8), contentType: "application/json")
        }
        let douctl = Douctl(environment: ["DOUCTL_CLIENT_SECRET": Self.clientSecret])
        try Self.loginProfile(douctl, base: server.baseURL)
        let started = Date()
        let result = try douctl.run(arguments + ["--profile", "p", "--max-time", "1"], timeout: 30)
        #expect(result.status == 7, "\(kind): \(result)")
        #expect(Date().timeIntervalSince(started) < 3, "\(kind)")
        #expect(result.stdout.isEmpty, "\(kind): \(result.stdoutText)")
    }

    /// A token endpoint that refuses the client and repeats its secret: exit 4, nothing on
    /// stdout, the secret in none of douctl's lines.
    @Test(arguments: [
        ("device", ["auth", "login", "--device", "--no-browser"]),
        ("client credentials", ["auth", "login", "--client-credentials"]),
    ])
    func login_secret_aRefusalThatRepeatsTheClientSecretIsMasked(kind: String, arguments: [String]) throws {
        let server = try TestServer { received in
            if received.path == "/device" {
                return .bytes(200, Array(#"{"device_code":"d","user_code":"ABCD-EFGH","verification_uri":"http://x/v","expires_in":600,"interval":1}"#.utf8), contentType: "application/json")
            }
            return .bytes(401, Array(#"{"error":"invalid_client","error_description":"client_secret \#(Self.clientSecret) is wrong"}"#.utf8), contentType: "application/json")
        }
        let douctl = Douctl(environment: ["DOUCTL_CLIENT_SECRET": Self.clientSecret])
        try Self.loginProfile(douctl, base: server.baseURL)
        let result = try douctl.run(arguments + ["--profile", "p"], timeout: 60)
        #expect(result.status == 4, "\(kind): \(result)")
        #expect(result.stdout.isEmpty, "\(kind): \(result.stdoutText)")
        #expect(server.received.contains { $0.bodyText.contains(Self.clientSecret) || ($0.header("Authorization") ?? "").hasPrefix("Basic") }, "\(kind): the secret was not sent")
        #expect(!result.stderr.contains(Self.clientSecret), "\(kind): \(result.stderr)")
    }

    /// Issue 41: `--record DIR` on a login records its exchanges (the device endpoint's, the
    /// token endpoint's) with none of its secrets (the client secret, the device code, the
    /// tokens, even where the server repeats them); a refused one leaves stdout empty.
    @Test(arguments: [
        ("device", ["auth", "login", "--device", "--no-browser"], true),
        ("client credentials", ["auth", "login", "--client-credentials"], true),
        ("client credentials refused", ["auth", "login", "--client-credentials"], false),
    ])
    func login_record_aRecordedLoginHoldsNoSecret(kind: String, arguments: [String], grants: Bool) throws {
        let (deviceCode, access, refresh) = ("dc-5e3b1f0a99", "at-7c2e9d41bb", "rt-0f9a3c7d55")
        let server = try TestServer { received in
            if received.path == "/device" {
                return .bytes(200, Array(#"{"device_code":"\#(deviceCode)","user_code":"ABCD-EFGH","verification_uri":"http://x/v","expires_in":600,"interval":1}"#.utf8), contentType: "application/json")
            }
            guard grants else {
                return .bytes(401, Array(#"{"error":"invalid_client","error_description":"client_secret \#(Self.clientSecret) is wrong"}"#.utf8), contentType: "application/json")
            }
            return .bytes(200, Array(#"{"access_token":"\#(access)","refresh_token":"\#(refresh)","token_type":"Bearer","expires_in":3600,"note":"for \#(Self.clientSecret)"}"#.utf8), contentType: "application/json")
        }
        let douctl = Douctl(environment: ["DOUCTL_CLIENT_SECRET": Self.clientSecret])
        try Self.loginProfile(douctl, base: server.baseURL)
        let record = TemporaryDirectory.make(prefix: "matrix-record")
        let result = try douctl.run(arguments + ["--profile", "p", "--record", record], timeout: 60)
        #expect(result.status == (grants ? 0 : 4), "\(kind): \(result)")
        if !grants { #expect(result.stdout.isEmpty, "\(kind): \(result.stdoutText)") }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: record))?.sorted() ?? []
        #expect(names.contains { $0.hasSuffix("-POST-token.json") } && (kind != "device" || names.contains { $0.hasSuffix("-POST-device.json") }), "\(kind): \(names)")
        let recorded = names.compactMap { try? String(contentsOfFile: record + "/" + $0, encoding: .utf8) }.joined()
        #expect(server.received.contains { $0.bodyText.contains(Self.clientSecret) || ($0.header("Authorization") ?? "").hasPrefix("Basic") }, "\(kind): the secret was not sent")
        for secret in [Self.clientSecret, deviceCode, access, refresh] {
            #expect(!recorded.contains(secret), "\(kind): \(secret) in the recording: \(recorded)")
        }
    }
}

// MARK: - through the connection keeper (issue 44)

/// The same promises when the request rides a connection the keeper holds: an HTTPS server
/// (KeeperPeer), a keeper started by a first call, and the cell's call through it (its -v
/// says so, or the cell proves nothing).
extension PromiseMatrixTests {
    static func keeperDouctl() -> Douctl {
        KeeperPeer.douctl(extra: ["DOUCTL_TOKEN": token])
    }

    @Test func keeper_stop_maxTimeStopsWithinASecond() throws {
        let server = try KeeperPeer()
        let douctl = Self.keeperDouctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try KeeperPeer.startKeeper(douctl, base: server.base, cacert: server.pki.caCertificate)
        let started = Date()
        let result = try douctl.run("-v", "api", "/slow", "--api-base", server.base, "--cacert", server.pki.caCertificate, "--max-time", "1", environment: ["LD_DEBUG": "files"])
        #expect(result.status == 7, "\(result)")
        #expect(Date().timeIntervalSince(started) < 3)
        #expect(result.stderr.contains("* keeper: a new connection"), "through the keeper: \(result.stderr)")
        #expect(!result.stderr.contains("libcurl"), "carried without libcurl (SocketExchange)")
        Self.expectNothingButReportLines(result, "keeper")
    }

    @Test func keeper_stop_interruptStopsWithinASecond() throws {
        let server = try KeeperPeer()
        let douctl = Self.keeperDouctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try KeeperPeer.startKeeper(douctl, base: server.base, cacert: server.pki.caCertificate)
        let running = try RunningDouctl(douctl, ["api", "/slow", "--api-base", server.base, "--cacert", server.pki.caCertificate])
        try KeeperPeer.waitFor("the request to reach the server") {
            try douctl.run("api", server.base + "/heads", "--cacert", server.pki.caCertificate, "--no-keep").stdoutText.contains("GET /slow")
        }
        let interrupted = Date()
        running.kill(SIGINT)
        let result = running.finish(timeout: 5)
        #expect(result.status == 130, "\(result)")
        #expect(Date().timeIntervalSince(interrupted) < 1.5)
        #expect(result.stdout.isEmpty)
    }

    @Test func keeper_credential_aRedirectToAnotherOriginCarriesNoToken() throws {
        let api = try KeeperPeer()
        let elsewhere = try KeeperPeer()
        let douctl = Self.keeperDouctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try KeeperPeer.startKeeper(douctl, base: api.base, cacert: api.pki.caCertificate)
        let result = try douctl.run("-v", "api", "/to-elsewhere?to=\(elsewhere.base)/landed", "--api-base", api.base, "--cacert", api.pki.caCertificate)
        #expect(result.status == 0, "\(result)")
        #expect(try result.json()["path"]?.scalarText == "/landed")
        #expect(result.stderr.components(separatedBy: "* keeper:").count == 3, "both hops through the keeper: \(result.stderr)")
        let sentToAPI = try douctl.run("api", api.base + "/heads", "--cacert", api.pki.caCertificate, "--no-keep").stdoutText
        let sentElsewhere = try douctl.run("api", elsewhere.base + "/heads", "--cacert", api.pki.caCertificate, "--no-keep").stdoutText
        #expect(sentToAPI.contains(Self.token), "the token was not sent at all, so the cell proves nothing")
        #expect(sentElsewhere.contains("GET /landed"))
        #expect(!sentElsewhere.contains(Self.token), "the token went to another origin: \(sentElsewhere)")
    }

    /// A keeper call is read by douctl's own HTTP code (no libcurl): a reply's control
    /// sequences in its status line, headers and body reach neither -v's lines nor the error.
    @Test func keeper_terminal_serverTextNeverDrivesTheTerminal() throws {
        let server = try KeeperPeer()
        let douctl = Self.keeperDouctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try KeeperPeer.startKeeper(douctl, base: server.base, cacert: server.pki.caCertificate)
        let result = try douctl.run(["-v", "api", "/hostile", "--api-base", server.base, "--cacert", server.pki.caCertificate], environment: ["LD_DEBUG": "files"])
        #expect(result.status != 0, "\(result)")
        #expect(result.stderr.contains("* keeper: a new connection"), "through the keeper: \(result.stderr)")
        #expect(!result.stderr.contains("libcurl"), "carried without libcurl")
        #expect(result.stderr.contains("X-Evil"), "the header was logged, so the cell tests something: \(result.stderr)")
        #expect(!result.stderr.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{07}" || $0 == "\u{9B}" }, "\(result.stderr)")
        Self.expectNothingButReportLines(result, "keeper")
    }

    @Test func keeper_secret_verboseLinesThroughTheKeeperShowNoToken() throws {
        let server = try KeeperPeer()
        let douctl = Self.keeperDouctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try KeeperPeer.startKeeper(douctl, base: server.base, cacert: server.pki.caCertificate)
        let result = try douctl.run("-v", "api", "/x", "--api-base", server.base, "--cacert", server.pki.caCertificate)
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.contains("* keeper: a new connection"), "through the keeper: \(result.stderr)")
        #expect(try result.json()["auth"]?.scalarText == "Bearer \(Self.token)", "the token was sent")
        #expect(!result.stderr.contains(Self.token), "\(result.stderr)")
    }

    /// A keeper whose libcurl asks for an encoding douctl cannot decode (a shim over libcurl
    /// sending "…, xz"): the call goes through libcurl's keeper path after the handshake, and
    /// --max-time still stops it within a second with nothing on stdout.
    @Test func keeperViaLibcurl_stop_maxTimeStopsWithinASecond() throws {
        let shim = try KeeperEncodingTests.libcurlShim(cc: try Tools.require("cc"), acceptEncoding: "deflate, gzip, xz")
        let server = try KeeperPeer()
        let douctl = KeeperPeer.douctl(extra: ["DOUCTL_TOKEN": Self.token, "DOUCTL_LIBCURL": shim])
        defer { _ = try? douctl.run("keeper", "stop") }
        try KeeperPeer.startKeeper(douctl, base: server.base, cacert: server.pki.caCertificate)
        let started = Date()
        let result = try douctl.run("-v", "api", "/slow", "--api-base", server.base, "--cacert", server.pki.caCertificate, "--max-time", "1")
        #expect(result.status == 7, "\(result)")
        #expect(Date().timeIntervalSince(started) < 3)
        #expect(result.stderr.contains("this call goes through libcurl"), "the libcurl way: \(result.stderr)")
        Self.expectNothingButReportLines(result, "keeper")
    }

    /// A brotli bomb read by douctl's own decoders through the keeper: one line, exit 8,
    /// nothing on stdout (what came before the bound is never printed).
    @Test func keeper_stdout_aBrotliBombLeavesStdoutEmpty() throws {
        try KeeperEncodingTests.requireCodecs()
        let server = try KeeperPeer()
        let douctl = Self.keeperDouctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try KeeperPeer.startKeeper(douctl, base: server.base, cacert: server.pki.caCertificate)
        let result = try douctl.run(["-v", "api", "/gz?enc=br-bomb", "--api-base", server.base, "--cacert", server.pki.caCertificate], environment: ["LD_DEBUG": "files"])
        #expect(result.status == 8, "\(result.stderr.suffix(800))")
        #expect(result.stderr.contains("* keeper: a new connection"), "through the keeper: \(result.stderr.suffix(800))")
        #expect(!result.stderr.contains("libcurl"), "carried without libcurl (its own decoders)")
        #expect(result.stderr.contains("refused as a decompression bomb"), "\(result.stderr.suffix(800))")
        Self.expectNothingButReportLines(result, "keeper")
    }
}

// MARK: - through the keeper's HTTP/2 connection (issue 44)

/// The same promises when the keeper ends HTTP itself and carries the request as a stream
/// on its HTTP/2 connection (nginx with http2, H2KeeperPeer): each cell's -v says the call
/// went that way, or the cell proves nothing.
extension PromiseMatrixTests {
    static func warmH2Keeper(_ douctl: Douctl, _ peer: H2KeeperPeer) throws {
        try KeeperPeer.startKeeper(douctl, base: peer.base, cacert: peer.pki.caCertificate)
        let second = try douctl.run("-v", "api", peer.base + "/warm2", "--cacert", peer.pki.caCertificate)
        #expect(second.stderr.contains("* HTTP/2 over the keeper's connection (new)"), "\(second.stderr)")
    }

    @Test func keeperH2_stop_maxTimeStopsWithinASecond() throws {
        let peer = try H2KeeperPeer()
        let douctl = Self.keeperDouctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try Self.warmH2Keeper(douctl, peer)
        let started = Date()
        let result = try douctl.run("-v", "api", "/slow", "--api-base", peer.base, "--cacert", peer.pki.caCertificate, "--max-time", "1")
        #expect(result.status == 7, "\(result)")
        #expect(Date().timeIntervalSince(started) < 3)
        #expect(result.stderr.contains("over HTTP/2 (reused"), "through the keeper's HTTP/2 connection: \(result.stderr)")
        Self.expectNothingButReportLines(result, "keeperH2")
    }

    @Test func keeperH2_stop_interruptStopsWithinASecond() throws {
        let peer = try H2KeeperPeer()
        let douctl = Self.keeperDouctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try Self.warmH2Keeper(douctl, peer)
        let running = try RunningDouctl(douctl, ["-v", "api", "/slow", "--api-base", peer.base, "--cacert", peer.pki.caCertificate])
        try KeeperPeer.waitFor("the request to reach the server") { peer.backend.log.contains("GET /slow") }
        let interrupted = Date()
        running.kill(SIGINT)
        let result = running.finish(timeout: 5)
        #expect(result.status == 130, "\(result)")
        #expect(Date().timeIntervalSince(interrupted) < 1.5)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("over HTTP/2 (reused"), "\(result.stderr)")
        // Its stream was reset; the connection serves the next call.
        let next = try douctl.run("-v", "api", "/next", "--api-base", peer.base, "--cacert", peer.pki.caCertificate)
        #expect(next.status == 0 && next.stderr.contains("* HTTP/2 over the keeper's connection (reused"), "\(next)")
    }

    @Test func keeperH2_credential_aRedirectToAnotherOriginCarriesNoToken() throws {
        let api = try H2KeeperPeer()
        let elsewhere = try H2KeeperPeer()
        let douctl = Self.keeperDouctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try Self.warmH2Keeper(douctl, api)
        let result = try douctl.run("-v", "api", "/to-elsewhere?to=\(elsewhere.base)/landed", "--api-base", api.base, "--cacert", api.pki.caCertificate)
        #expect(result.status == 0, "\(result)")
        #expect(try result.json()["path"]?.scalarText == "/landed")
        #expect(result.stderr.contains("* HTTP/2 over the keeper's connection (reused"), "the first hop rode the keeper's HTTP/2 connection: \(result.stderr)")
        #expect(api.backend.log.contains("auth=Bearer \(Self.token)"), "the token was not sent at all, so the cell proves nothing")
        #expect(elsewhere.backend.log.contains("GET /landed"))
        #expect(!elsewhere.backend.log.contains(Self.token), "the token went to another origin: \(elsewhere.backend.log)")
    }

    @Test func keeperH2_secret_verboseLinesShowNoToken() throws {
        let peer = try H2KeeperPeer()
        let douctl = Self.keeperDouctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try Self.warmH2Keeper(douctl, peer)
        let result = try douctl.run("-v", "api", "/x", "--api-base", peer.base, "--cacert", peer.pki.caCertificate)
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.contains("* HTTP/2 over the keeper's connection (reused"), "\(result.stderr)")
        #expect(try result.json()["auth"]?.scalarText == "Bearer \(Self.token)", "the token was sent")
        #expect(!result.stderr.contains(Self.token), "\(result.stderr)")
    }
}

// MARK: - the transport: douctl's own HTTP/1.1, and libcurl (issue 44.4)

/// A plain-http request with no proxy is carried by douctl's own HTTP/1.1 code, which never
/// loads libcurl; every cell above runs that way. These cells prove it did (libcurl is not
/// mapped into the process), and run the same promises through libcurl, which carries every
/// request when DOUCTL_LIBCURL names one (and every https, proxied or streamed-upload request).
extension PromiseMatrixTests {
    static func libcurlDouctl() throws -> Douctl {
        // DOUCTL_LIBCURL wants an absolute path: this machine's libcurl, as the loader finds it.
        Douctl(environment: ["DOUCTL_TOKEN": token, "XDG_CACHE_HOME": TemporaryDirectory.make(prefix: "matrix-cache"),
                             "DOUCTL_LIBCURL": try Tools.requireLibrary("libcurl.so.4")])
    }

    /// Whether the running process has libcurl mapped (`/proc/PID/maps`).
    static func mapsLibcurl(_ running: RunningDouctl) -> Bool {
        let maps = (try? FileIO.readFile("/proc/\(running.process.processIdentifier)/maps")) ?? []
        return String(decoding: maps, as: UTF8.self).contains("libcurl")
    }

    /// The own code while a reply is awaited: no libcurl in the process; Ctrl-C stops it within
    /// a second, nothing on stdout. With DOUCTL_LIBCURL naming libcurl, the same call has it
    /// mapped (so the first check can fail) and stops the same.
    @Test func transport_ownHTTP_noLibcurlLoaded_andInterruptStopsEitherWay() throws {
        for named in [false, true] {
            let server = try Self.stalling()
            let douctl = named ? try Self.libcurlDouctl() : Self.douctl()
            let running = try RunningDouctl(douctl, ["api", "/x", "--api-base", server.baseURL])
            let deadline = Date().addingTimeInterval(10)
            while server.requestCount == 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
            let loaded = Self.mapsLibcurl(running)
            let interrupted = Date()
            running.kill(SIGINT)
            let result = running.finish(timeout: 5)
            #expect(loaded == named, "DOUCTL_LIBCURL named: \(named); libcurl mapped: \(loaded)")
            #expect(result.status == 130, "\(named): \(result)")
            #expect(Date().timeIntervalSince(interrupted) < 1.5)
            #expect(result.stdout.isEmpty)
        }
    }

    /// A reply's control sequences (status line, a header, the error body) reach neither -v's
    /// lines nor the error line, through the own code and through libcurl alike.
    @Test func transport_terminal_serverTextNeverDrivesTheTerminal() throws {
        let server = try HostileListener { connection, _ in
            let body = "{\"error\":\"\u{1B}]0;pwned\u{07}\u{1B}[2J\"}"
            HostileListener.send(connection, "HTTP/1.1 500 Bad \u{1B}[31mthing\r\nX-Evil: \u{1B}[2J\u{9B}1m\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
        }
        for douctl in [Self.douctl(), try Self.libcurlDouctl()] {
            let result = try douctl.run("-v", "api", "/x", "--api-base", server.baseURL, "--error-body", "stderr")
            #expect(result.status != 0, "\(result)")
            #expect(result.stderr.contains("X-Evil"), "the header was logged, so the cell tests something: \(result.stderr)")
            #expect(!result.stderr.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{07}" || $0 == "\u{9B}" }, "\(result.stderr)")
            Self.expectNothingButReportLines(result, "transport")
        }
    }

    /// Through libcurl: --max-time within a second, a redirect to another origin carries no
    /// token, -v shows none.
    @Test func transport_libcurl_maxTimeCredentialAndSecretHold() throws {
        let douctl = try Self.libcurlDouctl()
        let stalled = try Self.stalling()
        let started = Date()
        let timed = try douctl.run("api", "/x", "--api-base", stalled.baseURL, "--max-time", "1")
        #expect(timed.status == 7, "\(timed)")
        #expect(Date().timeIntervalSince(started) < 3)
        Self.expectNothingButReportLines(timed, "libcurl")

        let elsewhere = try Self.server()
        let api = try Self.server(elsewhere: elsewhere.baseURL)
        let redirected = try douctl.run("-v", "api", "/to-elsewhere", "--api-base", api.baseURL)
        #expect(redirected.status == 0, "\(redirected)")
        #expect(api.heads.joined().contains(Self.token), "the token was sent to its origin, so the cell proves something")
        #expect(elsewhere.requestCount >= 1 && !elsewhere.heads.joined().contains(Self.token), "\(elsewhere.heads)")
        #expect(!redirected.stderr.contains(Self.token), "\(redirected.stderr)")
    }
}
