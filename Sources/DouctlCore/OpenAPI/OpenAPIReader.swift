import DouctlJSON
import DouctlSystem

/// Reads an API description (OpenAPI 3.0, 3.1 or Swagger 2.0, JSON or YAML) into an
/// `OpenAPIIndex`: the servers, the auth it describes and, for each operation, its command
/// name, parameters and body with every `$ref` resolved (within the document and to
/// relative files; a cycle is left as a reference, so it is never followed twice). A
/// description that cannot be read names where: the file and line (YAML, JSON) or the
/// JSON pointer.
public struct OpenAPIReader {
    /// Reads a document another one refers to (a relative file, or a URL relative to the
    /// description's): its bytes, or a refusal.
    public typealias Loader = (_ location: String) throws(DouctlError) -> [UInt8]

    /// Where the description came from (a path or a URL): names it in errors, and is
    /// what relative references are relative to.
    public let source: String
    private let load: Loader
    /// Documents by location: the description's own (`source`) and each one referred to.
    private var documents: [String: JSON] = [:]

    public init(source: String, root: JSON, load: @escaping Loader) {
        self.source = source
        self.load = load
        documents[source] = root
    }

    /// JSON or YAML, by the first significant byte: `{` or `[` is JSON, anything else YAML.
    public static func decode(_ bytes: [UInt8], source: String) throws(DouctlError) -> JSON {
        let shown = TerminalText.escaped(source)
        let first = bytes.first { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 && $0 != 0xEF && $0 != 0xBB && $0 != 0xBF }
        if first == UInt8(ascii: "{") || first == UInt8(ascii: "[") {
            do { return try JSONParser.parse(bytes) } catch {
                throw .localInput("cannot read the API description \(shown): \(error)")
            }
        }
        do { return try YAML.parse(bytes) } catch {
            if error.line == 0 { throw .localInput("cannot read the API description \(shown) as YAML: \(error.message) (JSON descriptions need no libyaml)") }
            throw .localInput("cannot read the API description \(shown): \(error.message) at line \(error.line)")
        }
    }

    // MARK: - references

    /// The location of a reference relative to `base`'s: a path beside it, or a URL.
    static func location(_ reference: String, relativeTo base: String) -> String {
        if reference.isEmpty { return base }
        if reference.hasPrefix("http://") || reference.hasPrefix("https://") || reference.hasPrefix("/") { return reference }
        var directory = base
        if let slash = directory.lastIndex(of: "/") { directory = String(directory[...slash]) } else { directory = "" }
        var parts = directory.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if parts.last == "" { parts.removeLast() }
        for part in reference.split(separator: "/", omittingEmptySubsequences: false) {
            if part == ".." { if parts.count > 1 || (parts.count == 1 && !parts[0].isEmpty && !parts[0].hasSuffix(":")) { parts.removeLast() } }
            else if part != "." { parts.append(String(part)) }
        }
        return parts.joined(separator: "/")
    }

    /// The value a `$ref` names, read from `document` (a location) and where it is.
    mutating func resolve(_ reference: String, in document: String) throws(DouctlError) -> (JSON, document: String, pointer: String) {
        let hash = reference.firstIndex(of: "#")
        let file = hash.map { String(reference[..<$0]) } ?? reference
        let pointer = hash.map { String(reference[reference.index(after: $0)...]) } ?? ""
        let target = Self.location(file, relativeTo: document)
        if documents[target] == nil {
            let bytes = try load(target)
            documents[target] = try Self.decode(bytes, source: target)
        }
        guard let root = documents[target], let value = Self.value(at: pointer, in: root) else {
            throw .localInput("cannot read the API description \(TerminalText.escaped(source)): $ref '\(TerminalText.escaped(reference))' in \(TerminalText.escaped(document)) names nothing (no \(TerminalText.escaped(target))#\(TerminalText.escaped(pointer)))")
        }
        return (value, target, pointer)
    }

