import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// Issue 41 against software nobody here wrote: a HAR a real browser wrote (the system's
/// Chromium driven by Playwright) replayed to curl; curl and HTTPie recorded through the
/// recording proxy in front of Django REST Framework, replayed to curl, HTTPie and douctl;
/// `douctl sandbox verify DIR` against Datasette after one column changed. Each compares
/// bytes, minus the one value that changes per request (Datasette's `query_ms`).
@Suite("record and replay any client", .serialized)
struct RecordAnyClientTests {
    /// Datasette's bytes with its per-request timing (`"query_ms": 1.23`) blanked.
    static func withoutTiming(_ bytes: [UInt8]) -> String {
        String(decoding: bytes, as: UTF8.self)
            .replacingOccurrences(of: #""query_ms":\s*[0-9.e-]+"#, with: #""query_ms": 0"#, options: .regularExpression)
    }

    static func curl(_ arguments: [String]) throws -> [UInt8] {
        let result = try FakeAnyAPITests.run(try Tools.require("curl"), ["-sS", "--max-time", "20"] + arguments)
        #expect(result.status == 0, "curl \(arguments): \(result.stderr)")
        return result.stdout
    }

    // MARK: a HAR Chromium wrote (item 5)

    static let playwrightScript = #"""
    # Drives the system's Chromium (not Playwright's download) and saves what it fetched as HAR.
    #   python3 har.py CHROMIUM BASE HAR PATH...
    import sys
    from playwright.sync_api import sync_playwright
    chromium, base, har, paths = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        context = browser.new_context(record_har_path=har)
        page = context.new_page()
        page.goto(base + paths[0])
        for path in paths[1:]:
            # As a page's script asks: fetch(), so a 404 is recorded like any reply.
            page.evaluate("url => fetch(url).then(r => r.text())", base + path)
        context.close()
        browser.close()
    """#

    @Test func aHARChromiumWroteReplaysToCurlWithDatasettesBytes() throws {
        try PythonPeer.require(module: "datasette", package: "datasette")
        try PythonPeer.require(module: "playwright", package: "playwright")
        let chromium = try Tools.require("chromium")
        let python = try Tools.require("python3")
        let ds = try PythonPeer(name: "datasette", source: OtherServerTests.datasetteSource, arguments: ["{dir}"])
        let directory = TemporaryDirectory.make(prefix: "chromium-har")
        let script = directory + "/har.py"
        try Self.playwrightScript.write(toFile: script, atomically: true, encoding: .utf8)
        let har = directory + "/datasette.har"
        let targets = ["/t/items.json?_shape=array&_size=2", "/t/items.json?_size=3&_sort_desc=id", "/t/nope.json"]
        let browse = try FakeAnyAPITests.run(python, [script, chromium, ds.base, har] + targets)
        try #require(browse.status == 0, "playwright: \(browse.stderr)")
        let written = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: har))))
        #expect(written["log"]?["creator"]?["name"]?.stringValue == "Playwright")
        #expect(written["log"]?["browser"]?["name"]?.stringValue == "chromium", "written by Chromium itself")

        let (replay, url) = try FakeAnyAPITests.startReplay(Douctl(), ["--replay", har])
        defer {
            replay.kill(SIGTERM)
            _ = replay.finish()
        }
        for target in targets {
            let direct = try Self.curl(["-i", ds.base + target])
            let replayed = try Self.curl(["-i", url + target])
            // The status line and body byte for byte, the timing aside; headers differ only by
            // those a server writes per connection (date, server).
            let (directHead, directBody) = Self.split(direct)
            let (replayedHead, replayedBody) = Self.split(replayed)
            let status = { (head: [String]) in head.first?.split(separator: " ").dropFirst().first.map(String.init) }
            #expect(status(directHead) != nil && status(directHead) == status(replayedHead), "\(target): \(directHead.first ?? "") / \(replayedHead.first ?? "")")
            #expect(Self.withoutTiming(directBody) == Self.withoutTiming(replayedBody), "\(target)")
            #expect(replayedHead.contains { $0.lowercased().hasPrefix("content-type: application/json") }, "\(target): \(replayedHead)")
        }
    }

    /// A reply's head lines and body, from `curl -i`.
    static func split(_ bytes: [UInt8]) -> (head: [String], body: [UInt8]) {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0...(max(0, bytes.count - 4))).first(where: { Array(bytes[$0..<min(bytes.count, $0 + 4)]) == separator }) else { return ([], bytes) }
        let head = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        return (head, Array(bytes[(end + 4)...]))
    }

    // MARK: other clients through the recording proxy, replayed to others (item 1)

    @Test func curlAndHTTPieRecordedThroughTheProxyReplayToCurlHTTPieAndDouctl() throws {
        try PythonPeer.require(module: "rest_framework", package: "djangorestframework")
        try PythonPeer.require(module: "httpie", package: "httpie")
        let python = try Tools.require("python3")
        let drf = try PythonPeer(name: "drf", source: OtherServerTests.drfSource)
        let recording = TemporaryDirectory.make(prefix: "drf-proxy")
        func httpie(_ arguments: [String]) throws -> [UInt8] {
            // HTTPie's `http`, run as its module: the body only, as the server sent it.
            let result = try FakeAnyAPITests.run(python, ["-m", "httpie", "--ignore-stdin", "--print=b", "--pretty=none", "--timeout", "20"] + arguments)
            #expect(result.status == 0, "http \(arguments): \(result.stderr)")
            return result.stdout
        }
        func douctl(_ base: String, _ arguments: [String]) throws -> [UInt8] {
            let result = try Douctl(environment: ["DOUCTL_TOKEN": "alice"]).run(["api", "--api-base", base] + arguments)
            #expect(result.status == 0, "douctl \(arguments): \(result)")
            return result.stdout
        }

        let (proxy, through) = try FakeAnyAPITests.startReplay(Douctl(), ["--proxy-to", drf.base, "--record", recording])
        let created = try Self.curl(["-X", "POST", "-H", "Authorization: Bearer alice", "-H", "Content-Type: application/json",
                                     "-d", #"{"name":"a","qty":1}"#, through + "/api/items/"])
        let createdByHTTPie = try httpie(["POST", through + "/api/items/", "Authorization:Bearer alice", "name=b", "qty:=2"])
        let listed = try httpie(["GET", through + "/api/items/", "Authorization:Bearer alice"])
        let item = try Self.curl(["-H", "Authorization: Bearer alice", through + "/api/items/2/"])
        let listedByDouctl = try douctl(through, ["/api/items/"])
        proxy.kill(SIGTERM)
        _ = proxy.finish()
        #expect(try JSONParser.parse(created)["id"] == 1 && JSONParser.parse(createdByHTTPie)["id"] == 2, "DRF answered through the proxy")
        let recorded = try FileManager.default.contentsOfDirectory(atPath: recording).sorted()
        #expect(recorded.count == 5, "\(recorded)")
        let text = try recorded.map { try String(contentsOfFile: recording + "/" + $0, encoding: .utf8) }.joined()
        #expect(!text.contains("Bearer alice"), "the credential is scrubbed")

        let (replay, url) = try FakeAnyAPITests.startReplay(Douctl(), ["--replay", recording])
        defer {
            replay.kill(SIGTERM)
            _ = replay.finish()
        }
        // Each client gets the recorded bytes: the same client's, and another's.
        #expect(try Self.curl(["-X", "POST", "-H", "Content-Type: application/json", "-d", #"{"qty": 1, "name": "a"}"#, url + "/api/items/"]) == created)
        #expect(try httpie(["POST", url + "/api/items/", "name=b", "qty:=2"]) == createdByHTTPie)
        #expect(try httpie(["GET", url + "/api/items/"]) == listed)
        #expect(try Self.curl([url + "/api/items/"]) == Self.curl(["-H", "Authorization: Bearer alice", drf.base + "/api/items/"]), "curl: the replay's bytes are DRF's")
        #expect(try Self.curl([url + "/api/items/2/"]) == item)
        #expect(try httpie(["GET", url + "/api/items/2/"]) == httpie(["GET", drf.base + "/api/items/2/", "Authorization:Bearer alice"]), "HTTPie: the replay's bytes are DRF's")
        #expect(try douctl(url, ["/api/items/"]) == listedByDouctl)
        #expect(try douctl(url, ["/api/items/2/"]) == douctl(drf.base, ["/api/items/2/"]), "douctl: the replay's reply is DRF's")
    }

    // MARK: sandbox verify DIR, as the issue spells it (item 6)

    @Test func sandboxVerifyAsAWordNamesTheColumnDatasetteGained() throws {
        try PythonPeer.require(module: "datasette", package: "datasette")
        let python = try Tools.require("python3")
        let ds = try PythonPeer(name: "datasette", source: OtherServerTests.datasetteSource, arguments: ["{dir}"])
        let douctl = Douctl()
        #expect(try douctl.run(["profile", "add", "live", "--api-base", ds.base]).status == 0)
        let recording = TemporaryDirectory.make(prefix: "verify-word")
        #expect(try douctl.run(["--profile", "live", "--record", recording, "api", "/t/items.json?_shape=array&_size=2"]).status == 0)
        let unchanged = try douctl.run(["--profile", "live", "sandbox", "verify", recording])
        #expect(unchanged.status == 0, "\(unchanged)")
        #expect(unchanged.stdout.isEmpty, "\(unchanged.stdoutText)")
        let alter = try FakeAnyAPITests.run(python, ["-c", "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); "
            + "db.execute('alter table items add column price real'); db.commit()", ds.directory + "/t.db"])
        #expect(alter.status == 0, "\(alter.stderr)")
        let drift = try douctl.run(["--profile", "live", "sandbox", "verify", recording])
        #expect(drift.status == 11, "\(drift)")
        #expect(drift.stdoutText == "GET /t/items.json (0001-GET-t_items.json.json): field [].price added\n", "\(drift.stdoutText)")
    }
}
