import DouctlArguments
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// `douctl auth login|status|token|refresh|export|logout`. Logging in and out lives in the
/// core (`LoginService`, with the flows in `OAuthLogin`); this file reads the options and
/// stdin, calls it, and prints what it stored.
enum AuthCommands {
    static let command = Command(group: CommandSpec(
        "auth",
        abstract: "log in, inspect and refresh tokens, log out",
        discussion: """
        Tokens are stored per profile in credentials.json (mode 0600) in the config
        directory. DOUCTL_TOKEN, when set, is used instead and never stored; it wins
        over any stored login, so a cookie session (Coding's --password) is then not sent.
        Before any refresh (auth refresh, or an expired token refreshed by any command)
        douctl reserves room for the new tokens in the config directory; when it cannot
        (a full disk, a read-only directory) it exits 3 without sending the refresh
        token, so the stored login keeps working once there is room. Temp files
        (.credentials.json.tmp-*) that a killed douctl left are removed by the next
        one that writes credentials.
        """), [
        Command(loginSpec, options: LoginOptions.self, run: login),
        Command(CommandSpec(
            "status", abstract: "show the profile's login: user, scopes, expiry, where it is stored",
            discussion: """
            Prints a JSON object; the token is masked unless --show-token. "credential" says
            what requests use: "token", "cookie session" or "DOUCTL_TOKEN". With --check
            (the default when stdout is a terminal) douctl also asks the server whether the
            login still works ("valid"), refreshing an expired token as any call would; a
            profile without an identity endpoint (no preset, no user_url) cannot be
            checked: "valid" is null and "user_id"/"user_name" are null (user unknown).
            Exits 4 when not logged in or when the server refuses the login, 7 when the
            server cannot be reached. On a terminal the same fields are shown as aligned
            lines; in a pipe, or with --json or --format json, the JSON object.
            With --explain it also says why this profile: "chosen_by" (--profile,
            DOUCTL_PROFILE, a .douctl file and its path, default_profile, or the built-in
            default), "origin" (where its credential may go) and "expect_user".
            """), options: StatusOptions.self, run: status),
        Command(CommandSpec(
            "token", abstract: "print the access token (refreshed first if it has expired)",
            discussion: """
            Prints the token requests use: DOUCTL_TOKEN when set, else the stored one.
            For a user name and password (auth login --basic), what follows "Basic " in
            the Authorization header (the base64 of user:password), so that
            DOUCTL_TOKEN=$(douctl auth token) fills in the curl lines a dry run prints,
            for any profile. A
            profile logged in with a cookie session (Coding's auth login --password) has no
            access token: douctl prints nothing on stdout and exits 4 saying so ("… is
            logged in with a cookie session …"), as it does, with "not logged in", for a
            profile with no login at all.
            """,
            examples: [Example("curl -H \"Authorization: Bearer $(douctl auth token)\" https://api.douban.com/v2/user/~me", "use the token with another tool")]), options: NoOptions.self, run: token),
        Command(CommandSpec(
            "refresh", abstract: "ask the server for a new access token now, with the stored refresh token",
            discussion: """
            Sends the stored refresh token to the token endpoint whatever the expiry says,
            and stores what comes back (the refresh token too, where the server rotates it).
            A server may refuse to refresh a token that is still live: Douban answers code
            124 (access_token_has_not_expired), which means "keep using the current one".
            douctl then keeps the stored token, says so on stderr, prints the login and
            exits 0; the next refresh after the token expires renews it. Exits 4 when the
            login has no refresh token or the server refuses it (run douctl auth login),
            7 when the server cannot be reached. Any call refreshes an expired token by
            itself, so this is rarely needed.
            """), options: NoOptions.self, run: refresh),
        Command(CommandSpec(
            "export", abstract: "print the profile's stored login as JSON, refresh token included (for CI)",
            discussion: """
            Prints {"douctl": "credentials", "profile", "api_base", "credential": {...}} for
            'douctl auth login --with-credentials' on another machine (like rclone authorize).
            It holds the refresh token: on a terminal it prints only with --yes-i-know; piped
            or redirected it prints at once. Douban's refresh tokens are single-use, so after
            the other machine refreshes, this copy's refresh token is spent: give each
            machine its own login where you can.
            """,
            examples: [Example("douctl auth export > ci-credentials.json", "save it for a CI secret"),
                       Example("douctl auth login --with-credentials < ci-credentials.json", "on the CI machine")]), options: ExportOptions.self, run: export),
        Command(CommandSpec(
            "logout", abstract: "forget the profile's credentials (revoking them where the server supports it)",
            discussion: """
            A corrupt credentials.json is moved aside (to credentials.json.corrupt-TIME, with
            a warning naming it), so every profile can log in again and nothing is lost.
            """), options: NoOptions.self, run: logout),
    ])

