import DouctlArguments
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// `douctl profile list|show|add|remove|use`.
enum ProfileCommands {
    static let nameArgument = ArgumentSpec("NAME", help: "profile name", completion: .dynamic("profiles"))

    /// The keys `profile add` takes as options (all but preset, which has its own).
    static let keyed: [ProfileKey] = ProfileKey.allCases.filter { $0 != .preset }

    /// `--api-base URL`, `--client-id ID`, …: one option per profile key.
    static let keyOptions: [OptionSpec] = keyed.map { key in
        let placeholder = key.isURL ? "URL" : key.isList ? "LIST" : "VALUE"
        let kind: ValueKind = key.allowedValues.map { .choice($0) } ?? .string
        return OptionSpec(key.flagName, value: ValueSpec(placeholder, kind: kind), help: key.help)
    }

    static let command = Command(group: CommandSpec(
        "profile",
        abstract: "manage profiles: named API endpoints with their OAuth settings",
        discussion: """
        A profile names an API (its base URL, OAuth endpoints, client id and secret). It
        starts from a preset and overrides any key. Presets:
        \(Preset.all.map { "  \($0.name) — \($0.summary)" }.joined(separator: "\n"))
        A profile with no preset and no style is a plain OAuth2 REST API (GitHub, GitLab,
        Gitea, Django OAuth Toolkit, ...) and follows the RFCs: scopes are sent
        space-separated (RFC 6749 §3.3; presets keep Douban's and Coding's commas), form
        bodies are application/x-www-form-urlencoded with no parameters, redirect_uri is
        sent as registered, and nothing asks who the token belongs to unless user_url
        names that endpoint (GitHub: --user-url /user --user-name-field login; GitLab:
        --user-url /api/v4/user --user-name-field username). profile show and profile list
        give such a profile's style as oauth2.
        """), [
        Command(CommandSpec(
            "list", abstract: "list every profile --profile accepts, configured ones then presets, as JSON lines (name, preset, style, api_base, configured, default, logged_in)",
            discussion: """
            "logged_in" is true when requests would carry a credential: a stored token, a
            cookie session (Coding's auth login --password) or, for the profile this run
            uses, DOUCTL_TOKEN (the same decision as auth status's "credential"). On a
            terminal the profiles are a table; in a pipe, or with --json or --format json,
            JSON lines.
            """), options: List.self, run: list),
        Command(CommandSpec(
            "show", abstract: "print a resolved profile as JSON (secrets masked)"), options: Show.self, run: show),
        Command(CommandSpec(
            "add", abstract: "create or update a profile",
            examples: [
                Example("douctl profile add work --preset douban --client-id KEY --client-secret @secret.txt --redirect-uri https://example.com/back", "a real Douban app (paste-code login; a secret is read from -, @FILE or '$VAR', never taken from argv)"),
                Example("douctl profile add team --preset coding --api-base https://team.coding.net", "a Coding team host"),
                Example("douctl profile add corp --issuer https://login.example.com --client-id ID --scopes openid,profile", "any OpenID Connect or RFC 8414 provider: endpoints, token_auth and pkce read from its metadata"),
                Example("douctl profile add pets --openapi https://petstore3.swagger.io/api/v3/openapi.json", "any API by its description (OpenAPI 3.x or Swagger 2.0, JSON or YAML): douctl pets --help lists its operations"),
                Example("douctl profile add gh --api-base https://api.github.com --authorize-url https://github.com/login/oauth/authorize --token-url https://github.com/login/oauth/access_token --client-id ID --user-url /user --scopes read:user", "any OAuth2 API (here GitHub)"),
            ]), options: Add.self, run: add).inheriting([.profile, .output, .time, .record]),
        OpenAPIProfile.refreshCommand.inheriting([.profile, .output, .time]),
        Command(CommandSpec("remove", abstract: "delete a profile and its stored login"), options: Named.self, run: remove),
        Command(CommandSpec("use", abstract: "make a profile the default"), options: Named.self, run: use),
    ])

    // MARK: - options

    /// `profile list`: only the output view.
    struct List: CommandOptions, ShowsView {
        var view = ViewOptions()
        static let bindings: [OptionBinding<Self>] = [.group({ $0.view = $1 }, ViewOptions.self)]
    }

