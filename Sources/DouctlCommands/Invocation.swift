import DouctlArguments
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// One run of a command: the parsed arguments, the process's streams and variables, and
/// the core objects built from them on first use (so `--help` and `config` never touch
/// libcurl or the credentials file).
final class Invocation {
    let parsed: ParsedCommand
    let process: ProcessContext
    let stdout: OutputStream
    let stderr: OutputStream

    private var cachedDirectory: ConfigDirectory?
    private var cachedConfig: ConfigFile?
    private var cachedProfile: ResolvedProfile?
    private var cachedHTTP: HTTPClient?
    private var cachedTokens: AccessTokenSource??
    private var cachedAPI: APIClient?
    private var cachedHTTPConfiguration: HTTPClientConfiguration?

    init(parsed: ParsedCommand, process: ProcessContext, stdout: OutputStream, stderr: OutputStream) {
        self.parsed = parsed
        self.process = process
        self.stdout = stdout
        self.stderr = stderr
    }

    var environment: [String: String] { process.environment }

    // MARK: - global options

    var isVerbose: Bool { parsed.has("verbose") }
    var timeout: Double { parsed.number("timeout") ?? 30 }
    var prettyJSON: Bool { OutputStyle.pretty(parsed, isTerminal: stdout.isTerminal) }
    var useColor: Bool { stderr.isTerminal && environment["NO_COLOR"].map(\.isEmpty) != false }

    /// `--profile`, else `DOUCTL_PROFILE`; nil means "the default".
    var requestedProfile: String? {
        parsed.value("profile") ?? environment["DOUCTL_PROFILE"].flatMap { $0.isEmpty ? nil : $0 }
    }

    // MARK: - core objects

    func configDirectory() throws(DouctlError) -> ConfigDirectory {
        if let cachedDirectory { return cachedDirectory }
        let directory = try ConfigDirectory.locate(explicit: parsed.value("config-dir"), environment: environment)
        cachedDirectory = directory
        return directory
    }

    func config() throws(DouctlError) -> ConfigFile {
        if let cachedConfig { return cachedConfig }
        let config = try configDirectory().loadConfig()
        cachedConfig = config
        return config
    }

    /// Changes config.json under its lock and forgets the cached copy.
    @discardableResult
    func updateConfig<Result>(_ change: (inout ConfigFile) throws(DouctlError) -> Result) throws(DouctlError) -> Result {
        let result = try configDirectory().updateConfig(change)
        cachedConfig = nil
        cachedProfile = nil
        cachedHTTPConfiguration = nil
        return result
    }

    var profileName: String {
        get throws(DouctlError) { try config().activeProfileName(requested: requestedProfile) }
    }

    func profile() throws(DouctlError) -> ResolvedProfile {
        if let cachedProfile { return cachedProfile }
        let overrides = ProfileOverrides(
            apiBase: parsed.value("api-base"),
            clientID: environment["DOUCTL_CLIENT_ID"].flatMap { $0.isEmpty ? nil : $0 },
            clientSecret: environment["DOUCTL_CLIENT_SECRET"].flatMap { $0.isEmpty ? nil : $0 })
        if let apiBase = overrides.apiBase, !(apiBase.hasPrefix("http://") || apiBase.hasPrefix("https://")) {
            throw .usage("invalid value '\(apiBase)' for --api-base: expected an http:// or https:// URL")
        }
        let profile = try config().resolve(try profileName, overrides: overrides)
        cachedProfile = profile
        return profile
    }

    func credentialStore() throws(DouctlError) -> CredentialStore {
        CredentialStore(directory: try configDirectory())
    }

