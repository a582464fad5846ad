import DouctlArguments
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// What a command runs over, fixed before it starts: the process's streams and variables,
/// the typed global options, how its output is shown, and the session (`RunSession`, in the
/// core) that decides configuration, credential and clients once, on first use (so `--help`
/// and `config` never touch libcurl or the credentials file). Tests build it with another
/// `ProcessContext`: other descriptors, variables and a scripted transport.
struct CommandContext {
    /// The global options, typed.
    let globals: GlobalOptionValues
    /// How the command's own options say its output is shown.
    let presentation: OutputPresentation
    let process: ProcessContext
    let stdout: OutputStream
    let stderr: OutputStream

    /// The run's view of the API: configuration, credential, clients, decided once.
    let session: RunSession
    /// The one writer of lines for a person on stderr (see `Printer`).
    let printer: Printer
    /// What stops the run (Ctrl-C, `--max-time`, a test's request); the session's clients
    /// poll the same one.
    var cancellation: Cancellation { process.cancellation }
    /// Wall time and waits; `sleep` ends early once the run is cancelled.
    var clock: RunClock { process.clock }

    /// Waits `seconds` on the context's clock, less once the run is cancelled.
    func sleep(_ seconds: Double) { process.clock.sleep(seconds, process.cancellation) }

    init(globals: GlobalOptionValues, presentation: OutputPresentation = OutputPresentation(), process: ProcessContext, stdout: OutputStream, stderr: OutputStream, dryRun: DryRunPrinter? = nil) {
        self.globals = globals
        self.presentation = presentation
        self.process = process
        self.stdout = stdout
        self.stderr = stderr
        let printer = Printer(stderr: stderr, color: ColorChoice.enabled(globals.color, isTerminal: stderr.isTerminal, environment: process.environment))
        self.printer = printer
        session = RunSession(Self.settings(globals, process: process, printer: printer, dryRun: dryRun))
    }

    /// What the session is built from: the typed global options, the environment, and the
    /// printer's side of `-v`, the cache's notes, warnings and the rate-limit countdown.
    private static func settings(_ globals: GlobalOptionValues, process: ProcessContext, printer: Printer, dryRun: DryRunPrinter?) -> SessionSettings {
        var settings = SessionSettings(environment: process.environment, userAgent: "douctl/\(Douctl.version)", makeTransport: process.makeTransport)
        let line: @Sendable (String) -> Void = { text in printer.line(text) }
        settings.configDirectory = globals.configDirectory
        settings.profile = globals.profile
        settings.apiBase = globals.apiBase
        settings.network = NetworkSettings.Options(
            caBundle: globals.caBundle, caPath: globals.caPath,
            clientCert: globals.clientCert, clientKey: globals.clientKey,
            insecure: globals.insecure, proxy: globals.proxy, unixSocket: globals.unixSocket)
        settings.timeout = globals.timeout
        settings.retry = retryPolicy(globals)
        settings.verboseLog = globals.verbose ? line : nil
        settings.cache = globals.cache
        settings.cacheOnly = globals.cacheOnly
        settings.cacheLog = line
        settings.record = globals.record
        settings.rateLimitWait = rateLimitWait(globals, printer: printer, clock: process.clock, cancellation: process.cancellation)
        settings.cancellation = process.cancellation
        settings.clock = process.clock
        settings.dryRun = dryRun
        settings.warn = { text in printer.line(Self.warning(text), style: .warning) }
        return settings
    }

    var environment: [String: String] { process.environment }

    // MARK: - global options

    var prettyJSON: Bool { globals.prettyJSON(isTerminal: stdout.isTerminal) }
    /// Colour on stderr (errors, warnings): `--color`, `NO_COLOR`, a terminal.
    var useColor: Bool { printer.color }

    /// `--profile`, else `DOUCTL_PROFILE`; nil means "the default".
    var requestedProfile: String? { session.settings.requestedProfile }

    // MARK: - the session's objects (see `RunSession`)

    var dryRun: DryRunPrinter? { session.settings.dryRun }
    func configDirectory() throws(DouctlError) -> ConfigDirectory { try session.configDirectory() }
    func config() throws(DouctlError) -> ConfigFile { try session.config() }

    /// Changes config.json under its lock (see `RunSession.updateConfig`).
    @discardableResult
    func updateConfig<Result>(_ change: (inout ConfigFile) throws(DouctlError) -> Result) throws(DouctlError) -> Result {
        try session.updateConfig(change)
    }

