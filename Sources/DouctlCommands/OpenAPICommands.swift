import DouctlArguments
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// `douctl NAME OPERATION [ARGS]`: the operations of a profile's API description as
/// commands (issue 42). NAME is a profile added with `--openapi`; it is looked up only when
/// the command line's first word is no command of douctl's own, so every built-in command
/// keeps its name and its start-up. OPERATION is the operationId in kebab case, or
/// `TAG VERB` when the description gives none. Path parameters are positional, query and
/// header parameters options of their own names, the body is `api`'s -f/-F/--input: the
/// operation is `api` with its PATH and method filled in, run through `api`'s own prepare
/// and run, so --paginate, --jq, --cache, --dry-run, -o and --record work alike.
enum OpenAPICommands {
    /// The command tree for this command line: the root with NAME's operations beside the
    /// built-in commands, when the first command word names a profile with a description;
    /// nil otherwise (the static tree).
    /// The command line gains `--profile NAME` in front when it names no profile.
    static func tree(for process: ProcessContext) -> (tree: Command, arguments: [String])? {
        // `douctl help NAME [OPERATION]` is `douctl NAME [OPERATION] --help`.
        if firstCommandWord(process.arguments) == "help", let at = process.arguments.firstIndex(of: "help"),
           let next = firstCommandWord(Array(process.arguments[(at + 1)...])),
           !CommandTree.root.children.contains(where: { $0.spec.name == next }), next != "help" {
            var asked = process
            asked.arguments.remove(at: at)
            asked.arguments.append("--help")
            return tree(for: asked)
        }
        guard let word = firstCommandWord(process.arguments),
              !CommandTree.root.children.contains(where: { $0.spec.name == word }), word != "help" else { return nil }
        let explicit = value(of: "config-dir", in: process.arguments)
        guard let directory = try? ConfigDirectory.locate(explicit: explicit, environment: process.environment),
              let config = try? directory.loadConfig(), config.profile(named: word) != nil,
              let profile = try? config.resolve(word), let source = profile.openAPI else { return nil }
        // The operation named after NAME, when there is one: only its command is built
        // (help and a word that names none build them all).
        let rest = process.arguments.drop { $0 != word }.dropFirst()
        var root = CommandTree.root
        root.children.append(group(profile: word, source: source, environment: process.environment, only: firstCommandWord(Array(rest))))
        root.spec.subcommands = root.children.map(\.spec)
        let namesProfile = process.arguments.contains { $0 == "--profile" || $0.hasPrefix("--profile=") }
        return (root, namesProfile ? process.arguments : ["--profile", word] + process.arguments)
    }

    /// The first word that is not an option or an option's value.
    static func firstCommandWord(_ argv: [String]) -> String? {
        let globals = GlobalOptions.specs
        var index = 0
        while index < argv.count {
            let token = argv[index]
            index += 1
            if token == "--" { return index < argv.count ? argv[index] : nil }
            if token.hasPrefix("--") {
                let name = String(token.dropFirst(2).prefix { $0 != "=" })
                if !token.contains("="), let spec = globals.first(where: { $0.long == name }) { index += spec.valueCount }
            } else if token.hasPrefix("-"), token.count == 2, let short = token.dropFirst().first {
                if let spec = globals.first(where: { $0.short == short }) { index += spec.valueCount }
            } else if !token.hasPrefix("-") {
                return token
            }
        }
        return nil
    }

    static func value(of long: String, in argv: [String]) -> String? {
        for (index, token) in argv.enumerated() {
            if token == "--" + long, index + 1 < argv.count { return argv[index + 1] }
            if token.hasPrefix("--" + long + "=") { return String(token.dropFirst(long.count + 3)) }
        }
        return nil
    }

