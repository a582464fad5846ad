import DouctlArguments
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// One run of a command: the parsed arguments, the process's streams and variables, and
/// the core objects built from them on first use (so `--help` and `config` never touch
/// libcurl or the credentials file).
final class CommandContext {
    /// What the parser understood, for commands not yet typed (being retired).
    let parsed: ParsedCommand
    /// The global options, typed.
    let globals: GlobalOptionValues
    /// How the command's own options say its output is shown.
    let presentation: OutputPresentation
    let process: ProcessContext
    let stdout: OutputStream
    let stderr: OutputStream

    private var cachedDirectory: ConfigDirectory?
    private var cachedConfig: ConfigFile?
    private var cachedProfile: ResolvedProfile?
    private var cachedHTTP: (any HTTPTransport)?
    private var cachedTokens: AccessTokenSource??
    private var cachedAPI: APIClient?
    /// Set for `--dry-run`: requests are printed, not sent (see `Douctl.dryRun`).
    var dryRun: DryRunPrinter?
    private var cachedHTTPConfiguration: HTTPClientConfiguration?

    init(parsed: ParsedCommand, presentation: OutputPresentation = OutputPresentation(), process: ProcessContext, stdout: OutputStream, stderr: OutputStream) {
        self.parsed = parsed
        // The parser has checked every global option's form; binding them cannot fail.
        self.globals = (try? GlobalOptionValues.bind(parsed)) ?? GlobalOptionValues()
        self.presentation = presentation
        self.process = process
        self.stdout = stdout
        self.stderr = stderr
    }

    var environment: [String: String] { process.environment }

    // MARK: - global options

    var isVerbose: Bool { globals.verbose }
    var timeout: Double { globals.timeout }
    var prettyJSON: Bool { globals.prettyJSON(isTerminal: stdout.isTerminal) }
    /// Colour on stderr (errors, warnings): `--color`, `NO_COLOR`, a terminal.
    var useColor: Bool { ColorChoice.enabled(globals.color, isTerminal: stderr.isTerminal, environment: environment) }

    /// `--profile`, else `DOUCTL_PROFILE`; nil means "the default".
    var requestedProfile: String? {
        globals.profile ?? environment["DOUCTL_PROFILE"]?.nonEmpty
    }

    // MARK: - core objects

    func configDirectory() throws(DouctlError) -> ConfigDirectory {
        if let cachedDirectory { return cachedDirectory }
        let directory = try ConfigDirectory.locate(explicit: globals.configDirectory, environment: environment)
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
        cachedCredential = nil
        return result
    }

    var profileName: String {
        get throws(DouctlError) { try config().activeProfileName(requested: requestedProfile) }
    }