    var profileName: String { get throws(DouctlError) { try session.profileName } }
    func profile() throws(DouctlError) -> ResolvedProfile { try session.profile() }
    func credentialStore() throws(DouctlError) -> CredentialStore { try session.credentialStore() }
    var retryPolicy: RetryPolicy { session.settings.retry }
    func responseCache() throws(DouctlError) -> ResponseCache { try session.responseCache() }
    func http() throws(DouctlError) -> any HTTPTransport { try session.http() }
    func credentialInForce() throws(DouctlError) -> CredentialInForce { try session.credentialInForce() }
    func clientFactory() throws(DouctlError) -> ClientFactory { try session.clientFactory() }
    func tokens() throws(DouctlError) -> AccessTokenSource? { try session.tokens() }
    func api() throws(DouctlError) -> APIClient { try session.api() }
    func service() throws(DouctlError) -> SocialService { try session.service() }

    /// `--retry N` (default 2 retries, 3 tries), `--no-retry` (0), `--retry-max-time`.
    private static func retryPolicy(_ globals: GlobalOptionValues) -> RetryPolicy {
        var policy = RetryPolicy.standard
        policy.maxAttempts = globals.noRetry ? 1 : globals.retry + 1
        policy.maxElapsed = globals.retryMaxTime
        return policy
    }

    /// `--wait-on-rate-limit`: sleeps out a rate limit with a countdown on a terminal.
    private static func rateLimitWait(_ globals: GlobalOptionValues, printer: Printer, clock: RunClock, cancellation: Cancellation) -> RateLimitWait? {
        guard globals.waitOnRateLimit else { return nil }
        let isTerminal = printer.stderr.isTerminal
        let budget = globals.retryMaxTime
        return RateLimitWait(maximum: budget ?? 3 * 3600) { seconds, reason in
            let total = Int(seconds.rounded(.up))
            if isTerminal {
                for left in stride(from: total, to: 0, by: -1) {
                    printer.write(Array("\r\u{1B}[2Kdouctl: rate limited (\(reason)); going on in \(left)s".utf8))
                    clock.sleep(min(1, seconds - Double(total - left)), cancellation)
                    if cancellation.isRequested { break }
                }
                printer.write(Array("\r\u{1B}[2K".utf8))
            } else {
                printer.line("douctl: rate limited (\(reason)); waiting \(total)s")
                clock.sleep(seconds, cancellation)
            }
            return !cancellation.isRequested
        }
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
    func walk(_ request: APIRequest, scheme: PageScheme? = nil, client given: APIClient? = nil, paging: PagingOptions, view: HumanView? = nil,
              itemsKey: String? = nil) throws(DouctlError) {
        let client: APIClient
        if let given { client = given } else { client = try api() }
        var paginator = Paginator(client: client)
        paginator.itemsKey = itemsKey
        paginator.warn = { self.warn($0) }
        paginator.maximumPages = process.pageCap
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
                if let itemView { printLines(itemView.item(TerminalText.shown(item), itemContext)) } else { printJSONLine(item) }
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
        printer.line(ErrorReport.line(error, item: item, json: wantsJSONErrors), style: .error)
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
        var bytes: [UInt8]
        if presentation.rawErrorBodies {
            bytes = body
        } else if let json = try? JSONParser.parse(body) {
            bytes = json.serialized(globals.prettyJSON(isTerminal: stream.isTerminal) ? .pretty : .compact)
            // For a person (stderr, or a terminal): what the terminal would obey is spelt as
            // a JSON escape, the same value to a reader (TerminalText).
            if stream === stderr || stream.isTerminal { bytes = JSONColorizer.colorize(bytes, colors: false) }
        } else {
            return
        }
        if bytes.last != 0x0A { bytes.append(0x0A) }
        if stream === stderr {
            printer.write(bytes)
        } else {
            stream.write(bytes)
            stream.flush()
        }
    }

    // MARK: - output

    /// `--progress WHEN` of upload, download and api: a display on stderr for `always`,
    /// or for `auto` when stderr is a terminal; nil for `never`.
    func progressDisplay(_ mode: ProgressMode) -> ProgressDisplay? {
        printer.startProgress(mode)
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
        printer.line(text)
    }

    func warn(_ text: String) {
        printer.line(Self.warning(text), style: .warning)
    }

    static func warning(_ text: String) -> String {
        "douctl: warning: " + text
    }
}

/// Where an API error reply's body goes (`--error-body`).
enum ErrorBodyDestination: String, Sendable { case stdout, stderr, none }