    /// NAME's group: one command per operation ("TAG VERB" names under a group per tag).
    static func group(profile: String, source: String, environment: [String: String], only: String? = nil) -> Command {
        let path = ResponseCache.defaultDirectory(environment: environment).map { OpenAPIIndex.path(cacheDirectory: $0, profile: profile) }
        let file: OpenAPIIndexFile?
        do { file = try path.flatMap { (path: String) throws(DouctlError) in try OpenAPIIndexFile.read(path, only: only) } } catch {
            return failing(profile, error)
        }
        guard let file else {
            return failing(profile, .localInput("profile \(profile)'s operations index is missing (the cache was cleared?); rebuild it with douctl profile refresh \(profile)"))
        }
        var children: [Command] = []
        var tagGroups: [String: [Command]] = [:]
        var tagOrder: [String] = []
        var rows = file.rows
        if let only, rows.contains(where: { $0.name == only || $0.name.hasPrefix(only + " ") }) {
            rows = rows.filter { $0.name == only || $0.name.hasPrefix(only + " ") }
        }
        for row in rows {
            let words = row.name.split(separator: " ").map(String.init)
            let leaf = operationCommand(row, name: words.last ?? row.name, file: file)
            if words.count == 2 {
                if tagGroups[words[0]] == nil { tagOrder.append(words[0]) }
                tagGroups[words[0], default: []].append(leaf)
            } else {
                children.append(leaf)
            }
        }
        for tag in tagOrder {
            children.append(Command(group: CommandSpec(tag, abstract: "operations tagged \(tag)"), tagGroups[tag] ?? []))
        }
        return Command(group: CommandSpec(
            profile, abstract: file.title.isEmpty ? "operations of \(source)" : file.title,
            discussion: listing(file, profile: profile),
            examples: []), children)
    }

    /// The operations by tag, with their summaries, for `douctl NAME --help`.
    static func listing(_ file: OpenAPIIndexFile, profile: String) -> String {
        var byTag: [(String, [OpenAPIIndexFile.Row])] = []
        for row in file.rows {
            let tag = row.tag.isEmpty ? "(untagged)" : row.tag
            if let index = byTag.firstIndex(where: { $0.0 == tag }) { byTag[index].1.append(row) } else { byTag.append((tag, [row])) }
        }
        var text = "Operations of \(TerminalText.escaped(file.source)), by tag (douctl \(profile) OPERATION --help shows one):\n"
        for (tag, rows) in byTag {
            text += TerminalText.escaped(tag) + "\n"
            let width = min(36, rows.map(\.name.count).max() ?? 0)
            for row in rows {
                let padding = String(repeating: " ", count: max(1, width - row.name.count + 2))
                text += "  " + row.name + padding + TerminalText.escaped(row.summary.isEmpty ? "\(row.method) \(row.path)" : row.summary) + "\n"
            }
        }
        return text + OpenAPIIndex.serversHelp(file.serverTemplates)
    }

    /// A profile whose index cannot be read: its word runs, and says why.
    static func failing(_ profile: String, _ error: DouctlError) -> Command {
        var command = Command(group: CommandSpec(profile, abstract: "operations of profile \(profile)'s API description"), [])
        command.declared = { ([], [ArgumentSpec("ARGS", help: "the operation and its arguments", arity: .variadic(minimum: 0))]) }
        command.prepare = { _ in PreparedRun(presentation: OutputPresentation()) { _ throws(DouctlError) in throw error } }
        return command.callingAPI()
    }

    // MARK: - an operation

    /// The api options an operation takes: all but -X (the description says the method).
    static var apiOptionSpecs: [OptionSpec] {
        APICommand.APIOptions.optionSpecs.filter { $0.long != "method" }
    }

    static let noValidate = OptionSpec.flag("no-validate", help: "send even when the values break the description's rules (required, types, enums, formats, ranges, the body's schema)")

    /// The option a query, header or cookie parameter is given with: its own name, or
    /// param-NAME when that is one of douctl's options.
    static func optionName(_ parameter: String, taken: Set<String>) -> String {
        taken.contains(parameter) ? "param-" + parameter : parameter
    }

