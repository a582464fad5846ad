#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlArguments
import DouctlCore
import DouctlHTTP
import DouctlSandbox
import DouctlSystem

/// `douctl sandbox`: a faithful local Douban API v2 (+ Coding paths) with OAuth2.
enum SandboxCommand {
    static let command = Command(CommandSpec(
        "sandbox",
        abstract: "run a local fake Douban API v2 + OAuth2 server (and Coding's paths) for trying douctl",
        discussion: """
        Prints its base URL as the first line of stdout, then logs one line per request
        on stderr. It writes (or updates) the profiles 'sandbox' and 'coding-sandbox' in
        the config directory to point at itself, client id and secret included, so
        'douctl --profile sandbox auth login' works at once. State lives in memory
        unless --data names a directory (written atomically, reloaded on start).
        Seeded Douban users: \(Sandbox.seededUsers.joined(separator: ", ")) (you log in as ahbei).
        \(codingAccountsLine)
        For 'auth login --password' on the coding-sandbox profile, the captcha and
        two-factor codes appear on the sandbox's stderr, one line each as they are
        issued ("coding captcha for session …: CODE", "coding 2fa code for twofa: CODE");
        douctl saves the captcha picture in its config directory and removes it after
        the login. --log FILE sends the request log, these codes and the start-up notes
        to FILE (appended, 0600) instead, so 'douctl sandbox --log sandbox.log &' leaves
        the terminal to your commands; --quiet logs no requests and no notes (the codes
        still appear). Ctrl-C or SIGTERM stops it cleanly.

        Several sandboxes may share a config directory. The first (holding the lock file
        .sandbox.lock there) owns 'sandbox' and 'coding-sandbox' and leaves them in place
        when it stops. Each later one, while an earlier one runs, leaves those alone, says
        so on stderr, writes 'sandbox-N' and 'coding-sandbox-N' (the lowest free N from 2)
        instead, and removes them and their tokens when it stops.

        A multipart body may have at most \(Sandbox.maxMultipartParts) parts, 1 MiB of part headers in
        all, fields of 1 MiB each and 4 MiB together; past a limit the reply is HTTP 413
        naming it. File parts stream to disk, so only the picture limits bound them.
        A user keeps at most \(Sandbox.grantsPerUserAndClient) live logins per client (as on GitHub): a new
        login revokes the oldest, so a long-running sandbox stays small.

        --replay DIR serves the exchanges 'douctl --record DIR' wrote: a request with the
        same method and path, the same query in any order, the same body (JSON compared as
        JSON, forms as forms, multipart by parts) and the same values of the headers a
        recording lists in its request's "significant_headers" gets the recorded reply
        (tokens, codes, signatures, timestamps and REDACTED values are not compared);
        repeated ones get the recorded replies in order, then the last again. Anything
        else is HTTP 501 no_recording naming the closest recording and how it differs
        (the log says the same). --fault applies to replayed replies too. A recorded
        discovery document (/.well-known/openid-configuration, oauth-authorization-server)
        is served with the recorded issuer's URLs rewritten to the replay's own.
        --proxy-to URL --record DIR (or x.har) is a recording reverse proxy instead: it
        prints its URL, sends each request it gets on to URL (path and query appended)
        with douctl's transport (the --profile's ca_bundle, proxy and insecure keys and
        CURL_CA_BUNDLE apply; redirects are the client's to follow) and records the exchange,
        secrets scrubbed, so curl, an SDK or a browser pointed at it records a session to
        serve later with --replay.
        sandbox verify DIR (or FILE.har, or --verify DIR) --profile live is the contract check: it sends each
        recorded request to the profile's live API with the profile's credential and
        prints one line per drift from the recorded reply, compared by shape, not value:
        "GET /items (0002-GET-items.json): field .items[].price: number → string", a
        status that changed, fields added or gone. Exit 11 when anything drifted.
        --replay FILE.har serves a HAR 1.2 log: one 'douctl --record x.har' wrote, or one
        saved from Firefox's or Chromium's developer tools or mitmproxy (base64 bodies
        decoded, compression and '_' fields ignored, redirects to the recorded origin
        kept on the replay; the host is not compared).
        --record records logins too, so a replay answers the recorded login steps: a
        recorded token grant issues fresh tokens of the recorded shape (a recorded id_token
        is signed again as the recorded provider signed, RS256 with a per-run RSA key or
        else ES256 with a per-run P-256 key, served as a JWK at the recorded jwks_uri path,
        carrying the authorization request's nonce), and once it has, only
        the access tokens (Bearer header, access_token query or form field), refresh tokens
        and codes the replay issued are accepted; others get the recorded 401 (or 400
        invalid_grant). The recorded authorization endpoint redirects at once to a loopback
        or recorded redirect_uri with a fresh code; a recorded device authorization gets a
        fresh device and user code, polled authorization_pending once, then tokens. A login step the recording lacks is served by the sandbox itself (approved as
        ahbei), so 'douctl auth login' works against any replay. Log in to the profile
        the replay writes, then run the recorded commands with it.
        HEAD is answered wherever GET is (RFC 9110 §9.3.2): the same status and headers,
        Content-Length that of the body it leaves out.
        --signing and --quota make it check what a real API key gateway checks: a wrong or
        missing signature is HTTP 400 {"msg":"invalid_signature","code":1010}; past the
        quota it answers 429 with Retry-After and code 111. OAuth endpoints are exempt.

        \(Sandbox.faultHelp)

        \(SandboxOpenAPI.help)
        """,
        examples: [
            Example("douctl sandbox --port 8089 --log sandbox.log &", "run it in the background, its log (and login codes) in sandbox.log"),
            Example("douctl --profile sandbox auth login --device", "then log in"),
            Example("douctl sandbox --fault 503:0.3,latency:100ms", "test how a script copes with a flaky server"),
            Example("douctl sandbox verify recordings/ --profile live", "send a recording's requests to the live API; exit 11 when a reply's shape drifted"),
            Example("douctl sandbox --openapi openapi.yaml", "serve the API a description describes (a fake from its examples and schemas)"),
        ]), options: Options.self, run: run)

