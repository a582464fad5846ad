import DouctlJSON
import DouctlServer
import DouctlSystem

/// `douctl sandbox --openapi FILE` (issue 42, part 5): the API a description describes,
/// served. Requests are matched to operations by their path templates, checked against the
/// operation's parameters and JSON body with the checks `douctl NAME OPERATION` makes
/// before sending (`SchemaCheck`), refused without the credential the operation's security
/// asks for, and answered with the first 2xx response's example, else one generated from its
/// schema. Built once from the index (`OpenAPIReader`) and immutable after: every reply is
/// made up front, deterministic.
public struct OpenAPIFake: Sendable {
    /// What a request must carry, one scheme of a security requirement.
    public struct Credential: Sendable, Equatable {
        /// "bearer" (also oauth2 and openIdConnect), "basic", or "apiKey".
        public var kind: String
        /// apiKey: the header, query parameter or cookie name; else nil.
        public var name: String?
        /// apiKey: header, query or cookie.
        public var location: String?
    }

    public struct Route: Sendable {
        public var operation: OpenAPIIndex.Operation
        /// The reply: its status, content type and body (nil: none, as for 204).
        public var status: Int
        public var contentType: String?
        public var body: JSON?
        /// Alternatives (any one suffices); each requirement's credentials all needed. Empty: no auth.
        public var security: [[Credential]]
        let segments: [Substring]
    }

    public let title: String
    /// The path prefix of the description's first server (`/v1`), served with and without it.
    public let basePath: String
    public let routes: [Route]
    /// A prefix with `servers` variables (`/{stage}`), served with any value in their place,
    /// as `profile add --server-var` may choose.
    var baseTemplate: [Substring] = []

    /// The fake of a description, its references read through `reader`.
    public static func make(reader: inout OpenAPIReader) throws(DouctlError) -> OpenAPIFake {
        let index = try reader.index(digest: "")
        let (root, _, _) = try reader.resolve("#", in: reader.source)
        let swagger = root["swagger"] != nil
        let schemes = (swagger ? root["securityDefinitions"] : root["components"]?["securitySchemes"])?.objectValue ?? JSONObject()
        var routes: [Route] = []
        for operation in index.operations {
            let pointer = "/paths/" + operation.path.replacingAll("~", with: "~0").replacingAll("/", with: "~1")
            let item = try reader.dereference(root["paths"]?[operation.path] ?? .null, in: reader.source, at: pointer)
            let raw = item.0[operation.method.lowercased()] ?? .null
            let reply = try Self.reply(raw, document: item.document, pointer: pointer + "/" + operation.method.lowercased(), swagger: swagger, reader: &reader)
            var security: [[Credential]] = []
            for requirement in (raw["security"] ?? root["security"])?.arrayValue ?? [] {
                var needed: [Credential] = []
                for name in requirement.objectValue?.keys ?? [] {
                    guard let given = schemes[name] else { continue }
                    let (scheme, _) = try reader.dereference(given, in: reader.source, at: "/components/securitySchemes/" + name)
                    switch scheme["type"]?.stringValue ?? "" {
                    case "apiKey": needed.append(Credential(kind: "apiKey", name: scheme["name"]?.stringValue ?? "", location: scheme["in"]?.stringValue ?? "header"))
                    case "basic": needed.append(Credential(kind: "basic"))
                    case "http": needed.append(Credential(kind: scheme["scheme"]?.stringValue?.lowercased() == "basic" ? "basic" : "bearer"))
                    case "oauth2", "openIdConnect": needed.append(Credential(kind: "bearer"))
                    default: break
                    }
                }
                // An empty requirement ({}) makes auth optional: no requirement at all.
                if needed.isEmpty { security = []; break }
                security.append(needed)
            }
            routes.append(Route(operation: operation, status: reply.status, contentType: reply.contentType, body: reply.body,
                                security: security, segments: operation.path.split(separator: "/")))
        }
        // The most literal template first: /pets/mine before /pets/{id}.
        routes.sort { literalCount($0.segments) > literalCount($1.segments) }
        var fake = OpenAPIFake(title: index.title, basePath: Self.basePath(root, swagger: swagger), routes: routes)
        if fake.basePath.isEmpty, !swagger, var template = root["servers"]?[0]?["url"]?.stringValue {
            if let scheme = template.firstRange(ofBytes: "://") {
                let rest = template[scheme.upperBound...]
                template = rest.firstIndex(of: "/").map { String(rest[$0...]) } ?? ""
            }
            fake.baseTemplate = template.split(separator: "/")
        }
        return fake
    }

