import DouctlCore
import DouctlHTTP
import DouctlJSON

/// `douctl api graphql` (or any PATH ending in /graphql): the fields become one GraphQL
/// request, and --paginate walks its connections (`GraphQLWalk`).
enum APIGraphQL {
    static let discussion = """
        GraphQL: PATH graphql posts to the profile's graphql_url (default api_base/graphql),
        and any PATH whose last segment is graphql is GraphQL too. The fields make one JSON
        body, as gh api graphql makes it: query (-f query=@FILE or -F query=@FILE reads a
        file) and operationName as they are, every other field a variable (-F typed,
        -f a string, -F 'ids:=[1,2]' any JSON). A reply with errors and no data is exit 1:
        the messages and paths on the error line, the document where --error-body says. A
        reply with data and errors prints the document and exits 10, the errors on stderr.
        --paginate follows the first connection (pageInfo { hasNextPage endCursor }) by
        setting $endCursor, as gh does, and prints each of its nodes (or edges) as a line;
        every connection inside a node that has more pages is completed first by asking
        node(id: $id) { ... on TYPE { FIELD(ARGS, after: $cursor) SELECTION } } — this
        needs Relay's node(id:) on the server and id and __typename selected beside the
        inner connection (else a warning, and the pages the query returned). --slurp
        prints the first page's document once, its connection holding every page's nodes.
        """

    /// The GraphQL request of `draft`: POST (or -X GET, the body in the query string) to
    /// the profile's endpoint, the fields as `{"query", "operationName", "variables"}`.
    static func request(_ draft: APICommand.RequestDraft, standardInput: StandardInput, profile: ResolvedProfile) throws(DouctlError) -> (APIRequest, JSONObject) {
        var fields: [RequestField] = []
        for field in draft.fields {
            switch field {
            case .value(let value):
                // -f query=@FILE reads the file too: no GraphQL document starts with @.
                if value.key == "query", case .string(let text) = value.value, text.hasPrefix("@") {
                    fields.append(.string("query", try APICommand.textContents(of: String(text.dropFirst()), field: "query", standardInput: standardInput)))
                } else {
                    fields.append(value)
                }
            case .contents(let key, let path):
                fields.append(.string(key, try APICommand.textContents(of: path, field: key, standardInput: standardInput)))
            }
        }
        guard case .object(let body) = try GraphQL.body(fields) else { throw .usage("a GraphQL request needs its document") }
        let path = draft.path == GraphQL.endpointName ? (profile.graphqlURL ?? GraphQL.endpointName) : draft.path
        var request = APIRequest(method: draft.method, path: path, headers: draft.headers)
        if draft.method == "GET" {
            request.query = body.map { ($0.key, $0.value.stringValue ?? $0.value.text(.compact)) }
        } else {
            request.body = .raw(.bytes(JSON.object(body).serialized(.compact)), contentType: "application/json")
        }
        return (request, body)
    }

    /// --paginate on a GraphQL request: each node a line (or, with --slurp, one document).
    static func walk(_ request: APIRequest, body: JSONObject, client: APIClient, slurp: Bool, context: CommandContext) throws(DouctlError) -> ExitStatus {
        let walk = GraphQLWalk(client: client)
        walk.maximumPages = context.process.pageCap
        if context.sendsRequests { walk.warn = { context.output.warn($0) } }
        let output = context.output
        try walk.walk(request, body: body, slurp: slurp) { (item: JSON) throws(DouctlError) in
            if slurp { output.json(item) } else { output.jsonLine(item) }
            output.flush()
            if output.documentsStopped { throw output.stdoutFailure }
        }
        return partial(walk.problems, output: output)
    }

    /// Errors that came beside data: said on stderr, exit 10; none: success.
    static func partial(_ problems: [GraphQL.Problem], output: Output) -> ExitStatus {
        guard !problems.isEmpty else { return .success }
        output.warn("the GraphQL reply has errors beside its data (a partial result, exit 10): " + GraphQL.summary(problems))
        return .partial
    }
}
