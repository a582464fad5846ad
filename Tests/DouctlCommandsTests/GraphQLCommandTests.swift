@testable import DouctlCommands
@testable import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlTestSupport
import Testing

/// Issue 43, part one and two, in process: GraphQL errors as errors (exit 1) and partial
/// results (exit 10); typed variables; --paginate through $endCursor; nested connections
/// completed by re-asking node(id:).
@Suite struct GraphQLCommandTests {
    func plain(_ transport: ScriptedTransport, _ extra: [String] = []) throws -> InProcessDouctl {
        let douctl = try InProcessDouctl(environment: ["DOUCTL_TOKEN": "t"], transport: transport)
        let added = try douctl.run(["profile", "add", "api", "--api-base", "http://api.test"] + extra)
        #expect(added.status == 0, "\(added)")
        return douctl
    }

    func body(_ request: HTTPRequest) throws -> JSON {
        guard case .bytes(let bytes) = request.body else { return .null }
        return try JSONParser.parse(bytes)
    }

    @Test func errorsWithoutDataAreExitOneWithMessagesAndPathsAndNothingOnStdout() throws {
        let reply = #"{"data":null,"errors":[{"message":"Item 99 not found","locations":[{"line":1,"column":3}],"path":["item"]},{"message":"bad","locations":[{"line":2,"column":5}]}]}"#
        let transport = ScriptedTransport([.json(200, reply)])
        let douctl = try plain(transport)
        let result = try douctl.run("--profile", "api", "api", "graphql", "-f", "query={ item(id: 99) { name } }", "--error-body", "none")
        #expect(result.status == 1, "\(result)")
        #expect(result.stdout.isEmpty, "\(result)")
        #expect(result.stderr == "douctl: the API answered HTTP 200 (GraphQL: Item 99 not found (at item); bad (line 2:5), POST graphql)\n", "\(result)")
        // The request: POST to api_base/graphql, the query as JSON.
        #expect(transport.requests.map(\.url) == ["http://api.test/graphql"])
        #expect(transport.requests.first?.method == "POST")
        #expect(try body(transport.requests[0]) == ["query": "{ item(id: 99) { name } }"])
        // --error-body stderr: the document goes there, stdout stays empty.
        transport.then(.json(200, reply))
        let shown = try douctl.run("--profile", "api", "api", "/graphql", "-f", "query={ item(id: 99) { name } }", "--error-body", "stderr")
        #expect(shown.status == 1 && shown.stdout.isEmpty, "\(shown)")
        #expect(shown.stderr.hasPrefix(reply), "\(shown)")
    }

    @Test func dataWithErrorsIsPrintedAndExitsTenWithTheErrorsOnStderr() throws {
        let reply = #"{"data":{"maybe":null,"viewer":{"login":"octo"}},"errors":[{"message":"no \u001b[31m item","path":["maybe"]}]}"#
        let transport = ScriptedTransport([.json(200, reply)])
        let douctl = try plain(transport)
        let result = try douctl.run("--profile", "api", "api", "graphql", "-f", "query={ maybe { name } viewer { login } }")
        #expect(result.status == 10, "\(result)")
        #expect(result.stdoutText == #"{"data":{"maybe":null,"viewer":{"login":"octo"}},"errors":[{"message":"no \u001b[31m item","path":["maybe"]}]}"# + "\n", "\(result)")
        #expect(result.stderr == "douctl: warning: the GraphQL reply has errors beside its data (a partial result, exit 10): no \\x1B[31m item (at maybe)\n", "\(result)")
        #expect(ExitStatus.partial.rawValue == 10)
    }