    static let loginSpec = CommandSpec(
        "login",
        abstract: "log in with OAuth2 (browser, device code or pasted code) or a token from stdin",
        discussion: """
        Flows:
          --web         open a browser; a listener on 127.0.0.1 (any free port unless
                        redirect_uri fixes one) receives the redirect. PKCE (S256) and a
                        random state protect the exchange. A redirect_uri the profile
                        sets is sent as registered (RFC 8252 §7.3): its host
                        (127.0.0.1, [::1] or localhost, which listens on 127.0.0.1)
                        and path are kept, only a missing or zero port is chosen
                        freely; without one (or from a preset) the path is
                        /callback/PROFILE.
          --paste       print the authorization URL; paste back the address the browser
                        was sent to, or just the code. For apps whose registered redirect
                        is a web page (real Douban apps).
          --device      RFC 8628: open a URL on any device and type the code shown.
                        Needs the profile's device_authorization_url (the sandbox has one;
                        Douban does not). Polls as often as the server's interval
                        says, kept between 1 and 60 s (5 s when it sends none or
                        nonsense); slow_down adds 5 s. Stops when the code expires
                        or --wait runs out, at that moment, not a poll later. A
                        server that cannot be reached ends the login with the
                        network error (exit 7): at once for the first request,
                        after 3 failed polls in a row (backing off) later.
          --with-token  read an access token from stdin (never from the command line).
          --password    Coding's account + password login with a cookie session.
                        A wrong captcha or two-factor code is asked for again,
                        3 tries each.
          --client-credentials
                        the client's own token (RFC 6749 §4.4) with the
                        profile's client_id and client_secret: for CI and
                        machine-to-machine APIs. No refresh token: when it
                        expires, douctl fetches a new one by itself.
          --basic       a user name and password, sent as HTTP Basic to the
                        profile's origin only: asked on a terminal (the
                        password without echo), else user:password on stdin.
                        Checked first at the profile's user_url (or its preset's
                        identity endpoint): a refusal (401, 403) is exit 4 and
                        nothing is stored. With nothing to ask, it is stored
                        unchecked, with a warning.
          --with-credentials
                        store the JSON 'douctl auth export' printed on another
                        machine (refresh token included), read from stdin; nothing
                        is sent. For CI: douctl auth export | ssh ci 'douctl auth
                        login --with-credentials', or a CI secret piped in.
        Without a flag: --device when no browser can open here (no $BROWSER, no display)
        and the profile has a device endpoint; --paste when redirect_uri is not a loopback
        address; --web otherwise.
        After logging in, douctl asks the API who the token belongs to and stores the
        user id and name with it: the profile's user_url (fields user_id_field and
        user_name_field), else Douban's /v2/user/~me or Coding's current user. A profile
        with no preset and no user_url (a plain OAuth2 API) stores the token with the
        user unknown: "user_id" and "user_name" are null. A profile has one identity: a new login replaces the
        profile's token and cookie session. --wait bounds the wait for approval; the
        global --timeout stays the per-request network timeout. Refused while
        DOUCTL_TOKEN is set, and when credentials.json is corrupt (move it aside first).
        On a terminal one line says who is logged in ("✓ Logged in to PROFILE as USER.");
        in a pipe, or with --pretty or --compact, a JSON object of what was stored
        (profile, user_id, user_name, scopes, expires_at).
        """,
        examples: [
            Example("douctl --profile sandbox auth login", "log in to the local sandbox"),
            Example("douctl auth login --device --no-browser", "log in from a headless machine"),
            Example("printenv MY_TOKEN | douctl auth login --with-token", "store an existing token"),
        ])