    static func operationCommand(_ row: OpenAPIIndexFile.Row, name: String, file: OpenAPIIndexFile) -> Command {
        var command = Command(group: CommandSpec(name, abstract: row.summary.isEmpty ? "\(row.method) \(row.path)" : TerminalText.escaped(row.summary),
                                                 discussion: detailText(row, file: file)), [])
        let detail = OperationDetail(row: row, file: file)
        command.declared = {
            guard case .success(let operation) = detail.read() else { return (apiOptionSpecs, []) }
            return specs(operation)
        }
        command.prepare = { (parsed: ParsedCommand) throws(OptionError) -> PreparedRun in
            switch detail.read() {
            case .success(let operation): return try prepare(operation, parsed: parsed)
            case .failure(let error): throw OptionError(error.message)
            }
        }
        return command.callingAPI()
    }

    /// An operation's detail, read from the index file once for both its options (the spec
    /// the parser builds) and its run: reading it is a seek, a line and a JSON parse, half a
    /// million instructions, which a run paid twice.
    final class OperationDetail: Sendable {
        let row: OpenAPIIndexFile.Row
        let file: OpenAPIIndexFile
        private let cached = LockedValue<Result<OpenAPIIndex.Operation, DouctlError>?>(nil)

        init(row: OpenAPIIndexFile.Row, file: OpenAPIIndexFile) {
            self.row = row
            self.file = file
        }

        func read() -> Result<OpenAPIIndex.Operation, DouctlError> {
            cached.withLock { cached in
                if let cached { return cached }
                let result: Result<OpenAPIIndex.Operation, DouctlError>
                do throws(DouctlError) { result = .success(try file.operation(row)) } catch { result = .failure(error) }
                cached = result
                return result
            }
        }
    }

    static var reservedNames: Set<String> {
        Set(apiOptionSpecs.map(\.long) + GlobalOptions.specs.map(\.long) + ["no-validate", "help"])
    }

    /// The operation's options and arguments: api's, --no-validate, then one per parameter.
    static func specs(_ operation: OpenAPIIndex.Operation) -> (options: [OptionSpec], arguments: [ArgumentSpec]) {
        let taken = reservedNames
        var options: [OptionSpec] = []
        for parameter in operation.parameters where parameter.location != "path" {
            let schema = SchemaCheck.effective(parameter.schema)
            let choices = schema["enum"]?.arrayValue?.compactMap(\.scalarText)
                ?? schema["items"]?["enum"]?.arrayValue?.compactMap(\.scalarText)
            let isArray = schema["type"]?.stringValue == "array"
            options.append(OptionSpec(optionName(parameter.name, taken: taken),
                                      value: ValueSpec(placeholder(schema), completion: choices.map { .choices($0) }),
                                      help: parameterHelp(parameter), repeatable: isArray, key: "param:" + parameter.location + ":" + parameter.name))
        }
        // A form body's fields (Swagger's formData, OpenAPI 3's urlencoded or multipart
        // requestBody): an option each; a file field takes @FILE and goes as a file part.
        let parameterNames = Set(options.map(\.long))
        for (name, schema) in formFields(operation) {
            let isFile = isFileField(schema)
            let effective = SchemaCheck.effective(schema)
            let choices = effective["enum"]?.arrayValue?.compactMap(\.scalarText) ?? effective["items"]?["enum"]?.arrayValue?.compactMap(\.scalarText)
            let required = operation.body?.schema["required"]?.arrayValue?.contains(.string(name)) == true
            let summary = isFile ? "a file (@FILE, @- for standard input), sent as a file part" : schemaSummary(schema)
            let description = schema["description"]?.stringValue?.split(separator: "\n").first.map(String.init) ?? ""
            let help = TerminalText.escaped((required ? "required, " : "") + "in the body, " + summary + (description.isEmpty ? "" : ": " + description))
            options.append(OptionSpec(optionName(name, taken: taken.union(parameterNames)),
                                      value: ValueSpec(isFile ? "@FILE" : placeholder(effective), completion: isFile ? .file : choices.map { .choices($0) }),
                                      help: help, repeatable: effective["type"]?.stringValue == "array", key: "form:" + name))
        }
        options += apiOptionSpecs + [noValidate]
        let arguments = operation.pathParameters.map { parameter in
            ArgumentSpec(parameter.name.uppercased(), help: parameterHelp(parameter),
                         completion: parameter.schema["enum"]?.arrayValue.map { .choices($0.compactMap(\.scalarText)) } ?? Completion.none)
        }
        return (options, arguments)
    }