    static func literalCount(_ segments: [Substring]) -> Int { segments.filter { !$0.contains("{") }.count }

    static func basePath(_ root: JSON, swagger: Bool) -> String {
        var path = swagger ? root["basePath"]?.stringValue ?? "" : root["servers"]?[0]?["url"]?.stringValue ?? ""
        if let scheme = path.firstRange(ofBytes: "://") {
            let rest = path[scheme.upperBound...]
            path = rest.firstIndex(of: "/").map { String(rest[$0...]) } ?? ""
        }
        while path.hasSuffix("/") { path.removeLast() }
        return path.contains("{") ? "" : path
    }

    /// The first 2xx response (lowest code; else `default`): its example, else one from its schema.
    static func reply(_ operation: JSON, document: String, pointer: String, swagger: Bool, reader: inout OpenAPIReader) throws(DouctlError) -> (status: Int, contentType: String?, body: JSON?) {
        let responses = operation["responses"]?.objectValue ?? JSONObject()
        let codes = responses.keys.filter { $0.hasPrefix("2") }.sorted()
        guard let code = codes.first ?? (responses["default"] != nil ? "default" : nil), let given = responses[code] else {
            return (200, nil, nil)
        }
        let status = Int(code) ?? 200
        let at = pointer + "/responses/" + code
        let (response, responseDocument) = try reader.dereference(given, in: document, at: at)
        var generator = Generator(reader: reader)
        defer { reader = generator.reader }
        if swagger {
            if let example = response["examples"]?["application/json"] { return (status, "application/json", example) }
            guard let schema = response["schema"] else { return (status, nil, nil) }
            return (status, "application/json", try generator.value(schema, document: responseDocument) ?? .null)
        }
        guard let content = response["content"]?.objectValue, !content.isEmpty else { return (status, nil, nil) }
        let type = content.keys.first { OpenAPIIndex.isJSON($0) } ?? content.keys[0]
        let media = content[type] ?? .null
        if let example = media["example"] { return (status, type, example) }
        if let first = media["examples"]?.objectValue?.values.first {
            let (example, _) = try reader.dereference(first, in: responseDocument, at: at + "/content")
            if let value = example["value"] { return (status, type, value) }
        }
        guard let schema = media["schema"] else { return (status, type, nil) }
        return (status, type, try generator.value(schema, document: responseDocument) ?? .null)
    }

    /// Values from schemas: the schema's example, default, const or first enum value, else
    /// a plain one of its type (formats given sensible values, bounds respected, arrays of
    /// one item or minItems, references followed, a reference met again on its own path cut).
    struct Generator {
        var reader: OpenAPIReader

        /// nil: cut (a cycle); an object leaves that property out, an array has no items.
        mutating func value(_ schema: JSON, document: String, path: [String] = []) throws(DouctlError) -> JSON? {
            guard path.count < 16, let object = schema.objectValue else { return path.count < 16 ? .null : nil }
            if let reference = object["$ref"]?.stringValue {
                let key = OpenAPIReader.location(String(reference.prefix { $0 != "#" }), relativeTo: document) + "#" + String(reference.drop { $0 != "#" }.dropFirst())
                if path.contains(key) { return nil }
                let (found, foundIn, _) = try reader.resolve(reference, in: document)
                return try value(found, document: foundIn, path: path + [key])
            }
            if let example = object["example"] { return example }
            if let examples = object["examples"]?.arrayValue, let first = examples.first { return first }
            if let constant = object["const"] { return constant }
            if let first = object["enum"]?.arrayValue?.first { return first }
            if let fallback = object["default"] { return fallback }
            if let parts = object["allOf"]?.arrayValue {
                var merged = JSONObject()
                for part in parts {
                    if case .object(let members)? = try value(part, document: document, path: path) {
                        for (name, member) in members where merged[name] == nil { merged.append(name, member) }
                    }
                }
                return .object(merged)
            }
            for key in ["oneOf", "anyOf"] {
                if let choices = object[key]?.arrayValue {
                    let real = choices.first { SchemaCheck.typeNames($0["type"]) != ["null"] } ?? choices.first ?? .null
                    return try value(real, document: document, path: path)
                }
            }
            let types = SchemaCheck.typeNames(object["type"])?.filter { $0 != "null" } ?? []
            let type = types.first ?? (object["properties"] != nil ? "object" : object["items"] != nil ? "array" : "")
            switch type {
            case "object":
                var members = JSONObject()
                for (name, property) in object["properties"]?.objectValue ?? JSONObject() {
                    if let member = try value(property, document: document, path: path) { members.append(name, member) }
                }
                return .object(members)
            case "array":
                let minimum = max(object["minItems"]?.intValue ?? 1, 1)
                let count = min(minimum, object["maxItems"]?.intValue ?? minimum)
                guard count > 0, let item = try value(object["items"] ?? .object(JSONObject()), document: document, path: path) else { return .array([]) }
                return .array(Array(repeating: item, count: count))
            case "integer", "number":
                var number = 0.0
                if let low = object["minimum"]?.doubleValue { number = max(number, object["exclusiveMinimum"]?.boolValue == true ? low + 1 : low) }
                if let low = object["exclusiveMinimum"]?.doubleValue { number = max(number, low + 1) }
                if let high = object["maximum"]?.doubleValue { number = min(number, object["exclusiveMaximum"]?.boolValue == true ? high - 1 : high) }
                if let high = object["exclusiveMaximum"]?.doubleValue { number = min(number, high - 1) }
                if type == "integer" || number == number.rounded() {
                    return .int(Int64(number.rounded(.up).clamped))
                }
                return .number(String(number))
            case "boolean":
                return .bool(true)
            case "string":
                var text: String
                switch object["format"]?.stringValue ?? "" {
                case "date-time": text = "2024-01-01T00:00:00Z"
                case "date": text = "2024-01-01"
                case "time": text = "00:00:00Z"
                case "uuid": text = "3fa85f64-5717-4562-b3fc-2c963f66afa6"
                case "email": text = "user@example.com"
                case "uri", "url", "uri-reference": text = "https://example.com/"
                case "hostname": text = "example.com"
                case "ipv4": text = "192.0.2.1"
                case "ipv6": text = "2001:db8::1"
                case "byte": text = "ZXhhbXBsZQ=="
                default: text = "string"
                }
                if let minimum = object["minLength"]?.intValue, text.count < minimum { text += String(repeating: "x", count: min(minimum, 4096) - text.count) }
                if let maximum = object["maxLength"]?.intValue, text.count > maximum { text = String(text.prefix(max(maximum, 0))) }
                return .string(text)
            case "null":
                return .null
            default:
                return .null
            }
        }
    }