    /// RFC 6901: `/a/b~1c/0`.
    static func value(at pointer: String, in root: JSON) -> JSON? {
        var node = root
        guard !pointer.isEmpty else { return node }
        guard pointer.hasPrefix("/") else { return nil }
        for raw in pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            let token = PercentEncoding.decodeString(Array(raw.utf8), plusAsSpace: false).replacingAll("~1", with: "/").replacingAll("~0", with: "~")
            switch node {
            case .object(let object):
                guard let next = object[token] else { return nil }
                node = next
            case .array(let items):
                guard let index = Int(token), items.indices.contains(index) else { return nil }
                node = items[index]
            default:
                return nil
            }
        }
        return node
    }

    /// Follows `$ref`s at the top of `value` until it is not one (a chain that loops is refused).
    mutating func dereference(_ value: JSON, in document: String, at pointer: String) throws(DouctlError) -> (JSON, document: String) {
        var current = value
        var where_ = document
        var seen: Set<String> = []
        while let reference = current["$ref"]?.stringValue {
            let key = where_ + " " + reference
            guard seen.insert(key).inserted else {
                throw .localInput("cannot read the API description \(TerminalText.escaped(source)): $ref '\(TerminalText.escaped(reference))' at #\(TerminalText.escaped(pointer)) refers to itself")
            }
            let (found, foundIn, _) = try resolve(reference, in: where_)
            current = found
            where_ = foundIn
        }
        return (current, where_)
    }

    /// A schema with its references inlined, to `depth` levels; a reference met again on
    /// its own path (a recursive schema) stays `{"$ref": …}`, which checks accept as anything.
    mutating func inline(_ value: JSON, in document: String, at pointer: String, path: [String] = [], depth: Int = 0) throws(DouctlError) -> JSON {
        guard depth < 24 else { return .object(JSONObject()) }
        switch value {
        case .object(let object):
            if let reference = object["$ref"]?.stringValue {
                let key = Self.location(String(reference.prefix { $0 != "#" }), relativeTo: document) + "#" + String(reference.drop { $0 != "#" }.dropFirst())
                if path.contains(key) { return .object(JSONObject([("$ref", .string(reference))])) }
                let (found, foundIn, foundAt) = try resolve(reference, in: document)
                return try inline(found, in: foundIn, at: foundAt, path: path + [key], depth: depth + 1)
            }
            var result = JSONObject()
            result.reserveCapacity(object.count)
            for (key, member) in object {
                // Examples and descriptions of nested schemas are not needed to check or to help.
                if key == "example" || key == "examples" || key == "xml" || key == "externalDocs" { continue }
                result.append(key, try inline(member, in: document, at: pointer + "/" + key, path: path, depth: depth + 1))
            }
            return .object(result)
        case .array(let items):
            var result: [JSON] = []
            result.reserveCapacity(items.count)
            for (index, item) in items.enumerated() {
                result.append(try inline(item, in: document, at: pointer + "/\(index)", path: path, depth: depth + 1))
            }
            return .array(result)
        default:
            return value
        }
    }

    // MARK: - the index

    static let methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    /// The index of the description.
    public mutating func index(etag: String? = nil, digest: String) throws(DouctlError) -> OpenAPIIndex {
        guard let root = documents[source], root.objectValue != nil else {
            throw .localInput("cannot read the API description \(TerminalText.escaped(source)): it is not an object")
        }
        let swagger = root["swagger"]?.scalarText
        let openapi = root["openapi"]?.scalarText
        guard swagger?.hasPrefix("2") == true || openapi?.hasPrefix("3") == true else {
            throw .localInput("cannot read the API description \(TerminalText.escaped(source)): #/openapi says neither 3.x nor swagger 2.0 (found \(TerminalText.escaped(openapi ?? swagger ?? "nothing")))")
        }
        let isSwagger = swagger != nil
        guard let paths = root["paths"]?.objectValue else {
            throw .localInput("cannot read the API description \(TerminalText.escaped(source)): #/paths is missing or not an object")
        }
        var operations: [OpenAPIIndex.Operation] = []
        var hints: [OpenAPIPaging] = []
        for (path, item) in paths {
            let pointer = "/paths/" + path.replacingAll("~", with: "~0").replacingAll("/", with: "~1")
            let (pathItem, itemDocument) = try dereference(item, in: source, at: pointer)
            guard let pathObject = pathItem.objectValue else { continue }
            let shared = pathObject["parameters"]?.arrayValue ?? []
            for method in Self.methods {
                guard let operation = pathObject[method], operation.objectValue != nil else { continue }
                let at = pointer + "/" + method
                let indexed = try self.operation(operation, method: method, path: path, shared: shared, document: itemDocument, pointer: at, swagger: isSwagger, root: root)
                // A response that cannot be read only costs its hint: responses are not what
                // the index is for.
                if method == "get", var hint = (try? pagingHint(operation, document: itemDocument, pointer: at, swagger: isSwagger,
                                                                queryParameters: indexed.parameters.filter { $0.location == "query" }.map(\.name))) ?? nil {
                    hint.operation = operations.count.description
                    hints.append(hint)
                }
                operations.append(indexed)
            }
        }
        OpenAPIIndex.nameCommands(&operations)
        var index = OpenAPIIndex(
            title: root["info"]?["title"]?.stringValue ?? "", version: root["info"]?["version"]?.scalarText ?? "",
            source: source, etag: etag, digest: digest,
            servers: servers(root, swagger: isSwagger), security: try security(root, swagger: isSwagger),
            operations: operations)
        index.serverTemplates = isSwagger ? index.servers.map { OpenAPIIndex.Server(url: $0) } : serverTemplates(root)
        if var paging = OpenAPIPaging.common(hints) {
            // The operation it was read from, by its command name (named only now).
            paging.operation = Int(paging.operation).flatMap { operations.indices.contains($0) ? operations[$0].name : nil } ?? ""
            index.paging = paging
        }
        return index
    }

    private mutating func operation(_ operation: JSON, method: String, path: String, shared: [JSON], document: String, pointer: String, swagger: Bool, root: JSON) throws(DouctlError) -> OpenAPIIndex.Operation {
        // Parameters: the path item's, overridden by the operation's of the same name and place.
        var parameters: [(JSON, String)] = []
        for (index, raw) in (shared + (operation["parameters"]?.arrayValue ?? [])).enumerated() {
            let (parameter, _) = try dereference(raw, in: document, at: pointer + "/parameters/\(index)")
            guard let name = parameter["name"]?.stringValue, let place = parameter["in"]?.stringValue else { continue }
            parameters.removeAll { $0.0["name"]?.stringValue == name && $0.0["in"]?.stringValue == place }
            parameters.append((parameter, pointer + "/parameters/\(index)"))
        }
        var params: [OpenAPIIndex.Parameter] = []
        var body: OpenAPIIndex.Body?
        var formFields: [(String, JSON, Bool)] = []
        for (parameter, at) in parameters {
            guard let name = parameter["name"]?.stringValue, let place = parameter["in"]?.stringValue else { continue }
            let required = parameter["required"]?.boolValue ?? (place == "path")
            let description = parameter["description"]?.stringValue ?? ""
            if swagger && place == "body" {
                let schema = try inline(parameter["schema"] ?? .object(JSONObject()), in: document, at: at + "/schema")
                body = OpenAPIIndex.Body(contentType: Self.jsonType(operation["consumes"] ?? root["consumes"]), required: required, schema: schema)
                continue
            }
            let schema: JSON
            if swagger {
                // Swagger 2.0 puts the schema's keywords on the parameter itself.
                var object = JSONObject()
                for (key, value) in parameter.objectValue ?? JSONObject() where !["name", "in", "required", "description", "collectionFormat", "allowEmptyValue"].contains(key) {
                    object.append(key, value)
                }
                // An array in the query is comma-separated unless collectionFormat says multi.
                if parameter["type"]?.stringValue == "array", (parameter["collectionFormat"]?.stringValue ?? "csv") != "multi" {
                    object.append("x-douctl-joined", .string(parameter["collectionFormat"]?.stringValue == "pipes" ? "|" : parameter["collectionFormat"]?.stringValue == "ssv" ? " " : ","))
                }
                schema = try inline(.object(object), in: document, at: at)
            } else if let given = parameter["schema"] {
                var inlined = try inline(given, in: document, at: at + "/schema")
                // style form with explode false: one comma-separated value.
                if parameter["explode"]?.boolValue == false, case .object(var object) = inlined {
                    object.append("x-douctl-joined", ",")
                    inlined = .object(object)
                }
                schema = inlined
            } else if let content = parameter["content"]?.objectValue?.members.first?.value["schema"] {
                schema = try inline(content, in: document, at: at + "/content")
            } else {
                schema = .object(JSONObject())
            }
            if swagger && place == "formData" {
                formFields.append((name, schema, required))
                continue
            }
            params.append(OpenAPIIndex.Parameter(name: name, location: place, required: required, schema: schema, description: description))
        }
        if !formFields.isEmpty {
            let consumes = (operation["consumes"] ?? root["consumes"])?.arrayValue?.compactMap(\.stringValue) ?? []
            let type = consumes.first { $0.hasPrefix("multipart/") } ?? "application/x-www-form-urlencoded"
            body = OpenAPIIndex.Body(contentType: type, required: formFields.contains { $0.2 }, schema: .object(JSONObject([
                ("type", "object"),
                ("properties", .object(JSONObject(formFields.map { ($0.0, $0.1) }))),
                ("required", .array(formFields.filter(\.2).map { .string($0.0) })),
            ])))
        }
        if let requestBody = operation["requestBody"] {
            let (resolved, bodyDocument) = try dereference(requestBody, in: document, at: pointer + "/requestBody")
            if let content = resolved["content"]?.objectValue, !content.isEmpty {
                let types = content.keys
                let chosen = types.first { OpenAPIIndex.isJSON($0) } ?? types.first { $0 == "application/x-www-form-urlencoded" } ?? types.first { $0.hasPrefix("multipart/") } ?? types[0]
                let schema = try inline(content[chosen]?["schema"] ?? .object(JSONObject()), in: bodyDocument, at: pointer + "/requestBody/content/" + chosen.replacingAll("/", with: "~1") + "/schema")
                body = OpenAPIIndex.Body(contentType: chosen, required: resolved["required"]?.boolValue ?? false, schema: schema)
            }
        }
        let tags = operation["tags"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let summary = operation["summary"]?.stringValue ?? operation["description"]?.stringValue.map { String($0.prefix { $0 != "\n" }) } ?? ""
        return OpenAPIIndex.Operation(
            name: "", operationID: operation["operationId"]?.stringValue, tag: tags.first ?? "", summary: summary,
            method: method.uppercased(), path: path, description: operation["description"]?.stringValue ?? "",
            parameters: params, body: body, deprecated: operation["deprecated"]?.boolValue ?? false)
    }

    /// A GET operation's paging hint, from its first 2xx response (`OpenAPIPaging`).
    private mutating func pagingHint(_ operation: JSON, document: String, pointer: String, swagger: Bool, queryParameters: [String]) throws(DouctlError) -> OpenAPIPaging? {
        guard let responses = operation["responses"]?.objectValue else { return nil }
        guard let code = responses.keys.filter({ $0.hasPrefix("2") }).sorted().first, let raw = responses[code] else { return nil }
        let at = pointer + "/responses/" + code
        let (response, responseDocument) = try dereference(raw, in: document, at: at)
        var headers: [String] = []
        for (name, _) in response["headers"]?.objectValue ?? JSONObject() { headers.append(name) }
        let given: JSON?
        if swagger {
            given = response["schema"]
        } else {
            let content = response["content"]?.objectValue ?? JSONObject()
            given = (content.first { OpenAPIIndex.isJSON($0.key) }?.value ?? content.members.first?.value)?["schema"]
        }
        let schema = try given.map { (value: JSON) throws(DouctlError) in try inline(value, in: responseDocument, at: at + "/schema") } ?? .object(JSONObject())
        return OpenAPIPaging.hint(schema: schema, headers: headers, queryParameters: queryParameters)
    }

    static func jsonType(_ consumes: JSON?) -> String {
        let types = consumes?.arrayValue?.compactMap(\.stringValue) ?? []
        return types.first { OpenAPIIndex.isJSON($0) } ?? types.first ?? "application/json"
    }

    /// The server URLs, `servers` variables at their defaults; Swagger 2.0's scheme, host
    /// and basePath. A relative URL is relative to the description's own URL.
    private func servers(_ root: JSON, swagger: Bool) -> [String] {
        if swagger {
            let base = root["basePath"]?.stringValue ?? ""
            let trimmedBase = base == "/" ? "" : base
            if let host = root["host"]?.stringValue {
                let schemes = root["schemes"]?.arrayValue?.compactMap(\.stringValue) ?? []
                let scheme = schemes.contains("https") ? "https" : schemes.first ?? (source.hasPrefix("http://") ? "http" : "https")
                return ["\(scheme)://\(host)\(trimmedBase)"]
            }
            return [Self.absolute(trimmedBase.isEmpty ? "/" : trimmedBase, against: source)].compactMap { $0 }.map(Self.trimmingSlash)
        }
        let servers = root["servers"]?.arrayValue ?? []
        var result: [String] = []
        for server in servers {
            guard var url = server["url"]?.stringValue else { continue }
            for (name, variable) in server["variables"]?.objectValue ?? JSONObject() {
                url = url.replacingAll("{\(name)}", with: variable["default"]?.scalarText ?? "")
            }
            if let absolute = Self.absolute(url, against: source) { result.append(Self.trimmingSlash(absolute)) }
        }
        if result.isEmpty, let origin = Self.absolute("/", against: source) { result.append(Self.trimmingSlash(origin)) }
        return result
    }

    /// OpenAPI 3's servers as described, with their variables; a relative URL made
    /// absolute against the description's URL where it can be.
    private func serverTemplates(_ root: JSON) -> [OpenAPIIndex.Server] {
        var result: [OpenAPIIndex.Server] = []
        for server in root["servers"]?.arrayValue ?? [] {
            guard let url = server["url"]?.stringValue else { continue }
            var variables: [OpenAPIIndex.Variable] = []
            for (name, variable) in server["variables"]?.objectValue ?? JSONObject() {
                variables.append(OpenAPIIndex.Variable(name: name, defaultValue: variable["default"]?.scalarText ?? "",
                                                       choices: variable["enum"]?.arrayValue?.compactMap(\.scalarText) ?? [],
                                                       description: variable["description"]?.stringValue ?? ""))
            }
            result.append(OpenAPIIndex.Server(url: Self.absolute(url, against: source) ?? url, description: server["description"]?.stringValue ?? "", variables: variables))
        }
        return result
    }

    static func trimmingSlash(_ url: String) -> String {
        url.hasSuffix("/") ? String(url.dropLast()) : url
    }

    /// `url` made absolute against the description's URL; nil when it is relative and the
    /// description is a file.
    static func absolute(_ url: String, against source: String) -> String? {
        if url.hasPrefix("http://") || url.hasPrefix("https://") { return url }
        guard source.hasPrefix("http://") || source.hasPrefix("https://"), let parts = URLParts(source) else { return nil }
        let origin = "\(parts.scheme)://\(parts.host.contains(":") ? "[\(parts.host)]" : parts.host)\(parts.port.map { ":\($0)" } ?? "")"
        if url.hasPrefix("/") { return origin + url }
        return location(url, relativeTo: source)
    }

    /// The auth the description asks for: the first scheme its top-level `security` names
    /// (else the first it defines).
    private mutating func security(_ root: JSON, swagger: Bool) throws(DouctlError) -> OpenAPIIndex.Security? {
        let schemes = (swagger ? root["securityDefinitions"] : root["components"]?["securitySchemes"])?.objectValue ?? JSONObject()
        guard !schemes.isEmpty else { return nil }
        let named = root["security"]?.arrayValue?.compactMap { $0.objectValue?.keys.first }.first { schemes[$0] != nil }
        let name = named ?? schemes.keys[0]
        guard let raw = schemes[name] else { return nil }
        let (scheme, _) = try dereference(raw, in: source, at: "/components/securitySchemes/" + name)
        var result = OpenAPIIndex.Security(name: name, type: scheme["type"]?.stringValue ?? "")
        switch result.type {
        case "apiKey":
            result.keyName = scheme["name"]?.stringValue
            result.keyLocation = scheme["in"]?.stringValue
        case "http":
            result.httpScheme = scheme["scheme"]?.stringValue?.lowercased()
        case "basic":
            result.type = "http"
            result.httpScheme = "basic"
        case "openIdConnect":
            result.openIDConnectURL = scheme["openIdConnectUrl"]?.stringValue
        case "oauth2":
            var flows: [JSON] = []
            if swagger {
                flows = [scheme]
            } else {
                let all = scheme["flows"]?.objectValue ?? JSONObject()
                // The flows a person at a terminal uses first: code, then device, then the rest.
                for key in ["authorizationCode", "deviceAuthorization", "clientCredentials", "password", "implicit"] {
                    if let flow = all[key] { flows.append(flow) }
                }
            }
            for flow in flows {
                result.authorizeURL = result.authorizeURL ?? flow["authorizationUrl"]?.stringValue.flatMap { Self.absolute($0, against: source) ?? $0 }
                result.tokenURL = result.tokenURL ?? flow["tokenUrl"]?.stringValue.flatMap { Self.absolute($0, against: source) ?? $0 }
                result.deviceURL = result.deviceURL ?? flow["deviceAuthorizationUrl"]?.stringValue.flatMap { Self.absolute($0, against: source) ?? $0 }
                for scope in flow["scopes"]?.objectValue?.keys ?? [] where !result.scopes.contains(scope) { result.scopes.append(scope) }
            }
        default:
            break
        }
        return result
    }
}