    /// `profile show [NAME] [--show-secrets]`.
    struct Show: CommandOptions {
        var showSecrets = false
        /// nil: the active profile.
        var name: String?
        static let bindings: [OptionBinding<Self>] = [
            .flag({ $0.showSecrets = $1 }, ConfigCommands.showSecrets),
            .argument({ $0.name = $1 }, ArgumentSpec("NAME", help: "profile name (default: the active profile)", arity: .optional, completion: .dynamic("profiles"))),
        ]
    }

    /// `profile add NAME [--preset P] [--api-base URL] …`: the keys given, as written.
    struct Add: CommandOptions {
        var name = ""
        var preset: String?
        /// One entry per key option given (`--client-id X` → `.clientID: "X"`).
        var settings: [ProfileKey: String] = [:]
        /// With --openapi: which of the description's servers, and its variables (OpenAPIProfile).
        var server: String?
        var serverVariables: [String] = []
        static let bindings: [OptionBinding<Self>] =
            [.value({ $0.preset = $1 }, OptionSpec("preset", value: ValueSpec("PRESET", kind: .choice(Preset.names)), help: "start from a preset"))]
            + zip(keyed, keyOptions).map { key, spec in .value({ $0.settings[key] = $1 }, spec) }
            + OpenAPIProfile.serverBindings
            + [.argument({ $0.name = $1 }, nameArgument)]

        /// A secret on the command line is refused before stdin is read.
        func validate() throws(OptionError) {
            for key in ProfileKey.allCases where key.isSecret {
                if let secret = settings[key] { try ConfigCommands.checkSecretSource(secret) }
            }
        }
    }

    /// `profile remove|use NAME`.
    struct Named: CommandOptions {
        var name = ""
        static let bindings: [OptionBinding<Self>] = [.argument({ $0.name = $1 }, nameArgument)]
    }

    // MARK: - runs

    static func list(_ options: List, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let config = try context.session.config()
        let active = try context.session.profileName
        let store = try context.session.credentialStore()
        var rows: [JSON] = []
        let table = context.output.wantsView
        for name in config.knownProfileNames {
            guard let profile = try? config.resolve(name) else { continue }
            // The same decision requests and auth status use; DOUCTL_TOKEN counts for the
            // profile this run would use, as it does for auth status.
            let credential = name == active
                ? CredentialInForce.decide(profile: profile, store: store, environment: context.environment)
                : CredentialInForce.decideStored(profile: profile, store: store)
            let row = JSON.object(JSONObject([
                ("name", .string(name)),
                ("preset", profile.preset.map(JSON.string) ?? .null),
                ("style", .string(profile.styleName)),
                ("api_base", .string(profile.apiBase)),
                ("configured", .bool(config.profile(named: name) != nil)),
                ("default", .bool(name == active)),
                ("logged_in", .bool(credential.isLoggedIn)),
            ]))
            if table { rows.append(row) } else { context.output.jsonLine(row) }
        }
        if table {
            let columns = ["name", "preset", "style", "api_base", "default", "logged_in"]
            context.output.viewLines(FieldsView.table(rows, columns: columns, style: context.output.viewContext.style))
        }
        return .success
    }

    static func show(_ options: Show, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let name: String
        if let given = options.name { name = given } else { name = try context.session.profileName }
        let profile = try context.session.config().resolve(name)
        context.output.json(json(profile, showSecrets: options.showSecrets))
        return .success
    }

    static func json(_ profile: ResolvedProfile, showSecrets: Bool) -> JSON {
        var object = JSONObject()
        object["name"] = .string(profile.name)
        for key in ProfileKey.allCases {
            guard let value = profile.value(key) else { continue }
            switch value {
            case .text(let text) where key == .cacheMaxMB:
                object[key.rawValue] = numberJSON(profile.cacheMaxMB) ?? .string(text)
            case .text(let text):
                object[key.rawValue] = .string(Mask.shown(key, text, showSecrets: showSecrets))
            case .list(let items): object[key.rawValue] = .array(items.map(JSON.string))
            case .map(let pairs): object[key.rawValue] = .object(JSONObject(pairs.map { ($0.name, JSON.string($0.value)) }))
            }
        }
        object["configured"] = .bool(profile.isConfigured)
        return .object(object)
    }