    /// `douctl sandbox [--host A] [--port N] …`.
    struct Options: CommandOptions {
        var host = "127.0.0.1"
        var port = 0
        var data: String?
        var tokenTTL = 3600.0
        var approve = SandboxApproval.auto
        var fault: String?
        var replay: String?
        /// `--openapi FILE`: serve the API the description describes (SandboxOpenAPI).
        var openapi: String?
        /// `--mock DIR`, the hidden old name of `--replay`.
        var mock: String?
        var signing: String?
        var quota: String?
        var seed: Int?
        /// `--log FILE`: the request log, the start-up notes and the login codes go there.
        var log: String?
        /// `--quiet`: no request log and no start-up notes; login codes still shown.
        var quiet = false
        /// `--proxy-to URL`: a recording reverse proxy instead of the fake (RecordingProxy).
        var proxyTo: String?
        /// `--record DIR|x.har`, with --proxy-to: where the proxied exchanges go.
        var record: String?
        /// `--verify DIR|FILE.har`: replay the recording against the profile's live API (SandboxVerify).
        var verify: String?
        /// `douctl sandbox verify DIR`, the issue's spelling of `--verify DIR`: the word
        /// (the only one the sandbox takes) and the recording after it.
        var action: String?
        var actionRecording: String?

        /// The recording to verify, however it was given.
        var verifying: String? { verify ?? actionRecording }

