#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlJSON
import DouctlSystem

/// What douctl keeps of an API description: its servers, its auth and its operations, in a
/// compact file written once per version of the description (`$XDG_CACHE_HOME/douctl/openapi/
/// PROFILE.index`). Its first line is the header (servers, auth); the second one short row
/// per operation (name, tag, summary, method, path, and where its details start); each next
/// line is one operation's details (parameters and body, references resolved). So TAB
/// completion and help read the first two lines only, and running an operation finds its
/// row by its name's bytes and parses that row and its own line, never the description again.
public struct OpenAPIIndex: Sendable, Equatable {
    public static let formatVersion = 2

    public struct Parameter: Sendable, Equatable {
        public var name: String
        /// path, query, header or cookie.
        public var location: String
        public var required: Bool
        /// The JSON Schema of the value, references inlined.
        public var schema: JSON
        public var description: String

        public init(name: String, location: String, required: Bool, schema: JSON, description: String) {
            self.name = name
            self.location = location
            self.required = required
            self.schema = schema
            self.description = description
        }
    }

    public struct Body: Sendable, Equatable {
        public var contentType: String
        public var required: Bool
        public var schema: JSON

        public init(contentType: String, required: Bool, schema: JSON) {
            self.contentType = contentType
            self.required = required
            self.schema = schema
        }

        public var isJSON: Bool { OpenAPIIndex.isJSON(contentType) }
    }

    public struct Operation: Sendable, Equatable {
        /// The command: the operationId in kebab case, or "TAG VERB" (two words) without one.
        public var name: String
        public var operationID: String?
        public var tag: String
        public var summary: String
        /// Upper case: GET, POST, ...
        public var method: String
        /// The template: /pets/{petId}.
        public var path: String
        public var description: String
        public var parameters: [Parameter]
        public var body: Body?
        public var deprecated: Bool

        public init(name: String, operationID: String?, tag: String, summary: String, method: String, path: String,
                    description: String, parameters: [Parameter], body: Body?, deprecated: Bool) {
            self.name = name
            self.operationID = operationID
            self.tag = tag
            self.summary = summary
            self.method = method
            self.path = path
            self.description = description
            self.parameters = parameters
            self.body = body
            self.deprecated = deprecated
        }

        /// The path parameters in the order the template names them (the command's positional arguments).
        public var pathParameters: [Parameter] {
            let inPath = parameters.filter { $0.location == "path" }
            var ordered: [Parameter] = []
            var rest = Substring(path)
            while let open = rest.firstIndex(of: "{") {
                guard let close = rest[open...].firstIndex(of: "}") else { break }
                let name = String(rest[rest.index(after: open)..<close])
                if let parameter = inPath.first(where: { $0.name == name }) { ordered.append(parameter) }
                else { ordered.append(Parameter(name: name, location: "path", required: true, schema: ["type": "string"], description: "")) }
                rest = rest[rest.index(after: close)...]
            }
            return ordered
        }
    }

    /// The auth a description asks for (its first security scheme).
    public struct Security: Sendable, Equatable {
        public var name: String
        /// apiKey, http, oauth2, openIdConnect.
        public var type: String
        public var keyName: String?
        /// header, query or cookie.
        public var keyLocation: String?
        public var httpScheme: String?
        public var openIDConnectURL: String?
        public var authorizeURL: String?
        public var tokenURL: String?
        public var deviceURL: String?
        public var scopes: [String] = []

        public init(name: String, type: String) {
            self.name = name
            self.type = type
        }
    }

    /// A server as the description gives it: its URL, `{name}` where a variable goes.
    public struct Server: Sendable, Equatable {
        public var url: String
        public var description: String
        public var variables: [Variable]

        public init(url: String, description: String = "", variables: [Variable] = []) {
            self.url = url
            self.description = description
            self.variables = variables
        }
    }

    /// A `servers` variable: `profile add --server-var NAME=VALUE` sets it, else its default.
    public struct Variable: Sendable, Equatable {
        public var name: String
        public var defaultValue: String
        /// Its `enum`: the values it may take (empty: any).
        public var choices: [String]
        public var description: String

