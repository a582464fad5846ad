@testable import DouctlCommands
@testable import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlTestSupport
import Testing

/// Issue 43, part four, in process: text/event-stream and NDJSON replies printed an event a
/// line, --jq per event, --follow reconnecting with Last-Event-ID after the server's retry.
@Suite struct EventStreamCommandTests {
    static func stream(_ text: String, type: String = "text/event-stream") -> ScriptedTransport.Answer {
        .reply(HTTPResponse(head: HTTPResponseHead(status: 200, headers: [HTTPHeader("Content-Type", type)]), body: Array(text.utf8)))
    }

    func douctl(_ transport: ScriptedTransport) throws -> InProcessDouctl {
        let douctl = try InProcessDouctl(environment: ["DOUCTL_TOKEN": "t"], transport: transport)
        #expect(try douctl.run(["profile", "add", "api", "--api-base", "http://api.test"]).status == 0)
        return douctl
    }

    static let events = ": keep-alive\r\nevent: token\r\nid: 1\r\ndata: {\"n\":1}\r\n\r\ndata: two\ndata: lines\n\nid: 7\nevent: done\ndata: \u{1B}[2Jbye\n\ndata: dropped, no blank line"

    @Test func serverSentEventsAreOneJSONLineEach() throws {
        let transport = ScriptedTransport([Self.stream(Self.events)])
        let result = try douctl(transport).run("--profile", "api", "api", "/events")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == """
            {"event":"token","id":"1","data":{"n":1}}
            {"event":"message","id":"1","data":"two\\nlines"}
            {"event":"done","id":"7","data":"\\u001b[2Jbye"}

            """, "\(result)")
        #expect(result.stderr.isEmpty, "\(result)")
    }

    @Test func jqRunsOnEachEventAndNDJSONIsLineByLine() throws {
        let transport = ScriptedTransport([Self.stream(Self.events), Self.stream("{\"a\":1}\n\n{\"a\":2}\r\n{\"a\":3}", type: "application/x-ndjson")])
        let douctl = try douctl(transport)
        let ids = try douctl.run("--profile", "api", "api", "/events", "--jq", ".event")
        #expect(ids.status == 0 && ids.stdoutText == "token\nmessage\ndone\n", "\(ids)")
        let lines = try douctl.run("--profile", "api", "api", "/lines")
        #expect(lines.status == 0 && lines.stdoutText == "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n", "\(lines)")
    }

    @Test func followReconnectsWithLastEventIDAfterTheServersRetryAndStopsAtA204() throws {
        let transport = ScriptedTransport([
            Self.stream("retry: 250\nid: 2\ndata: a\n\n"),
            .failure(.connectionLost("reset by peer")),
            Self.stream("id: 3\ndata: b\n\n"),
            .reply(HTTPResponse(head: HTTPResponseHead(status: 204), body: [])),
        ])
        let douctl = try douctl(transport)
        let result = try douctl.run("--profile", "api", "api", "/events", "--follow", "--retry", "0")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == "{\"event\":\"message\",\"id\":\"2\",\"data\":\"a\"}\n{\"event\":\"message\",\"id\":\"3\",\"data\":\"b\"}\n", "\(result)")
        #expect(transport.requests.map { $0.header("Last-Event-ID") } == [nil, "2", "2", "3"])
        #expect(result.stderr.contains("connecting again in 250 ms from event 2"), "\(result)")
    }

    @Test func followIsRefusedWithPaginate() throws {
        let result = try douctl(ScriptedTransport([])).run("--profile", "api", "api", "/events", "--follow", "--paginate")
        #expect(result.status == 2, "\(result)")
    }

    @Test func theParserReadsAcrossChunksAndBoundsALine() throws {
        var stream = EventStream(kind: .serverSentEvents)
        var got: [JSON] = []
        let text = Array("event: x\r".utf8) + Array("\nda".utf8) + Array("ta: {\"k\"".utf8) + Array(":1}\r\r".utf8)
        for byte in text {
            _ = try [byte].withUnsafeBytes { try stream.feed($0) { got.append($0); return true } }
        }
        #expect(got == [["event": "x", "id": nil, "data": ["k": 1]]])
        var bounded = EventStream(kind: .lines)
        bounded.maximumLine = 8
        #expect(throws: EventStream.Problem.self) {
            _ = try Array("0123456789".utf8).withUnsafeBytes { try bounded.feed($0) { _ in true } }
        }
        #expect(EventStream.kind(of: "application/jsonl; charset=utf-8") == .lines)
        #expect(EventStream.kind(of: "application/json") == nil)
    }
}