    /// The fields of a form body (urlencoded or multipart) as the description lists them;
    /// none for a JSON body.
    static func formFields(_ operation: OpenAPIIndex.Operation) -> [(String, JSON)] {
        guard let body = operation.body, isForm(body.contentType) else { return [] }
        return (body.schema["properties"]?.objectValue ?? JSONObject()).map { ($0.key, $0.value) }
    }

    static func isForm(_ contentType: String) -> Bool {
        contentType.hasPrefix("application/x-www-form-urlencoded") || contentType.hasPrefix("multipart/")
    }

    /// A file field: Swagger 2.0's `type: file`, OpenAPI 3's `format: binary` (or base64) string.
    static func isFileField(_ schema: JSON) -> Bool {
        let schema = SchemaCheck.effective(schema)
        if schema["type"]?.stringValue == "file" { return true }
        let format = schema["format"]?.stringValue
        return schema["type"]?.stringValue == "string" && (format == "binary" || format == "base64")
    }

    static func placeholder(_ schema: JSON) -> String {
        switch schema["type"]?.stringValue {
        case "integer": return "INTEGER"
        case "number": return "NUMBER"
        case "boolean": return "true|false"
        case "array": return "VALUE"
        default: return schema["format"]?.stringValue.map { $0.uppercased() } ?? "VALUE"
        }
    }

    /// "in query, integer (int32), 1..100, default 20, required: how many per page".
    static func parameterHelp(_ parameter: OpenAPIIndex.Parameter) -> String {
        var parts: [String] = []
        if parameter.required { parts.append("required") }
        parts.append(schemaSummary(parameter.schema))
        if parameter.location == "header" || parameter.location == "cookie" { parts.append("sent as a \(parameter.location)") }
        let description = parameter.description.split(separator: "\n").first.map(String.init) ?? ""
        return TerminalText.escaped(parts.filter { !$0.isEmpty }.joined(separator: ", ") + (description.isEmpty ? "" : ": " + description))
    }

    static func schemaSummary(_ given: JSON) -> String {
        let schema = SchemaCheck.effective(given)
        var parts: [String] = []
        var type = SchemaCheck.typeNames(schema["type"])?.joined(separator: "|") ?? ""
        if type == "array", let items = schema["items"] { type = "array of " + (SchemaCheck.typeNames(items["type"])?.joined(separator: "|") ?? "values") }
        if let format = schema["format"]?.stringValue { type += " (\(format))" }
        if !type.isEmpty { parts.append(type) }
        if let choices = (schema["enum"] ?? schema["items"]?["enum"])?.arrayValue {
            parts.append("one of " + choices.map { $0.scalarText ?? $0.description }.joined(separator: ", "))
        }
        let minimum = schema["minimum"]?.scalarText, maximum = schema["maximum"]?.scalarText
        if minimum != nil || maximum != nil { parts.append("\(minimum ?? "")..\(maximum ?? "")") }
        if let length = schema["maxLength"]?.scalarText { parts.append("at most \(length) characters") }
        if let value = schema["default"] { parts.append("default " + (value.scalarText ?? value.description)) }
        return parts.joined(separator: ", ")
    }

