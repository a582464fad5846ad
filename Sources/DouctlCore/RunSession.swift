import DouctlHTTP
import DouctlSystem

/// What a run's global options and environment say about talking to an API, decided before
/// anything is built: the command layer fills it from the typed global options; the
/// session builds everything else from it, in one place.
public struct SessionSettings: Sendable {
    /// `--config-dir` (else `DOUCTL_CONFIG_DIR`, else the XDG default).
    public var configDirectory: String?
    /// `--profile` (else `DOUCTL_PROFILE`); nil: the config's default.
    public var profile: String?
    /// `--api-base`, for this run only.
    public var apiBase: String?
    /// Where a `.douctl` file is looked for, upward (`ProfileChoice`): the process's working
    /// directory when nil; tests give their own.
    public var workingDirectory: String?
    public var network: NetworkSettings.Options
    /// How every request is sent (timeout, retries, `-v`, rate-limit wait, recording, the
    /// transport), with the environment: handed to every client unchanged.
    public var requests: RequestSettings
    /// `--cache DURATION` in seconds (read as the options are bound), and `--cache-only`.
    public var cache: Double?
    public var cacheOnly: Bool
    /// The credential requests carry when the settings decide it; nil: `DOUCTL_TOKEN`, else
    /// the profile's stored login (`CredentialInForce.decide`).
    public var credential: CredentialInForce?
    /// What requests carry in place of the credential in force, in its scheme
    /// (`printingRequests`: `$DOUCTL_TOKEN`, see `CredentialInForce.placeholder`).
    public var credentialPlaceholder: String?
    /// A warning for a person (`--insecure`, a walk that stopped early).
    public var warn: @Sendable (String) -> Void

    public init(requests: RequestSettings) {
        self.requests = requests
        network = NetworkSettings.Options()
        cacheOnly = false
        warn = { _ in }
    }

    public var environment: [String: String] { requests.environment }

    /// `--profile`, else `DOUCTL_PROFILE`; nil means "the default".
    public var requestedProfile: String? {
        if let profile { return profile }
        guard let variable = environment["DOUCTL_PROFILE"], !variable.isEmpty else { return nil }
        return variable
    }

    /// `--dry-run`: these settings with a transport that prints each request as a curl
    /// command line instead of sending it (`DryRunTransport`), and `$DOUCTL_TOKEN` for the
    /// token (a shell fills it in), in the scheme the profile's credential is sent with
    /// (`Basic $DOUCTL_TOKEN` for a Basic login). Nothing secret is read and nothing is
    /// written: no token (only whether the stored login is Basic), cookie jar, response
    /// cache or `--record` exchanges, and no `rate_limit` state for a transport that sends
    /// nothing (`ClientFactory.client`). The rest of the run is the same as any other.
    public func printingRequests(to printer: DryRunPrinter) -> SessionSettings {
        var settings = self
        settings.requests.makeTransport = { _ in DryRunTransport(printer) }
        settings.requests.recorder = nil
        settings.credential = nil
        settings.credentialPlaceholder = DryRunPrinter.tokenPlaceholder
        settings.cache = nil
        settings.cacheOnly = false
        return settings
    }
}

/// One run's view of the API: the config directory, the profile, the HTTP settings, the
/// credential in force and the API clients, each decided once, on first use (so `--help` and
/// `config` never touch libcurl or the credentials file), and every client built here, from
/// the same settings. A write to config.json (`updateConfig`) is the one thing after which
/// what was decided from the file is decided again.
public final class RunSession {
    public let settings: SessionSettings

    private var cachedDirectory: ConfigDirectory?
    private var cachedConfig: ConfigFile?
    private var cachedChoice: ProfileChoice?
    /// The absolute URL `api` or `download` was given, for the URL rule; set before the
    /// profile is first used.
    public var targetURL: String? {
        didSet { cachedChoice = nil; cachedProfile = nil }
    }
    private var cachedProfile: ResolvedProfile?
    private var cachedHTTPConfiguration: HTTPClientConfiguration?
    private var cachedCredential: CredentialInForce?
    private var cachedHTTP: (any HTTPTransport)?
    private var cachedTokens: AccessTokenSource??
    private var cachedAPI: APIClient?

    public init(_ settings: SessionSettings) {
        self.settings = settings
    }

    public var environment: [String: String] { settings.environment }

    // MARK: - configuration

    public func configDirectory() throws(DouctlError) -> ConfigDirectory {
        if let cachedDirectory { return cachedDirectory }
        let directory = try ConfigDirectory.locate(explicit: settings.configDirectory, environment: environment)
        cachedDirectory = directory
        return directory
    }

    public func config() throws(DouctlError) -> ConfigFile {
        if let cachedConfig { return cachedConfig }
        let config = try configDirectory().loadConfig()
        cachedConfig = config
        return config
    }

