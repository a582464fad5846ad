import DouctlArguments
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// `douctl auth login|status|token|refresh|logout`. The flows themselves live in the core
/// (`OAuthLogin`); this file picks one, talks to the terminal, and stores the result.
enum AuthCommands {
    static let command = Command(group: CommandSpec(
        "auth",
        abstract: "log in, inspect and refresh tokens, log out",
        discussion: """
        Tokens are stored per profile in credentials.json (mode 0600) in the config
        directory. DOUCTL_TOKEN, when set, is used instead and never stored.
        """), [
        Command(loginSpec, run: login),
        Command(CommandSpec(
            "status", abstract: "show the profile's login: user, scopes, expiry, where it is stored",
            discussion: "Prints a JSON object; the token is masked unless --show-token. Exits 4 when not logged in.",
            options: [.flag("show-token", help: "include the whole access token")]), run: status),
        Command(CommandSpec(
            "token", abstract: "print the access token (refreshed first if it has expired)",
            examples: [Example("curl -H \"Authorization: Bearer $(douctl auth token)\" https://api.douban.com/v2/user/~me", "use the token with another tool")]), run: token),
        Command(CommandSpec("refresh", abstract: "refresh the access token now"), run: refresh),
        Command(CommandSpec(
            "logout", abstract: "forget the profile's credentials (revoking them where the server supports it)"), run: logout),
    ])

    static let loginSpec = CommandSpec(
        "login",
        abstract: "log in with OAuth2 (browser, device code or pasted code) or a token from stdin",
        discussion: """
        Flows:
          --web         open a browser; a listener on 127.0.0.1 (any free port unless
                        redirect_uri fixes one) receives the redirect. PKCE (S256) and a
                        random state protect the exchange.
          --paste       print the authorization URL; paste back the address the browser
                        was sent to, or just the code. For apps whose registered redirect
                        is a web page (real Douban apps).
          --device      RFC 8628: open a URL on any device and type the code shown.
                        Needs the profile's device_authorization_url (the sandbox has one;
                        Douban does not).
          --with-token  read an access token from stdin (never from the command line).
          --password    Coding's account + password login with a cookie session.
        Without a flag: --device when no browser can open here (no $BROWSER, no display)
        and the profile has a device endpoint; --paste when redirect_uri is not a loopback
        address; --web otherwise.
        After logging in, douctl asks the API who the token belongs to and stores the
        user id and name with it. Refused while DOUCTL_TOKEN is set.
        """,
        options: [
            .flag("web", help: "browser + loopback redirect (PKCE)"),
            .flag("device", help: "device authorization grant (RFC 8628)"),
            .flag("paste", help: "paste the redirected URL or the code"),
            .flag("with-token", help: "read an access token from stdin"),
            .flag("password", help: "Coding: account and password (cookie session)"),
            OptionSpec("scopes", value: ValueSpec("S,..."), help: "scopes to request instead of the profile's"),
            .flag("no-browser", help: "print URLs instead of opening a browser"),
            OptionSpec("timeout", value: ValueSpec("SECONDS", kind: .number, default: "300"),
                       help: "how long to wait for approval", key: "login-timeout"),
        ],
        examples: [
            Example("douctl --profile sandbox auth login", "log in to the local sandbox"),
            Example("douctl auth login --device --no-browser", "log in from a headless machine"),
            Example("printenv MY_TOKEN | douctl auth login --with-token", "store an existing token"),
        ])

    // MARK: - login

