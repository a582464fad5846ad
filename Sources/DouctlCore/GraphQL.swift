import DouctlSystem
import DouctlJSON

/// GraphQL over HTTP, as `gh api graphql` speaks it and further.
///
/// A request is one JSON object, `{"query", "operationName", "variables"}`: the field
/// `query` is the document, `operationName` names its operation, and every other field is a
/// variable (gh's rule; `-F` values keep their types).
///
/// A reply is a GraphQL response (`data`, `errors`, `extensions` and nothing else): with
/// `errors` and no `data` it failed (exit 1, the messages and paths on stderr); with both
/// it partly failed (the data is printed, exit 10).
public enum GraphQL {
    /// The path that means "the profile's GraphQL endpoint" (`douctl api graphql`, as gh's).
    public static let endpointName = "graphql"

    /// Whether a request to `path` speaks GraphQL: `graphql` (the profile's endpoint) or a
    /// path or URL whose last segment is `graphql` (`/graphql`, `/api/graphql?x=1`).
    public static func isEndpoint(_ path: String, graphqlURL: String? = nil) -> Bool {
        if path == endpointName { return true }
        if let graphqlURL, path == graphqlURL { return true }
        // An ASCII path (every one douctl builds from a URL): bytes, the same answer as the
        // Character-wise way below, which cost every request ~38 K instructions (issue 44).
        var text = path
        let ascii: Bool? = text.withUTF8 { bytes in
            guard HTTPSyntax.isASCII(bytes) else { return nil }
            var end = bytes.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.count
            while end > 0, bytes[end - 1] == UInt8(ascii: "/") { end -= 1 }
            var start = end
            while start > 0, bytes[start - 1] != UInt8(ascii: "/") { start -= 1 }
            return start < end && bytes[start..<end].elementsEqual(endpointName.utf8)
        }
        if let ascii { return ascii }
        var bare = Substring(path)
        if let cut = bare.firstIndex(where: { $0 == "?" || $0 == "#" }) { bare = bare[..<cut] }
        while bare.hasSuffix("/") { bare = bare.dropLast() }
        return bare.split(separator: "/").last == Substring(endpointName)
    }

    /// The request body for `fields`: `query` and `operationName` as they are, the rest as
    /// `variables` (typed as given). A field repeated replaces the earlier one; a field
    /// with a bracketed name (`a[b]=1`, `ids[]=1`) nests as --json nests it.
    public static func body(_ fields: [RequestField]) throws(DouctlError) -> JSON {
        var object = JSONObject()
        var variables: [RequestField] = []
        for field in fields {
            switch field.key {
            case "query", "operationName": object[field.key] = field.value
            default: variables.append(field)
            }
        }
        guard object["query"] != nil else {
            throw .usage("a GraphQL request needs its document: -f query='{ ... }' or -F query=@FILE")
        }
        if !variables.isEmpty { object["variables"] = try RequestField.jsonObject(variables) }
        return .object(object)
    }

    /// One error of a response: its message and where it arose.
    public struct Problem: Equatable, Sendable {
        public var message: String
        /// `path`, joined with dots (`repository.issues.nodes.3.title`); nil when absent.
        public var path: String?
        /// `extensions.code` (`NOT_FOUND`, `GRAPHQL_VALIDATION_FAILED`), or `type` (GitHub's).
        public var code: String?
        /// `locations[0]` as `line:column`.
        public var location: String?

        /// "message (at a.b.0)", "message (line 1:3)".
        public var summary: String {
            var text = message
            if let path { text += " (at \(path))" } else if let location { text += " (line \(location))" }
            return text
        }
    }

    /// The errors of a GraphQL response; nil when `json` is no GraphQL response or has none.
    /// Only a document with nothing but `data`, `errors` and `extensions`, whose `errors`
    /// is a list of objects each with a string `message`, is read so: a REST resource that
    /// happens to have an `errors` member is not.
    public static func problems(in json: JSON) -> [Problem]? {
        guard case .object(let object) = json, case .array(let errors)? = object["errors"], !errors.isEmpty,
              object.keys.allSatisfy({ $0 == "data" || $0 == "errors" || $0 == "extensions" }) else { return nil }
        var problems: [Problem] = []
        for error in errors {
            guard case .string(let message)? = error["message"] else { return nil }
            var problem = Problem(message: message)
            if case .array(let path)? = error["path"], !path.isEmpty {
                problem.path = path.map { $0.scalarText ?? $0.text(.compact) }.joined(separator: ".")
            }
            problem.code = error["extensions"]?["code"]?.scalarText ?? error["type"]?.scalarText
            if let first = error["locations"]?[0], let line = first["line"]?.scalarText, let column = first["column"]?.scalarText {
                problem.location = "\(line):\(column)"
            }
            problems.append(problem)
        }
        return problems
    }

    /// Whether the response carries data beside its errors (a partial success).
    public static func hasData(_ json: JSON) -> Bool {
        guard let data = json["data"] else { return false }
        return !data.isNull
    }

    /// At most this many errors are named on the error line; the rest are counted.
    static let namedProblems = 5

    /// The errors on one line: "a (at x); b (line 1:3)", and "and N more".
    public static func summary(_ problems: [Problem]) -> String {
        var parts = problems.prefix(namedProblems).map(\.summary)
        if problems.count > namedProblems { parts.append("and \(problems.count - namedProblems) more") }
        return parts.joined(separator: "; ")
    }

    /// The error a response with errors and no data is, with every message and path; the
    /// first error's code as its code.
    static func error(_ problems: [Problem], status: Int, request: String) -> APIError {
        // Exit 1, as gh; a status that says more (401, 404, 429) decides as for REST.
        let kind = ReplyDecoder.statusKind(status)
        return APIError(kind: kind, httpStatus: status, code: problems.first?.code,
                        message: "GraphQL: " + summary(problems), request: request)
    }
}