    /// Changes config.json under its lock; what was decided from the old file is decided again.
    @discardableResult
    public func updateConfig<Result>(_ change: (inout ConfigFile) throws(DouctlError) -> Result) throws(DouctlError) -> Result {
        let result = try configDirectory().updateConfig(change)
        cachedConfig = nil
        cachedChoice = nil
        cachedProfile = nil
        cachedHTTPConfiguration = nil
        cachedCredential = nil
        return result
    }

    public var profileName: String {
        get throws(DouctlError) { try profileChoice().name }
    }

    /// Makes `choice` this run's profile (`auth login URL`, once the profile for the URL's
    /// origin is found or written); what was decided from the old one is decided again.
    public func choose(_ choice: ProfileChoice) {
        cachedChoice = choice
        cachedProfile = nil
        cachedHTTPConfiguration = nil
        cachedCredential = nil
        cachedHTTP = nil
        cachedTokens = nil
        cachedAPI = nil
    }

    /// Which profile this run uses and why (`ProfileChoice`): decided from the run's options,
    /// environment, working directory and URL, never from state another run wrote.
    public func profileChoice() throws(DouctlError) -> ProfileChoice {
        if let cachedChoice { return cachedChoice }
        let choice: ProfileChoice
        if let name = settings.profile {
            choice = ProfileChoice(name: name, rule: .option)
        } else if let variable = environment["DOUCTL_PROFILE"], !variable.isEmpty {
            choice = ProfileChoice(name: variable, rule: .environment)
        } else if let directory = settings.workingDirectory ?? ProfileChoice.currentDirectory(),
                  let file = try ProfileChoice.directoryFile(from: directory) {
            choice = ProfileChoice(name: file.profile, rule: .directoryFile(file.path))
        } else if let url = targetURL, let owner = try config().profileOwning(url) {
            choice = ProfileChoice(name: owner, rule: .url(url))
        } else if let name = try config().defaultProfile {
            choice = ProfileChoice(name: name, rule: .defaultProfile)
        } else {
            choice = ProfileChoice(name: try config().activeProfileName(requested: nil), rule: .builtIn)
        }
        cachedChoice = choice
        return choice
    }

    public func profile() throws(DouctlError) -> ResolvedProfile {
        if let cachedProfile { return cachedProfile }
        let overrides = ProfileOverrides(
            apiBase: settings.apiBase,
            clientID: environment["DOUCTL_CLIENT_ID"].flatMap { $0.isEmpty ? nil : $0 },
            clientSecret: environment["DOUCTL_CLIENT_SECRET"].flatMap { $0.isEmpty ? nil : $0 })
        if let apiBase = overrides.apiBase, !(apiBase.hasPrefix(bytes: "http://") || apiBase.hasPrefix(bytes: "https://")) {
            throw .usage("invalid value '\(apiBase)' for --api-base: expected an http:// or https:// URL")
        }
        let choice = try profileChoice()
        var profile: ResolvedProfile
        do {
            profile = try config().resolve(choice.name, overrides: overrides)
        } catch {
            // A profile named by a .douctl file: the error says which file named it.
            if case .directoryFile(let path) = choice.rule, case .usage(let text) = error {
                throw .usage("\(text) (named by \(path))")
            }
            throw error
        }
        // client_secret "$VAR" / "${VAR}" (config set client_secret '$VAR'): the secret is
        // the variable's value, read now, never stored; unset or empty is no secret.
        if let reference = profile.clientSecret, reference.hasPrefix("$"), reference.count > 1 {
            var name = reference.dropFirst()
            if name.hasPrefix("{") && name.hasSuffix("}") { name = name.dropFirst().dropLast() }
            profile.clientSecret = environment[String(name)].flatMap { $0.isEmpty ? nil : $0 }
        }
        cachedProfile = profile
        return profile
    }

    public func credentialStore() throws(DouctlError) -> CredentialStore {
        CredentialStore(directory: try configDirectory())
    }

    /// This run's HTTP settings: timeout, retries, `-v` logging, TLS and proxy. Files named
    /// for TLS are checked here, so a missing one fails (exit 3) before any request is sent;
    /// `--insecure` warns once.
    public func httpConfiguration() throws(DouctlError) -> HTTPClientConfiguration {
        if let cachedHTTPConfiguration { return cachedHTTPConfiguration }
        let network = try NetworkSettings.resolve(options: settings.network, environment: environment, profile: try profile())
        if let insecureSource = network.insecureSource {
            settings.warn("\(insecureSource): TLS certificates and host names are not verified; anyone on the path can read and change this traffic")
        }
        if let line = NetworkSettings.ignoredProxyNote(environment: environment, proxyGiven: settings.network.proxy != nil) {
            settings.requests.verboseLog?(line)
        }
        var configuration = settings.requests.httpConfiguration(network: network)
        if let keeper = settings.requests.keeper, let directory = try? configDirectory().path {
            configuration.keeper = keeper.route(network: network, profile: try profile(), environment: environment, configDirectory: directory)
        }
        cachedHTTPConfiguration = configuration
        return configuration
    }