        static let bindings: [OptionBinding<Self>] = [
            .value({ $0.host = $1 }, OptionSpec("host", value: ValueSpec("ADDRESS", default: "127.0.0.1"), help: "address to listen on")),
            .integer({ $0.port = $1 }, OptionSpec("port", value: ValueSpec("N", kind: .integer(0...65535), default: "0"), help: "port to listen on (0: any free port)")),
            .value({ $0.data = $1 }, OptionSpec("data", value: ValueSpec("DIR", completion: .directory), help: "keep state in DIR across restarts")),
            .number({ $0.tokenTTL = $1 }, OptionSpec("token-ttl", value: ValueSpec("SECONDS", kind: .number, default: "3600"), help: "access-token lifetime (short values exercise refresh)")),
            .choice({ $0.approve = $1 }, OptionSpec("approve", value: ValueSpec("MODE", kind: .choice(["auto", "manual"]), default: "auto"),
                                          help: "auto: approve logins at once; manual: show consent pages")),
            .value({ $0.fault = $1 }, OptionSpec("fault", value: ValueSpec("SPEC"), help: "inject failures, e.g. 503:0.2,latency:200ms (see below)")),
            .value({ $0.replay = $1 }, OptionSpec("replay", value: ValueSpec("DIR|FILE.har", completion: .file), help: "answer from the exchanges 'douctl --record DIR' (or x.har) wrote, or a browser's HAR (a real session as a fake server)")),
            .value({ $0.openapi = $1 }, OptionSpec("openapi", value: ValueSpec("FILE", completion: .file), help: "serve the API an OpenAPI or Swagger description describes, in place of Douban's (see below)")),
            .value({ $0.mock = $1 }, OptionSpec("mock", value: ValueSpec("DIR", completion: .directory), help: "the same as --replay DIR", hidden: true)),
            .value({ $0.signing = $1 }, OptionSpec("signing", value: ValueSpec("SCHEME:SECRET"), help: "require signed API requests: hmac-sha1:SECRET or md5-sorted:SECRET")),
            .value({ $0.quota = $1 }, OptionSpec("quota", value: ValueSpec("N/UNIT"), help: "answer 429 past N API requests per UNIT (40/min, 10/5s)")),
            .value({ $0.log = $1 }, OptionSpec("log", value: ValueSpec("FILE", completion: .file),
                                               help: "write the request log, the start-up notes and the captcha and 2FA codes to FILE (appended), not stderr")),
            .flag({ $0.quiet = $1 }, .flag("quiet", short: "q", help: "log no requests and no start-up notes; captcha and 2FA codes are still written (to stderr, or --log FILE)")),
            .value({ $0.proxyTo = $1 }, OptionSpec("proxy-to", value: ValueSpec("URL"),
                                                   help: "be a reverse proxy to URL that records every exchange with --record DIR (or x.har), for clients such as curl")),
            .value({ $0.record = $1 }, OptionSpec("record", value: ValueSpec("DIR|FILE.har", completion: .file),
                                                  help: "with --proxy-to: write each proxied exchange to DIR as JSON (to x.har: as HAR 1.2), secrets scrubbed")),
            .value({ $0.verify = $1 }, OptionSpec("verify", value: ValueSpec("DIR|FILE.har", completion: .file),
                                                  help: "send the recorded requests to the live API of --profile and report drift by shape (exit 11 on drift)")),
            .argument({ $0.action = $1 }, ArgumentSpec("verify", help: "the word verify, then the recording: the same as --verify RECORDING",
                                                       arity: .optional, kind: .choice(["verify"]), completion: .choices(["verify"]))),
            .argument({ $0.actionRecording = $1 }, ArgumentSpec("RECORDING", help: "after verify: the recording directory or HAR file to check",
                                                                arity: .optional, completion: .file)),
            .integer({ $0.seed = $1 }, OptionSpec("seed", value: ValueSpec("N", kind: .integer(0...1_000_000)), help: "add N statuses by ahbei (for benchmarks)", hidden: true)),
        ]

