import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// `auth login` and `auth logout` without the terminal: run the chosen flow, ask the API
/// whose the token is, store it, and replace the profile's other identity (a token login
/// ends the cookie session; a cookie login drops the stored token); log out by removing
/// what is stored and revoking it where the server supports it (RFC 7009).
///
/// Everything it needs comes in: the profile and its credential store, the API clients and
/// the transport (made on first use, so a logout with nothing to revoke builds neither), a
/// console for the person, a clock. The command reads its options and stdin, calls this,
/// and prints what comes back.
public struct LoginService {
    /// What requests are made with: clients configured like every other (the environment's
    /// "$VAR" values, the recorder, the rate limit) and the transport they go through.
    public struct Connection {
        public var clients: ClientFactory
        public var http: any HTTPTransport

        public init(clients: ClientFactory, http: any HTTPTransport) {
            self.clients = clients
            self.http = http
        }
    }

    /// How a login gets its credential.
    public enum Source {
        /// Browser + loopback redirect (PKCE).
        case web
        /// RFC 8628 device authorization.
        case device
        /// The authorization URL printed, the redirected URL or code pasted back.
        case paste
        /// An access token (read when the login gets that far, so a corrupt store is
        /// reported before stdin is read).
        case token(read: () throws(DouctlError) -> String)
        /// The JSON `auth export` printed, stored as it is (nothing is sent).
        case exported(read: () throws(DouctlError) -> [UInt8])
        /// Coding's account and password, for a cookie session.
        case password
        /// The client's own token (RFC 6749 §4.4) with the profile's client id and secret:
        /// no user, no refresh token; fetched again by itself when it expires.
        case clientCredentials
        /// A user name and password, stored and sent as HTTP Basic to the profile's origin.
        case basic(read: () throws(DouctlError) -> (user: String, password: String))
    }

    /// What a login stored.
    public enum Outcome: Equatable {
        /// A token, with the user it belongs to where the API said.
        case token(Credential)
        /// A cookie session (Coding's password login), and who logged in.
        case cookieSession(Identity)
    }

    /// What a logout removed.
    public struct Logout: Equatable {
        /// The stored token login, nil when there was none (or the store was corrupt and
        /// moved aside).
        public var removed: Credential?
        /// Whether a cookie session was ended and its jar emptied.
        public var endedSession: Bool
        /// Why the server did not confirm a revocation, one entry per token; empty when it
        /// did or the profile has no revoke_url. The local copy is deleted either way.
        public var revocationFailures: [String]
    }

    public let profile: ResolvedProfile
    public let store: CredentialStore
    public var console: LoginConsole
    /// A warning for the person (stderr): the login goes on.
    public var warn: (String) -> Void
    /// The profile's identity changed: its cached replies belong to the old one.
    public var dropCachedReplies: (String) -> Void
    public var now: () -> Double
    private let connect: () throws(DouctlError) -> Connection

    /// A service whose clients and transport are made on first use (`connect`), so options
    /// that fail to build them (a missing --cacert file) fail only a login that sends.
    public init(profile: ResolvedProfile, store: CredentialStore, console: LoginConsole,
                warn: @escaping (String) -> Void, dropCachedReplies: @escaping (String) -> Void = { _ in },
                now: @escaping () -> Double = Timestamp.now,
                connect: @escaping () throws(DouctlError) -> Connection) {
        self.profile = profile
        self.store = store
        self.console = console
        self.warn = warn
        self.dropCachedReplies = dropCachedReplies
        self.now = now
        self.connect = connect
    }

    /// A service over these clients (whose profile, store and clock it uses) and this transport.
    public init(clients: ClientFactory, http: any HTTPTransport, console: LoginConsole,
                warn: @escaping (String) -> Void, dropCachedReplies: @escaping (String) -> Void = { _ in }) {
        let connection = Connection(clients: clients, http: http)
        self.init(profile: clients.profile, store: clients.store, console: console, warn: warn,
                  dropCachedReplies: dropCachedReplies, now: clients.requests.clock.now) { () throws(DouctlError) in connection }
    }

    // MARK: - login

