import DouctlHTTP

/// Tokens from credentials.json, refreshed when they expire, or once when the server says they did.
///
/// The refresh runs under the credentials lock and starts by re-reading the file: when
/// another douctl process has already rotated the tokens, we use its new ones instead of
/// spending the old, single-use refresh token a second time.
public final class StoredTokens: AccessTokenSource {
    public let profile: ResolvedProfile
    public let store: CredentialStore
    private let endpoint: TokenEndpoint
    private let now: () -> Double

    /// `recorder`: `--record DIR`, so a refresh is recorded with the login it continues.
    public init(profile: ResolvedProfile, store: CredentialStore, http: any HTTPTransport, recorder: ExchangeRecorder? = nil,
                now: @escaping () -> Double = Timestamp.now) {
        self.profile = profile
        self.store = store
        endpoint = TokenEndpoint(profile: profile, http: http, recorder: recorder)
        self.now = now
    }

    public var rejectionHint: String { "run: \(DouctlError.loginCommand(profile.name))" }

    public func liveSecrets() -> [String] {
        guard let credential = try? store.load(profile.name) else { return [] }
        return [credential.accessToken, credential.refreshToken].compactMap { $0 } + [credential.basicPassword].compactMap { $0 }
    }

    public private(set) var credentialScheme: String?

    /// The origin the stored login was obtained for: the profile's own api_base (config.json,
    /// else its preset), never one `--api-base` gives for this run. `config set api_base`
    /// moves the login with the profile (a sandbox restarted on another port keeps its
    /// logins). The store is read first, so one that cannot be trusted (its mode, its owner)
    /// is refused here as a token read would be.
    public func loginOrigin() throws(DouctlError) -> String? {
        if let knownOrigin { return knownOrigin }
        _ = try store.load(profile.name)
        let origin = profile.ownAPIBase ?? profile.apiBase
        knownOrigin = origin
        return origin
    }
    private var knownOrigin: String?

    public func currentToken() throws(DouctlError) -> String? {
        guard let credential = try store.load(profile.name) else { return nil }
        credentialScheme = credential.isBasic ? "Basic" : nil
        if credential.isExpired(now: now()), credential.refreshToken != nil || credential.isClientCredentials {
            return try refresh(rejected: credential.accessToken, becauseExpired: true)
        }
        return credential.accessToken
    }

    public func refresh(rejected token: String) throws(DouctlError) -> String? {
        try refresh(rejected: token, becauseExpired: false)
    }

    /// Refreshes now, whatever the expiry says (`douctl auth refresh`). `renewed` is false when
    /// the server kept the current token (Douban's 124: it refreshes only expired tokens).
    public func forceRefresh() throws(DouctlError) -> (credential: Credential, renewed: Bool) {
        guard let credential = try store.load(profile.name) else {
            throw .notLoggedIn(profile)
        }
        _ = try refresh(rejected: credential.accessToken, becauseExpired: true, force: true)
        let current = try store.load(profile.name) ?? credential
        return (current, current.accessToken != credential.accessToken)
    }

    private func refresh(rejected token: String, becauseExpired: Bool, force: Bool = false) throws(DouctlError) -> String? {
        let clock = now
        let profile = profile
        let endpoint = endpoint
        let hint = rejectionHint
        // The reservation fails before the single-use refresh token is sent, not after.
        return try store.update(profile.name, unspent: "the refresh token was not used") { (entry: inout Credential?) throws(DouctlError) -> String? in
            guard let current = entry else { return nil }
            if current.accessToken != token {
                // Another process rotated the tokens while we waited for the lock: use its
                // new ones, even when a short lifetime makes them look due already. A refresh
                // from here would only be refused (Douban: 124, "keep using the current one")
                // or spend the rotated refresh token. Should the server refuse the new token,
                // the request's one refresh comes back here with it and refreshes then.
                return current.accessToken
            }
            if current.isClientCredentials {
                // No refresh token (RFC 6749 §4.4.3): the client asks again, under the same lock,
                // so concurrent jobs fetch one new token between them.
                switch try endpoint.clientCredentials(scopes: current.scopes) {
                case .granted(let grant):
                    var renewed = grant.credential(now: clock(), requestedScopes: current.scopes, previous: current)
                    renewed.refreshToken = nil
                    entry = renewed
                    return grant.accessToken
                case .refused(let error):
                    throw .authentication("the client-credentials token expired and a new one was refused (\(error.summary)); check the profile's client_id and client_secret")
                }
            }
            guard let refreshToken = current.refreshToken else {
                if force { throw .authentication("this login has no refresh token; \(hint)") }
                return nil
            }
            switch try endpoint.refresh(refreshToken: refreshToken) {
            case .granted(let grant):
                if let change = grant.identityChange(from: current) {
                    throw .authentication("the refresh answered for another account (\(change)); the login was kept as it was; \(hint)")
                }
                if let problem = grant.refreshedIDTokenProblem(issuer: profile.issuer, clientID: profile.clientID, previous: current, now: clock()) {
                    throw .authentication("the refresh was refused: \(problem); the login was kept as it was; \(hint)")
                }
                let renewed = grant.credential(now: clock(), requestedScopes: profile.scopes, previous: current)
                // A profile pinned to one account (expect_user) keeps no other's tokens: the
                // refresh must name that account, or name no other than the stored login, which
                // does (a token endpoint may give a display name where the login stored the
                // handle: Douban's douban_user_name).
                if let refusal = profile.expectedUserRefusal(renewed, doing: "the refresh"),
                   profile.expectedUserRefusal(current) != nil {
                    throw refusal
                }
                entry = renewed
                return grant.accessToken
            case .refused(let error) where error.code == "124":
                // Douban: "access_token_has_not_expired" — the current token is still good.
                return becauseExpired ? current.accessToken : nil
            case .refused(let error):
                throw .authentication("the login expired and could not be refreshed (\(error.summary)); \(hint)")
            }
        }
    }
}