        /// A --fault spec that does not parse is refused before anything starts.
        func validate() throws(OptionError) {
            do { _ = try faults() } catch { throw OptionError(error.message) }
            if log == "" { throw OptionError("invalid value '' for --log: expected a file name") }
            if proxyTo != nil && record == nil { throw OptionError("--proxy-to needs --record DIR (or --record x.har): the proxy is there to record") }
            if record != nil && proxyTo == nil { throw OptionError("--record on the sandbox goes with --proxy-to URL (to record a session with douctl itself: douctl --record DIR COMMAND)") }
            if action != nil && actionRecording == nil { throw OptionError("verify needs the recording: douctl sandbox verify DIR|FILE.har --profile live") }
            if actionRecording != nil && verify != nil { throw OptionError("give the recording once: douctl sandbox verify DIR, or douctl sandbox --verify DIR") }
        }

        /// The --fault list.
        func faults() throws(DouctlError) -> [SandboxFault] {
            guard let fault else { return [] }
            do { return try SandboxFault.parseList(fault) } catch { throw .usage("\(error)") }
        }

        /// The server these options describe (its log not yet attached).
        func configuration() throws(DouctlError) -> SandboxConfiguration {
            var configuration = SandboxConfiguration()
            configuration.host = host
            configuration.port = UInt16(clamping: port)
            configuration.dataDirectory = data
            configuration.tokenTTL = tokenTTL
            configuration.approval = approve
            configuration.replayDirectory = replay ?? mock
            configuration.signing = signing
            configuration.quota = quota
            configuration.faults = try faults()
            return configuration
        }
    }

    static func run(_ options: Options, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        // Each connection has a thread of its own; under a 30-minute soak 15 malloc arenas
        // held 18 MiB and kept creeping. Two are plenty for a test server.
        MallocArenas.limit(to: 2)
        if let recording = options.verifying { return try SandboxVerify.run(recording, context: context) }
        if let upstream = options.proxyTo { return try RecordingProxy.run(upstream: upstream, options: options, context: context) }
        var configuration = try options.configuration()
        // Everything the sandbox says after its URL goes to one place: --log FILE or stderr.
        let say: @Sendable (String) -> Void
        if let path = options.log {
            let log = try SandboxLog(path: path)
            say = { line in log.line(line) }
        } else {
            let printer = context.output.printer
            say = { line in printer.line(line) }
        }
        let quiet = options.quiet
        configuration.codes = say
        configuration.log = quiet ? nil : say
        let note: (String) -> Void = { line in if !quiet { say(line) } }

        let fake = try options.openapi.map { path throws(DouctlError) in try SandboxOpenAPI.fake(path, context: context) }
        if let fake { configuration.api = { request in fake.answer(request) } }
        let slot = try SandboxSlot.claim(in: try context.session.configDirectory())
        let sandbox = try start(configuration)
        defer {
            sandbox.stop()
            slot.release(base: sandbox.baseURL, context: context)
        }
        if let count = options.seed, count > 0 { _ = sandbox.seedStatuses(count: count, user: "ahbei") }
        // Profiles first: the URL on stdout tells scripts the sandbox is ready to use.
        let firstBase = slot.number > 1 ? (try? context.session.config().profile(named: "sandbox")?[.apiBase]) ?? nil : nil
        try writeProfiles(base: sandbox.baseURL, slot: slot, context: context)
        context.output.line(sandbox.baseURL)
        context.output.flush()
        if slot.number > 1 {
            var running = ""
            if case .text(let url)? = firstBase { running = " (\(url))" }
            note("Another sandbox\(running) already serves the profiles 'sandbox' and 'coding-sandbox' on this config directory; they are left to it. This one writes '\(slot.doubanProfile)' and '\(slot.codingProfile)' and removes them when it stops.")
        }
        if fake == nil {
            note("douctl sandbox listening on \(sandbox.baseURL); profiles '\(slot.doubanProfile)' and '\(slot.codingProfile)' point here. Ctrl-C stops it.")
        } else {
            // The profiles still name it, but it answers the description's API, not Douban's.
            note("douctl sandbox listening on \(sandbox.baseURL), answering the description's API in place of Douban's. Ctrl-C stops it.")
        }
        if let fake, let path = options.openapi {
            note("Serving \(TerminalText.escaped(fake.title.isEmpty ? path : fake.title)) (\(fake.routes.count) operations) at \(sandbox.baseURL)\(fake.basePath). Try: douctl profile add NAME --openapi \(TerminalText.escaped(path)) --api-base \(sandbox.baseURL)\(fake.basePath)")
        } else if let replaying = sandbox.replaying, let directory = configuration.replayDirectory {
            note(replayLine(replaying, directory: directory, profile: slot.doubanProfile))
        } else {
            note("Douban: logins are approved as ahbei. \(codingAccountsLine) Captcha and two-factor codes are printed \(options.log.map { "to \($0)" } ?? "here") as they are issued.")
        }

        while !context.cancellation.isRequested { context.sleep(0.1) }
        note("Stopping the sandbox.")
        sandbox.stop()
        context.cancellation.reset() // stopping on a signal is how a server ends: a clean exit
        return .success
    }

