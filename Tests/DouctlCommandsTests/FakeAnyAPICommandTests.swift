import DouctlHTTP
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Testing
@testable import DouctlCommands

/// Issue 41 in process: `sandbox --verify` against a scripted live API, and the proxy's
/// option checks, through the real command tree.
@Suite struct FakeAnyAPICommandTests {
    static func recording(reply: String) throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory(prefix: "verify")
        let document = #"""
        {"request":{"method":"POST","path":"/v1/items","query":[["page","2"],["api_key","REDACTED"]],
          "headers":[["Content-Type","application/json"],["Authorization","REDACTED"],["X-Trace","t-1"]],
          "body":{"json":{"name":"x"}}},
         "response":{"status":201,"headers":[["Content-Type","application/json"]],"body":{"json":\#(reply)}}}
        """#
        try AtomicFile.write(Array(document.utf8), to: directory.path + "/0001-POST-v1_items.json")
        return directory
    }

    static func live(_ transport: ScriptedTransport) throws -> InProcessDouctl {
        let douctl = try InProcessDouctl(environment: ["DOUCTL_TOKEN": "live-token"], transport: transport)
        #expect(try douctl.run(["profile", "add", "live", "--api-base", "http://api.test/base"]).status == 0)
        return douctl
    }

    @Test func verifySendsTheRecordedRequestWithTheProfilesCredentialAndNoScrubbedValues() throws {
        let directory = try Self.recording(reply: #"{"id":1,"name":"x"}"#)
        let transport = ScriptedTransport([.json(201, #"{"id":2,"name":"y"}"#)])
        let result = try Self.live(transport).run(["--profile", "live", "sandbox", "--verify", directory.path])
        #expect(result.status == 0, "values differ, the shape does not: \(result)")
        #expect(result.stdout.isEmpty)
        let sent = try #require(transport.requests.first)
        #expect(sent.method == "POST")
        #expect(sent.url == "http://api.test/v1/items?page=2", "the recorded path on the profile's origin, REDACTED values left out")
        #expect(sent.headers.value(of: "Authorization") == "Bearer live-token")
        #expect(sent.headers.value(of: "X-Trace") == "t-1")
        if case .bytes(let body) = sent.body { #expect(body == Array(#"{"name":"x"}"#.utf8)) } else { Issue.record("no body sent") }
    }

    @Test func verifyNamesEachDriftAndExits11() throws {
        let directory = try Self.recording(reply: #"{"id":1,"name":"x","tags":["a"],"owner":{"id":1}}"#)
        let transport = ScriptedTransport([.json(200, #"{"id":"1","tags":[3],"owner":{},"extra":null}"#)])
        let result = try Self.live(transport).run(["--profile", "live", "sandbox", "--verify", directory.path])
        #expect(result.status == 11, "\(result)")
        #expect(result.stdoutText.split(separator: "\n").map(String.init) == [
            "POST /v1/items (0001-POST-v1_items.json): status 201 → 200",
            "POST /v1/items (0001-POST-v1_items.json): field .name gone",
            "POST /v1/items (0001-POST-v1_items.json): field .extra added",
            "POST /v1/items (0001-POST-v1_items.json): field .id: number → string",
            "POST /v1/items (0001-POST-v1_items.json): field .tags[]: string → number",
            "POST /v1/items (0001-POST-v1_items.json): field .owner.id gone",
        ], "\(result.stdoutText)")
        #expect(ExitStatus.drift.rawValue == 11)
    }

    @Test(arguments: [
        (["sandbox", "--proxy-to", "http://api.test"], "douctl: --proxy-to needs --record DIR (or --record x.har): the proxy is there to record"),
        (["sandbox", "--record", "x"], "douctl: --record on the sandbox goes with --proxy-to URL (to record a session with douctl itself: douctl --record DIR COMMAND)"),
        (["sandbox", "--proxy-to", "ftp://x", "--record", "d"], "douctl: invalid value 'ftp://x' for --proxy-to: expected an http or https URL such as https://api.example.com"),
    ])
    func theProxysOptionsAreCheckedBeforeAnythingStarts(arguments: [String], line: String) throws {
        let result = try InProcessDouctl(transport: ScriptedTransport([])).run(arguments)
        #expect(result.status == 2, "\(result)")
        #expect(result.errorLine == line)
        #expect(result.stdout.isEmpty)
    }
}
