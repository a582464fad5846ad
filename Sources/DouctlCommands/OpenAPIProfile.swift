import DouctlArguments
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// `profile add NAME --openapi URL|FILE` and `profile refresh NAME`: the description read,
/// indexed into the cache (`OpenAPIIndex`), and what it says of the server and the auth
/// turned into the profile's keys.
enum OpenAPIProfile {
    /// A description as read: its bytes and, from a server, its ETag; nil bytes: the
    /// server answered 304 to the ETag held (the index is current).
    struct Fetched {
        var bytes: [UInt8]?
        var etag: String?
    }

    /// `profile add --server N|URL --server-var NAME=VALUE`: the server api_base is made from.
    static let serverBindings: [OptionBinding<ProfileCommands.Add>] = [
        .value({ $0.server = $1 }, OptionSpec("server", value: ValueSpec("N|URL"), help: "with --openapi: which of the description's servers api_base is (its number from 1, or its URL; default the first)")),
        .values({ $0.serverVariables = $1 }, OptionSpec("server-var", value: ValueSpec("NAME=VALUE"), help: "with --openapi: a servers variable's value (checked against its enum; others take their defaults); repeatable", repeatable: true)),
    ]

    /// `--server-var` values as pairs; NAME=VALUE or a usage error.
    static func serverValues(_ given: [String]) throws(DouctlError) -> [(name: String, value: String)] {
        var result: [(name: String, value: String)] = []
        for text in given {
            guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
                throw .usage("--server-var \(TerminalText.escaped(text)): expected NAME=VALUE")
            }
            result.append((String(text[..<equals]), String(text[text.index(after: equals)...])))
        }
        return result
    }

    static func isURL(_ source: String) -> Bool { source.hasPrefix("http://") || source.hasPrefix("https://") }

    /// A file named relative to the working directory, made absolute (the profile is used
    /// from anywhere); a URL as it is.
    static func absoluteSource(_ source: String, context: CommandContext) -> String {
        if isURL(source) || source.hasPrefix("/") { return source }
        let directory = context.process.workingDirectory ?? ProfileChoice.currentDirectory() ?? "."
        return directory + "/" + (source.hasPrefix("./") ? String(source.dropFirst(2)) : source)
    }

    static func fetch(_ location: String, etag: String? = nil, context: CommandContext) throws(DouctlError) -> Fetched {
        guard isURL(location) else {
            do { return Fetched(bytes: try FileIO.readFile(location), etag: nil) } catch {
                throw .localInput("cannot read the API description \(TerminalText.escaped(location)) (\(error))")
            }
        }
        var headers = [HTTPHeader("Accept", "application/json, application/yaml;q=0.9, */*;q=0.5")]
        if let etag { headers.append(HTTPHeader("If-None-Match", etag)) }
        let http = try context.session.http()
        let response: HTTPResponse
        do { response = try http.fetch(HTTPRequest(method: "GET", url: location, headers: headers)) } catch {
            throw .transport(error)
        }
        if response.status == 304, etag != nil { return Fetched(bytes: nil, etag: etag) }
        guard response.status == 200 else {
            throw .badReply("cannot read the API description \(TerminalText.escaped(location)): HTTP \(response.status)", httpStatus: response.status)
        }
        return Fetched(bytes: response.body, etag: response.head.header("ETag"))
    }

    /// The index of the description's bytes.
    static func index(_ bytes: [UInt8], source: String, etag: String?, context: CommandContext) throws(DouctlError) -> OpenAPIIndex {
        let root = try OpenAPIReader.decode(bytes, source: source)
        var reader = OpenAPIReader(source: source, root: root) { (location: String) throws(DouctlError) -> [UInt8] in
            // A reference to another origin's document is not followed: the description
            // names what this profile sends, and only its own origin says that.
            if isURL(location) || isURL(source) {
                guard isURL(location), ProfileChoice.origin(of: location) == ProfileChoice.origin(of: source) else {
                    throw .localInput("cannot read the API description \(TerminalText.escaped(source)): $ref to \(TerminalText.escaped(location)), not on the description's origin")
                }
            }
            guard let bytes = try fetch(location, context: context).bytes else { return [] }
            return bytes
        }
        return try reader.index(etag: etag, digest: Digest.hex(Digest.sha256(bytes)))
    }

    static func indexPath(profile: String, context: CommandContext) throws(DouctlError) -> String {
        guard let directory = ResponseCache.defaultDirectory(environment: context.environment) else {
            throw .localInput("no cache directory for the operations index: set XDG_CACHE_HOME or HOME")
        }
        return OpenAPIIndex.path(cacheDirectory: directory, profile: profile)
    }

    /// What the description says of the profile's keys: api_base from its first server,
    /// the auth from its security scheme (see the README's "Any API by its description").
    /// `issuer`: an OpenID Connect URL, for the caller's issuer discovery.
    static func settings(_ index: OpenAPIIndex, server: String? = nil, variables: [(name: String, value: String)] = []) throws(DouctlError) -> (settings: [(ProfileKey, ProfileValue)], issuer: String?, notes: [String]) {
        var settings: [(ProfileKey, ProfileValue)] = []
        var notes: [String] = []
        var issuer: String?
        let templates = index.serverTemplates.isEmpty ? index.servers.map { OpenAPIIndex.Server(url: $0) } : index.serverTemplates
        if let url = try OpenAPIIndex.serverURL(templates, source: index.source, choice: server, values: variables) ?? (server == nil && variables.isEmpty ? index.servers.first : nil) {
            settings.append((.apiBase, .text(url)))
        }
        if let paging = index.paging {
            // What --paginate needs to walk the description's list operations (README: "Paging hints").
            var found: [String] = []
            for (key, value) in [(ProfileKey.itemsKey, paging.itemsKey), (.cursorKey, paging.cursorKey), (.cursorParam, paging.cursorParam), (.nextPageHeader, paging.nextPageHeader)] {
                guard let value else { continue }
                settings.append((key, .text(value)))
                found.append("\(key.rawValue) \(value)")
            }
            let how = paging.linkHeader ? "a Link header" : paging.nextLink.map { "a next link (\($0))" } ?? "a cursor"
            notes.append("paging: \(how)" + (paging.operation.isEmpty ? "" : " in \(paging.operation)") + (found.isEmpty ? "" : ", so " + found.joined(separator: ", ")))
        }
        if let security = index.security {
            switch security.type {
            case "apiKey":
                if let name = security.keyName, security.keyLocation == "header" { settings.append((.tokenHeader, .text(name))) }
                else if let name = security.keyName, security.keyLocation == "query" { settings.append((.tokenQuery, .text(name))) }
                else { notes.append("its API key goes in a cookie, which douctl does not send from a profile") }
            case "http":
                // Basic: a user name and password, which auth login --basic stores and sends.
                if security.httpScheme == "basic" { notes.append("log in with douctl auth login --basic") }
            case "oauth2":
                if let url = security.authorizeURL { settings.append((.authorizeURL, .text(url))) }
                if let url = security.tokenURL { settings.append((.tokenURL, .text(url))) }
                if let url = security.deviceURL { settings.append((.deviceAuthorizationURL, .text(url))) }
                if !security.scopes.isEmpty { settings.append((.scopes, .list(security.scopes))) }
            case "openIdConnect":
                if let url = security.openIDConnectURL {
                    let suffix = "/.well-known/openid-configuration"
                    issuer = url.hasSuffix(suffix) ? String(url.dropLast(suffix.count)) : url
                }
            default:
                break
            }
        }
        return (settings, issuer, notes)
    }

    /// `profile add --openapi`: reads and indexes the description; returns the keys it
    /// fills that were not given on the command line, and the index to write once the
    /// profile is saved.
    static func added(_ options: ProfileCommands.Add, changes: [(ProfileKey, ProfileValue)], context: CommandContext) throws(DouctlError) -> (changes: [(ProfileKey, ProfileValue)], index: OpenAPIIndex, issuer: String?) {
        guard let given = options.settings[.openapi] else {
            if options.server != nil || !options.serverVariables.isEmpty { throw .usage("--server and --server-var choose among an API description's servers: give --openapi URL|FILE too") }
            return (changes, OpenAPIIndex(title: "", version: "", source: "", etag: nil, digest: "", servers: [], security: nil, operations: []), nil)
        }
        let variables = try serverValues(options.serverVariables)
        let source = absoluteSource(given, context: context)
        let fetched = try fetch(source, context: context)
        let index = try self.index(fetched.bytes ?? [], source: source, etag: fetched.etag, context: context)
        var result = changes.filter { $0.0 != .openapi }
        result.append((.openapi, .text(source)))
        let (described, issuer, notes) = try settings(index, server: options.server, variables: variables)
        for (key, value) in described where options.settings[key] == nil {
            result.removeAll { $0.0 == key }
            result.append((key, value))
        }
        let auth = index.security.map { " \($0.type) auth (\($0.name))" } ?? " no auth"
        context.output.note("Read \(TerminalText.escaped(index.title.isEmpty ? source : index.title)): \(index.operations.count) operations,\(auth)\(notes.isEmpty ? "" : "; " + notes.joined(separator: "; ")). Try: douctl \(options.name) --help")
        return (result, index, issuer)
    }

    // MARK: - profile refresh

    struct Refresh: CommandOptions {
        var name: String?
        static let bindings: [OptionBinding<Self>] = [
            .argument({ $0.name = $1 }, ArgumentSpec("NAME", help: "profile name (default: the active profile)", arity: .optional, completion: .dynamic("profiles"))),
        ]
    }

    static let refreshCommand = Command(CommandSpec(
        "refresh", abstract: "read a profile's API description again (--openapi) and rebuild its operations index",
        discussion: """
        A description from a URL is asked for with the ETag it came with: a 304 keeps the
        index. The index is rewritten only when the description's bytes changed.
        """), options: Refresh.self, run: refresh)

    static func refresh(_ options: Refresh, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let name: String
        if let given = options.name { name = given } else { name = try context.session.profileName }
        let profile = try context.session.config().resolve(name)
        guard let source = profile.openAPI else {
            throw .usage("profile \(name) has no API description; add one with douctl profile add \(name) --openapi URL|FILE")
        }
        let path = try indexPath(profile: name, context: context)
        // A damaged index is rebuilt, not an error here.
        let held = (try? OpenAPIIndexFile.read(path)) ?? nil
        let fetched = try fetch(source, etag: held?.etag, context: context)
        guard let bytes = fetched.bytes else {
            context.output.note("\(TerminalText.escaped(source)) is unchanged (304); the index is current.")
            return .success
        }
        if let held, held.digest == Digest.hex(Digest.sha256(bytes)) {
            context.output.note("\(TerminalText.escaped(source)) is unchanged; the index is current.")
            return .success
        }
        let index = try self.index(bytes, source: source, etag: fetched.etag, context: context)
        try index.write(to: path)
        context.output.note("Read \(TerminalText.escaped(index.title.isEmpty ? source : index.title)): \(index.operations.count) operations; index rebuilt.")
        return .success
    }

    /// The index of a profile's description, rebuilt from the description when it is
    /// missing (the cache was cleared); nil when the profile has none.
    static func loadIndex(profile: String, source: String, context: CommandContext) throws(DouctlError) -> OpenAPIIndexFile {
        let path = try indexPath(profile: profile, context: context)
        if let file = try OpenAPIIndexFile.read(path) { return file }
        let fetched = try fetch(source, context: context)
        let index = try self.index(fetched.bytes ?? [], source: source, etag: fetched.etag, context: context)
        try index.write(to: path)
        guard let file = try OpenAPIIndexFile.read(path) else { throw .localInput("cannot read the operations index \(path)") }
        return file
    }
}