    // MARK: - the response cache

    /// The response cache of this user: `$XDG_CACHE_HOME/douctl`, bounded by the profile's
    /// `cache_max_mb`.
    public func responseCache() throws(DouctlError) -> ResponseCache {
        guard let directory = ResponseCache.defaultDirectory(environment: environment) else {
            throw .localInput("no cache directory: set XDG_CACHE_HOME or HOME")
        }
        let megabytes = (try? profile().cacheMaxMB) ?? 50
        return ResponseCache(directory: directory, maximumBytes: Int64(megabytes * 1_000_000))
    }

    /// `--cache DURATION` / `--cache-only`, or nil.
    public func cachePolicy() throws(DouctlError) -> CachePolicy? {
        guard settings.cache != nil || settings.cacheOnly else { return nil }
        return CachePolicy(cache: try responseCache(), freshFor: settings.cache, cacheOnly: settings.cacheOnly, note: settings.warn)
    }

    // MARK: - credentials and clients

    /// The transport of this run's own client (workers build their own).
    public func http() throws(DouctlError) -> any HTTPTransport {
        if let cachedHTTP { return cachedHTTP }
        let client = settings.requests.makeTransport(try httpConfiguration())
        cachedHTTP = client
        return client
    }

    /// The credential this run's requests carry, decided once (`CredentialInForce`) and
    /// used by requests, `auth status`, `auth token`, `profile list` and the cache key;
    /// the settings' own when they decide it (no store is read then).
    public func credentialInForce() throws(DouctlError) -> CredentialInForce {
        if let credential = settings.credential { return credential }
        if let cachedCredential { return cachedCredential }
        let credential: CredentialInForce
        if let placeholder = settings.credentialPlaceholder {
            credential = .placeholder(placeholder, profile: try profile(), store: try credentialStore(), environment: environment)
        } else {
            credential = .decide(profile: try profile(), store: try credentialStore(), environment: environment)
        }
        cachedCredential = credential
        return credential
    }

    /// What every API client of this run is built from (workers build their own), with the
    /// run's request settings always in it.
    public func clientFactory() throws(DouctlError) -> ClientFactory {
        ClientFactory(profile: try profile(), http: try httpConfiguration(), store: try credentialStore(),
                      requests: settings.requests, credential: try credentialInForce())
    }

    /// `DOUCTL_TOKEN` when set; otherwise the stored login, refreshed as needed.
    public func tokens() throws(DouctlError) -> AccessTokenSource? {
        if let cachedTokens { return cachedTokens }
        let source = try clientFactory().makeTokens(http: try http())
        cachedTokens = .some(source)
        return source
    }

    /// The run's API client; `allowsAnonymous` for `douctl api`, which sends a request
    /// without a token when there is no login, as curl would (see `APIClientOptions`).
    public func api(allowsAnonymous: Bool = false) throws(DouctlError) -> APIClient {
        if let cachedAPI, cachedAPI.allowsAnonymous == allowsAnonymous { return cachedAPI }
        var factory = try clientFactory()
        factory.allowsAnonymous = allowsAnonymous
        let session = try factory.credential.session(profile: factory.profile, store: factory.store, now: factory.requests.clock.now)
        let client = factory.client(http: try http(), tokens: try tokens(), session: session, cachePolicy: try cachePolicy())
        cachedAPI = client
        return client
    }

    /// A walk over `client`'s pages (the run's own client unless given), ready to iterate:
    /// items under `itemsKey`, numbered pages fetched `width` at a time by worker clients
    /// built like it (each on its own thread; one at a time through the response cache),
    /// warnings through the settings' `warn`; at most `maximumPages` pages (tests lower it:
    /// `ProcessContext.pageCap`).
    public func paginator(over: APIClient? = nil, itemsKey: String? = nil, parallel width: Int,
                          maximumPages: Int = Paginator.defaultMaximumPages) throws(DouctlError) -> Paginator {
        let client: APIClient
        if let given = over { client = given } else { client = try api() }
        var paginator = Paginator(client: client)
        paginator.itemsKey = itemsKey
        paginator.warn = settings.warn
        paginator.maximumPages = maximumPages
        if width > 1, client.cachePolicy == nil {
            var factory = try clientFactory()
            factory.allowsAnonymous = client.allowsAnonymous
            let workers = factory
            paginator.parallel = ParallelPaging(width: width) { () throws(DouctlError) -> APIClient in try workers.make() }
        }
        return paginator
    }

    public func service() throws(DouctlError) -> SocialService { try api().service }
}