    // MARK: - answering

    /// The reply to one request: 404/405 naming the described paths, 401 without a needed
    /// credential, 400/422 naming the rule a request breaks, else the operation's reply.
    public func answer(_ request: HTTPServerRequest) -> HTTPServerResponse {
        var path = request.path
        if !basePath.isEmpty, path == basePath || path.hasPrefix(basePath + "/") { path = String(path.dropFirst(basePath.count)) }
        if path.isEmpty { path = "/" }
        var segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        if !baseTemplate.isEmpty, segments.count > baseTemplate.count, Self.match(baseTemplate, Array(segments.prefix(baseTemplate.count))) != nil,
           !routes.contains(where: { Self.match($0.segments, Array(segments)) != nil }) {
            segments = segments.dropFirst(baseTemplate.count)
            path = "/" + segments.joined(separator: "/")
        }
        let candidates = routes.compactMap { route in Self.match(route.segments, Array(segments)).map { (route, $0) } }
        guard !candidates.isEmpty else {
            return Self.problem(404, "Not Found", "no operation is described at \(path)", extra: [("paths", .array(Self.unique(routes.map { $0.operation.path }).map(JSON.string)))])
        }
        guard let (route, values) = candidates.first(where: { $0.0.operation.method == request.method }) else {
            let methods = Self.unique(candidates.map { $0.0.operation.method })
            var response = Self.problem(405, "Method Not Allowed", "\(request.method) is not described at \(candidates[0].0.operation.path); it allows \(methods.joined(separator: ", "))",
                                        extra: [("allowed", .array(methods.map(JSON.string)))])
            response.headers.append(("Allow", methods.joined(separator: ", ")))
            return response
        }
        if let missing = Self.missingCredential(route.security, request) {
            var response = Self.problem(401, "Unauthorized", missing.detail)
            response.headers.append(("WWW-Authenticate", missing.challenge))
            return response
        }
        if let (status, problem) = Self.violation(route.operation, values: values, request: request) {
            let field = problem.firstRange(ofBytes: ": ").map { String(problem[..<$0.lowerBound]) } ?? ""
            let rule = problem.firstRange(ofBytes: ": ").map { String(problem[$0.upperBound...]) } ?? problem
            return Self.problem(status, status == 400 ? "Bad Request" : "Unprocessable Entity", problem, extra: [("field", .string(field)), ("rule", .string(rule))])
        }
        guard let body = route.body else { return HTTPServerResponse(status: route.status) }
        let type = route.contentType ?? "application/json"
        if !OpenAPIIndex.isJSON(type), case .string(let text) = body {
            return HTTPServerResponse(status: route.status, headers: [("Content-Type", type)], body: .bytes(Array(text.utf8)))
        }
        return HTTPServerResponse(status: route.status, headers: [("Content-Type", OpenAPIIndex.isJSON(type) ? type : "application/json")],
                                  body: .bytes(body.serialized(.compact)))
    }