        public init(name: String, defaultValue: String, choices: [String] = [], description: String = "") {
            self.name = name
            self.defaultValue = defaultValue
            self.choices = choices
            self.description = description
        }
    }

    public var title: String
    public var version: String
    public var source: String
    public var etag: String?
    /// SHA-256 of the description's bytes (hex): the version the index is of.
    public var digest: String
    /// The servers' URLs, variables at their defaults.
    public var servers: [String]
    /// The servers as described (their variables), in the same order as `servers`.
    public var serverTemplates: [Server] = []
    public var security: Security?
    public var operations: [Operation]
    /// The paging its list operations describe (for the profile's keys; not kept in the file).
    public var paging: OpenAPIPaging?

    public init(title: String, version: String, source: String, etag: String?, digest: String, servers: [String], security: Security?, operations: [Operation]) {
        self.title = title
        self.version = version
        self.source = source
        self.etag = etag
        self.digest = digest
        self.servers = servers
        self.security = security
        self.operations = operations
    }

    /// The server URL `profile add` writes as api_base: the server `choice` names (its
    /// number from 1, or its URL; nil: the first), its variables set to `values` where given
    /// (each checked against its enum), else their defaults. Usage errors (exit 2) name the
    /// variable and what it allows. nil: the description names no server.
    public static func serverURL(_ templates: [Server], source: String, choice: String?, values: [(name: String, value: String)]) throws(DouctlError) -> String? {
        guard !templates.isEmpty else {
            if let name = values.first?.name { throw .usage("--server-var \(TerminalText.escaped(name)): the description names no server, so no server variables") }
            if choice != nil { throw .usage("--server: the description names no server") }
            return nil
        }
        var chosen = templates[0]
        if let choice {
            if let number = Int(choice) {
                guard (1...templates.count).contains(number) else {
                    throw .usage("--server \(number): the description has \(templates.count) server\(templates.count == 1 ? "" : "s") (1..\(templates.count))")
                }
                chosen = templates[number - 1]
            } else if let found = templates.first(where: { $0.url == choice || OpenAPIReader.trimmingSlash($0.url) == OpenAPIReader.trimmingSlash(choice) }) {
                chosen = found
            } else {
                throw .usage("--server \(TerminalText.escaped(choice)): not one of the description's servers (\(templates.enumerated().map { "\($0.offset + 1): \(TerminalText.escaped($0.element.url))" }.joined(separator: ", ")))")
            }
        }
        var url = chosen.url
        for (name, value) in values {
            guard let variable = chosen.variables.first(where: { $0.name == name }) else {
                let known = chosen.variables.map(\.name)
                throw .usage("--server-var \(TerminalText.escaped(name)): the server \(TerminalText.escaped(chosen.url)) has " + (known.isEmpty ? "no variables" : "no such variable (it has \(known.joined(separator: ", ")))"))
            }
            if !variable.choices.isEmpty, !variable.choices.contains(value) {
                throw .usage("--server-var \(TerminalText.escaped(name)): must be one of \(variable.choices.map { TerminalText.escaped($0) }.joined(separator: ", ")), not \(TerminalText.escaped(value))")
            }
        }
        for variable in chosen.variables {
            let value = values.last { $0.name == variable.name }?.value ?? variable.defaultValue
            url = url.replacingAll("{\(variable.name)}", with: value)
        }
        return OpenAPIReader.absolute(url, against: source).map(OpenAPIReader.trimmingSlash)
    }

    /// The servers and their variables for `douctl NAME --help`: empty when there is one
    /// server without variables (api_base says it all).
    public static func serversHelp(_ templates: [Server]) -> String {
        guard templates.count > 1 || templates.contains(where: { !$0.variables.isEmpty }) else { return "" }
        var text = "Servers (choose with profile add NAME --openapi SOURCE --server N|URL --server-var NAME=VALUE):\n"
        for (number, server) in templates.enumerated() {
            text += "  \(number + 1): \(TerminalText.escaped(server.url))" + (server.description.isEmpty ? "" : "  " + TerminalText.escaped(server.description)) + "\n"
            for variable in server.variables {
                var parts: [String] = []
                if !variable.choices.isEmpty { parts.append("one of " + variable.choices.map { TerminalText.escaped($0) }.joined(separator: ", ")) }
                parts.append("default " + TerminalText.escaped(variable.defaultValue))
                let description = variable.description.split(separator: "\n").first.map(String.init) ?? ""
                text += "     --server-var \(TerminalText.escaped(variable.name))=VALUE  " + parts.joined(separator: ", ") + (description.isEmpty ? "" : ": " + TerminalText.escaped(description)) + "\n"
            }
        }
        return text
    }