    // MARK: - options

    /// `auth login`: one flow flag at most (refused at parse time otherwise), and how the
    /// flow runs.
    struct LoginOptions: CommandOptions {
        var web = false
        var device = false
        var paste = false
        var withToken = false
        var password = false
        var withCredentials = false
        var clientCredentials = false
        var basic = false
        var scopes: String?
        var noBrowser = false
        var wait: Double = 300
        /// `auth login URL`: the API's own URL (RFC 9728 discovery).
        var url: String?

        static let bindings: [OptionBinding<Self>] = [
            .flag({ $0.web = $1 }, .flag("web", help: "browser + loopback redirect (PKCE)")),
            .flag({ $0.device = $1 }, .flag("device", help: "device authorization grant (RFC 8628)")),
            .flag({ $0.paste = $1 }, .flag("paste", help: "paste the redirected URL or the code")),
            .flag({ $0.withToken = $1 }, OptionSpec.flag("with-token", help: "read an access token from stdin").hidingNextArgument()),
            .flag({ $0.password = $1 }, .flag("password", help: "Coding: account and password (cookie session)")),
            .flag({ $0.withCredentials = $1 }, OptionSpec.flag("with-credentials", help: "read the JSON of 'douctl auth export' from stdin").hidingNextArgument()),
            .flag({ $0.clientCredentials = $1 }, .flag("client-credentials", help: "the client's own token (RFC 6749 §4.4) with the profile's client id and secret, for CI and machine-to-machine APIs")),
            .flag({ $0.basic = $1 }, OptionSpec.flag("basic", help: "a user name and password sent as HTTP Basic (asked without echo; user:password on stdin otherwise)").hidingNextArgument()),
            .value({ $0.scopes = $1 }, OptionSpec("scopes", value: ValueSpec("S,..."), help: "scopes to request instead of the profile's")),
            .flag({ $0.noBrowser = $1 }, .flag("no-browser", help: "print URLs instead of opening a browser")),
            .number({ $0.wait = $1 }, OptionSpec("wait", value: ValueSpec("SECONDS", kind: .number, default: "300"),
                                       help: "how long to wait for approval (browser, pasted code or device)")),
            .argument({ $0.url = $1 }, ArgumentSpec("URL", help: "the API's own URL: log in to the profile of its origin, or find its authorization server (RFC 9728), register (RFC 7591) and write a profile for it", arity: .optional)),
        ]

        /// The flow flags given, in the order help lists them.
        var chosen: [(flag: String, method: LoginMethod)] {
            let flags: [(String, Bool, LoginMethod)] = [
                ("web", web, .web), ("device", device, .device), ("paste", paste, .paste),
                ("with-token", withToken, .token), ("password", password, .password), ("with-credentials", withCredentials, .credentials),
                ("client-credentials", clientCredentials, .clientCredentials), ("basic", basic, .basic),
            ]
            return flags.filter(\.1).map { ($0.0, $0.2) }
        }

        /// The flow asked for; nil: choose one for the profile (`LoginMethod.automatic`).
        var method: LoginMethod? { chosen.first?.method }