    /// Logs in with `source`; what is stored replaces the profile's other identity. Nothing
    /// is stored when the flow or the identity check fails.
    public func login(_ source: Source) throws(DouctlError) -> Outcome {
        if case .password = source, !profile.rules.hasCookieSessions {
            throw .unsupported("--password is Coding's login; profile '\(profile.name)' is \(profile.style.rawValue)-style (use --web, --device or --paste)")
        }
        _ = try store.loadForLogin(profile.name)
        var credential: Credential
        switch source {
        case .password:
            let identity = try loginWithPassword()
            // One identity per profile: the new session replaces a stored token.
            try store.update(profile.name) { (entry: inout Credential?) throws(DouctlError) in entry = nil }
            dropCachedReplies(profile.name)
            return .cookieSession(identity)
        case .token(let read):
            credential = try identify(Credential(accessToken: try read(), scopes: profile.scopes))
        case .exported(let read):
            credential = try importCredential(try read())
        case .clientCredentials:
            credential = try clientCredentials()
        case .web, .device, .paste:
            let connection = try connect()
            let flow = OAuthLogin(profile: profile, http: connection.http, console: console, recorder: connection.clients.requests.recorder)
            let grant: TokenGrant
            switch source {
            case .web: grant = try flow.web()
            case .device: grant = try flow.device()
            default: grant = try flow.paste()
            }
            credential = try identify(grant.credential(now: now(), requestedScopes: profile.scopes))
            // OIDC Core §5.3.2: the userinfo reply's sub must be the ID token's, or the
            // login would be stored as another user (and `{me}` expand to their id).
            if let subject = grant.subject, profile.userIDField == "sub", let said = credential.userID, said != subject {
                throw .authentication("the login was refused: the userinfo endpoint names subject '\(TerminalText.escaped(said))', the ID token '\(TerminalText.escaped(subject))' (OIDC Core §5.3.2); nothing was stored")
            }
            // An ID token's subject is who logged in (OIDC Core §2), when nothing else said.
            if credential.userID == nil, let subject = grant.subject { credential.userID = subject }
        case .basic(let read):
            let (user, password) = try read()
            // Checked like a token, before anything is stored: a refusal is exit 4.
            credential = try identify(Credential.basic(user: user, password: password))
        }
        // A profile pinned to one account (expect_user) stores no other.
        if let refusal = profile.expectedUserRefusal(credential) { throw refusal }
        try store.update(profile.name) { (entry: inout Credential?) throws(DouctlError) in entry = credential }
        // One identity per profile: the new token replaces a cookie session.
        _ = try endCookieSession()
        dropCachedReplies(profile.name)
        return .token(credential)
    }

    /// Adds the token owner's id and name, asking the API (`~me`, or the profile's user_url)
    /// with the new token — or, for `--basic`, with the user name and password as HTTP
    /// Basic. A token the API refuses is an error (exit 4) unless the token endpoint already
    /// said whose it is; so is a refused user name or password. A Basic login on a profile
    /// with nothing to ask (no preset, no user_url) is stored unchecked, with a warning.
    public func identify(_ credential: Credential) throws(DouctlError) -> Credential {
        var credential = credential
        let connection = try connect()
        let tokens = FixedToken(credential.accessToken, scheme: credential.isBasic ? "Basic" : nil)
        let client = connection.clients.client(http: connection.http, tokens: tokens, session: nil)
        do {
            guard let identity = try Identity.fetch(with: client) else {
                if credential.isBasic {
                    warn("profile '\(profile.name)' has no user_url, so the user name and password were stored without being checked (set one to check them: douctl config set user_url /user --profile \(profile.name))")
                } else if credential.userID == nil && credential.userName == nil {
                    // A plain OAuth2 profile without user_url: nothing says whose the token is.
                    console.say("The profile has no user_url, so the user is unknown (set one, e.g. douctl config set user_url /user --profile \(profile.name)).")
                }
                return credential
            }
            credential.userID = identity.id ?? credential.userID
            credential.userName = identity.name ?? credential.userName
        } catch {
            if case .api(let apiError) = error, apiError.kind == .authentication || apiError.kind == .permission, credential.refreshToken == nil {
                if credential.isBasic {
                    let said = apiError.message.isEmpty ? "" : ": \(apiError.message)"
                    throw .authentication("the server refused the user name or password (HTTP \(apiError.httpStatus)\(said)); nothing was stored")
                }
                throw .authentication("the API refused this token (\(apiError.message.isEmpty ? "HTTP \(apiError.httpStatus)" : apiError.message))")
            }
            if credential.userID == nil { throw error }
            warn("could not look up the user (\(error.message)); keeping what the token endpoint said")
        }
        return credential
    }

    /// RFC 6749 §4.4: the token endpoint gives the client a token of its own. Nothing asks
    /// whose it is (it is the client's); the grant is marked so an expired token is fetched
    /// again instead of refreshed.
    func clientCredentials() throws(DouctlError) -> Credential {
        guard let clientID = profile.clientID, !clientID.isEmpty else {
            throw .usage("--client-credentials needs the profile's client_id; set it with: douctl config set client_id ID --profile \(profile.name)")
        }
        if profile.tokenAuth != .none, profile.clientSecret?.isEmpty ?? true {
            throw .usage("--client-credentials needs the profile's client_secret; set it with: douctl config set client_secret - --profile \(profile.name) (or DOUCTL_CLIENT_SECRET)")
        }
        let connection = try connect()
        let endpoint = TokenEndpoint(profile: profile, http: connection.http, recorder: connection.clients.requests.recorder)
        switch try endpoint.clientCredentials(scopes: profile.scopes) {
        case .granted(let grant):
            var credential = grant.credential(now: now(), requestedScopes: profile.scopes)
            credential.refreshToken = nil
            credential.userName = credential.userName ?? clientID
            credential.extra[Credential.grantKey] = .string(Credential.clientCredentialsGrant)
            return credential
        case .refused(let error):
            throw .authentication("the token endpoint refused the client's credentials (\(error.summary))")
        }
    }