    /// A number as JSON: `50`, not `50.0` (nor the string `"50.0"`); `0.5` stays `0.5`.
    static func numberJSON(_ value: Double) -> JSON? {
        guard value.isFinite else { return nil }
        if value == value.rounded(), abs(value) < 1e15 { return .int(Int64(value)) }
        return .number(String(value))
    }

    static func add(_ options: Add, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let name = options.name
        try ConfigFile.checkProfileName(name)
        var changes: [(ProfileKey, ProfileValue)] = []
        if let preset = options.preset { changes.append((.preset, .text(preset))) }
        for key in keyed {
            if var text = options.settings[key] {
                if key.isSecret { text = try ConfigCommands.secretValue(text, context: context) }
                changes.append((key, try key.parse(text)))
            }
        }
        let described = try OpenAPIProfile.added(options, changes: changes, context: context)
        changes = described.changes
        if let issuer = options.settings[.issuer] ?? described.issuer {
            var withIssuer = options
            withIssuer.settings[.issuer] = issuer
            changes = try discovered(issuer, options: withIssuer, changes: changes, context: context)
        }
        let resolved = try context.session.updateConfig { (config: inout ConfigFile) throws(DouctlError) -> ResolvedProfile in
            var settings = config.profile(named: name) ?? ProfileSettings()
            for (key, value) in changes { settings[key] = value }
            config.setProfile(name, settings)
            return try config.resolve(name)
        }
        if options.settings[.openapi] != nil { try described.index.write(to: try OpenAPIProfile.indexPath(profile: name, context: context)) }
        context.output.json(json(resolved, showSecrets: false))
        return .success
    }

    /// `profile add NAME --issuer URL`: the provider's metadata (`ProviderMetadata`) fills
    /// the endpoints, token_auth and pkce; keys given on the command line win. Without an
    /// api_base (given or already set), the issuer's origin is the API's.
    static func discovered(_ issuer: String, options: Add, changes: [(ProfileKey, ProfileValue)], context: CommandContext) throws(DouctlError) -> [(ProfileKey, ProfileValue)] {
        let existing = try context.session.config().profile(named: options.name)
        let hasSecret = options.settings[.clientSecret] != nil || existing?[.clientSecret] != nil
        let metadata = try ProviderMetadata.discover(issuer: issuer, http: try context.session.http(), recorder: context.session.settings.requests.recorder)
        var result = changes
        for (key, value) in metadata.settings(hasSecret: hasSecret) where options.settings[key] == nil || key == .issuer {
            result.removeAll { $0.0 == key }
            result.append((key, value))
        }
        if options.settings[.apiBase] == nil, existing?[.apiBase] == nil, options.preset == nil,
           let parts = URLParts(metadata.issuer) {
            let port = parts.port.map { ":\($0)" } ?? ""
            result.append((.apiBase, .text("\(parts.scheme)://\(parts.host)\(port)")))
        }
        let found = [metadata.authorizationEndpoint.map { _ in "authorization" }, metadata.tokenEndpoint.map { _ in "token" },
                     metadata.deviceAuthorizationEndpoint.map { _ in "device" }, metadata.revocationEndpoint.map { _ in "revocation" },
                     metadata.userinfoEndpoint.map { _ in "userinfo" }].compactMap { $0 }
        context.output.note("Read \(TerminalText.escaped(metadata.source)): \(found.isEmpty ? "no" : found.joined(separator: ", ")) endpoints\(metadata.supportsPKCE == false ? "; no PKCE S256, so none is sent" : "").")
        return result
    }

    static func remove(_ options: Named, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let name = options.name
        let existed = try context.session.updateConfig { (config: inout ConfigFile) -> Bool in
            let existed = config.profile(named: name) != nil
            config.setProfile(name, nil)
            if config.defaultProfile == name { config.defaultProfile = nil }
            return existed
        }
        try context.session.credentialStore().update(name) { (entry: inout Credential?) throws(DouctlError) in entry = nil }
        try CookieJar(directory: try context.session.configDirectory(), profile: name).remove()
        if !existed { throw .usage("no profile named '\(name)' in \(try context.session.configDirectory().configPath)") }
        context.output.note("Removed profile \(name).")
        return .success
    }

    static func use(_ options: Named, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let name = options.name
        try context.session.updateConfig { (config: inout ConfigFile) throws(DouctlError) in
            _ = try config.resolve(name)
            config.defaultProfile = name
        }
        context.output.note("Default profile is now \(name).")
        return .success
    }
}
