import DouctlHTTP

/// Which credential a profile's requests carry, decided once per run and used by
/// everything that asks: the API clients (`ClientFactory`), `auth status`, `auth token`,
/// `profile list` and, through the client, the response cache's key. A profile has one
/// identity, and the first of these that exists is it:
///
/// 1. `DOUCTL_TOKEN` (non-empty): the environment wins over anything stored; a cookie jar
///    is then neither read nor sent.
/// 2. A stored token (credentials.json has a login for the profile, or cannot be read: the
///    request that needs the token reports that).
/// 3. A cookie session (Coding's `auth login --password`): a jar with cookies.
/// 4. None.
///
/// `--dry-run` sends none of them: its requests carry a placeholder (`placeholder`) in the
/// scheme the credential in force would be sent with.
public enum CredentialInForce: Sendable, Equatable {
    case environmentToken(String)
    case storedToken
    case cookieSession
    case none
    /// `--dry-run`: `$DOUCTL_TOKEN` (which the shell fills in) where the credential in force
    /// would go, in its scheme: "Basic" for a stored `auth login --basic`, nil for the
    /// profile's own (`Authorization: Bearer`, its auth_scheme, token_header or token_query).
    case placeholder(String, scheme: String?)

    /// `--dry-run`'s credential: `text` standing for what `decide` would choose, sent the way
    /// that would be. Only the kind of the stored login is looked at, never its secret;
    /// a store that cannot be read counts as no login (the dry run sends nothing anyway).
    public static func placeholder(_ text: String, profile: ResolvedProfile, store: CredentialStore, environment: [String: String]) -> CredentialInForce {
        if let token = environment["DOUCTL_TOKEN"], !token.isEmpty { return .placeholder(text, scheme: nil) }
        let stored = (try? store.load(profile.name)) ?? nil
        return .placeholder(text, scheme: stored?.isBasic == true ? "Basic" : nil)
    }

    public static func decide(profile: ResolvedProfile, store: CredentialStore, environment: [String: String]) -> CredentialInForce {
        if let token = environment["DOUCTL_TOKEN"], !token.isEmpty { return .environmentToken(token) }
        return decideStored(profile: profile, store: store)
    }

    /// The decision without the environment: what the config directory holds.
    public static func decideStored(profile: ResolvedProfile, store: CredentialStore) -> CredentialInForce {
        do {
            if try store.load(profile.name) != nil { return .storedToken }
        } catch {
            return .storedToken
        }
        guard profile.rules.hasCookieSessions else { return .none }
        let jar = CookieJar(directory: store.directory, profile: profile.name)
        guard jar.exists else { return .none }
        // A jar that cannot be read is reported by the request that sends it (exit 3).
        guard let cookies = try? jar.load() else { return .cookieSession }
        return cookies.isEmpty ? .none : .cookieSession
    }

    /// What `auth status` calls it in "credential".
    public var name: String? {
        switch self {
        case .environmentToken, .placeholder: return "DOUCTL_TOKEN"
        case .storedToken: return "token"
        case .cookieSession: return "cookie session"
        case .none: return nil
        }
    }

    public var isLoggedIn: Bool { self != .none }

    /// Where requests get their token: `DOUCTL_TOKEN` as is, the stored login (read when
    /// each request is sent, refreshed as needed), or none: with no stored login when the
    /// run decided, the store is not read again.
    public func tokens(profile: ResolvedProfile, store: CredentialStore, http: any HTTPTransport, recorder: ExchangeRecorder? = nil,
                       now: @escaping @Sendable () -> Double) -> AccessTokenSource {
        switch self {
        case .environmentToken(let token): return FixedToken(token)
        case .placeholder(let text, let scheme): return FixedToken(text, scheme: scheme)
        case .storedToken: return StoredTokens(profile: profile, store: store, http: http, recorder: recorder, now: now)
        case .cookieSession, .none: return NoStoredLogin(profile: profile.name)
        }
    }

    /// The cookie session requests carry: only when it is the credential in force. A jar
    /// that cannot be read is an error (exit 3), not a logged-out profile.
    public func session(profile: ResolvedProfile, store: CredentialStore, now: @escaping @Sendable () -> Double) throws(DouctlError) -> SessionHooks? {
        guard self == .cookieSession else { return nil }
        return try CookieSession.stored(for: profile, store: store, now: now)
    }
}
