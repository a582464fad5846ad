import DouctlHTTP
import DouctlSystem

/// How every request of a run is sent, decided once — from the global options and the
/// environment, by the command layer — and handed down unchanged: the session keeps it
/// (`SessionSettings.requests`), the client factory carries it (`ClientFactory.requests`)
/// and each client reads it (`APIClient.requests`). A setting such as
/// `--wait-on-rate-limit` is one field here, not a copy per type.
public struct RequestSettings: Sendable {
    /// The process's environment: `DOUCTL_TOKEN`, `DOUCTL_PROFILE`, proxies, the config
    /// and cache directories, and the "$VAR" values in common_params, common_headers and
    /// signing_secret. Stored here only.
    public var environment: [String: String]
    /// The transport requests go through: libcurl (`HTTPClient.transport`), a scripted one
    /// in tests, or one that prints them (`SessionSettings.printingRequests`).
    public var makeTransport: TransportFactory
    public var userAgent: String
    /// `--timeout`: per connection and stalled transfer (see `HTTPClientConfiguration`).
    public var timeout: Double = 30
    /// `--retry`, `--no-retry`, `--retry-max-time`.
    public var retry: RetryPolicy = .standard
    /// `-v`: each request and reply, secrets redacted.
    public var verboseLog: (@Sendable (String) -> Void)?
    /// One line for a person on stderr for every wait and retry (how long, why, which try):
    /// the HTTP client's retries, the `rate_limit` quota's longer waits. Nil with `--quiet`.
    public var announce: (@Sendable (String) -> Void)?
    /// The run's stop request (Ctrl-C, `--max-time`, a test's): every transfer, retry wait,
    /// rate-limit wait, walk and batch polls it.
    public var cancellation: Cancellation = .process
    /// Wall time and waits for everything a client dates or times: a server's announced
    /// reset and `Retry-After`, the `rate_limit` quota, cache ages, request signatures,
    /// token lifetimes and cookie expiry. The system's in douctl; a test's virtual clock
    /// in process (`ProcessContext.clock`).
    public var clock: RunClock = .system
    /// `--wait-on-rate-limit`: a rate-limited reply (429, or Douban's 111/112) is waited out
    /// (the command layer draws the wait) and the request sent again, POSTs too (a
    /// rate-limited request was not processed).
    public var rateLimitWait: RateLimitWait?
    /// `--record DIR`: every exchange written there, secrets scrubbed.
    public var recorder: ExchangeRecorder?
    /// Every secret the run's requests carried, registered as each leaves (the command layer
    /// makes its transports with `SentSecrets.registering`), so the one writer of stderr masks
    /// whatever a server echoes back. A reference: every copy of these settings, every client
    /// and worker of the run, shares the one registry.
    public var sentSecrets = SentSecrets()
    /// The connection keeper, unless `--no-keep` or `DOUCTL_KEEP=0` turned it off (the
    /// session adds the profile's `keep` and the network settings).
    public var keeper: KeeperChoice?

    public init(environment: [String: String] = [:], userAgent: String = "douctl", makeTransport: @escaping TransportFactory = HTTPClient.transport) {
        self.environment = environment
        self.userAgent = userAgent
        self.makeTransport = makeTransport
    }

    /// The HTTP client settings these give with the network's (TLS, proxies, socket), which
    /// the session resolves once the profile is known.
    func httpConfiguration(network: NetworkSettings) -> HTTPClientConfiguration {
        HTTPClientConfiguration(
            timeout: timeout,
            retry: retry,
            userAgent: userAgent,
            verboseLog: verboseLog,
            announce: announce,
            clock: clock,
            cancellation: cancellation,
            tls: network.tls,
            proxy: network.proxy,
            fallbackProxies: network.fallbackProxies,
            unixSocket: network.unixSocket,
            // A libcurl named in DOUCTL_LIBCURL is the one asked for: it carries every request.
            ownPlainHTTP: (environment["DOUCTL_LIBCURL"] ?? "").isEmpty)
    }
}
