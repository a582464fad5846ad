import DouctlHTTP
import DouctlJSON

/// `api graphql --paginate`: walks a GraphQL connection, then completes the connections
/// inside its nodes.
///
/// - The outer connection is the first object with a `pageInfo` reachable from `data`
///   through objects only (not through lists), in the reply's order. Its pages are fetched
///   by sending the query again with the variable `endCursor` set to `pageInfo.endCursor`
///   while `pageInfo.hasNextPage` is true (gh's rule: the query declares
///   `$endCursor: String` and passes it as `after`).
/// - Every connection inside a node (at any depth) whose `hasNextPage` is true is
///   completed before the node is printed, by re-querying it from its parent:
///   `node(id: $id) { ... on TYPE { FIELD(ARGS, after: $cursor) SELECTION } }` — the field
///   with its alias, arguments and selection exactly as the query wrote them, the
///   variables and fragments it uses carried over. That needs Relay's `node(id:)` on the
///   server and `id` and `__typename` selected beside the connection; a connection that
///   cannot be completed so is left at the pages the query returned, with a warning.
/// - Without `--slurp` each node of the outer connection (with its inner connections
///   whole) is handed over as it is completed: memory holds one page, however long the
///   walk. With `--slurp` the first page's document comes back once, the outer
///   connection's nodes (or edges) being every page's.
public final class GraphQLWalk {
    public let client: APIClient
    public var warn: ((String) -> Void)?
    public var maximumPages = Paginator.defaultMaximumPages
    /// Errors that came beside data, on any page or re-query (a partial result).
    public private(set) var problems: [GraphQL.Problem] = []
    /// Requests sent (pages and re-queries), for tests and messages.
    public private(set) var requests = 0
    /// Paths already warned about, so a warning is said once per connection, not per node.
    private var warned = Set<String>()
    private var document: GraphQLDocument?
    private var documentProblem: String?
    private var template = APIRequest(path: "")
    private var variables = JSONObject()

    public init(client: APIClient) {
        self.client = client
    }

    /// Walks from `request`, whose GraphQL body (`query`, `operationName`, `variables`)
    /// is `body`; `emit` gets each node (with `slurp`: the one merged document; a reply
    /// without a connection: the reply itself).
    public func walk(_ request: APIRequest, body: JSONObject, slurp: Bool, emit: (JSON) throws(DouctlError) -> Void) throws(DouctlError) {
        template = request
        let query = body["query"]?.stringValue ?? ""
        do {
            document = try GraphQLDocument(query, operationName: body["operationName"]?.stringValue)
        } catch {
            documentProblem = error.message
        }
        variables = body["variables"]?.objectValue ?? JSONObject()
        var body = body
        var pages = 0
        var cursors = Set<String>()
        var first: (json: JSON, path: [String], itemsKey: String)?
        var all: [JSON] = []
        var emitted = 0
        var lastPageInfo: JSON?
        while true {
            guard pages < maximumPages else {
                throw .badReply("stopped after \(maximumPages) pages without reaching the last one (the page cap; \(Paginator.items(emitted)) \(emitted == 1 ? "was" : "were") printed)")
            }
            pages += 1
            let reply: APIReply
            do { reply = try send(body) } catch {
                throw pages > 1 ? error.annotated("page \(pages) failed; the \(Paginator.items(emitted)) before it \(emitted == 1 ? "was" : "were") printed") : error
            }
            guard let json = reply.json, let data = json["data"] else {
                throw .badReply("the GraphQL reply has no data (\(template.summary))", httpStatus: reply.head.status)
            }
            guard let (path, connection) = Self.outerConnection(in: data) else {
                if pages == 1 {
                    try emit(json)
                    return
                }
                throw .badReply("cannot paginate: page \(pages) of the GraphQL reply has no connection (pageInfo)")
            }
            let itemsKey = connection["nodes"] != nil || connection["edges"] == nil ? "nodes" : "edges"
            guard case .array(let items)? = connection[itemsKey] else {
                throw .badReply("cannot paginate: the connection at \(Self.shown(path)) selects neither nodes nor edges")
            }
            for item in items {
                let whole = try complete(item, path: path + [itemsKey])
                if slurp { all.append(whole) } else { try emit(whole) }
                emitted += 1
            }
            if first == nil { first = (json, path, itemsKey) }
            let pageInfo = connection["pageInfo"]
            lastPageInfo = pageInfo
            guard pageInfo?["hasNextPage"] == .bool(true) else { break }
            guard case .string(let cursor)? = pageInfo?["endCursor"] else {
                warn?("the connection at \(Self.shown(path)) has a next page but no endCursor; stopped after page \(pages), \(Paginator.items(emitted))")
                break
            }
            guard GraphQLDocument.variablesUsed(in: query).contains("endCursor") else {
                warn?("the connection at \(Self.shown(path)) has more pages, but the query takes no $endCursor: declare ($endCursor: String) and pass after: $endCursor to the connection, as gh requires; stopped after page \(pages), \(Paginator.items(emitted))")
                break
            }
            guard cursors.insert(cursor).inserted else {
                warn?("page \(pages + 1) would repeat an earlier cursor (\(cursor)); stopped there, after \(Paginator.items(emitted))")
                break
            }
            var next = variables
            next["endCursor"] = .string(cursor)
            body["variables"] = .object(next)
        }
        if slurp, let first {
            try emit(Self.replacing(in: first.json, at: ["data"] + first.path, itemsKey: first.itemsKey, items: all, pageInfo: lastPageInfo))
        }
    }