    /// `douctl NAME OP --help`'s discussion: the request and the body's fields.
    static func detailText(_ row: OpenAPIIndexFile.Row, file: OpenAPIIndexFile) -> String {
        guard let operation = try? file.operation(row) else { return "\(row.method) \(row.path)" }
        var text = "\(operation.method) \(TerminalText.escaped(operation.path))" + (operation.deprecated ? " (deprecated)" : "") + "\n"
        if !operation.description.isEmpty, operation.description != operation.summary {
            text += TerminalText.escaped(operation.description.split(separator: "\n", omittingEmptySubsequences: false).prefix(6).joined(separator: "\n")) + "\n"
        }
        if let body = operation.body, !formFields(operation).isEmpty {
            text += "Body (\(body.contentType)\(body.required ? ", required" : "")): each field is an option of its own name (a file field takes @FILE and makes the body multipart).\n"
        } else if let body = operation.body {
            text += "Body (\(body.contentType)\(body.required ? ", required" : "")): give fields with -f KEY=VALUE or -F KEY=VALUE (typed; a[b]=1 nests), or the whole body with --input FILE.\n"
            let required = Set(body.schema["required"]?.arrayValue?.compactMap(\.stringValue) ?? [])
            for (name, schema) in body.schema["properties"]?.objectValue ?? JSONObject() {
                let summary = schemaSummary(schema)
                let description = schema["description"]?.stringValue?.split(separator: "\n").first.map(String.init) ?? ""
                text += "  " + TerminalText.escaped(name) + (required.contains(name) ? " (required)" : "") + (summary.isEmpty ? "" : "  " + TerminalText.escaped(summary))
                    + (description.isEmpty ? "" : ": " + TerminalText.escaped(description)) + "\n"
            }
        }
        text += "Everything douctl api does works here too: --paginate, --jq, --cache, --dry-run, -o, --record. --no-validate sends values the description's rules refuse."
        return text
    }

    /// The operation as `api`: its path filled in, its query and header parameters added,
    /// the method set; checked against the description (unless --no-validate) before
    /// anything is read or sent; then `api`'s own prepare.
    static func prepare(_ operation: OpenAPIIndex.Operation, parsed: ParsedCommand) throws(OptionError) -> PreparedRun {
        let validate = !parsed.has("no-validate")
        // The path.
        var path = operation.path
        for parameter in operation.pathParameters {
            let given = parsed.argument(parameter.name.uppercased()) ?? ""
            if validate, let problem = SchemaCheck.violation(SchemaCheck.typed(given, schema: parameter.schema), parameter.schema, field: parameter.name) {
                throw OptionError(problem)
            }
            path = path.replacingAll("{\(parameter.name)}", with: PercentEncoding.encode(given))
        }
        // Query, header and cookie parameters.
        var query: [String] = []
        var headers: [String] = []
        var cookies: [String] = []
        for parameter in operation.parameters where parameter.location != "path" {
            var values = parsed.values("param:" + parameter.location + ":" + parameter.name)
            if values.isEmpty {
                if validate, parameter.required { throw OptionError("\(parameter.name): required (--\(optionName(parameter.name, taken: reservedNames)))") }
                continue
            }
            if validate {
                let isArray = parameter.schema["type"]?.stringValue == "array"
                let value: JSON = isArray
                    ? .array(values.map { SchemaCheck.typed($0, schema: parameter.schema["items"] ?? .null) })
                    : SchemaCheck.typed(values.last ?? "", schema: parameter.schema)
                if let problem = SchemaCheck.violation(value, parameter.schema, field: parameter.name) { throw OptionError(problem) }
            }
            if let separator = parameter.schema["x-douctl-joined"]?.stringValue, values.count > 1 { values = [values.joined(separator: separator)] }
            switch parameter.location {
            case "query": query += values.map { PercentEncoding.encode(parameter.name) + "=" + PercentEncoding.encode($0) }
            case "header": headers.append(parameter.name + ": " + (values.last ?? ""))
            case "cookie": cookies.append(parameter.name + "=" + (values.last ?? ""))
            default: break
            }
        }
        if !cookies.isEmpty { headers.append("Cookie: " + cookies.joined(separator: "; ")) }
        if !query.isEmpty { path += (path.contains("?") ? "&" : "?") + query.joined(separator: "&") }

        // api's command line: the options it knows, as given; PATH and -X from the description.
        var options: [String: [String]] = [:]
        var defaults: [String: String] = [:]
        for spec in apiOptionSpecs {
            if let given = parsed.options[spec.key] { options[spec.key] = given } else if let value = parsed.value(spec.key) { defaults[spec.key] = value }
        }
        options["header", default: []] += headers
        options["method"] = [operation.method]
        // A form body's field options: text fields as -f, files as --attach (multipart).
        let form = formFields(operation)
        var formValues: [(String, JSON)] = []
        for (name, schema) in form {
            let values = parsed.values("form:" + name)
            guard !values.isEmpty else { continue }
            if isFileField(schema) {
                for value in values {
                    let path = value.hasPrefix("@") ? String(value.dropFirst()) : value
                    options["attach", default: []].append(name + "=" + path)
                }
                formValues.append((name, .string("")))
            } else {
                options["raw-field", default: []] += values.map { name + "=" + $0 }
                let effective = SchemaCheck.effective(schema)
                formValues.append((name, effective["type"]?.stringValue == "array"
                    ? .array(values.map { SchemaCheck.typed($0, schema: effective["items"] ?? .null) })
                    : SchemaCheck.typed(values.last ?? "", schema: schema)))
            }
        }
        let hasFields = !(options["raw-field"] ?? []).isEmpty || !(parsed.options["field"] ?? []).isEmpty || !(options["attach"] ?? []).isEmpty
        if let body = operation.body, !form.isEmpty, validate {
            if body.required || !formValues.isEmpty { try checkForm(formValues, parsed: parsed, schema: body.schema, fields: form) }
        }
        if let body = operation.body {
            if body.isJSON, hasFields, parsed.options["input"] == nil { options["json"] = [""] }
            if validate {
                if body.required, !hasFields, parsed.options["input"] == nil, parsed.options["attach"] == nil {
                    throw OptionError("the body: required (give fields with -f/-F, or --input FILE)")
                }
                if body.isJSON, hasFields { try checkBody(parsed, schema: body.schema) }
            }
        }
        let api = ParsedCommand(path: ["api"], options: options, arguments: ["PATH": [path]], defaults: defaults)
        guard let prepare = APICommand.command.prepare else { throw OptionError("api cannot run") }
        return try prepare(api)
    }

