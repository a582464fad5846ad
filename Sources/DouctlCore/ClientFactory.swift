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
    /// The credential requests carry, decided once (see `CredentialInForce`).
    public var credential: CredentialInForce
    /// See `APIClient.allowsAnonymous`.
    public var allowsAnonymous = false
    /// See `APIClient.rateLimitWait`.
    public var rateLimitWait: RateLimitWait?
    /// See `APIClient.environment`.
    public var environment: [String: String]
    /// See `APIClient.recorder`.
    public var recorder: ExchangeRecorder?
    /// `--dry-run` (`printingRequests`): no shared rate-limit state is read or written.
    var isDryRun = false
    /// The transport each client's requests go through.
    public var makeTransport: TransportFactory = { HTTPClient($0) }
    /// See `APIClientOptions.clock`; token lifetimes and cookie expiry are read on it too.
    public var clock: RunClock = .system

    public init(profile: ResolvedProfile, http: HTTPClientConfiguration, store: CredentialStore, environment: [String: String], credential: CredentialInForce) {
        self.profile = profile
        self.http = http
        self.store = store
        self.environment = environment
        self.credential = credential
    }

    /// The profile's `rate_limit`, shared through the config directory.
    public var rateLimiter: ClientRateLimiter? {
        guard let quota = profile.rateLimit else { return nil }
        return ClientRateLimiter(quota: quota, directory: store.directory, profile: profile.name)
    }

    public func makeTokens(http client: any HTTPTransport) -> AccessTokenSource {
        credential.tokens(profile: profile, store: store, http: client, now: clock.now)
    }

    /// `--dry-run`: clients like these whose transport prints each request as a curl
    /// command line instead of sending it (`DryRunTransport`), with `$DOUCTL_TOKEN` for
    /// the token (a shell fills it in). Nothing is read from or written to the config
    /// directory: no token store, cookie jar, `rate_limit` state or `--record` exchanges.
    public func printingRequests(to printer: DryRunPrinter) -> ClientFactory {
        var factory = self
        factory.credential = .environmentToken(DryRunPrinter.tokenPlaceholder)
        factory.makeTransport = { _ in DryRunTransport(printer) }
        factory.profile.rateLimit = nil
        factory.isDryRun = true
        factory.recorder = nil
        return factory
    }

    /// A client for one worker; a cookie jar that cannot be read fails it (exit 3).
    public func make() throws(DouctlError) -> APIClient {
        let client = makeTransport(http)
        return self.client(http: client, tokens: makeTokens(http: client), session: try credential.session(profile: profile, store: store, now: clock.now))
    }

    /// A client over `http` with these credentials (a login's new token, a session being
    /// ended), configured like every other.
    public func client(http: any HTTPTransport, tokens: AccessTokenSource?, session: SessionHooks?, cachePolicy: CachePolicy? = nil) -> APIClient {
        var options = APIClientOptions()
        options.allowsAnonymous = allowsAnonymous
        options.rateLimitWait = rateLimitWait
        options.environment = environment
        options.rateLimiter = rateLimiter
        if !isDryRun { options.serverRateLimit = ServerRateLimit(directory: store.directory, profile: profile.name) }
        options.recorder = recorder
        options.cachePolicy = cachePolicy
        options.cancellation = self.http.cancellation
        options.clock = clock
        (session as? CookieSession)?.verboseLog = self.http.verboseLog
        return APIClient(profile: profile, http: http, tokens: tokens, session: session, options: options)
    }
}