    /// This run's HTTP settings: timeout, retries, `-v` logging to stderr, TLS and proxy.
    /// Files named for TLS are checked here, so a missing one fails (exit 3) before any
    /// request is sent; `--insecure` warns once.
    func httpConfiguration() throws(DouctlError) -> HTTPClientConfiguration {
        if let cachedHTTPConfiguration { return cachedHTTPConfiguration }
        let fd = stderr.fileDescriptor
        let log: (@Sendable (String) -> Void)? = isVerbose ? { @Sendable line in _ = try? FileIO.writeAll(fd, line + "\n") } : nil
        let options = NetworkSettings.Options(
            caBundle: parsed.value("cacert"), caPath: parsed.value("capath"),
            clientCert: parsed.value("cert"), clientKey: parsed.value("key"),
            insecure: parsed.has("insecure"), proxy: parsed.value("proxy"))
        let network = try NetworkSettings.resolve(options: options, environment: environment, profile: try profile())
        if let insecureSource = network.insecureSource {
            warn("\(insecureSource): TLS certificates and host names are not verified; anyone on the path can read and change this traffic")
        }
        let configuration = HTTPClientConfiguration(
            timeout: timeout,
            retry: parsed.has("no-retry") ? .never : .standard,
            userAgent: "douctl/\(Douctl.version)",
            verboseLog: log,
            tls: network.tls,
            proxy: network.proxy,
            fallbackProxies: network.fallbackProxies)
        cachedHTTPConfiguration = configuration
        return configuration
    }

    func http() throws(DouctlError) -> HTTPClient {
        if let cachedHTTP { return cachedHTTP }
        let client = HTTPClient(try httpConfiguration())
        cachedHTTP = client
        return client
    }

    /// What worker threads use to build their own API clients.
    func clientFactory() throws(DouctlError) -> ClientFactory {
        let token = environment["DOUCTL_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
        return ClientFactory(profile: try profile(), http: try httpConfiguration(), store: try credentialStore(), fixedToken: token)
    }

    /// `DOUCTL_TOKEN` when set; otherwise the stored login, refreshed as needed.
    func tokens() throws(DouctlError) -> AccessTokenSource? {
        if let cachedTokens { return cachedTokens }
        let source = try clientFactory().makeTokens(http: try http())
        cachedTokens = .some(source)
        return source
    }

    func api() throws(DouctlError) -> APIClient {
        if let cachedAPI { return cachedAPI }
        let factory = try clientFactory()
        let client = APIClient(profile: factory.profile, http: try http(), tokens: try tokens(), session: CookieSession.hooks(for: factory.profile, store: factory.store))
        cachedAPI = client
        return client
    }

    func service() throws(DouctlError) -> SocialService { try api().service }

    /// Prints one page of a list as the API sent it, or with `--all` every item as NDJSON.
    func printListing(_ listing: Listing) throws(DouctlError) {
        let listing = listing.paged(start: parsed.integer("start"), count: parsed.integer("count"))
        if parsed.has("all") {
            try Paginator(client: try api()).walk(listing.request, scheme: listing.scheme) { (item: JSON) throws(DouctlError) in
                printJSONLine(item)
            }
        } else {
            printJSON(try api().send(listing.request).requireJSON())
        }
    }

    /// An error about one of several items (a file, an id), then the run goes on.
    func report(_ error: DouctlError, about item: String) {
        if parsed.value("error-format") == ErrorFormat.json.rawValue {
            var json = ErrorReport.json(error)
            if case .object(var object) = json {
                object["item"] = .string(item)
                json = .object(object)
            }
            stderr.line(json.text(.compact))
        } else {
            let prefix = useColor ? "\u{1B}[31mdouctl:\u{1B}[0m" : "douctl:"
            stderr.line("\(prefix) \(item): \(error.message)")
        }
    }

    // MARK: - output

    /// One JSON document on stdout, pretty on a terminal unless told otherwise.
    func printJSON(_ json: JSON) {
        var bytes = json.serialized(prettyJSON ? .pretty : .compact)
        bytes.append(0x0A)
        stdout.write(bytes)
    }

    /// One NDJSON line on stdout (streams are always compact, one value per line).
    func printJSONLine(_ json: JSON) {
        var bytes = json.serialized(.compact)
        bytes.append(0x0A)
        stdout.write(bytes)
        stdout.flush()
    }

    /// A line for a person, on stderr.
    func note(_ text: String) {
        stderr.line(text)
        stderr.flush()
    }

    func warn(_ text: String) {
        let prefix = useColor ? "\u{1B}[33mdouctl: warning:\u{1B}[0m" : "douctl: warning:"
        note("\(prefix) \(text)")
    }
}