    /// A form body's fields (its options, and -f/-F given as well) against the body's
    /// schema: values read by their fields' types, a file field present when given.
    static func checkForm(_ values: [(String, JSON)], parsed: ParsedCommand, schema: JSON, fields: [(String, JSON)]) throws(OptionError) {
        var object = JSONObject(values)
        for raw in parsed.values("raw-field") + parsed.values("field") {
            guard let pair = try? KeyValue.parse(raw, shown: "-f") else { continue }
            let key = String(pair.key.prefix { $0 != "[" })
            object[key] = fields.first { $0.0 == key }.map { SchemaCheck.typed(pair.value, schema: $0.1) } ?? .string(pair.value)
        }
        for raw in parsed.values("attach") {
            if let pair = try? KeyValue.parse(raw, shown: "--attach") { object[pair.key] = .string("") }
        }
        // A file's own rules (a file part) are the server's to check.
        var checked = schema
        if case .object(var top) = schema, var properties = top["properties"]?.objectValue {
            for (name, field) in fields where isFileField(field) { properties[name] = .object(JSONObject()) }
            top["properties"] = .object(properties)
            checked = .object(top)
        }
        if let problem = SchemaCheck.problem(.object(object), checked, field: "", pointer: "") {
            let option = "--" + optionName(String(problem.field.prefix { $0 != "." && $0 != "[" }), taken: reservedNames)
            throw OptionError(problem.pointer.isEmpty ? "the body: \(problem.rule)" : "the body's \(problem.field) (\(option)): \(problem.rule)")
        }
    }

