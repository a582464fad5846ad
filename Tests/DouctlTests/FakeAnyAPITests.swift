import DouctlJSON
import DouctlServer
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 41, "Fake any API": a session with an API that is not Douban's, recorded with the
/// built douctl, served back by `douctl sandbox --replay`, to douctl and to curl.
@Suite struct FakeAnyAPITests {
    /// A small JSON API: POST /items creates (201, the body echoed with an id), GET /items
    /// lists by query.
    static func itemsServer() throws -> TestServer {
        let created = LockedValue(0)
        return try TestServer { request in
            if request.method == "POST" {
                let id = created.withLock { count -> Int in
                    count += 1
                    return count
                }
                var object = (try? JSONParser.parse(request.body))?.objectValue ?? JSONObject()
                object["id"] = .int(id)
                return HTTPServerResponse(status: 201, headers: [("Content-Type", "application/json")],
                                          body: .bytes(JSON.object(object).serialized(.compact)))
            }
            let query = request.query.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
            return HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json")],
                                      body: .bytes(Array(#"{"query":"\#(query)","items":[{"id":1}]}"#.utf8)))
        }
    }

    /// Runs a tool to its end: its exit status and stdout (stderr in the description).
    static func run(_ tool: String, _ arguments: [String]) throws -> (status: Int32, stdout: [UInt8], stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.runAlone()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, Array(stdout), String(decoding: stderr, as: UTF8.self))
    }

    static func startReplay(_ douctl: Douctl, _ arguments: [String]) throws -> (RunningDouctl, String) {
        let server = try RunningDouctl(douctl, ["sandbox"] + arguments)
        let url = try server.waitForStdout { $0.contains("\n") }.trimmingCharacters(in: .whitespacesAndNewlines)
        return (server, url)
    }

    @Test func aRecordedSessionReplaysWithBodiesMatchedAsJSONAndTheClosestNamed() throws {
        let api = try Self.itemsServer()
        let douctl = Douctl(environment: ["DOUCTL_TOKEN": "tok-live-1234567"])
        let recordings = TemporaryDirectory.make(prefix: "fake-any")
        let create = try douctl.run(["api", "-X", "POST", "/items", "--json", "-F", "name=x", "-F", "n=1",
                                     "--api-base", api.baseURL, "--record", recordings])
        let list = try douctl.run(["api", "/items?a=1&b=2", "--api-base", api.baseURL, "--record", recordings])
        #expect(create.status == 0 && list.status == 0, "\(create) \(list)")

        let (replay, url) = try Self.startReplay(Douctl(), ["--replay", recordings])
        defer {
            replay.kill(SIGTERM)
            _ = replay.finish()
        }
        let other = Douctl(environment: ["DOUCTL_TOKEN": "another"])
        let again = try other.run(["api", "-X", "POST", "/items", "--json", "-F", "n=1", "-F", "name=x", "--api-base", url])
        #expect(again.stdout == create.stdout, "the JSON body matched whatever its key order: \(again)")
        #expect(try other.run(["api", "/items?b=2&a=1", "--api-base", url]).stdout == list.stdout, "the query in another order")
        let changed = try other.run(["api", "-X", "POST", "/items", "--json", "-F", "n=2", "-F", "name=x", "--api-base", url])
        #expect(changed.status == 5, "not recorded reads as not found (Douban code 1001): \(changed)")
        #expect(changed.stdout.isEmpty)
        #expect(changed.errorLine.contains("501") || changed.errorLine.contains("no_recording"), "\(changed.errorLine)")
        let log = try replay.waitForStderr { $0.contains("replay: no recording matches POST /items") }
        #expect(log.contains("closest: POST /items (0001-POST-items.json): body .n: recorded 1, sent 2"), "\(log)")

        let curl = try Tools.require("curl")
        let fetched = try Self.run(curl, ["-sS", "-X", "POST", "-H", "Content-Type: application/json",
                                                "--data", #"{"name" : "x", "n": 1}"#, url + "/items"])
        #expect(fetched.status == 0)
        #expect(try JSONParser.parse(fetched.stdout)["id"] == 1, "curl got the recorded reply: \(fetched)")
    }

    /// An API that echoes everything it was sent (as httpbin does), the hardest case for a
    /// recording: each secret comes back in the reply.
    static func echoServer() throws -> TestServer {
        try TestServer { request in
            var headers = JSONObject()
            for header in request.headers { headers[header.name] = .string(header.value) }
            let echo: JSON = ["headers": .object(headers), "target": .string(request.target), "body": .string(request.bodyText)]
            return HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json"), ("Set-Cookie", "sid=ck-PLANTED-cookie-77; Path=/")],
                                      body: .bytes(echo.serialized(.compact)))
        }
    }

    @Test func theBuiltDouctlRecordsNoSecretEvenWhenTheServerEchoesThem() throws {
        let api = try Self.echoServer()
        let secrets = ["tok-PLANTED-bearer-11", "ak-PLANTED-header-22", "qk-PLANTED-query-33", "pw-PLANTED-form-44",
                       "cs-PLANTED-secret-55", "th-PLANTED-custom-66"]
        let douctl = Douctl(environment: ["DOUCTL_TOKEN": secrets[0]])
        #expect(try douctl.run(["profile", "add", "echo", "--api-base", api.baseURL, "--record-scrub", "x-tenant-*"]).status == 0)
        let recordings = TemporaryDirectory.make(prefix: "scrubbed")
        let sent = try douctl.run(["--profile", "echo", "api", "-X", "POST", "/login?api_key=\(secrets[2])&page=1",
                                   "-H", "X-Api-Key: \(secrets[1])", "-H", "X-Tenant-Handle: \(secrets[5])",
                                   "-f", "password=\(secrets[3])", "-f", "client_secret=\(secrets[4])", "-f", "user=ahbei",
                                   "--record", recordings])
        #expect(sent.status == 0, "\(sent)")
        #expect(sent.stdoutText.contains(secrets[1]), "the test can fail: the echo carries the secrets")
        let files = try FileManager.default.contentsOfDirectory(atPath: recordings)
        #expect(files.count == 1)
        let text = try files.map { try String(contentsOfFile: recordings + "/" + $0, encoding: .utf8) }.joined()
        for secret in secrets + ["ck-PLANTED-cookie-77"] { #expect(!text.contains(secret), "\(secret) reached the recording") }
        #expect(text.contains("ahbei"), "what is not secret stays")

        // The scrubbed recording still replays: a REDACTED value matches whatever is sent.
        let (replay, url) = try Self.startReplay(Douctl(), ["--replay", recordings])
        defer {
            replay.kill(SIGTERM)
            _ = replay.finish()
        }
        let again = try Douctl(environment: ["DOUCTL_TOKEN": "other"]).run(
            ["api", "-X", "POST", "/login?page=1&api_key=another", "-H", "X-Api-Key: another",
             "-f", "password=x", "-f", "client_secret=y", "-f", "user=ahbei", "--api-base", url])
        #expect(again.status == 0, "\(again)")
        #expect(try again.json()["headers"]?["X-Api-Key"] == "REDACTED")
    }

    // MARK: HAR

    @Test func recordToAHARFileAndReplayIt() throws {
        let api = try Self.itemsServer()
        let douctl = Douctl(environment: ["DOUCTL_TOKEN": "tok-live-har-12345"])
        let directory = TemporaryDirectory.make(prefix: "har-out")
        let har = directory + "/session.har"
        let create = try douctl.run(["api", "-X", "POST", "/items", "--json", "-F", "name=x", "--api-base", api.baseURL, "--record", har])
        let list = try douctl.run(["api", "/items?a=1", "--api-base", api.baseURL, "--record", har])
        #expect(create.status == 0 && list.status == 0)
        let text = try String(contentsOfFile: har, encoding: .utf8)
        #expect(!text.contains("tok-live-har-12345"))
        let log = try JSONParser.parse(Array(text.utf8))["log"]
        #expect(log?["version"] == "1.2")
        let entries = log?["entries"]?.arrayValue ?? []
        #expect(entries.count == 2)
        #expect(entries.first?["request"]?["url"] == .string(api.baseURL + "/items"))
        #expect(entries.first?["request"]?["postData"]?["text"] == #"{"name":"x"}"#)
        #expect(entries.last?["response"]?["content"]?["mimeType"] == "application/json")

        let (replay, url) = try Self.startReplay(Douctl(), ["--replay", har])
        defer {
            replay.kill(SIGTERM)
            _ = replay.finish()
        }
        let other = Douctl(environment: ["DOUCTL_TOKEN": "x"])
        #expect(try other.run(["api", "-X", "POST", "/items", "--json", "-F", "name=x", "--api-base", url]).stdout == create.stdout)
        #expect(try other.run(["api", "/items?a=1", "--api-base", url]).stdout == list.stdout)
    }

    /// mitmproxy (nobody here wrote it) in reverse-proxy mode in front of a server, curl
    /// talking through it, its `hardump` writing the HAR; the replay then answers curl with
    /// the same bytes. And mitmproxy reads the HAR douctl writes.
    @Test func aHARWrittenByMitmproxyReplaysToCurlByteForByte() throws {
        let mitmdump = try Tools.require("mitmdump")
        let curl = try Tools.require("curl")
        let api = try Self.itemsServer()
        let directory = TemporaryDirectory.make(prefix: "mitm")
        let har = directory + "/mitm.har"
        let port = unusedPort()
        let python = try Tools.require("python3")
        let proxy = Process()
        // Through python3, which unblocks SIGTERM first: the test runner's threads block
        // signals, a spawned child inherits the mask, and mitmproxy writes its HAR on SIGTERM.
        proxy.executableURL = URL(fileURLWithPath: python)
        proxy.arguments = ["-c", "import os, signal, sys; signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT, signal.SIGTERM]); "
            + "signal.signal(signal.SIGINT, signal.SIG_DFL); signal.signal(signal.SIGTERM, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])",
                           mitmdump, "-q", "--mode", "reverse:\(api.baseURL)", "--listen-host", "127.0.0.1", "--listen-port", "\(port)",
                           "--set", "hardump=\(har)", "--set", "confdir=\(directory)/conf"]
        proxy.standardOutput = FileHandle.nullDevice
        proxy.standardError = FileHandle.nullDevice
        try proxy.runAlone()
        let through = "http://127.0.0.1:\(port)"
        var ready = false
        for _ in 0..<300 where !ready {
            ready = (try? Self.run(curl, ["-s", "--max-time", "5", "-o", "/dev/null", through + "/items?probe=1"]))?.status == 0
            if !ready { Thread.sleep(forTimeInterval: 0.1) }
        }
        #expect(ready, "mitmdump listens")
        let created = try Self.run(curl, ["-sS", "--max-time", "10", "-X", "POST", "-H", "Content-Type: application/json", "--data", #"{"name":"m","n":2}"#, through + "/items"])
        let listed = try Self.run(curl, ["-sS", "--max-time", "10", through + "/items?x=1&y=2"])
        #expect(created.status == 0 && listed.status == 0)
        proxy.terminate()  // SIGTERM: mitmproxy writes the HAR as it shuts down
        for _ in 0..<300 where proxy.isRunning { Thread.sleep(forTimeInterval: 0.1) }
        if proxy.isRunning { kill(proxy.processIdentifier, SIGKILL) }
        #expect(FileManager.default.fileExists(atPath: har), "mitmproxy wrote its HAR on exit")

        let (replay, url) = try Self.startReplay(Douctl(), ["--replay", har])
        defer {
            replay.kill(SIGTERM)
            _ = replay.finish()
        }
        let again = try Self.run(curl, ["-sS", "-X", "POST", "-H", "Content-Type: application/json", "--data", #"{ "n": 2, "name": "m" }"#, url + "/items"])
        #expect(again.stdout == created.stdout, "\(String(decoding: again.stdout, as: UTF8.self))")
        #expect(try Self.run(curl, ["-sS", url + "/items?y=2&x=1"]).stdout == listed.stdout)

        // The other way: mitmproxy reads a HAR douctl wrote.
        let ours = directory + "/douctl.har"
        #expect(try Douctl(environment: ["DOUCTL_TOKEN": "t"]).run(["api", "/items?z=9", "--api-base", api.baseURL, "--record", ours]).status == 0)
        let read = try Self.run(mitmdump, ["-n", "-r", ours, "--set", "confdir=\(directory)/conf", "--flow-detail", "1"])
        #expect(read.status == 0, "\(read.stderr)")
        #expect(String(decoding: read.stdout, as: UTF8.self).contains("/items?z=9"), "\(String(decoding: read.stdout, as: UTF8.self)) \(read.stderr)")
    }

    // MARK: recording proxy

    /// curl talks to the real API through `sandbox --proxy-to`; what it recorded then answers
    /// curl with the same bytes, with no API behind it.
    @Test func theRecordingProxyRecordsCurlAndTheReplayAnswersItAlike() throws {
        let curl = try Tools.require("curl")
        let api = try Self.itemsServer()
        let recordings = TemporaryDirectory.make(prefix: "proxied")
        let (proxy, through) = try Self.startReplay(Douctl(), ["--proxy-to", api.baseURL, "--record", recordings])
        let secret = "curl-PLANTED-bearer-999"
        let created = try Self.run(curl, ["-sS", "--max-time", "10", "-H", "Authorization: Bearer \(secret)", "-H", "Content-Type: application/json",
                                          "--data", #"{"name":"p","n":3}"#, through + "/items"])
        let listed = try Self.run(curl, ["-sS", "--max-time", "10", "-i", through + "/items?k=v"])
        #expect(created.status == 0 && listed.status == 0)
        #expect(try JSONParser.parse(created.stdout)["id"] == 1, "the real API answered through the proxy")
        #expect(api.received.first?.header("Authorization") == "Bearer \(secret)", "the client's credential went upstream")
        proxy.kill(SIGTERM)
        let stopped = proxy.finish()
        #expect(stopped.status == 0, "\(stopped)")
        #expect(stopped.stderr.contains("POST /items 201 (proxied)"), "\(stopped.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: recordings).sorted()
        #expect(files == ["0001-POST-items.json", "0002-GET-items.json"])
        let text = try files.map { try String(contentsOfFile: recordings + "/" + $0, encoding: .utf8) }.joined()
        #expect(!text.contains(secret), "the client's token is scrubbed")

        let (replay, url) = try Self.startReplay(Douctl(), ["--replay", recordings])
        defer {
            replay.kill(SIGTERM)
            _ = replay.finish()
        }
        let again = try Self.run(curl, ["-sS", "--max-time", "10", "-H", "Authorization: Bearer other", "-H", "Content-Type: application/json",
                                        "--data", #"{"n":3,"name":"p"}"#, url + "/items"])
        #expect(again.stdout == created.stdout)
        let relisted = try Self.run(curl, ["-sS", "--max-time", "10", url + "/items?k=v"])
        #expect(String(decoding: listed.stdout, as: UTF8.self).hasSuffix(String(decoding: relisted.stdout, as: UTF8.self)))
        #expect(!relisted.stdout.isEmpty)
    }

    @Test func theProxyWithoutRecordIsAUsageError() throws {
        let result = try Douctl().run(["sandbox", "--proxy-to", "http://127.0.0.1:9"])
        #expect(result.status == 2)
        #expect(result.errorLine == "douctl: --proxy-to needs --record DIR (or --record x.har): the proxy is there to record")
        #expect(result.stdout.isEmpty)
    }

    // MARK: verify

    /// A recording checked against the server it came from: no drift, exit 0; after the
    /// server changes one field's type, adds one and drops one, each is named, exit 11.
    @Test func verifyReportsDriftByShape() throws {
        let changed = LockedValue(false)
        let api = try TestServer { request in
            let body = changed.value
                ? #"{"items":[{"id":"1","price":2.5,"tags":[]}],"total":1,"next":null}"#
                : #"{"items":[{"id":1,"price":2.5,"name":"a"}],"total":1,"next":null}"#
            return HTTPServerResponse(status: 200,
                                      headers: [("Content-Type", "application/json")], body: .bytes(Array(body.utf8)))
        }
        let douctl = Douctl(environment: ["DOUCTL_TOKEN": "tok-verify-123456"])
        #expect(try douctl.run(["profile", "add", "live", "--api-base", api.baseURL]).status == 0)
        let recordings = TemporaryDirectory.make(prefix: "verify")
        #expect(try douctl.run(["--profile", "live", "api", "/items?page=1", "--record", recordings]).status == 0)

        let same = try douctl.run(["--profile", "live", "sandbox", "--verify", recordings])
        #expect(same.status == 0, "\(same)")
        #expect(same.stdout.isEmpty)
        #expect(same.stderr.contains("verified 1 recorded exchange against"), "\(same.stderr)")
        #expect(api.received.last?.header("Authorization") == "Bearer tok-verify-123456", "the profile's own credential")
        #expect(api.received.last?.target == "/items?page=1")

        changed.withLock { $0 = true }
        let drift = try douctl.run(["--profile", "live", "sandbox", "--verify", recordings])
        #expect(drift.status == 11, "\(drift)")
        #expect(drift.stdoutText.split(separator: "\n").map(String.init) == [
            "GET /items (0001-GET-items.json): field .items[].name gone",
            "GET /items (0001-GET-items.json): field .items[].tags added",
            "GET /items (0001-GET-items.json): field .items[].id: number → string",
        ], "\(drift.stdoutText)")
        #expect(drift.stderr.contains("1 drifted"))
    }

    // MARK: against software nobody here wrote

    /// Datasette (from PyPI): a session recorded with douctl replays to curl with the bytes
    /// Datasette itself sent curl; after a column is added to its table, verify names it.
    @Test func datasetteRecordedReplayedToCurlAndVerified() throws {
        try PythonPeer.require(module: "datasette", package: "datasette")
        let curl = try Tools.require("curl")
        let python = try Tools.require("python3")
        let ds = try PythonPeer(name: "datasette", source: OtherServerTests.datasetteSource, arguments: ["{dir}"])
        let douctl = Douctl()
        #expect(try douctl.run(["profile", "add", "ds", "--api-base", ds.base]).status == 0)
        let recordings = TemporaryDirectory.make(prefix: "ds-rec")
        let targets = ["/t/items.json?_shape=array&_size=2", "/t/items.json?_size=3&_sort_desc=id", "/t/nope.json"]
        for target in targets {
            _ = try douctl.run(["--profile", "ds", "api", target, "--record", recordings])
        }
        let direct = try targets.map { try Self.run(curl, ["-sS", "--max-time", "10", ds.base + $0]).stdout }

        let (replay, url) = try Self.startReplay(Douctl(), ["--replay", recordings])
        defer {
            replay.kill(SIGTERM)
            _ = replay.finish()
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: recordings).sorted()
        #expect(files.count == 3)
        for (index, target) in targets.enumerated() {
            let replayed = try Self.run(curl, ["-sS", "--max-time", "10", url + target]).stdout
            // Byte for byte what Datasette sent douctl (kept as text: Datasette's JSON is not compact) ...
            let recorded = try JSONParser.parse(FileIO.readFile(recordings + "/" + files[index]))["response"]?["body"]?["text"]?.stringValue
            #expect(recorded.map { Array($0.utf8) } == replayed, "\(target): \(String(decoding: replayed, as: UTF8.self))")
            // ... and what it sends curl, but for the one field that changes every time (query_ms).
            func withoutTiming(_ bytes: [UInt8]) throws -> JSON {
                let json = try JSONParser.parse(bytes)
                guard var object = json.objectValue else { return json }
                object["query_ms"] = nil
                return .object(object)
            }
            #expect(try withoutTiming(direct[index]) == withoutTiming(replayed), "\(target)")
        }
        let reordered = try Self.run(curl, ["-sS", "--max-time", "10", url + "/t/items.json?_size=2&_shape=array"]).stdout
        #expect(reordered == direct[0], "the query in another order")

        #expect(try douctl.run(["--profile", "ds", "sandbox", "--verify", recordings]).status == 0, "nothing changed yet")
        let alter = try Self.run(python, ["-c", "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); "
            + "db.execute('alter table items add column price real'); db.commit()", ds.directory + "/t.db"])
        #expect(alter.status == 0, "\(alter.stderr)")
        let drift = try douctl.run(["--profile", "ds", "sandbox", "--verify", recordings])
        #expect(drift.status == 11, "\(drift)\n\(ds.log.suffix(1000))")
        #expect(drift.stdoutText.contains("GET /t/items.json (0001-GET-t_items.json.json): field [].price added"), "\(drift.stdoutText)")
    }

    // MARK: logins

    /// A recorded OIDC discovery document, replayed, sends a client that discovers its
    /// endpoints to the replay: `profile add --issuer` writes the replay's own URLs.
    @Test func aReplayedDiscoveryDocumentPointsDouctlAtTheReplay() throws {
        let issuer = LockedValue("")
        let provider = try TestServer { request in
            let base = issuer.value
            let document = #"{"issuer":"\#(base)","authorization_endpoint":"\#(base)/authorize","token_endpoint":"\#(base)/token","#
                + #""device_authorization_endpoint":"\#(base)/device","jwks_uri":"\#(base)/jwks","response_types_supported":["code"]}"#
            return HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(Array(document.utf8)))
        }
        issuer.withLock { $0 = provider.baseURL }
        let recordings = TemporaryDirectory.make(prefix: "discovery")
        let douctl = Douctl()
        #expect(try douctl.run(["api", provider.baseURL + "/.well-known/openid-configuration", "--record", recordings, "--api-base", provider.baseURL]).status == 0)
        provider.stop()

        let (replay, url) = try Self.startReplay(Douctl(), ["--replay", recordings])
        defer {
            replay.kill(SIGTERM)
            _ = replay.finish()
        }
        let added = try douctl.run(["profile", "add", "oidc", "--issuer", url, "--client-id", "c"])
        #expect(added.status == 0, "\(added)")
        let token = try douctl.run(["config", "get", "token_url", "--profile", "oidc"])
        #expect(token.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == url + "/token", "\(token)")
    }

    /// A recorded login replays for a new client: `douctl auth login` against the replay
    /// gets fresh tokens (the recording's were scrubbed), which reach the recorded API route;
    /// curl with any other token gets the recorded 401.
    @Test func aRecordedLoginReplaysForANewDouctl() throws {
        let recordings = TemporaryDirectory.make(prefix: "login-replay")
        func write(_ name: String, _ text: String) throws {
            try text.write(toFile: recordings + "/" + name, atomically: true, encoding: .utf8)
        }
        try write("0001-POST-token.json", #"{"request":{"method":"POST","path":"/token","query":[],"headers":[["Content-Type","application/x-www-form-urlencoded"]],"#
            + #""body":{"form":[["grant_type","client_credentials"],["client_id","c"],["client_secret","REDACTED"]]}},"#
            + #""response":{"status":200,"headers":[["Content-Type","application/json"]],"#
            + #""body":{"json":{"access_token":"REDACTED","token_type":"Bearer","expires_in":3600,"scope":"read"}}}}"#)
        try write("0002-GET-api_me.json", #"{"request":{"method":"GET","path":"/api/me","query":[],"headers":[["Authorization","REDACTED"]]},"#
            + #""response":{"status":200,"headers":[["Content-Type","application/json"]],"body":{"json":{"name":"ann"}}}}"#)
        try write("0003-GET-api_me.json", #"{"request":{"method":"GET","path":"/api/me","query":[],"headers":[]},"#
            + #""response":{"status":401,"headers":[["Content-Type","application/json"]],"body":{"json":{"detail":"recorded refusal"}}}}"#)

        let (replay, url) = try Self.startReplay(Douctl(), ["--replay", recordings])
        defer {
            replay.kill(SIGTERM)
            _ = replay.finish()
        }
        let douctl = Douctl(environment: ["DOUCTL_CLIENT_SECRET": "new-client-secret"])
        let add = try douctl.run(["profile", "add", "r", "--api-base", url, "--token-url", url + "/token", "--client-id", "c", "--token-auth", "post"])
        #expect(add.status == 0, "\(add)")
        let login = try douctl.run(["--profile", "r", "auth", "login", "--client-credentials"])
        #expect(login.status == 0, "\(login)")
        let credentials = try String(contentsOfFile: douctl.configDirectory + "/credentials.json", encoding: .utf8)
        #expect(!credentials.contains("REDACTED"), "a fresh token, not the scrubbed one: \(credentials)")
        let me = try douctl.run(["--profile", "r", "api", "/api/me"])
        #expect(me.status == 0, "\(me)")
        #expect(try me.json()["name"] == "ann")

        let curl = try Tools.require("curl")
        let wrong = try Self.run(curl, ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer not-issued", url + "/api/me"])
        #expect(String(decoding: wrong.stdout, as: UTF8.self) == "401", "\(wrong)")
        let body = try Self.run(curl, ["-sS", "-H", "Authorization: Bearer not-issued", url + "/api/me"])
        #expect(try JSONParser.parse(body.stdout)["detail"] == "recorded refusal")
    }
}