        /// `--scopes a, b`: the scopes to request instead of the profile's.
        var requestedScopes: [String]? {
            scopes.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: " ") }.filter { !$0.isEmpty } }
        }

        func validate() throws(OptionError) {
            let chosen = chosen
            if chosen.count > 1 {
                throw OptionError("choose one of --\(chosen.map(\.flag).joined(separator: ", --"))")
            }
        }
    }

    /// `auth status`: whether to ask the server, whether to show the whole token, the view.
    struct StatusOptions: CommandOptions, ShowsView {
        var showToken = false
        var check = false
        var noCheck = false
        var explain = false
        var view = ViewOptions()

        static let bindings: [OptionBinding<Self>] = [
            .flag({ $0.showToken = $1 }, .flag("show-token", help: "include the whole access token")),
            .flag({ $0.check = $1 }, .flag("check", help: "ask the server whether the login works (default on a terminal)")),
            .flag({ $0.noCheck = $1 }, .flag("no-check", help: "only read what is stored; send nothing")),
            .flag({ $0.explain = $1 }, .flag("explain", help: "say which rule chose the profile, its origin and the account it expects")),
            .group({ $0.view = $1 }, ViewOptions.self),
        ]


        /// --check, else on a terminal unless --no-check.
        func checks(stdoutIsTerminal: Bool) -> Bool { check || (stdoutIsTerminal && !noCheck) }
    }

    /// `auth export`: the refresh token reaches a terminal only when asked.
    struct ExportOptions: CommandOptions {
        var yesIKnow = false
        static let bindings: [OptionBinding<Self>] = [
            .flag({ $0.yesIKnow = $1 }, .flag("yes-i-know", help: "print the secrets on a terminal too")),
        ]
    }

    // MARK: - login

    /// Options → the login service (`LoginService`, in the core) → what it stored, printed.
    static func login(_ options: LoginOptions, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        if let token = context.environment["DOUCTL_TOKEN"], !token.isEmpty {
            throw .usage("DOUCTL_TOKEN is set, so douctl would ignore a stored login; unset it first")
        }
        if let url = options.url { try ResourceLogin.prepare(url, context) }
        var profile = try context.session.profile()
        if let scopes = options.requestedScopes { profile.scopes = scopes }
        let method = options.method ?? LoginMethod.automatic(
            profile: profile, browserAvailable: BrowserLauncher(environment: context.environment).isAvailable && !options.noBrowser)
        let service = try context.loginService(profile: profile, console: console(context, options))
        switch try service.login(source(method, context)) {
        case .cookieSession(let identity):
            let line = "Logged in to \(profile.name) as \(TerminalText.escaped(identity.name ?? identity.id ?? "an unknown user")) (cookie session)."
            // On a terminal one line, as gh says it; the JSON only in a pipe (or with --pretty/--compact).
            if context.output.wantsView { return loggedIn(line, context) }
            context.output.note(line)
            context.output.json(.object(JSONObject([
                ("profile", .string(profile.name)), ("user_id", identity.id.map(JSON.string) ?? .null),
                ("user_name", identity.name.map(JSON.string) ?? .null), ("session", "cookie"),
            ])))
        case .token(let credential):
            Subprocess.reapFinished()
            let who = credential.userName.map { name in credential.userID.map { "\(name) (\($0))" } ?? name } ?? credential.userID ?? "an unknown user"
            let how = credential.isBasic ? " (HTTP Basic)" : credential.isClientCredentials ? " (client credentials; a new token is fetched when this one expires)" : ""
            let line = "Logged in to \(profile.name) as \(TerminalText.escaped(who))\(how)."
            if context.output.wantsView { return loggedIn(line, context) }
            context.output.note(line)
            context.output.json(identityJSON(profile: profile.name, credential))
        }
        return .success
    }

    /// A login's one line for a person on a terminal (gh: "✓ Logged in to github.com as X").
    private static func loggedIn(_ line: String, _ context: CommandContext) -> ExitStatus {
        context.output.viewLines([context.output.viewContext.style.bold("✓") + " " + line])
        return .success
    }

    /// What the service logs in with; a token or an export is read from stdin when the
    /// service asks (after it has checked the store).
    static func source(_ method: LoginMethod, _ context: CommandContext) -> LoginService.Source {
        switch method {
        case .web: return .web
        case .device: return .device
        case .paste: return .paste
        case .password: return .password
        case .token: return .token { () throws(DouctlError) in try readToken(context) }
        case .credentials: return .exported { () throws(DouctlError) in try readExport(context) }
        case .clientCredentials: return .clientCredentials
        case .basic: return .basic { () throws(DouctlError) in try readBasic(context) }
        }
    }

    /// `--basic`: on a terminal the user name, then the password without echo; otherwise
    /// one line `user:password` on stdin (never argv).
    static func readBasic(_ context: CommandContext) throws(DouctlError) -> (user: String, password: String) {
        let stdin = context.process.standardInput
        if context.output.terminal.stdinIsTerminal {
            context.output.note("User name:")
            guard let user = Terminal.readLine(stdin)?.trimmingCharacters(in: " \t\r\n"), !user.isEmpty else {
                if context.cancellation.isRequested { throw .stopped(context.cancellation.stopReason) }
                throw .usage("--basic needs a user name")
            }
            context.output.note("Password (not shown):")
            guard let password = Terminal.readSecretLine(stdin)?.trimmingCharacters(in: "\r\n") else {
                if context.cancellation.isRequested { throw .stopped(context.cancellation.stopReason) }
                throw .usage("--basic needs a password")
            }
            return try checkedBasic(user, password)
        }
        guard let line = Terminal.readSecretLine(stdin)?.trimmingCharacters(in: "\r\n"), let colon = line.firstIndex(of: ":") else {
            if context.cancellation.isRequested { throw .stopped(context.cancellation.stopReason) }
            throw .usage("--basic reads user:password from stdin (one line), which had none")
        }
        return try checkedBasic(String(line[..<colon]), String(line[line.index(after: colon)...]))
    }

    /// RFC 7617 §2: a user id holds no colon; neither holds a control character.
    static func checkedBasic(_ user: String, _ password: String) throws(DouctlError) -> (user: String, password: String) {
        if user.isEmpty || user.contains(":") { throw .usage("--basic: the user name must be non-empty and hold no ':' (RFC 7617)") }
        if (user + password).unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw .usage("--basic: the user name and password must hold no control characters")
        }
        return (user, password)
    }

    static func console(_ context: CommandContext, _ options: LoginOptions) -> LoginConsole {
        let browser = BrowserLauncher(environment: context.environment)
        let stdin = context.process.standardInput
        return LoginConsole(
            say: { context.output.note($0) },
            readLine: { Terminal.readLine(stdin) },
            readSecret: { Terminal.readSecretLine(stdin) },
            openBrowser: options.noBrowser ? nil : { browser.open($0) },
            now: context.clock.now,
            sleep: { context.sleep($0) },
            isCancelled: { context.cancellation.isRequested },
            approvalTimeout: options.wait)
    }

    /// `--with-token`: one line of stdin, never echoed.
    static func readToken(_ context: CommandContext) throws(DouctlError) -> String {
        let stdin = context.process.standardInput
        if context.output.terminal.stdinIsTerminal { context.output.note("Paste an access token and press Enter:") }
        guard let line = Terminal.readSecretLine(stdin)?.trimmingCharacters(in: " \t\r\n"), !line.isEmpty else {
            if context.cancellation.isRequested { throw .stopped(context.cancellation.stopReason) }
            throw .usage("--with-token reads the token from stdin, which was empty")
        }
        return line
    }

    /// `--with-credentials`: what `auth export` printed, all of stdin.
    static func readExport(_ context: CommandContext) throws(DouctlError) -> [UInt8] {
        if context.output.terminal.stdinIsTerminal { context.output.note("Paste the JSON of 'douctl auth export', then press Ctrl-D:") }
        let bytes = try StandardInput(context.process).bytes(for: "--with-credentials")
        return bytes
    }

    /// `auth export`: the whole stored login as JSON, for `auth login --with-credentials`
    /// elsewhere. It carries the refresh token, so a terminal gets it only when asked.
    static func export(_ options: ExportOptions, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        if context.output.stdoutIsTerminal && !options.yesIKnow {
            throw .usage("auth export prints the refresh token; redirect it (douctl auth export > credentials-ci.json) or pass --yes-i-know to print it here")
        }
        let profile = try context.session.profile()
        guard let credential = try context.session.credentialStore().load(profile.name) else {
            throw .notLoggedIn(profile)
        }
        context.output.json(.object(JSONObject([
            ("douctl", "credentials"), ("profile", .string(profile.name)), ("api_base", .string(profile.apiBase)),
            ("credential", credential.json),
        ])))
        return .success
    }

    static func identityJSON(profile: String, _ credential: Credential) -> JSON {
        var object = JSONObject()
        object["profile"] = .string(profile)
        object["user_id"] = credential.userID.map(JSON.string) ?? .null
        object["user_name"] = credential.userName.map(JSON.string) ?? .null
        object["scopes"] = .array(credential.scopes.map(JSON.string))
        object["expires_at"] = credential.expiresAt.map { .string(Timestamp.rfc3339($0)) } ?? .null
        return .object(object)
    }

    // MARK: - status, token, refresh, logout

    static func status(_ options: StatusOptions, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let profile = try context.session.profile()
        let showToken = options.showToken
        let checks = options.checks(stdoutIsTerminal: context.output.stdoutIsTerminal)
        var object = JSONObject()
        object["profile"] = .string(profile.name)
        object["api_base"] = .string(profile.apiBase)
        if options.explain {
            let choice = try context.session.profileChoice()
            object["chosen_by"] = .string(choice.ruleText)
            object["origin"] = .string(ProfileChoice.origin(of: profile.apiBase))
            object["expect_user"] = profile.expectUser.map(JSON.string) ?? .null
        }
        if case .environmentToken(let token) = try context.session.credentialInForce() {
            object["logged_in"] = true
            object["credential"] = "DOUCTL_TOKEN"
            object["token"] = .string(showToken ? token : Mask.secret(token))
            return try finishStatus(object, checks: checks, context: context, profile: profile)
        }
        let store = try context.session.credentialStore()
        let session = try CodingSession.status(context, profile: profile)
        guard let credential = try store.load(profile.name) else {
            if let session {
                object["logged_in"] = true
                object["credential"] = "cookie session"
                object["user_id"] = session.owner?.id.map(JSON.string) ?? .null
                object["user_name"] = session.owner?.name.map(JSON.string) ?? .null
                object["session"] = session.json
                return try finishStatus(object, checks: checks, context: context, profile: profile)
            }
            object["logged_in"] = false
            object["credentials_path"] = .string(store.path)
            context.output.document(.object(object), view: .fields)
            throw .notLoggedIn(profile)
        }
        let now = context.clock.now()
        object["logged_in"] = true
        object["credential"] = credential.isBasic ? "basic" : credential.isClientCredentials ? "client credentials" : "token"
        object["user_id"] = credential.userID.map(JSON.string) ?? .null
        object["user_name"] = credential.userName.map(JSON.string) ?? .null
        object["scopes"] = .array(credential.scopes.map(JSON.string))
        object["expires_at"] = credential.expiresAt.map { .string(Timestamp.rfc3339($0)) } ?? .null
        // No stored expiry means nobody said when it ends (a --with-token token, a grant without
        // expires_in), not that it never does.
        object["expires"] = credential.expiresAt.map { .string(Timestamp.describeRemaining($0 - now)) } ?? .string("unknown")
        object["expired"] = .bool(credential.isExpired(now: now, margin: 0))
        object["refreshable"] = .bool(credential.refreshToken != nil || credential.isClientCredentials)
        object["token"] = .string(showToken ? credential.accessToken : Mask.secret(credential.accessToken))
        object["credentials_path"] = .string(store.path)
        if let session {
            // Left from before logins replaced each other: the token wins, the session is not sent.
            var unused = session.json
            if case .object(var fields) = unused {
                fields["used"] = false
                unused = .object(fields)
            }
            object["session"] = unused
        }
        return try finishStatus(object, checks: checks, context: context, profile: profile)
    }

    /// Prints the status, after asking the server (`~me`) when `checks`: "valid" says
    /// whether the login works; a refused one exits 4, an unreachable server 7.
    private static func finishStatus(_ status: JSONObject, checks: Bool, context: CommandContext, profile: ResolvedProfile) throws(DouctlError) -> ExitStatus {
        var object = status
        guard checks else {
            context.output.document(.object(object), view: .fields)
            return .success
        }
        do {
            guard let identity = try Identity.fetch(with: try context.session.api()) else {
                // No endpoint says whose the token is: nothing to check it against.
                object["valid"] = .null
                context.output.document(.object(object), view: .fields)
                context.output.note("Cannot check the login of \(profile.name): the profile has no user_url.")
                return .success
            }
            object["valid"] = true
            if let id = identity.id { object["user_id"] = .string(id) }
            if let name = identity.name { object["user_name"] = .string(name) }
            context.output.document(.object(object), view: .fields)
            return .success
        } catch {
            let refused: Bool
            switch error {
            case .api(let apiError): refused = apiError.kind == .authentication || apiError.kind == .permission
            case .authentication: refused = true
            default: refused = false
            }
            guard refused else { throw error }
            object["valid"] = false
            context.output.document(.object(object), view: .fields)
            // The error's own hint may already say how to log in: say it once.
            var reason = error.message
            if case .api(var apiError) = error {
                apiError.hint = nil
                reason = apiError.summary
            }
            // A refused refresh already ends with the login command: not a second time.
            let login = DouctlError.loginCommand(profile.name)
            let advice = reason.containsBytes(login) ? "" : "; run: \(login)"
            throw .authentication("the server refused the stored login of \(profile.name) (\(reason))\(advice)")
        }
    }

    static func token(_ options: NoOptions, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        if try context.session.credentialInForce() == .cookieSession {
            let profile = try context.session.profile()
            throw cookieSessionHasNoToken(profile.name, "no access token to print; for a token, run: douctl auth login --web --profile \(profile.name)")
        }
        guard let tokens = try context.session.tokens(), let token = try tokens.currentToken() else {
            let profile = try context.session.profile()
            throw .notLoggedIn(profile)
        }
        // A Basic login (auth login --basic) prints the base64 of user:password: what follows
        // "Basic " in its Authorization header, and in --dry-run's lines for the profile.
        context.output.line(token)
        return .success
    }

    /// `auth token` and `auth refresh` on a profile whose login is a cookie session.
    private static func cookieSessionHasNoToken(_ profile: String, _ what: String) -> DouctlError {
        .authentication("\(profile) is logged in with a cookie session (auth login --password), which has \(what)")
    }

    static func refresh(_ options: NoOptions, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        guard let tokens = try context.session.tokens() as? StoredTokens else {
            switch try context.session.credentialInForce() {
            case .environmentToken:
                throw .usage("DOUCTL_TOKEN is set; there is no stored login to refresh")
            case .cookieSession:
                throw cookieSessionHasNoToken(try context.session.profile().name, "no token to refresh")
            case .storedToken, .none, .placeholder:
                throw .notLoggedIn(try context.session.profile().name)
            }
        }
        let (credential, renewed) = try tokens.forceRefresh()
        context.output.note(renewed
            ? "Refreshed the token of \(tokens.profile.name)."
            : "The token of \(tokens.profile.name) has not expired, and the server keeps it (it refreshes only expired tokens).")
        context.output.json(identityJSON(profile: tokens.profile.name, credential))
        return .success
    }

    static func logout(_ options: NoOptions, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let profile = try context.session.profile()
        let logout = try context.loginService(profile: profile, console: console(context, LoginOptions())).logout()
        guard logout.removed != nil else {
            context.output.note(logout.endedSession ? "Logged out of \(profile.name)." : "Not logged in to \(profile.name); nothing to do.")
            return .success
        }
        if !logout.revocationFailures.isEmpty {
            context.output.warn("the server did not confirm revocation (\(logout.revocationFailures.joined(separator: ", "))); the local copy is deleted")
        }
        context.output.note("Logged out of \(profile.name).")
        return .success
    }
}

extension CommandContext {
    /// The login service for `profile` (whose scopes may be the command's): this run's
    /// credential store, and its clients and transport, built when the service first sends.
    func loginService(profile: ResolvedProfile, console: LoginConsole) throws(DouctlError) -> LoginService {
        LoginService(profile: profile, store: try session.credentialStore(), console: console,
                     warn: { self.output.warn($0) }, dropCachedReplies: { CacheCommands.dropReplies(self, profile: $0) },
                     now: clock.now) { () throws(DouctlError) in
            var clients = try self.session.clientFactory()
            clients.profile = profile
            return LoginService.Connection(clients: clients, http: try self.session.http())
        }
    }
}

/// `auth login` shows a person one line (no view options of its own: a pipe, --pretty or
/// --compact get the JSON of what was stored).
extension AuthCommands.LoginOptions: PresentsOutput {
    var presentation: OutputPresentation { OutputPresentation(view: ViewOptions()) }
}