    static func login(_ invocation: Invocation) throws(DouctlError) -> ExitStatus {
        if let token = invocation.environment["DOUCTL_TOKEN"], !token.isEmpty {
            throw .usage("DOUCTL_TOKEN is set, so douctl would ignore a stored login; unset it first")
        }
        var profile = try invocation.profile()
        if let scopes = invocation.parsed.value("scopes") {
            profile.scopes = scopes.split(separator: ",").map { $0.trimmingCharacters(in: " ") }.filter { !$0.isEmpty }
        }
        let method = try chooseMethod(invocation, profile: profile)
        let store = try invocation.credentialStore()
        if method == .password {
            let identity = try CodingLogin.run(invocation, profile: profile)
            invocation.note("Logged in to \(profile.name) as \(identity.name ?? identity.id ?? "an unknown user") (cookie session).")
            invocation.printJSON(.object(JSONObject([
                ("profile", .string(profile.name)), ("user_id", identity.id.map(JSON.string) ?? .null),
                ("user_name", identity.name.map(JSON.string) ?? .null), ("session", "cookie"),
            ])))
            return .success
        }
        let credential: Credential
        switch method {
        case .token:
            credential = try loginWithToken(invocation, profile: profile)
        case .password, .web, .device, .paste:
            let flow = OAuthLogin(profile: profile, http: try invocation.http(), console: console(invocation))
            let grant: TokenGrant
            switch method {
            case .web: grant = try flow.web()
            case .device: grant = try flow.device()
            default: grant = try flow.paste()
            }
            credential = try identify(grant.credential(now: Timestamp.now(), requestedScopes: profile.scopes), invocation: invocation, profile: profile)
        }
        try store.update(profile.name) { (entry: inout Credential?) throws(DouctlError) in entry = credential }
        Subprocess.reapFinished()
        let who = credential.userName.map { name in credential.userID.map { "\(name) (\($0))" } ?? name } ?? credential.userID ?? "an unknown user"
        invocation.note("Logged in to \(profile.name) as \(who).")
        invocation.printJSON(identityJSON(profile: profile.name, credential))
        return .success
    }

    static func chooseMethod(_ invocation: Invocation, profile: ResolvedProfile) throws(DouctlError) -> LoginMethod {
        let flags: [(String, LoginMethod)] = [("web", .web), ("device", .device), ("paste", .paste), ("with-token", .token), ("password", .password)]
        let chosen = flags.filter { invocation.parsed.has($0.0) }
        if chosen.count > 1 {
            throw .usage("choose one of --\(chosen.map(\.0).joined(separator: ", --"))")
        }
        if let method = chosen.first?.1 {
            if method == .password && profile.style != .coding {
                throw .unsupported("--password is Coding's login; profile '\(profile.name)' is \(profile.style.rawValue)-style (use --web, --device or --paste)")
            }
            return method
        }
        let browser = BrowserLauncher(environment: invocation.environment)
        return LoginMethod.automatic(profile: profile, browserAvailable: browser.isAvailable && !invocation.parsed.has("no-browser"))
    }

    static func console(_ invocation: Invocation) -> LoginConsole {
        let browser = BrowserLauncher(environment: invocation.environment)
        let stdin = invocation.process.standardInput
        return LoginConsole(
            say: { invocation.note($0) },
            readLine: { Terminal.readLine(stdin) },
            openBrowser: invocation.parsed.has("no-browser") ? nil : { browser.open($0) },
            sleep: interruptibleSleep,
            isCancelled: { Interrupt.requested },
            approvalTimeout: invocation.parsed.number("login-timeout") ?? 300)
    }

    /// `--with-token`: a token from stdin, checked against the API before it is stored.
    static func loginWithToken(_ invocation: Invocation, profile: ResolvedProfile) throws(DouctlError) -> Credential {
        let stdin = invocation.process.standardInput
        if Terminal.isTerminal(stdin) { invocation.note("Paste an access token and press Enter:") }
        guard let line = Terminal.readSecretLine(stdin)?.trimmingCharacters(in: " \t\r\n"), !line.isEmpty else {
            if Interrupt.requested { throw .interrupted }
            throw .usage("--with-token reads the token from stdin, which was empty")
        }
        return try identify(Credential(accessToken: line, scopes: profile.scopes), invocation: invocation, profile: profile)
    }