    /// `--log FILE`: lines appended to FILE (created 0600: it holds login codes), each written
    /// whole with one write(2) under O_APPEND.
    final class SandboxLog: @unchecked Sendable {
        private let descriptor: Int32

        init(path: String) throws(DouctlError) {
            let fd = open(EscapedBytes.cString(path), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0o600)
            guard fd >= 0 else { throw .localInput("cannot write \(path) (\(SystemError("open", path: path).reason))") }
            descriptor = fd
        }

        deinit { close(descriptor) }

        func line(_ text: String) {
            try? FileIO.writeAll(descriptor, text + "\n")
        }
    }

    /// What a replay serves, and how to run the recorded commands against it.
    static func replayLine(_ replaying: (exchanges: Int, grants: Int), directory: String, profile: String) -> String {
        let login = replaying.grants > 0
            ? "the recorded login is replayed too"
            : "the recording has no login, so logins are approved as ahbei as on any sandbox"
        let tokens = replaying.grants > 0 ? "only tokens the replay issues are accepted" : "tokens are not checked"
        return "Replaying the \(replaying.exchanges) exchanges recorded in \(directory) (\(tokens); "
            + "anything not recorded is answered 501 no_recording, naming the closest recording). Log in first (\(login)): "
            + "douctl auth login --profile \(profile), then run the recorded commands with --profile \(profile)."
    }

    /// The seeded Coding logins, for the start-up lines and --help.
    static var codingAccountsLine: String {
        let accounts = Sandbox.codingSeededUsers.map { $0 == "twofa" ? "twofa (two-factor)" : $0 }
        return "Coding accounts: \(accounts.joined(separator: ", ")), password \(Sandbox.codingPassword)."
    }

    static func start(_ configuration: SandboxConfiguration) throws(DouctlError) -> Sandbox {
        do {
            let sandbox = try Sandbox(configuration)
            try sandbox.start()
            return sandbox
        } catch {
            throw .localInput("cannot start the sandbox (\(error))")
        }
    }

    /// Points the slot's profiles (`sandbox` and `coding-sandbox` for the first sandbox) at
    /// `base`, keeping other settings.
    static func writeProfiles(base: String, slot: SandboxSlot, context: CommandContext) throws(DouctlError) {
        try context.session.updateConfig { (config: inout ConfigFile) in
            for (name, style) in [(slot.doubanProfile, APIStyle.douban), (slot.codingProfile, APIStyle.coding)] {
                var settings = config.profile(named: name) ?? ProfileSettings()
                for (key, value) in Preset.sandboxSettings(style: style, base: base) { settings[key] = value }
                config.setProfile(name, settings)
            }
        }
    }
}
