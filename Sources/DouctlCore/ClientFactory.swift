import DouctlHTTP
import DouctlSystem

/// Everything needed to build an `APIClient`, as a value that can cross threads: each
/// upload worker builds its own client (libcurl handles are not shared between threads).
/// It is the one place clients are made — the command's, the workers', the login's
/// identity check, the logout's — so each carries the same environment ("$VAR" values in
/// common_params, common_headers, signing_secret), rate-limit wait, quota and recorder.
public struct ClientFactory: Sendable {
    public var profile: ResolvedProfile
    public var http: HTTPClientConfiguration
    public var store: CredentialStore
    /// The run's request settings (environment, transport, rate-limit wait, recorder),
    /// as the session has them: every client gets them unchanged.
    public var requests: RequestSettings
    /// The credential requests carry, decided once (see `CredentialInForce`).
    public var credential: CredentialInForce
    /// See `APIClient.allowsAnonymous`.
    public var allowsAnonymous = false

    public init(profile: ResolvedProfile, http: HTTPClientConfiguration, store: CredentialStore, requests: RequestSettings, credential: CredentialInForce) {
        self.profile = profile
        self.http = http
        self.store = store
        self.requests = requests
        self.credential = credential
    }

    /// The profile's `rate_limit`, shared through the config directory.
    public var rateLimiter: ClientRateLimiter? {
        guard let quota = profile.rateLimit else { return nil }
        return ClientRateLimiter(quota: quota, directory: store.directory, profile: profile.name)
    }

    public func makeTokens(http client: any HTTPTransport) -> AccessTokenSource {
        credential.tokens(profile: profile, store: store, http: client, recorder: requests.recorder, now: requests.clock.now)
    }

    /// A client for one worker; a cookie jar that cannot be read fails it (exit 3).
    public func make() throws(DouctlError) -> APIClient {
        let client = requests.makeTransport(http)
        return self.client(http: client, tokens: makeTokens(http: client), session: try credential.session(profile: profile, store: store, now: requests.clock.now))
    }

    /// A client over `http` with these credentials (a login's new token, a session being
    /// ended), configured like every other.
    public func client(http: any HTTPTransport, tokens: AccessTokenSource?, session: SessionHooks?, cachePolicy: CachePolicy? = nil) -> APIClient {
        var options = APIClientOptions(requests: requests)
        options.allowsAnonymous = allowsAnonymous
        if http.sendsRequests {
            // The profile's quota and the resets servers announced, shared through the
            // config directory: a transport that sends nothing neither spends nor waits.
            options.rateLimiter = rateLimiter
            options.serverRateLimit = ServerRateLimits(directory: store.directory, profile: profile.name)
        }
        options.cachePolicy = cachePolicy
        options.unixSocket = self.http.unixSocket
        (session as? CookieSession)?.verboseLog = self.http.verboseLog
        return APIClient(profile: profile, http: http, tokens: tokens, session: session, options: options)
    }
}