    func profile() throws(DouctlError) -> ResolvedProfile {
        if let cachedProfile { return cachedProfile }
        let overrides = ProfileOverrides(
            apiBase: globals.apiBase,
            clientID: environment["DOUCTL_CLIENT_ID"]?.nonEmpty,
            clientSecret: environment["DOUCTL_CLIENT_SECRET"]?.nonEmpty)
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
            caBundle: globals.caBundle, caPath: globals.caPath,
            clientCert: globals.clientCert, clientKey: globals.clientKey,
            insecure: globals.insecure, proxy: globals.proxy)
        let network = try NetworkSettings.resolve(options: options, environment: environment, profile: try profile())
        if let insecureSource = network.insecureSource {
            warn("\(insecureSource): TLS certificates and host names are not verified; anyone on the path can read and change this traffic")
        }
        let configuration = HTTPClientConfiguration(
            timeout: timeout,
            retry: retryPolicy,
            userAgent: "douctl/\(Douctl.version)",
            verboseLog: log,
            tls: network.tls,
            proxy: network.proxy,
            fallbackProxies: network.fallbackProxies)
        cachedHTTPConfiguration = configuration
        return configuration
    }

    /// `--retry N` (default 2 retries, 3 tries), `--no-retry` (0), `--retry-max-time`.
    var retryPolicy: RetryPolicy {
        var policy = RetryPolicy.standard
        policy.maxAttempts = globals.noRetry ? 1 : globals.retry + 1
        policy.maxElapsed = globals.retryMaxTime
        return policy
    }

    /// The response cache of this user: `$XDG_CACHE_HOME/douctl`, bounded by the profile's
    /// `cache_max_mb`.
    func responseCache() throws(DouctlError) -> ResponseCache {
        guard let directory = ResponseCache.defaultDirectory(environment: environment) else {
            throw .localInput("no cache directory: set XDG_CACHE_HOME or HOME")
        }
        let megabytes = (try? profile().cacheMaxMB) ?? 50
        return ResponseCache(directory: directory, maximumBytes: Int64(megabytes * 1_000_000))
    }

    /// `--cache DURATION` / `--cache-only`, or nil.
    func cachePolicy() throws(DouctlError) -> CachePolicy? {
        let duration = globals.cache
        guard duration != nil || globals.cacheOnly else { return nil }
        var freshFor: Double?
        if let duration {
            guard let seconds = CachePolicy.parseDuration(duration) else {
                throw .usage("invalid value '\(duration)' for --cache: expected a duration such as 30s, 5m, 1h")
            }
            freshFor = seconds
        }
        let fd = stderr.fileDescriptor
        return CachePolicy(cache: try responseCache(), freshFor: freshFor, cacheOnly: globals.cacheOnly) { line in
            _ = try? FileIO.writeAll(fd, line + "\n")
        }
    }

    /// `--wait-on-rate-limit`: sleeps out a rate limit with a countdown on a terminal.
    var rateLimitWait: RateLimitWait? {
        guard globals.waitOnRateLimit else { return nil }
        let fd = stderr.fileDescriptor
        let isTerminal = stderr.isTerminal
        let budget = globals.retryMaxTime
        return RateLimitWait(maximum: budget ?? 3 * 3600) { seconds, reason in
            let total = Int(seconds.rounded(.up))
            if isTerminal {
                for left in stride(from: total, to: 0, by: -1) {
                    _ = try? FileIO.writeAll(fd, "\r\u{1B}[2Kdouctl: rate limited (\(reason)); going on in \(left)s")
                    interruptibleSleep(min(1, seconds - Double(total - left)))
                    if Interrupt.requested { break }
                }
                _ = try? FileIO.writeAll(fd, "\r\u{1B}[2K")
            } else {
                _ = try? FileIO.writeAll(fd, "douctl: rate limited (\(reason)); waiting \(total)s\n")
                interruptibleSleep(seconds)
            }
            return !Interrupt.requested
        }
    }

    func http() throws(DouctlError) -> any HTTPTransport {
        if let cachedHTTP { return cachedHTTP }
        let client = process.makeTransport(try httpConfiguration())
        cachedHTTP = client
        return client
    }

    /// The credential this run's requests carry, decided once (`CredentialInForce`): a dry
    /// run reads no store and sends none.
    func credentialInForce() throws(DouctlError) -> CredentialInForce {
        if dryRun != nil { return .none }
        if let cachedCredential { return cachedCredential }
        let credential = CredentialInForce.decide(profile: try profile(), store: try credentialStore(), environment: environment)
        cachedCredential = credential
        return credential
    }

    private var cachedCredential: CredentialInForce?

    /// What every API client of this run is built from (workers build their own), with the
    /// environment always in it.
    func clientFactory() throws(DouctlError) -> ClientFactory {
        var factory = ClientFactory(profile: try profile(), http: try httpConfiguration(), store: try credentialStore(),
                                    environment: environment, credential: try credentialInForce())
        factory.rateLimitWait = rateLimitWait
        factory.recorder = globals.record.map(ExchangeRecorder.init(directory:))
        factory.makeTransport = process.makeTransport
        if let dryRun { factory = factory.printingRequests(to: dryRun) }
        return factory
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
        let client: APIClient
        if dryRun != nil {
            client = try factory.make()
        } else {
            let session = try factory.credential.session(profile: factory.profile, store: factory.store)
            client = factory.client(http: try http(), tokens: try tokens(), session: session, cachePolicy: try cachePolicy())
        }
        cachedAPI = client
        return client
    }

    func service() throws(DouctlError) -> SocialService { try api().service }

    /// The ID argument, with `{me}` replaced by the logged-in user's id.
    func idArgument(_ name: String = "ID") throws(DouctlError) -> String {
        try expandingID(parsed.argument(name) ?? "", name: name)
    }

    /// An id argument, with `{me}` replaced by the logged-in user's id; an empty one is refused.
    func expandingID(_ id: String, name: String = "ID") throws(DouctlError) -> String {
        guard !id.isEmpty else { throw .usage("missing argument \(name)") }
        return try api().expandingPlaceholders(id)
    }

    /// Prints one page of a list as the API sent it, or with `--all` every item as NDJSON.
    /// On a terminal, `view` shows the page (or each item) to a person instead.
    func printListing(_ listing: Listing, paging: PagingOptions, view: HumanView? = nil) throws(DouctlError) {
        let listing = listing.paged(start: paging.start, count: paging.count)
        if paging.all {
            try walk(listing.request, scheme: listing.scheme, paging: paging, view: view)
        } else {
            let page = try api().send(listing.request).requireJSON()
            if let view { printDocument(page, view: view) } else { printJSON(page) }
        }
    }

    /// Walks every page, printing each item as an NDJSON line, or with `--slurp` as one
    /// JSON array written as the items arrive (memory stays flat). When the walk fails
    /// part-way, what was printed stays, and a slurped array is closed so it still parses.
    func walk(_ request: APIRequest, scheme: PageScheme? = nil, client given: APIClient? = nil, paging: PagingOptions, view: HumanView? = nil) throws(DouctlError) {
        let client: APIClient
        if let given { client = given } else { client = try api() }
        var paginator = Paginator(client: client)
        paginator.warn = { self.warn($0) }
        // Hidden, for tests: a small page cap instead of 100,000.
        if let cap = environment["DOUCTL_MAX_PAGES"].flatMap({ Int($0) }), cap > 0 { paginator.maximumPages = cap }
        paginator.parallel = try parallelPaging(like: client, width: paging.parallel)
        let out = stdout
        /// A failed write to stdout (the reader quit: `| head`) ends the walk at once: no
        /// more pages are fetched for nobody. `Douctl.main` decides what it means.
        func stopIfOutputFailed() throws(DouctlError) {
            out.flush()
            if out.failed { throw .transport(.outputFailed("standard output")) }
        }
        guard paging.slurp else {
            let itemView = wantsView ? view : nil
            let itemContext = viewContext
            try paginator.walk(request, scheme: scheme) { (item: JSON) throws(DouctlError) in
                if let itemView { printLines(itemView.item(TerminalText.clean(item), itemContext)) } else { printJSONLine(item) }
                try stopIfOutputFailed()
            }
            return
        }
        let pretty = prettyJSON
        var count = 0
        var finished = false
        defer {
            // A walk that printed nothing and failed prints nothing; otherwise the array closes.
            if count > 0 || finished {
                stdout.write(Array((count == 0 ? "[]\n" : pretty ? "\n]\n" : "]\n").utf8))
                stdout.flush()
            }
        }
        try paginator.walk(request, scheme: scheme) { (item: JSON) throws(DouctlError) in
            if out.failed { throw .transport(.outputFailed("standard output")) }
            var text = count == 0 ? "[" : ","
            if pretty {
                text += "\n  " + item.text(.pretty).replacingAll("\n", with: "\n  ")
            } else {
                text += item.text(.compact)
            }
            stdout.write(Array(text.utf8))
            count += 1
        }
        finished = true
    }

    /// `--parallel N` (default 4): worker clients like `client`, each built on its own
    /// thread. A walk through the response cache goes one page at a time (a dry run's
    /// stand-in first page ends its walk).
    func parallelPaging(like client: APIClient, width: Int) throws(DouctlError) -> ParallelPaging? {
        guard width > 1, client.cachePolicy == nil else { return nil }
        var settings = try clientFactory()
        settings.allowsAnonymous = client.allowsAnonymous
        let factory = settings
        return ParallelPaging(width: width) { () throws(DouctlError) -> APIClient in try factory.make() }
    }

    /// An error about one of several items (a file, an id), then the run goes on.
    func report(_ error: DouctlError, about item: String?) {
        stderr.line(ErrorReport.line(error, item: item, json: wantsJSONErrors, color: useColor))
    }

    var wantsJSONErrors: Bool { globals.errorFormat == .json }

    // MARK: - errors

    /// `--error-body`, else (for `api`) stdout on a terminal and stderr in a pipe: an error
    /// never puts a document on a script's stdout unless asked.
    var errorBodyDestination: ErrorBodyDestination {
        if let chosen = globals.errorBody { return chosen }
        guard presentation.showsErrorBodies else { return .none }
        return stdout.isTerminal ? .stdout : .stderr
    }

    /// The stream `--error-body` names, or nil for none.
    var errorBodyStream: OutputStream? {
        switch errorBodyDestination {
        case .stdout: return stdout
        case .stderr: return stderr
        case .none: return nil
        }
    }

    /// The reply body of an API error where `--error-body` says: as received with --raw,
    /// else as JSON (pretty on a terminal); a body that is not JSON only with --raw.
    func printErrorBody(of error: DouctlError) {
        guard case .api(let apiError) = error, let body = apiError.body, !body.isEmpty, let stream = errorBodyStream else { return }
        if presentation.rawErrorBodies {
            stream.write(body)
            if body.last != 0x0A { stream.write([0x0A]) }
        } else if let json = try? JSONParser.parse(body) {
            var bytes = json.serialized(globals.prettyJSON(isTerminal: stream.isTerminal) ? .pretty : .compact)
            bytes.append(0x0A)
            stream.write(bytes)
        }
        stream.flush()
    }

    // MARK: - output

    /// `--progress WHEN` of upload, download and api: a display on stderr for `always`,
    /// or for `auto` when stderr is a terminal; nil for `never`.
    func progressDisplay(_ mode: ProgressMode) -> ProgressDisplay? {
        guard mode == .always || (mode == .auto && stderr.isTerminal) else { return nil }
        return ProgressDisplay(fd: stderr.fileDescriptor, redrawsInPlace: stderr.isTerminal)
    }

    /// One JSON document on stdout, pretty on a terminal unless told otherwise.
    func printJSON(_ json: JSON) {
        var bytes = colored(json.serialized(prettyJSON ? .pretty : .compact))
        bytes.append(0x0A)
        stdout.write(bytes)
    }

    /// One NDJSON line on stdout (streams are always compact, one value per line).
    func printJSONLine(_ json: JSON) {
        var bytes = colored(json.serialized(.compact))
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

/// Where an API error reply's body goes (`--error-body`).
enum ErrorBodyDestination: String, Sendable { case stdout, stderr, none }
