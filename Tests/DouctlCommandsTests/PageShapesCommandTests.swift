@testable import DouctlCommands
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlTestSupport
import Testing

/// Issue 43, part three, in process: every shape of next page — a header with the next URL
/// (Kinto's Next-Page) or number (X-Next-Page), a cursor in the body sent back in the query
/// or a POST body, Datasette's _shape=objects rows.
@Suite struct PageShapesCommandTests {
    func plain(_ transport: ScriptedTransport, _ extra: [String] = []) throws -> InProcessDouctl {
        let douctl = try InProcessDouctl(environment: ["DOUCTL_TOKEN": "t"], transport: transport)
        let added = try douctl.run(["profile", "add", "api", "--api-base", "http://api.test"] + extra)
        #expect(added.status == 0, "\(added)")
        return douctl
    }

    @Test func aNextPageHeaderIsFollowed() throws {
        let transport = ScriptedTransport([
            .json(200, #"{"data":[{"id":1},{"id":2}]}"#, headers: [HTTPHeader("Next-Page", "http://api.test/records?_token=abc")]),
            .json(200, #"{"data":[{"id":3}]}"#),
        ])
        let douctl = try plain(transport)
        let result = try douctl.run("--profile", "api", "api", "/records", "--paginate")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n", "\(result)")
        #expect(result.stderr.isEmpty, "\(result)")
        #expect(transport.requests.map(\.url) == ["http://api.test/records", "http://api.test/records?_token=abc"])
    }

    @Test func anXNextPageNumberAsksForThatPageAndAnEmptyOneEnds() throws {
        let transport = ScriptedTransport([
            .json(200, #"[{"id":1},{"id":2}]"#, headers: [HTTPHeader("X-Next-Page", "2")]),
            .json(200, #"[{"id":3},{"id":4}]"#, headers: [HTTPHeader("X-Next-Page", "3")]),
            .json(200, #"[{"id":5}]"#, headers: [HTTPHeader("X-Next-Page", "")]),
        ])
        let douctl = try plain(transport)
        let result = try douctl.run("--profile", "api", "api", "/projects?per_page=2", "--paginate")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText.split(separator: "\n").count == 5, "\(result)")
        #expect(result.stderr.isEmpty, "\(result)")
        #expect(transport.requests.map { $0.queryValue("page") } == [nil, "2", "3"])
    }

    @Test func aBodyCursorGoesBackInTheQuery() throws {
        let transport = ScriptedTransport([
            .json(200, #"{"items":[{"id":1}],"response_metadata":{"next_cursor":"dXNlcjo"}}"#),
            .json(200, #"{"items":[{"id":2}],"response_metadata":{"next_cursor":""}}"#),
        ])
        let douctl = try plain(transport)
        let result = try douctl.run("--profile", "api", "api", "/users.list", "--paginate")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == "{\"id\":1}\n{\"id\":2}\n", "\(result)")
        #expect(result.stderr.isEmpty, "\(result)")
        #expect(transport.requests.map { $0.queryValue("cursor") } == [nil, "dXNlcjo"])
    }

    @Test func aCursorGoesBackInAPostsJSONBodyUnderTheProfilesName() throws {
        let transport = ScriptedTransport([
            .json(200, #"{"object":"list","results":[{"id":"a"}],"next_cursor":"c2","has_more":true}"#),
            .json(200, #"{"object":"list","results":[{"id":"b"}],"next_cursor":null,"has_more":false}"#),
        ])
        let douctl = try plain(transport, ["--cursor-param", "start_cursor"])
        let result = try douctl.run("--profile", "api", "api", "-X", "POST", "/v1/search", "--json", "-f", "query=x", "--paginate")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == "{\"id\":\"a\"}\n{\"id\":\"b\"}\n", "\(result)")
        #expect(transport.requests.map(\.method) == ["POST", "POST"])
        guard case .bytes(let second) = transport.requests.last?.body else { Issue.record("no body"); return }
        #expect(try JSONParser.parse(second) == ["query": "x", "start_cursor": "c2"])
        #expect(transport.requests.last?.queryValue("start_cursor") == nil)
    }

    @Test func aCursorThatRepeatsStopsWithAWarning() throws {
        let transport = ScriptedTransport([
            .json(200, #"{"data":[{"id":1}],"next_cursor":"same"}"#),
            .json(200, #"{"data":[{"id":2}],"next_cursor":"same"}"#),
        ])
        let douctl = try plain(transport)
        let result = try douctl.run("--profile", "api", "api", "/x", "--paginate")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == "{\"id\":1}\n{\"id\":2}\n", "\(result)")
        #expect(result.stderr.contains("gives the same next cursor"), "\(result)")
    }

    @Test func datasettesObjectsShapeWalksItsOneArrayOfObjects() throws {
        let transport = ScriptedTransport([
            .json(200, #"{"database":"t","rows":[{"id":1},{"id":2}],"columns":["id"],"primary_keys":["id"],"suggested_facets":[],"next_url":"http://api.test/t/items.json?_shape=objects&_next=2"}"#),
            .json(200, #"{"database":"t","rows":[{"id":3}],"columns":["id"],"primary_keys":[],"suggested_facets":[],"next_url":null}"#),
        ])
        let douctl = try plain(transport)
        let result = try douctl.run("--profile", "api", "api", "/t/items.json?_shape=objects", "--paginate")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n", "\(result)")
    }

    @Test func aLoneDocumentWithListsIsStillOneItem() throws {
        let transport = ScriptedTransport([.json(200, #"{"login":"ann","emails":[{"a":1}],"tags":["x"]}"#)])
        let douctl = try plain(transport)
        let result = try douctl.run("--profile", "api", "api", "/user", "--paginate")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == #"{"login":"ann","emails":[{"a":1}],"tags":["x"]}"# + "\n", "\(result)")
    }
}