    static func unique(_ items: [String]) -> [String] {
        var seen: Set<String> = []
        return items.filter { seen.insert($0).inserted }
    }

    /// The path parameters' values when `segments` fit the template, else nil.
    static func match(_ template: [Substring], _ segments: [Substring]) -> [String: String]? {
        guard template.count == segments.count else { return nil }
        var values: [String: String] = [:]
        for (pattern, segment) in zip(template, segments) {
            guard let open = pattern.firstIndex(of: "{"), let close = pattern[open...].firstIndex(of: "}") else {
                if pattern != segment { return nil }
                continue
            }
            let prefix = pattern[..<open], suffix = pattern[pattern.index(after: close)...]
            guard segment.count > prefix.count + suffix.count, segment.hasPrefix(prefix), segment.hasSuffix(suffix) else { return nil }
            values[String(pattern[pattern.index(after: open)..<close])] = String(segment.dropFirst(prefix.count).dropLast(suffix.count))
        }
        return values
    }

    /// The first requirement's credential the request lacks, when it meets no requirement.
    static func missingCredential(_ security: [[Credential]], _ request: HTTPServerRequest) -> (detail: String, challenge: String)? {
        guard !security.isEmpty else { return nil }
        var first: (String, String)?
        for requirement in security {
            var lacking: (String, String)?
            for credential in requirement where lacking == nil {
                let authorization = request.headers["Authorization"] ?? ""
                switch credential.kind {
                case "basic":
                    if !HTTPSyntax.lowercased(Substring(authorization)).hasPrefix("basic ") || authorization.dropFirst(6).allSatisfy({ $0 == " " }) {
                        lacking = ("this operation needs HTTP Basic credentials (Authorization: Basic ...)", "Basic realm=\"douctl sandbox\"")
                    }
                case "apiKey":
                    let name = credential.name ?? ""
                    let given: String?
                    switch credential.location {
                    case "query": given = request.queryValue(name)
                    case "cookie": given = (request.headers["Cookie"] ?? "").split(separator: ";").compactMap { pair -> String? in
                        let parts = pair.split(separator: "=", maxSplits: 1)
                        return parts.count == 2 && parts[0].trimmedSpaces == name ? String(parts[1]) : nil
                    }.first
                    default: given = request.headers[name]
                    }
                    if given?.isEmpty ?? true {
                        lacking = ("this operation needs the API key \(name) (in the \(credential.location ?? "header"))", "ApiKey name=\"\(name)\"")
                    }
                default:
                    if !HTTPSyntax.lowercased(Substring(authorization)).hasPrefix("bearer ") || authorization.dropFirst(7).allSatisfy({ $0 == " " }) {
                        lacking = ("this operation needs a bearer token (Authorization: Bearer ...)", "Bearer realm=\"douctl sandbox\"")
                    }
                }
            }
            guard let lacking else { return nil }
            if first == nil { first = lacking }
        }
        return first.map { (detail: $0.0, challenge: $0.1) }
    }

    /// The first rule the request breaks, as (status, "FIELD: RULE"): 400 for a body that is
    /// not JSON, 422 for the rest.
    static func violation(_ operation: OpenAPIIndex.Operation, values: [String: String], request: HTTPServerRequest) -> (Int, String)? {
        for parameter in operation.parameters {
            var given: [String] = []
            switch parameter.location {
            case "path": given = values[parameter.name].map { [PercentEncoding.decodeString(Array($0.utf8), plusAsSpace: false)] } ?? []
            case "query": given = request.queryValues(parameter.name)
            case "header": given = request.headers.values(parameter.name)
            case "cookie": continue
            default: continue
            }
            guard !given.isEmpty else {
                if parameter.required { return (422, "\(parameter.name): required (a \(parameter.location) parameter)") }
                continue
            }
            let schema = SchemaCheck.effective(parameter.schema)
            let value: JSON
            if SchemaCheck.typeNames(schema["type"])?.contains("array") == true {
                let joiner = schema["x-douctl-joined"]?.stringValue ?? ""
                let items = joiner.isEmpty ? given : given.flatMap { $0.split(separator: Character(joiner), omittingEmptySubsequences: false).map(String.init) }
                value = .array(items.map { SchemaCheck.typed($0, schema: schema["items"] ?? .object(JSONObject())) })
            } else {
                value = SchemaCheck.typed(given[0], schema: parameter.schema)
            }
            if let problem = SchemaCheck.violation(value, parameter.schema, field: parameter.name) { return (422, problem) }
        }
        guard let body = operation.body else { return nil }
        let bytes = (try? request.body.readAll(limit: 16 << 20)) ?? []
        guard !bytes.isEmpty else { return body.required ? (422, "body: required (\(body.contentType))") : nil }
        guard body.isJSON else { return formViolation(body, bytes: bytes, request: request) }
        let parsed: JSON
        do { parsed = try JSONParser.parse(bytes) } catch { return (400, "body: not JSON (\(error))") }
        return SchemaCheck.violation(parsed, body.schema, field: "body").map { (422, $0) }
    }