    public static func isJSON(_ type: String) -> Bool {
        // On bytes: a String made from reversed slices went through the runtime's generic
        // metadata and associated-type lookups, ~1.2 M instructions of an operation's run.
        let base = HTTPSyntax.lowercased(HTTPSyntax.trimmingWhitespace(type.prefix { $0 != ";" }))
        return base == "application/json" || base.hasSuffix("+json") || base == "text/json"
    }

    // MARK: - command names

    /// "listPets", "list_pets", "ListPETs" → "list-pets"; "HTTPServer" → "http-server".
    public static func kebab(_ text: String) -> String {
        var words: [String] = []
        var word = ""
        let scalars = Array(text.unicodeScalars)
        for (index, scalar) in scalars.enumerated() {
            let isUpper = scalar.properties.isUppercase
            let isAlphanumeric = scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
            guard isAlphanumeric else {
                if !word.isEmpty { words.append(word); word = "" }
                continue
            }
            if isUpper, !word.isEmpty {
                let previous = scalars[index - 1]
                let nextIsLower = index + 1 < scalars.count && scalars[index + 1].properties.isLowercase
                if previous.properties.isLowercase || ("0"..."9").contains(previous) || (previous.properties.isUppercase && nextIsLower) {
                    words.append(word)
                    word = ""
                }
            }
            word += String(scalar).lowercased()
        }
        if !word.isEmpty { words.append(word) }
        return words.joined(separator: "-")
    }

    /// Names each operation's command: its operationId in kebab case, else "TAG VERB" (the
    /// tag, or the path's first word; the verb from the method and the path's last words).
    /// A name taken twice gets the method as a suffix, then a number.
    static func nameCommands(_ operations: inout [Operation]) {
        var taken: Set<String> = []
        for index in operations.indices {
            let operation = operations[index]
            var name: String
            if let id = operation.operationID, !kebab(id).isEmpty {
                name = kebab(id)
            } else {
                let literals = operation.path.split(separator: "/").filter { !$0.hasPrefix("{") }.map { kebab(String($0)) }.filter { !$0.isEmpty }
                let tag = kebab(operation.tag).nonEmptyName ?? literals.first ?? "root"
                let endsInParameter = operation.path.split(separator: "/").last?.hasPrefix("{") ?? false
                let verb: String
                switch operation.method {
                case "GET": verb = endsInParameter ? "get" : "list"
                case "POST": verb = "create"
                case "PUT": verb = "replace"
                case "PATCH": verb = "update"
                case "DELETE": verb = "delete"
                default: verb = operation.method.lowercased()
                }
                // The path's last word after the tag's own ("/api/kernels/{id}/interrupt" under
                // kernels: interrupt); none when the tag is the last (GET /api/status: "status list").
                let after = literals.lastIndex(of: tag).map { literals[(literals.index(after: $0))...] } ?? literals.dropFirst()
                let extra = after.last
                name = tag + " " + verb + (extra.map { "-" + $0 } ?? "")
            }
            if taken.contains(name) { name += "-" + operation.method.lowercased() }
            var candidate = name
            var number = 2
            while taken.contains(candidate) {
                candidate = name + "-\(number)"
                number += 1
            }
            taken.insert(candidate)
            operations[index].name = candidate
        }
    }

    // MARK: - the file