    // MARK: - connections

    /// The first connection (an object with `pageInfo`) reachable through objects only.
    static func outerConnection(in data: JSON) -> ([String], JSONObject)? {
        guard case .object(let object) = data else { return nil }
        if case .object = object["pageInfo"] { return ([], object) }
        for (key, value) in object {
            if let (path, found) = outerConnection(in: value) { return ([key] + path, found) }
        }
        return nil
    }

    /// `document` with the connection at `path` holding `items` and the last `pageInfo`.
    static func replacing(in document: JSON, at path: [String], itemsKey: String, items: [JSON], pageInfo: JSON?) -> JSON {
        guard case .object(var object) = document else { return document }
        guard let key = path.first else {
            object[itemsKey] = .array(items)
            if let pageInfo { object["pageInfo"] = pageInfo }
            return .object(object)
        }
        if let inner = object[key] {
            object[key] = replacing(in: inner, at: Array(path.dropFirst()), itemsKey: itemsKey, items: items, pageInfo: pageInfo)
        }
        return .object(object)
    }

    static func shown(_ path: [String]) -> String { (["data"] + path).joined(separator: ".") }

    /// `value` with every connection inside it whole (see the type's comment). `path` is
    /// its place in the query, by response keys (list indexes left out).
    func complete(_ value: JSON, path: [String]) throws(DouctlError) -> JSON {
        switch value {
        case .array(let items):
            var out: [JSON] = []
            out.reserveCapacity(items.count)
            for item in items { out.append(try complete(item, path: path)) }
            return .array(out)
        case .object(var object):
            for key in object.keys {
                guard var member = object[key] else { continue }
                switch member {
                case .object, .array: break
                default: continue
                }
                let memberPath = path + [key]
                if case .object(let connection) = member, connection["pageInfo"]?["hasNextPage"] == .bool(true) {
                    member = try rest(of: connection, key: key, parent: object, path: memberPath)
                }
                object[key] = try complete(member, path: memberPath)
            }
            return .object(object)
        default:
            return value
        }
    }

    private func warnOnce(_ path: [String], _ text: String) {
        guard warned.insert(path.joined(separator: ".")).inserted else { return }
        warn?(text)
    }