    @Test func aRESTObjectWithAnErrorsMemberIsNotAGraphQLError() throws {
        let transport = ScriptedTransport([.json(200, #"{"id":1,"errors":[{"message":"x"}]}"#)])
        let douctl = try plain(transport)
        let result = try douctl.run("--profile", "api", "api", "/things/1")
        #expect(result.status == 0, "\(result)")
    }

    @Test func fieldsAreVariablesTypedAsGhTypesThem() throws {
        let transport = ScriptedTransport([.json(200, #"{"data":{"a":1}}"#)])
        let douctl = try plain(transport, ["--graphql-url", "/api/gql"])
        let result = try douctl.run("--profile", "api", "api", "graphql", "-f", "query=query Q($n: Int) { a }", "-F", "n=3", "-f", "s=3",
                                    "-F", "flag=true", "-F", "ids:=[1,2]", "-f", "operationName=Q")
        #expect(result.status == 0, "\(result)")
        #expect(transport.requests.map(\.url) == ["http://api.test/api/gql"])
        #expect(try body(transport.requests[0]) == ["query": "query Q($n: Int) { a }", "operationName": "Q",
                                                    "variables": ["s": "3", "n": 3, "flag": true, "ids": [1, 2]]])
    }

    @Test func paginateFollowsEndCursorAndPrintsEachNode() throws {
        func page(_ names: [String], next: String?) -> ScriptedTransport.Answer {
            let nodes = names.map { #"{"name":"\#($0)"}"# }.joined(separator: ",")
            let info = next.map { #"{"hasNextPage":true,"endCursor":"\#($0)"}"# } ?? #"{"hasNextPage":false,"endCursor":"z"}"#
            return .json(200, #"{"data":{"viewer":{"repos":{"nodes":[\#(nodes)],"pageInfo":\#(info)}}}}"#)
        }
        let query = "query($endCursor: String) { viewer { repos(first: 2, after: $endCursor) { nodes { name } pageInfo { hasNextPage endCursor } } } }"
        let transport = ScriptedTransport([page(["a", "b"], next: "c1"), page(["c", "d"], next: "c2"), page(["e"], next: nil)])
        let douctl = try plain(transport)
        let result = try douctl.run("--profile", "api", "api", "graphql", "-f", "query=\(query)", "--paginate")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == #"{"name":"a"}\#n{"name":"b"}\#n{"name":"c"}\#n{"name":"d"}\#n{"name":"e"}\#n"#, "\(result)")
        #expect(transport.requests.count == 3)
        #expect(try body(transport.requests[1])["variables"] == ["endCursor": "c1"])
        #expect(try body(transport.requests[2])["variables"] == ["endCursor": "c2"])
        #expect(transport.requests.allSatisfy { $0.method == "POST" })

        transport.then(page(["a"], next: "c1"), page(["b"], next: nil))
        let slurped = try douctl.run("--profile", "api", "api", "graphql", "-f", "query=\(query)", "--paginate", "--slurp")
        #expect(slurped.status == 0, "\(slurped)")
        #expect(slurped.stdoutText == #"{"data":{"viewer":{"repos":{"nodes":[{"name":"a"},{"name":"b"}],"pageInfo":{"hasNextPage":false,"endCursor":"z"}}}}}"# + "\n", "\(slurped)")
    }

    @Test func aQueryWithoutEndCursorStopsShortWithAWarning() throws {
        let transport = ScriptedTransport([.json(200, #"{"data":{"repos":{"nodes":[{"n":1}],"pageInfo":{"hasNextPage":true,"endCursor":"x"}}}}"#)])
        let douctl = try plain(transport)
        let result = try douctl.run("--profile", "api", "api", "graphql", "-f", "query={ repos(first: 1) { nodes { n } pageInfo { hasNextPage endCursor } } }", "--paginate")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == #"{"n":1}"# + "\n")
        #expect(result.stderr.contains("the query takes no $endCursor"), "\(result)")
        #expect(transport.requests.count == 1)
    }

    @Test func nestedConnectionsAreCompletedFromTheirParentsID() throws {
        let query = """
            query($endCursor: String, $n: Int) { repos(first: 5, after: $endCursor) { nodes { id __typename name
              issues: tickets(first: $n, after: "ignored") { nodes { title } pageInfo { hasNextPage endCursor } } }
              pageInfo { hasNextPage endCursor } } }
            """
        let transport = ScriptedTransport([
            .json(200, #"{"data":{"repos":{"nodes":[{"id":"R1","__typename":"Repo","name":"r1","issues":{"nodes":[{"title":"t1"}],"pageInfo":{"hasNextPage":true,"endCursor":"i1"}}}],"pageInfo":{"hasNextPage":false,"endCursor":"r"}}}}"#),
            .json(200, #"{"data":{"node":{"issues":{"nodes":[{"title":"t2"}],"pageInfo":{"hasNextPage":true,"endCursor":"i2"}}}}}"#),
            .json(200, #"{"data":{"node":{"issues":{"nodes":[{"title":"t3"}],"pageInfo":{"hasNextPage":false,"endCursor":"i3"}}}}}"#),
        ])
        let douctl = try plain(transport)
        let result = try douctl.run("--profile", "api", "api", "graphql", "-f", "query=\(query)", "-F", "n=1", "--paginate")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == #"{"id":"R1","__typename":"Repo","name":"r1","issues":{"nodes":[{"title":"t1"},{"title":"t2"},{"title":"t3"}],"pageInfo":{"hasNextPage":false,"endCursor":"i3"}}}"# + "\n", "\(result)")
        #expect(transport.requests.count == 3)
        let inner = try body(transport.requests[1])
        #expect(inner["query"]?.stringValue == #"query DouctlConnection($douctlID: ID!, $douctlAfter: String, $n: Int) { node(id: $douctlID) { ... on Repo { issues: tickets(first: $n, after: $douctlAfter) { nodes { title } pageInfo { hasNextPage endCursor } } } } }"#, "\(inner)")
        #expect(inner["variables"] == ["douctlID": "R1", "n": 1, "douctlAfter": "i1"])
        #expect(try body(transport.requests[2])["variables"]?["douctlAfter"] == "i2")
    }

    @Test func anInnerConnectionWithoutItsParentsIDIsLeftWithOneWarning() throws {
        let nodes = (1...3).map { #"{"name":"r\#($0)","issues":{"nodes":[{"t":1}],"pageInfo":{"hasNextPage":true,"endCursor":"x"}}}"# }.joined(separator: ",")
        let transport = ScriptedTransport([.json(200, #"{"data":{"repos":{"nodes":[\#(nodes)],"pageInfo":{"hasNextPage":false,"endCursor":null}}}}"#)])
        let douctl = try plain(transport)
        let result = try douctl.run("--profile", "api", "api", "graphql", "-f",
                                    "query=query($endCursor: String) { repos(after: $endCursor) { nodes { name issues { nodes { t } pageInfo { hasNextPage endCursor } } } pageInfo { hasNextPage endCursor } } }", "--paginate")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText.split(separator: "\n").count == 3)
        #expect(result.stderr == "douctl: warning: data.repos.nodes.issues has more pages, but its parent selects no id and __typename to re-ask from (add: id __typename beside issues); left at its first page\n", "\(result)")
        #expect(transport.requests.count == 1)
    }

    @Test func theDocumentReaderFindsFieldsThroughFragmentsAndCarriesThemOver() throws {
        let source = """
            query Q($a: Int = 2, $b: [String!]) { x { ...F } }
            fragment F on X { conn: items(first: $a, filter: {k: [1, 2]}) @include(if: true) { nodes { ...G } } }
            fragment G on Y { z }
            """
        let document = try GraphQLDocument(source, operationName: "Q")
        #expect(document.variables.map(\.name) == ["a", "b"])
        #expect(document.variables.map(\.text) == ["$a: Int = 2", "$b: [String!]"])
        let field = try #require(document.field(at: ["x", "conn"]))
        #expect(field.name == "items")
        #expect(field.arguments.map(\.text) == ["first: $a", "filter: {k: [1, 2]}"])
        #expect(field.selection == "{ nodes { ...G } }")
        #expect(document.fragmentsUsed(by: field.selection ?? "") == ["fragment G on Y { z }"])
        #expect(GraphQLDocument.variablesUsed(in: "a(x: $p) { b(y: $q) }") == ["p", "q"])
        #expect(throws: GraphQLDocument.ParseError.self) { try GraphQLDocument("{ a(x: \"open }") }
    }
}