    /// The index as its file's bytes (see the type's comment).
    public func serialized() -> [UInt8] {
        var details: [UInt8] = []
        var rows: [JSON] = []
        for operation in operations {
            let detail = JSON.object(JSONObject([
                ("id", operation.operationID.map(JSON.string) ?? .null),
                ("description", .string(operation.description)),
                ("deprecated", .bool(operation.deprecated)),
                ("parameters", .array(operation.parameters.map { parameter in
                    .object(JSONObject([("name", .string(parameter.name)), ("in", .string(parameter.location)), ("required", .bool(parameter.required)),
                                        ("schema", parameter.schema), ("description", .string(parameter.description))]))
                })),
                ("body", operation.body.map { body in
                    .object(JSONObject([("type", .string(body.contentType)), ("required", .bool(body.required)), ("schema", body.schema)]))
                } ?? .null),
            ]))
            rows.append([.string(operation.name), .string(operation.tag), .string(operation.summary), .string(operation.method),
                         .string(operation.path), .int(details.count)])
            detail.write(to: &details, format: .compact)
            details.append(0x0A)
        }
        var security: JSON = .null
        if let scheme = self.security {
            var object = JSONObject([("name", .string(scheme.name)), ("type", .string(scheme.type))])
            for (key, value) in [("key_name", scheme.keyName), ("key_in", scheme.keyLocation), ("http_scheme", scheme.httpScheme),
                                 ("openid_connect_url", scheme.openIDConnectURL), ("authorize_url", scheme.authorizeURL),
                                 ("token_url", scheme.tokenURL), ("device_url", scheme.deviceURL)] {
                if let value { object.append(key, .string(value)) }
            }
            object.append("scopes", .array(scheme.scopes.map(JSON.string)))
            security = .object(object)
        }
        let header = JSON.object(JSONObject([
            ("douctl_openapi_index", .int(Self.formatVersion)),
            ("title", .string(title)), ("version", .string(version)), ("source", .string(source)),
            ("etag", etag.map(JSON.string) ?? .null), ("digest", .string(digest)),
            ("servers", .array(servers.map(JSON.string))), ("security", security),
            ("server_templates", .array(serverTemplates.map(Self.json))),
        ]))
        var bytes = header.serialized(.compact)
        bytes.append(0x0A)
        JSON.array(rows).write(to: &bytes, format: .compact)
        bytes.append(0x0A)
        return bytes + details
    }

    static func json(_ server: Server) -> JSON {
        .object(JSONObject([
            ("url", .string(server.url)), ("description", .string(server.description)),
            ("variables", .array(server.variables.map { variable in
                .object(JSONObject([("name", .string(variable.name)), ("default", .string(variable.defaultValue)),
                                    ("enum", .array(variable.choices.map(JSON.string))), ("description", .string(variable.description))]))
            })),
        ]))
    }

    static func server(_ json: JSON) -> Server? {
        guard let url = json["url"]?.stringValue else { return nil }
        return Server(url: url, description: json["description"]?.stringValue ?? "", variables: (json["variables"]?.arrayValue ?? []).compactMap { variable in
            variable["name"]?.stringValue.map {
                Variable(name: $0, defaultValue: variable["default"]?.stringValue ?? "", choices: variable["enum"]?.arrayValue?.compactMap(\.stringValue) ?? [],
                         description: variable["description"]?.stringValue ?? "")
            }
        })
    }

    /// Where the index of a profile's description is kept.
    public static func path(cacheDirectory: String, profile: String) -> String {
        cacheDirectory + "/openapi/" + profile + ".index"
    }

    public func write(to path: String) throws(DouctlError) {
        do {
            try FileIO.makeDirectory(FileIO.directoryName(FileIO.directoryName(path)), mode: 0o700)
            try FileIO.makeDirectory(FileIO.directoryName(path), mode: 0o700)
            try AtomicFile.write(serialized(), to: path)
        } catch {
            throw .localInput("cannot write the operations index \(path) (\(error))")
        }
    }
}

/// An index file as read: the header parsed, each operation's details only when asked.
public struct OpenAPIIndexFile: Sendable {
    /// One row of the header: enough for help's list and completion.
    public struct Row: Sendable, Equatable {
        public var name: String
        public var tag: String
        public var summary: String
        public var method: String
        public var path: String
        var offset: Int
    }

