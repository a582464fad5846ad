import DouctlHTTP

/// Everything needed to build an `APIClient`, as a value that can cross threads: each
/// upload worker builds its own client (libcurl handles are not shared between threads).
public struct ClientFactory: Sendable {
    public var profile: ResolvedProfile
    public var http: HTTPClientConfiguration
    public var store: CredentialStore
    /// `DOUCTL_TOKEN`, when set.
    public var fixedToken: String?
    /// See `APIClient.allowsAnonymous`.
    public var allowsAnonymous = false
    /// See `APIClient.dryRun`: no tokens, no session, nothing sent.
    public var dryRun: DryRunPrinter?
    /// See `APIClient.rateLimitWait`.
    public var rateLimitWait: RateLimitWait?
    /// See `APIClient.environment`.
    public var environment: [String: String] = [:]
    /// See `APIClient.recorder`.
    public var recorder: ExchangeRecorder?

    public init(profile: ResolvedProfile, http: HTTPClientConfiguration, store: CredentialStore, fixedToken: String?) {
        self.profile = profile
        self.http = http
        self.store = store
        self.fixedToken = fixedToken
    }

    /// The profile's `rate_limit`, shared through the config directory.
    public var rateLimiter: ClientRateLimiter? {
        guard dryRun == nil, let quota = profile.rateLimit else { return nil }
        return ClientRateLimiter(quota: quota, directory: store.directory, profile: profile.name)
    }

    public func makeTokens(http client: any HTTPTransport) -> AccessTokenSource {
        if let fixedToken { return FixedToken(fixedToken) }
        return StoredTokens(profile: profile, store: store, http: client)
    }

    /// A client for one worker; a cookie jar that cannot be read fails it (exit 3).
    public func make() throws(DouctlError) -> APIClient {
        let client = HTTPClient(http)
        let api: APIClient
        if let dryRun {
            api = APIClient(profile: profile, http: client, tokens: nil)
            api.dryRun = dryRun
        } else {
            api = APIClient(profile: profile, http: client, tokens: makeTokens(http: client), session: try CookieSession.hooks(for: profile, store: store))
        }
        api.allowsAnonymous = allowsAnonymous
        api.rateLimitWait = rateLimitWait
        api.environment = environment
        api.rateLimiter = rateLimiter
        api.recorder = recorder
        return api
    }
}