    /// Adds the token owner's id and name, asking the API (`~me`) with the new token.
    static func identify(_ credential: Credential, invocation: Invocation, profile: ResolvedProfile) throws(DouctlError) -> Credential {
        var credential = credential
        let client = APIClient(profile: profile, http: try invocation.http(), tokens: FixedToken(credential.accessToken))
        do {
            let identity = try Identity.fetch(with: client)
            credential.userID = identity.id ?? credential.userID
            credential.userName = identity.name ?? credential.userName
        } catch {
            if case .api(let apiError) = error, apiError.kind == .authentication, credential.refreshToken == nil {
                throw .authentication("the API refused this token (\(apiError.message.isEmpty ? "HTTP \(apiError.httpStatus)" : apiError.message))")
            }
            if credential.userID == nil { throw error }
            invocation.warn("could not look up the user (\(error.message)); keeping what the token endpoint said")
        }
        return credential
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

    static func status(_ invocation: Invocation) throws(DouctlError) -> ExitStatus {
        let profile = try invocation.profile()
        let showToken = invocation.parsed.has("show-token")
        var object = JSONObject()
        object["profile"] = .string(profile.name)
        object["api_base"] = .string(profile.apiBase)
        if let token = invocation.environment["DOUCTL_TOKEN"], !token.isEmpty {
            object["logged_in"] = true
            object["token_source"] = "DOUCTL_TOKEN"
            object["token"] = .string(showToken ? token : Mask.secret(token))
            invocation.printJSON(.object(object))
            return .success
        }
        let store = try invocation.credentialStore()
        let session = try CodingSession.status(invocation, profile: profile)
        guard let credential = try store.load(profile.name) else {
            if let session {
                object["logged_in"] = true
                object["session"] = session
                invocation.printJSON(.object(object))
                return .success
            }
            object["logged_in"] = false
            object["credentials_path"] = .string(store.path)
            invocation.printJSON(.object(object))
            throw .authentication("not logged in to \(profile.name); run: douctl auth login\(profile.name == "douban" ? "" : " --profile \(profile.name)")")
        }
        let now = Timestamp.now()
        object["logged_in"] = true
        object["user_id"] = credential.userID.map(JSON.string) ?? .null
        object["user_name"] = credential.userName.map(JSON.string) ?? .null
        object["scopes"] = .array(credential.scopes.map(JSON.string))
        object["expires_at"] = credential.expiresAt.map { .string(Timestamp.rfc3339($0)) } ?? .null
        object["expires"] = credential.expiresAt.map { .string(Timestamp.describeRemaining($0 - now)) } ?? .string("never")
        object["expired"] = .bool(credential.isExpired(now: now, margin: 0))
        object["refreshable"] = .bool(credential.refreshToken != nil)
        object["token"] = .string(showToken ? credential.accessToken : Mask.secret(credential.accessToken))
        object["token_source"] = "credentials file"
        object["credentials_path"] = .string(store.path)
        if let session { object["session"] = session }
        invocation.printJSON(.object(object))
        return .success
    }

    static func token(_ invocation: Invocation) throws(DouctlError) -> ExitStatus {
        guard let token = try invocation.tokens()?.currentToken() else {
            let profile = try invocation.profile()
            throw .authentication("not logged in to \(profile.name); run: douctl auth login\(profile.name == "douban" ? "" : " --profile \(profile.name)")")
        }
        invocation.stdout.line(token)
        return .success
    }

    static func refresh(_ invocation: Invocation) throws(DouctlError) -> ExitStatus {
        guard let tokens = try invocation.tokens() as? StoredTokens else {
            throw .usage("DOUCTL_TOKEN is set; there is no stored login to refresh")
        }
        let (credential, renewed) = try tokens.forceRefresh()
        invocation.note(renewed
            ? "Refreshed the token of \(tokens.profile.name)."
            : "The token of \(tokens.profile.name) has not expired, and the server keeps it (it refreshes only expired tokens).")
        invocation.printJSON(identityJSON(profile: tokens.profile.name, credential))
        return .success
    }

    static func logout(_ invocation: Invocation) throws(DouctlError) -> ExitStatus {
        let profile = try invocation.profile()
        let store = try invocation.credentialStore()
        let removed = try store.update(profile.name) { (entry: inout Credential?) throws(DouctlError) -> Credential? in
            defer { entry = nil }
            return entry
        }
        let hadSession = try CodingSession.forget(invocation, profile: profile)
        guard let removed else {
            invocation.note(hadSession ? "Logged out of \(profile.name)." : "Not logged in to \(profile.name); nothing to do.")
            return .success
        }
        if let revokeURL = profile.revokeURL {
            // RFC 7009: revoke the refresh token (which revokes its access tokens) and the access token.
            let endpoint = TokenEndpoint(profile: profile, http: try invocation.http())
            var failures: [String] = []
            for (token, hint) in [(removed.refreshToken, "refresh_token"), (Optional(removed.accessToken), "access_token")] {
                guard let token else { continue }
                do {
                    let (status, _) = try endpoint.postForm(revokeURL, [("token", token), ("token_type_hint", hint)])
                    if !(200..<300).contains(status) { failures.append("HTTP \(status)") }
                } catch {
                    failures.append(error.message)
                }
            }
            if !failures.isEmpty { invocation.warn("the server did not confirm revocation (\(failures.joined(separator: ", "))); the local copy is deleted") }
        }
        invocation.note("Logged out of \(profile.name).")
        return .success
    }
}
