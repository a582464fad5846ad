import DouctlArguments
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// What a command runs over, fixed before it starts: the typed global options, the process
/// (variables, standard input, cancellation, clock), the session (`RunSession`, in the core:
/// configuration, credential and clients, decided once on first use, so `--help` and
/// `config` never touch libcurl or the credentials file) and the output (`Output`: stdout,
/// stderr and the terminal). Tests build it with another `ProcessContext`: other
/// descriptors, terminal facts, variables and a scripted transport.
struct CommandContext {
    /// The global options, typed.
    let globals: GlobalOptionValues
    let process: ProcessContext
    /// The run's view of the API: configuration, credential, clients, decided once.
    let session: RunSession
    /// Everything the run shows, and how.
    let output: Output
    /// False under `--dry-run` (which the command table lets only commands that call the API
    /// take): decided once, here, for what a printed request has no use for (a prompt
    /// before posting, a file to write, a stream to show).
    let sendsRequests: Bool

    /// What stops the run (Ctrl-C, `--max-time`, a test's request); the session's clients
    /// poll the same one.
    var cancellation: Cancellation { process.cancellation }
    /// Wall time and waits; `sleep` ends early once the run is cancelled.
    var clock: RunClock { process.clock }
    var environment: [String: String] { process.environment }

    /// Waits `seconds` on the context's clock, less once the run is cancelled.
    func sleep(_ seconds: Double) { process.clock.sleep(seconds, process.cancellation) }

    init(globals: GlobalOptionValues, output: Output, process: ProcessContext, dryRun: DryRunPrinter? = nil) {
        self.globals = globals
        self.process = process
        self.output = output
        sendsRequests = dryRun == nil
        session = RunSession(Self.settings(globals, process: process, output: output, dryRun: dryRun))
    }

    /// What the session is built from: the typed global options, the environment, and the
    /// output's side of `-v`, the cache's notes, warnings and the rate-limit countdown. The
    /// request settings are built here once and handed down unchanged; a printer of
    /// requests swaps in the transport that prints them (`SessionSettings.printingRequests`).
    private static func settings(_ globals: GlobalOptionValues, process: ProcessContext, output: Output, dryRun: DryRunPrinter?) -> SessionSettings {
        let line: @Sendable (String) -> Void = { text in output.note(text) }
        // Every request registers the secrets it carries as it leaves, in the registry the
        // output masks stderr with.
        var requests = RequestSettings(environment: process.environment, userAgent: "douctl/\(Douctl.version)",
                                       makeTransport: output.sentSecrets.registering(process.makeTransport))
        requests.sentSecrets = output.sentSecrets
        requests.timeout = globals.timeout
        requests.retry = retryPolicy(globals)
        requests.verboseLog = globals.verbose ? line : nil
        let announce: @Sendable (String) -> Void = { text in output.note("douctl: " + text) }
        requests.announce = globals.quiet ? nil : announce
        requests.cancellation = process.cancellation
        requests.clock = process.clock
        if globals.waitOnRateLimit {
            let (clock, cancellation, quiet) = (process.clock, process.cancellation, globals.quiet)
            requests.rateLimitWait = RateLimitWait(maximum: globals.retryMaxTime ?? 3 * 3600) { seconds, reason in
                output.waitOutRateLimit(seconds: seconds, reason: reason, clock: clock, cancellation: cancellation, quiet: quiet)
            }
        }
        requests.recorder = globals.record.map(ExchangeRecorder.init(directory:))
        if !globals.noKeep {
            requests.keeper = KeeperChoice.fromEnvironment(process.environment["DOUCTL_KEEP"], executable: KeeperCommands.executable, version: Douctl.version)
        }
        var settings = SessionSettings(requests: requests)
        settings.configDirectory = globals.configDirectory
        settings.profile = globals.profile
        settings.apiBase = globals.apiBase
        settings.workingDirectory = process.workingDirectory
        settings.network = NetworkSettings.Options(
            caBundle: globals.caBundle, caPath: globals.caPath,
            clientCert: globals.clientCert, clientKey: globals.clientKey,
            insecure: globals.insecure, proxy: globals.proxy, unixSocket: globals.unixSocket)
        settings.cache = globals.cache
        settings.cacheOnly = globals.cacheOnly
        settings.warn = { text in output.warn(text) }
        return dryRun.map(settings.printingRequests) ?? settings
    }

    /// `--retry N` (default 2 retries, 3 tries), `--no-retry` (0), `--retry-max-time`.
    private static func retryPolicy(_ globals: GlobalOptionValues) -> RetryPolicy {
        var policy = RetryPolicy.standard
        policy.maxAttempts = globals.noRetry ? 1 : globals.retry + 1
        policy.maxElapsed = globals.retryMaxTime
        return policy
    }

    /// An id argument, with `{me}` replaced by the logged-in user's id; an empty one is refused.
    func expandingID(_ id: String, name: String = "ID") throws(DouctlError) -> String {
        guard !id.isEmpty else { throw .usage("missing argument \(name)") }
        return try session.api().expandingPlaceholders(id)
    }

    /// Prints one page of a list as the API sent it (its view on a terminal), or with
    /// `--all` every item (see `walk`).
    func printListing(_ listing: Listing, paging: PagingOptions, view: HumanView? = nil) throws(DouctlError) {
        let listing = listing.paged(start: paging.start, count: paging.count)
        if paging.all {
            try walk(listing.request, scheme: listing.scheme, paging: paging, view: view)
        } else {
            let page = try session.api().send(listing.request).requireJSON()
            if let view { output.document(page, view: view) } else { output.json(page) }
        }
    }

    /// Walks every page with the session's paginator, the output printing each item as it
    /// comes (`Output.walk`).
    func walk(_ request: APIRequest, scheme: PageScheme? = nil, client: APIClient? = nil, paging: PagingOptions, view: HumanView? = nil,
              itemsKey: String? = nil) throws(DouctlError) {
        var paginator = try session.paginator(over: client, itemsKey: itemsKey, parallel: paging.parallel, maximumPages: process.pageCap)
        // --dry-run sends nothing, so its placeholder replies say nothing about where a
        // walk ends: no warning about "0 items" there.
        if !sendsRequests { paginator.warn = nil }
        try output.walk(paginator, request: request, scheme: scheme, slurp: paging.slurp, view: view)
    }
}