    /// The JSON of `auth export`: stored as it is, so a single-use refresh token is not
    /// spent here; the first call refreshes when due.
    func importCredential(_ bytes: [UInt8]) throws(DouctlError) -> Credential {
        guard let json = try? JSONParser.parse(bytes), json["douctl"]?.stringValue == "credentials",
              let entry = json["credential"], let credential = Credential(json: entry) else {
            throw .usage("--with-credentials reads the JSON that 'douctl auth export' prints, on stdin; that is not it")
        }
        if let origin = json["api_base"]?.stringValue, origin != profile.apiBase {
            warn("these credentials were exported for \(origin); profile '\(profile.name)' uses \(profile.apiBase)")
        }
        return credential
    }

    /// Coding's account + password login; the session goes to the profile's cookie jar and
    /// captchas are saved in the config directory while they are asked about.
    func loginWithPassword() throws(DouctlError) -> Identity {
        var console = self.console
        try store.directory.ensureExists()
        console.captchaDirectory = store.directory.path
        let jar = CookieJar(directory: store.directory, profile: profile.name)
        let connection = try connect()
        return try CodingPasswordLogin(clients: connection.clients, http: connection.http, console: console, jar: jar).run()
    }

    // MARK: - logout

    /// Removes the stored login and the cookie session, then asks the server to revoke the
    /// removed tokens. A corrupt credentials file is moved aside (with a warning), so every
    /// profile can log in again.
    public func logout() throws(DouctlError) -> Logout {
        let removed: Credential?
        do {
            removed = try store.update(profile.name) { (entry: inout Credential?) throws(DouctlError) -> Credential? in
                defer { entry = nil }
                return entry
            }
        } catch .badConfig(let path, let detail) {
            let aside = try store.moveAside(now: now())
            warn("\(path) is corrupt (\(detail)); moved it to \(aside). Every profile stored in it must log in again.")
            removed = nil
        }
        let endedSession = try endCookieSession()
        dropCachedReplies(profile.name)
        guard let removed else { return Logout(removed: nil, endedSession: endedSession, revocationFailures: []) }
        return Logout(removed: removed, endedSession: endedSession, revocationFailures: try revoke(removed))
    }

    /// RFC 7009: revokes the refresh token (which revokes its access tokens), then the
    /// access token, at the profile's revoke_url; returns why the server did not confirm
    /// each it did not (an HTTP status, a network error).
    public func revoke(_ credential: Credential) throws(DouctlError) -> [String] {
        // A password is not a token: it is forgotten here, never sent to a revocation endpoint.
        guard let revokeURL = profile.revokeURL, !credential.isBasic else { return [] }
        let connection = try connect()
        let endpoint = TokenEndpoint(profile: profile, http: connection.http, recorder: connection.clients.requests.recorder)
        var failures: [String] = []
        for (token, hint) in [(credential.refreshToken, "refresh_token"), (Optional(credential.accessToken), "access_token")] {
            guard let token else { continue }
            do {
                let (status, _) = try endpoint.postForm(revokeURL, [("token", token), ("token_type_hint", hint)])
                if !(200..<300).contains(status) { failures.append("HTTP \(status)") }
            } catch {
                failures.append(error.message)
            }
        }
        return failures
    }

    /// Ends the profile's cookie session on the server where possible, then empties the
    /// jar; true when there was one. A jar that cannot be read is emptied with a warning:
    /// there is no session left in it to end. The server's session ends by itself in time,
    /// so an offline logout still forgets it here.
    public func endCookieSession() throws(DouctlError) -> Bool {
        guard profile.rules.hasCookieSessions else { return false }
        let jar = CookieJar(directory: store.directory, profile: profile.name)
        guard jar.exists else { return false }
        let hooks: SessionHooks?
        do {
            hooks = try CookieSession.stored(for: profile, store: store, now: now)
        } catch .badConfig(let path, let detail) {
            warn("\(path) is corrupt (\(detail)); deleting it")
            hooks = nil
        }
        if let hooks {
            let connection = try connect()
            let client = connection.clients.client(http: connection.http, tokens: nil, session: hooks)
            try? CodingService(client: client).endSession()
        }
        try jar.save([])
        return true
    }
}