    public let path: String
    public let title: String
    public let source: String
    public let etag: String?
    public let digest: String
    public let servers: [String]
    /// The servers as described (an index written before they were kept has none).
    public let serverTemplates: [OpenAPIIndex.Server]
    public let security: JSON?
    public let rows: [Row]
    /// Where the operations' lines start.
    private let detailsStart: Int

    /// Reads the header and the rows; nil when there is no file. With `only`, an
    /// operation's name: when the rows hold it, only its row is parsed (the rest are
    /// skipped as bytes). A file of another format or a damaged one is an error naming it
    /// (profile refresh rewrites it).
    public static func read(_ path: String, only: String? = nil) throws(DouctlError) -> OpenAPIIndexFile? {
        guard FileIO.fileExists(path) else { return nil }
        let fd = open(EscapedBytes.cString(path), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .localInput("cannot read the operations index \(path) (\(SystemError("open", path: path)))") }
        defer { close(fd) }
        let damaged = DouctlError.localInput("the operations index \(path) is damaged or of another douctl; run douctl profile refresh to rebuild it")
        guard let head = readLine(fd, at: 0), let rowsLine = readLine(fd, at: head.count) else { throw damaged }
        return try OpenAPIIndexFile(path: path, header: head, rows: rowsLine, only: only)
    }

    /// The bytes of the line that starts at `offset`, its newline included; nil at the end.
    /// Read into one growing buffer that is never zeroed, then copied out once: a fresh
    /// zero-filled 64 KiB array per read and the appends of its slices cost a third of a
    /// million instructions for the three lines an operation's run reads.
    static func readLine(_ fd: Int32, at offset: Int) -> [UInt8]? {
        var capacity = 64 * 1024
        var storage = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        defer { storage.deallocate() }
        var filled = 0
        while true {
            if capacity - filled < 16 * 1024 {
                let grown = UnsafeMutableRawPointer.allocate(byteCount: capacity * 2, alignment: 16)
                grown.copyMemory(from: storage, byteCount: filled)
                storage.deallocate()
                storage = grown
                capacity *= 2
            }
            let count = pread(fd, storage + filled, capacity - filled, off_t(offset + filled))
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            if let hit = memchr(storage + filled, 0x0A, count) {
                return Array(UnsafeRawBufferPointer(start: storage, count: UnsafeRawPointer(hit) - UnsafeRawPointer(storage) + 1))
            }
            filled += count
        }
    }

    init(path: String, header bytes: [UInt8], rows rowBytes: [UInt8], only: String?) throws(DouctlError) {
        self.path = path
        let damaged = DouctlError.localInput("the operations index \(path) is damaged or of another douctl; run douctl profile refresh to rebuild it")
        let header: JSON
        do { header = try bytes.withUnsafeBytes { buffer throws(JSONParseError) in try JSONParser.parse(UnsafeRawBufferPointer(rebasing: buffer[0..<(bytes.count - 1)])) } } catch { throw damaged }
        guard header["douctl_openapi_index"]?.intValue == OpenAPIIndex.formatVersion else { throw damaged }
        detailsStart = bytes.count + rowBytes.count
        title = header["title"]?.stringValue ?? ""
        source = header["source"]?.stringValue ?? ""
        etag = header["etag"]?.stringValue
        digest = header["digest"]?.stringValue ?? ""
        servers = header["servers"]?.arrayValue?.compactMap(\.stringValue) ?? []
        serverTemplates = header["server_templates"]?.arrayValue?.compactMap(OpenAPIIndex.server) ?? []
        security = header["security"].flatMap { $0.isNull ? nil : $0 }
        let table: JSON
        if let only, let row = Self.row(named: only, in: rowBytes) {
            table = .array([row])
        } else {
            do { table = try rowBytes.withUnsafeBytes { buffer throws(JSONParseError) in try JSONParser.parse(UnsafeRawBufferPointer(rebasing: buffer[0..<(rowBytes.count - 1)])) } } catch { throw damaged }
        }
        guard let operations = table.arrayValue else { throw damaged }
        var rows: [Row] = []
        rows.reserveCapacity(operations.count)
        for row in operations {
            guard let fields = row.arrayValue, fields.count == 6, let offset = fields[5].intValue else { throw damaged }
            rows.append(Row(name: fields[0].stringValue ?? "", tag: fields[1].stringValue ?? "", summary: fields[2].stringValue ?? "",
                            method: fields[3].stringValue ?? "", path: fields[4].stringValue ?? "", offset: offset))
        }
        self.rows = rows
    }