    /// The body the -f/-F fields make, against the body's schema: a field read from a file
    /// (-F KEY=@FILE) is not known yet, so its own rules wait for the server.
    static func checkBody(_ parsed: ParsedCommand, schema: JSON) throws(OptionError) {
        var fields: [RequestField] = []
        var unread: Set<String> = []
        for raw in parsed.values("raw-field") {
            let pair = try KeyValue.parse(raw, shown: "-f")
            fields.append(.string(pair.key, pair.value))
        }
        for raw in parsed.values("field") {
            switch try APICommand.RequestDraft.Field.typed(raw) {
            case .value(let field): fields.append(field)
            case .contents(let key, _):
                unread.insert(String(key.prefix { $0 != "[" }))
                fields.append(.string(key, ""))
            }
        }
        let body: JSON
        do { body = try RequestField.jsonObject(fields) } catch { throw OptionError(error.message) }
        var checked = schema
        if case .object(var object) = schema, !unread.isEmpty, var properties = object["properties"]?.objectValue {
            for name in unread { properties[name] = .object(JSONObject()) }
            object["properties"] = .object(properties)
            checked = .object(object)
        }
        if let problem = SchemaCheck.problem(body, checked, field: "", pointer: "") {
            // Named both ways: as -F spells it (items[0].name) and as a JSON pointer (/items/0/name).
            throw OptionError(problem.pointer.isEmpty ? "the body: \(problem.rule)" : "the body's \(problem.field) (\(problem.pointer)): \(problem.rule)")
        }
    }
}

// MARK: - completion

extension OpenAPICommands {
    /// `douctl __complete operations NAME WORD… CURRENT` (what the completion scripts ask
    /// when the first word is no command): operation names, then an operation's options,
    /// then an option's enum values, read from the profile's index (its header line, and
    /// the one operation's line).
    static func candidates(_ words: [String], environment: [String: String]) -> [String] {
        guard words.count >= 2, let profile = words.first, let current = words.last,
              let directory = try? ConfigDirectory.locate(explicit: nil, environment: environment),
              let config = try? directory.loadConfig(), config.profile(named: profile) != nil,
              let cache = ResponseCache.defaultDirectory(environment: environment),
              let file = (try? OpenAPIIndexFile.read(OpenAPIIndex.path(cacheDirectory: cache, profile: profile))) ?? nil else { return [] }
        let before = Array(words.dropFirst().dropLast())
        // The operation's name: one word, or a tag and a verb.
        let commandWords = before.prefix { !$0.hasPrefix("-") }
        let names = file.rows.map(\.name)
        var row: OpenAPIIndexFile.Row?
        if let first = commandWords.first {
            row = file.rows.first { $0.name == first }
            if row == nil, commandWords.count >= 2 { row = file.rows.first { $0.name == first + " " + commandWords[commandWords.index(after: commandWords.startIndex)] } }
        }
        guard let row else {
            let candidates: [String]
            if let tag = commandWords.first {
                candidates = names.filter { $0.hasPrefix(tag + " ") }.map { String($0.dropFirst(tag.count + 1)) }
            } else {
                var firsts: [String] = []
                var seen: Set<String> = []
                for name in names {
                    let word = String(name.prefix { $0 != " " })
                    if seen.insert(word).inserted { firsts.append(word) }
                }
                candidates = firsts
            }
            return candidates.filter { $0.hasPrefix(current) }
        }
        guard let operation = try? file.operation(row) else { return [] }
        let (options, arguments) = specs(operation)
        // The value of an option with choices.
        if let previous = before.last, previous.hasPrefix("--"),
           let option = options.first(where: { "--" + $0.long == previous }), let value = option.value {
            if case .choices(let choices) = value.completion { return choices.filter { $0.hasPrefix(current) } }
            return []
        }
        if current.hasPrefix("-") {
            return options.map { "--" + $0.long }.filter { $0.hasPrefix(current) }
        }
        // A path parameter with an enum.
        let positional = before.dropFirst(row.name.contains(" ") ? 2 : 1).filter { !$0.hasPrefix("-") }.count
        if positional < arguments.count, case .choices(let choices) = arguments[positional].completion {
            return choices.filter { $0.hasPrefix(current) }
        }
        return []
    }
}