    /// A form body (`application/x-www-form-urlencoded` or `multipart/form-data`, Swagger's
    /// `formData` too) checked as `douctl NAME OPERATION` checks its field options: each
    /// field's text read as its property's type, repeated fields as arrays, a file part as
    /// its file name (a `type: file` or `format: binary` property takes any file). Another
    /// kind of body than the described one is a 415.
    static func formViolation(_ body: OpenAPIIndex.Body, bytes: [UInt8], request: HTTPServerRequest) -> (Int, String)? {
        let described = body.contentType.lowercased()
        let isMultipart = described.hasPrefix("multipart/")
        guard isMultipart || described == "application/x-www-form-urlencoded" else { return nil }
        let sent = request.mediaType ?? ""
        var fields: [(name: String, value: String, isFile: Bool)] = []
        if isMultipart, sent.hasPrefix("multipart/") {
            guard let reader = MultipartReader(body: HTTPRequestBody(bytes: bytes), contentType: request.headers["Content-Type"] ?? "") else {
                return (400, "body: a multipart body without a usable boundary")
            }
            do {
                while let part = try reader.nextPart() {
                    let content = try part.readAll(limit: bytes.count)
                    if let filename = part.filename {
                        fields.append((part.name ?? "", filename, true))
                    } else {
                        fields.append((part.name ?? "", String(decoding: content, as: UTF8.self), false))
                    }
                }
            } catch {
                return (400, "body: a broken multipart body (\(error))")
            }
        } else if sent == "application/x-www-form-urlencoded" {
            fields = FormURLEncoded.parse(bytes).map { ($0.name, $0.value, false) }
        } else {
            return (415, "body: must be \(isMultipart ? "multipart/form-data" : "application/x-www-form-urlencoded"), not \(sent.isEmpty ? "untyped" : sent)")
        }
        var schema = SchemaCheck.effective(body.schema)
        var properties = schema["properties"]?.objectValue ?? JSONObject()
        var object = JSONObject()
        var seen: Set<String> = []
        for field in fields where seen.insert(field.name).inserted {
            let property = SchemaCheck.effective(properties[field.name] ?? .object(JSONObject()))
            let types = SchemaCheck.typeNames(property["type"]) ?? []
            if types.contains("file") || property["format"]?.stringValue == "binary" {
                // Any file will do; the check is that it was sent.
                properties[field.name] = .object(JSONObject())
                object.append(field.name, .string(field.value))
                continue
            }
            let values = fields.filter { $0.name == field.name }.map(\.value)
            if types.contains("array") {
                let items = property["items"] ?? .object(JSONObject())
                object.append(field.name, .array(values.map { SchemaCheck.typed($0, schema: items) }))
            } else {
                object.append(field.name, SchemaCheck.typed(values[0], schema: property))
            }
        }
        if case .object(var members) = schema, !properties.isEmpty {
            members["properties"] = .object(properties)
            schema = .object(members)
        }
        return SchemaCheck.violation(.object(object), schema, field: "body").map { (422, $0) }
    }

    /// RFC 9457 problem details.
    static func problem(_ status: Int, _ title: String, _ detail: String, extra: [(String, JSON)] = []) -> HTTPServerResponse {
        let document = JSON.object(JSONObject([("type", "about:blank"), ("title", .string(title)), ("status", .int(status)), ("detail", .string(detail))] + extra))
        return HTTPServerResponse(status: status, headers: [("Content-Type", "application/problem+json")], body: .bytes(document.serialized(.compact)))
    }
}

extension Double {
    fileprivate var clamped: Double { Swift.min(Swift.max(self, -9.0e15), 9.0e15) }
}

extension Substring {
    fileprivate var trimmedSpaces: Substring {
        var text = self
        while text.first == " " { text.removeFirst() }
        while text.last == " " { text.removeLast() }
        return text
    }
}