    /// The connection `key` of `parent` with all its pages, fetched by re-querying it from
    /// the parent's id; as it was (and a warning, once) when that cannot be done.
    private func rest(of connection: JSONObject, key: String, parent: JSONObject, path: [String]) throws(DouctlError) -> JSON {
        let shownPath = Self.shown(path)
        guard let document else {
            warnOnce(path, "\(shownPath) has more pages, but douctl could not read the query to re-ask for them (\(documentProblem ?? "")); left at its first page")
            return .object(connection)
        }
        guard let field = document.field(at: path), let selection = field.selection else {
            warnOnce(path, "\(shownPath) has more pages, but douctl did not find its field in the query; left at its first page")
            return .object(connection)
        }
        guard let id = parent["id"], !id.isNull, case .string(let type)? = parent["__typename"] else {
            warnOnce(path, "\(shownPath) has more pages, but its parent selects no id and __typename to re-ask from (add: id __typename beside \(key)); left at its first page")
            return .object(connection)
        }
        var arguments = field.arguments.filter { $0.name != "after" }.map(\.text)
        arguments.append("after: $douctlAfter")
        let fieldText = (field.key == field.name ? "" : "\(field.key): ") + field.name + "(" + arguments.joined(separator: ", ") + ") " + selection
        let used = GraphQLDocument.variablesUsed(in: fieldText).subtracting(["douctlAfter"])
        var definitions = ["$douctlID: ID!", "$douctlAfter: String"]
        var values = JSONObject()
        values["douctlID"] = id
        for variable in document.variables where used.contains(variable.name) {
            definitions.append(variable.text)
            if let value = variables[variable.name] { values[variable.name] = value }
        }
        let fragments = document.fragmentsUsed(by: fieldText)
        let query = "query DouctlConnection(\(definitions.joined(separator: ", "))) { node(id: $douctlID) { ... on \(type) { \(fieldText) } } }"
            + fragments.map { "\n" + $0 }.joined()
        let itemsKey = connection["nodes"] != nil || connection["edges"] == nil ? "nodes" : "edges"
        guard case .array(var items)? = connection[itemsKey] else { return .object(connection) }
        var pageInfo = connection["pageInfo"]
        var cursors = Set<String>()
        var pages = 1
        while pageInfo?["hasNextPage"] == .bool(true) {
            guard case .string(let cursor)? = pageInfo?["endCursor"], cursors.insert(cursor).inserted, pages < maximumPages else {
                warnOnce(path, "\(shownPath) says it has more pages but gives no new endCursor; left at \(Paginator.items(items.count))")
                break
            }
            pages += 1
            values["douctlAfter"] = .string(cursor)
            var body = JSONObject()
            body["query"] = .string(query)
            body["variables"] = .object(values)
            let reply = try send(body)
            guard case .object(let page)? = reply.json?["data"]?["node"]?[key], case .array(let more)? = page[itemsKey] else {
                warnOnce(path, "\(shownPath): re-asking node(id:) for its next page gave no \(key).\(itemsKey); left at \(Paginator.items(items.count))")
                break
            }
            items += more
            pageInfo = page["pageInfo"]
        }
        var whole = connection
        whole[itemsKey] = .array(items)
        if let pageInfo { whole["pageInfo"] = pageInfo }
        return .object(whole)
    }

    // MARK: - requests

    /// Sends one GraphQL body as the first request was sent: POSTed as JSON, or in the
    /// query string of a GET.
    private func send(_ body: JSONObject) throws(DouctlError) -> APIReply {
        var request = template
        if request.method == "GET" {
            request.query = body.map { ($0.key, $0.value.stringValue ?? $0.value.text(.compact)) }
        } else {
            request.body = .raw(.bytes(JSON.object(body).serialized(.compact)), contentType: "application/json")
        }
        requests += 1
        let reply = try client.send(request)
        problems += reply.graphQLProblems
        return reply
    }
}