    /// The row whose name is exactly `name`, found by its bytes (`["NAME",` opens it; a
    /// name is kebab case, so it needs no escaping) and parsed alone; nil when there is
    /// none, or when `name` is a tag ("NAME VERB" rows: the caller parses them all).
    static func row(named name: String, in bytes: [UInt8]) -> JSON? {
        guard name.utf8.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) else { return nil }
        let needle = Array(("[\"" + name + "\",").utf8)
        let found: Int? = bytes.withUnsafeBytes { haystack -> Int? in
            guard let base = haystack.baseAddress else { return nil }
            var at = 0
            while at + needle.count <= haystack.count {
                guard let hit = memchr(base + at, Int32(needle[0]), haystack.count - at) else { return nil }
                let index = UnsafeRawPointer(hit) - base
                guard index + needle.count <= haystack.count else { return nil }
                if needle.withUnsafeBytes({ pattern in pattern.baseAddress.map { memcmp(base + index, $0, needle.count) } ?? 1 }) == 0 { return index }
                at = index + 1
            }
            return nil
        }
        guard let start = found else { return nil }
        // The row's end: its closing bracket, outside strings.
        var index = start + 1
        var inString = false
        while index < bytes.count {
            let byte = bytes[index]
            if inString {
                if byte == UInt8(ascii: "\\") { index += 1 } else if byte == UInt8(ascii: "\"") { inString = false }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            } else if byte == UInt8(ascii: "]") {
                return try? bytes.withUnsafeBytes { buffer throws(JSONParseError) in try JSONParser.parse(UnsafeRawBufferPointer(rebasing: buffer[start...index])) }
            }
            index += 1
        }
        return nil
    }

    /// The bytes of one operation's line, read where the header says it starts.
    private func line(_ row: Row) throws(DouctlError) -> [UInt8] {
        let damaged = DouctlError.localInput("the operations index \(path) is damaged; run douctl profile refresh to rebuild it")
        let fd = open(EscapedBytes.cString(path), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw damaged }
        defer { close(fd) }
        guard let bytes = Self.readLine(fd, at: detailsStart + row.offset) else { throw damaged }
        return Array(bytes.dropLast())
    }

    /// One operation, its details parsed from its own line.
    public func operation(_ row: Row) throws(DouctlError) -> OpenAPIIndex.Operation {
        let damaged = DouctlError.localInput("the operations index \(path) is damaged; run douctl profile refresh to rebuild it")
        let bytes = try line(row)
        let detail: JSON
        do { detail = try JSONParser.parse(bytes) } catch { throw damaged }
        let parameters = (detail["parameters"]?.arrayValue ?? []).map { parameter in
            OpenAPIIndex.Parameter(name: parameter["name"]?.stringValue ?? "", location: parameter["in"]?.stringValue ?? "query",
                                   required: parameter["required"]?.boolValue ?? false, schema: parameter["schema"] ?? .object(JSONObject()),
                                   description: parameter["description"]?.stringValue ?? "")
        }
        let body = detail["body"].flatMap { body -> OpenAPIIndex.Body? in
            guard let type = body["type"]?.stringValue else { return nil }
            return OpenAPIIndex.Body(contentType: type, required: body["required"]?.boolValue ?? false, schema: body["schema"] ?? .object(JSONObject()))
        }
        return OpenAPIIndex.Operation(name: row.name, operationID: detail["id"]?.stringValue, tag: row.tag, summary: row.summary, method: row.method,
                                      path: row.path, description: detail["description"]?.stringValue ?? "", parameters: parameters, body: body,
                                      deprecated: detail["deprecated"]?.boolValue ?? false)
    }
}

extension String {
    fileprivate var nonEmptyName: String? { isEmpty ? nil : self }
}
