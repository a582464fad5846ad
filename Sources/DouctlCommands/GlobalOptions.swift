import DouctlArguments
import DouctlCore
import DouctlHTTP

/// Options accepted before or after the command word, each by the commands it applies to:
/// help, version and error-format by all; the others by group (`Group`), which each command
/// takes or not (`Command.inheriting`, in `CommandTree`).
enum GlobalOptions {
    /// Groups of global options a command takes or not.
    enum Group: String, CaseIterable {
        /// --profile, --config-dir: commands that read the config directory.
        case profile
        /// --api-base, -v, --timeout, retries, --max-time, rate limits, the cache,
        /// --error-body: commands that send requests (auth's too).
        case request
        /// --timeout and --max-time: commands that send requests, and `profile add` (its
        /// --issuer discovery), which takes no other request option.
        case time
        /// --record: commands that send requests, and `profile add` (its --issuer discovery
        /// is a login's first exchange, recorded with it).
        case record
        /// TLS and proxy options: commands that send requests.
        case network
        /// --pretty, --compact: commands that print JSON.
        case output
        /// Printing the requests instead of sending them: the commands that call the API
        /// (`Command.callingAPI`). Any other command refuses it as it refuses any option it
        /// does not take (exit 2, with its usage line).
        case api
    }

    /// Every group but `api`: the root's default, so only a command the tree says calls the
    /// API takes that group.
    static let sendingRequests: [Group] = [.profile, .request, .time, .record, .network, .output]

    static let specs: [OptionSpec] = GlobalOptionValues.optionSpecs
}

/// The global options' values, typed: bound to the specs below, which feed the parser,
/// help, completions and the man page (`CommandTree.root`).
struct GlobalOptionValues: CommandOptions {
    var profile: String?
    var configDirectory: String?
    var apiBase: String?
    var verbose: Bool = false
    /// `--quiet`: no line about waits and retries (errors and warnings still show).
    var quiet: Bool = false
    var timeout: Double = 30
    var noRetry: Bool = false
    /// `--no-keep`: this run's https requests go direct, not through the connection keeper.
    var noKeep: Bool = false
    var retry: Int = 2
    var retryMaxTime: Double?
    var maxTime: Double?
    var waitOnRateLimit: Bool = false
    /// `--cache DURATION`, in seconds (read while binding: `5q` is a usage error with or
    /// without `--dry-run`).
    var cache: Double?
    var cacheOnly: Bool = false
    var record: String?
    var dryRun: Bool = false
    var caBundle: String?
    var caPath: String?
    var clientCert: String?
    var clientKey: String?
    var insecure: Bool = false
    var proxy: String?
    var unixSocket: String?
    var pretty: Bool = false
    var compact: Bool = false
    var jq: String?
    /// `--arg NAME VALUE`: $NAME is the string VALUE in --jq's program.
    var jqStrings: [(name: String, value: String)] = []
    /// `--argjson NAME JSON`: $NAME is the JSON value.
    var jqJSON: [(name: String, value: String)] = []
    var errorFormat: ErrorFormat = .text
    var errorBody: ErrorBodyDestination?
    var color: ColorChoice = .auto
    var help: Bool = false
    var version: Bool = false

    static let bindings: [OptionBinding<GlobalOptionValues>] = [
        .value({ $0.profile = $1 }, (OptionSpec("profile", value: ValueSpec("NAME", completion: .dynamic("profiles")),
                       help: "use this profile (env DOUCTL_PROFILE; else a .douctl file upward, the URL's profile, default_profile, douban)")).inGroup(GlobalOptions.Group.profile.rawValue)),
        .value({ $0.configDirectory = $1 }, (OptionSpec("config-dir", value: ValueSpec("DIR", completion: .directory),
                       help: "config directory (env DOUCTL_CONFIG_DIR; default $XDG_CONFIG_HOME/douctl or ~/.config/douctl)")).inGroup(GlobalOptions.Group.profile.rawValue)),
        .value({ $0.apiBase = $1 }, (OptionSpec("api-base", value: ValueSpec("URL"), help: "send API requests to this base URL, for this call only")).inGroup(GlobalOptions.Group.request.rawValue)),
        .flag({ $0.verbose = $1 }, (OptionSpec.flag("verbose", short: "v", help: "log requests and replies on stderr, secrets redacted")).inGroup(GlobalOptions.Group.request.rawValue)),
        .flag({ $0.quiet = $1 }, (OptionSpec.flag("quiet", short: "q", help: "say nothing of waits and retries on stderr (errors and warnings still show)")).inGroup(GlobalOptions.Group.request.rawValue)),
        .number({ $0.timeout = $1 }, (OptionSpec("timeout", value: ValueSpec("SECONDS", kind: .number, default: "30"),
                       help: "give up connecting, or when a transfer stalls (under 100 bytes a second, up and down together) for this long (exit 7)")).inGroup(GlobalOptions.Group.time.rawValue)),
        .flag({ $0.noRetry = $1 }, (OptionSpec.flag("no-retry", help: "do not retry failed idempotent requests (same as --retry 0)")).inGroup(GlobalOptions.Group.request.rawValue)),
        .flag({ $0.noKeep = $1 }, (OptionSpec.flag("no-keep", help: "send https requests directly, not through the connection keeper that holds connections between runs (env DOUCTL_KEEP=0)")).inGroup(GlobalOptions.Group.network.rawValue)),
        .integer({ $0.retry = $1 }, (OptionSpec("retry", value: ValueSpec("N", kind: .integer(0...100), default: "2"),
                       help: "retry failed idempotent requests up to N times (connection errors, 502, 503, 504; a 429 is --wait-on-rate-limit's), each retry said on stderr")).inGroup(GlobalOptions.Group.request.rawValue)),
        .number({ $0.retryMaxTime = $1 }, (OptionSpec("retry-max-time", value: ValueSpec("SECONDS", kind: .number),
                       help: "start no retry after this long since the first try")).inGroup(GlobalOptions.Group.request.rawValue)),
        .number({ $0.maxTime = $1 }, (OptionSpec("max-time", value: ValueSpec("SECONDS", kind: .number),
                       help: "give up on the whole command after this long (exit 7)")).inGroup(GlobalOptions.Group.time.rawValue)),
        .flag({ $0.waitOnRateLimit = $1 }, (OptionSpec.flag("wait-on-rate-limit", help: "when rate limited, or another douctl of the profile was told the quota is spent, wait until the reset the server announced (Retry-After, RateLimit, X-RateLimit-Reset; at most 1h) and go on")).inGroup(GlobalOptions.Group.request.rawValue)),
        .value({ $0.cache = $1 }, (OptionSpec("cache", value: ValueSpec("DURATION"), help: "answer GET/HEAD from the response cache when younger than DURATION (30s, 5m, 1h), else revalidate it (If-None-Match, If-Modified-Since) or fetch and store")).inGroup(GlobalOptions.Group.request.rawValue),
               parse: { text throws(OptionError) in
                   guard let seconds = CachePolicy.parseDuration(text) else {
                       throw OptionError("invalid value '\(text)' for --cache: expected a duration such as 30s, 5m, 1h")
                   }
                   return seconds
               }),
        .flag({ $0.cacheOnly = $1 }, (OptionSpec.flag("cache-only", help: "answer GET/HEAD only from the response cache; send nothing")).inGroup(GlobalOptions.Group.request.rawValue)),
        .value({ $0.record = $1 }, (OptionSpec("record", value: ValueSpec("DIR", completion: .directory), help: "write every exchange to DIR as JSON (to x.har: as HAR 1.2), secrets scrubbed (serve it back: douctl sandbox --replay DIR)")).inGroup(GlobalOptions.Group.record.rawValue)),
        .flag({ $0.dryRun = $1 }, (OptionSpec.flag("dry-run", help: "print the requests of a command that calls the API as curl command lines instead of sending them (token as $DOUCTL_TOKEN)")).inGroup(GlobalOptions.Group.api.rawValue)),
        .value({ $0.caBundle = $1 }, (OptionSpec("cacert", value: ValueSpec("FILE", completion: .file),
                       help: "trust the CA certificates in this PEM file instead of the system's (else $CURL_CA_BUNDLE, $SSL_CERT_FILE, profile ca_bundle)")).inGroup(GlobalOptions.Group.network.rawValue)),
        .value({ $0.caPath = $1 }, (OptionSpec("capath", value: ValueSpec("DIR", completion: .directory),
                       help: "trust the hashed CA certificates in this directory (else $SSL_CERT_DIR, profile ca_path)")).inGroup(GlobalOptions.Group.network.rawValue)),
        .value({ $0.clientCert = $1 }, (OptionSpec("cert", value: ValueSpec("FILE", completion: .file),
                       help: "present this PEM client certificate (mutual TLS; else profile client_cert)")).inGroup(GlobalOptions.Group.network.rawValue)),
        .value({ $0.clientKey = $1 }, (OptionSpec("key", value: ValueSpec("FILE", completion: .file),
                       help: "the client certificate's private key, when not in the --cert file (else profile client_key)")).inGroup(GlobalOptions.Group.network.rawValue)),
        .flag({ $0.insecure = $1 }, (OptionSpec.flag("insecure", short: "k", help: "do not verify the server's TLS certificate (warns on every use)")).inGroup(GlobalOptions.Group.network.rawValue)),
        .value({ $0.proxy = $1 }, (OptionSpec("proxy", value: ValueSpec("URL"),
                       help: "send requests through this proxy (else $HTTPS_PROXY, $http_proxy, $ALL_PROXY, profile proxy)")).inGroup(GlobalOptions.Group.network.rawValue)),
        .value({ $0.unixSocket = $1 }, (OptionSpec("unix-socket", value: ValueSpec("PATH", completion: .file),
                       help: "connect to this Unix domain socket instead of the URL's host and port (the URL still gives Host and path)")).inGroup(GlobalOptions.Group.network.rawValue)),
        .flag({ $0.pretty = $1 }, (OptionSpec.flag("pretty", help: "indent JSON output (default when stdout is a terminal)")).inGroup(GlobalOptions.Group.output.rawValue)),
        .flag({ $0.compact = $1 }, (OptionSpec.flag("compact", help: "print JSON on one line (default when stdout is not a terminal)")).inGroup(GlobalOptions.Group.output.rawValue)),
        .value({ $0.jq = $1 }, (OptionSpec("jq", value: ValueSpec("EXPR"),
                       help: "filter the JSON output with jq's engine (libjq): strings printed as text, other values as compact JSON")).inGroup(GlobalOptions.Group.output.rawValue)),
        .pairs({ $0.jqStrings = $1.map { (name: $0.0, value: $0.1) } }, (OptionSpec("arg", values: [ValueSpec("NAME"), ValueSpec("VALUE")],
                       help: "bind $NAME to the string VALUE in --jq's program (two words, as jq takes them)", repeatable: true)).inGroup(GlobalOptions.Group.output.rawValue)),
        .pairs({ $0.jqJSON = $1.map { (name: $0.0, value: $0.1) } }, (OptionSpec("argjson", values: [ValueSpec("NAME"), ValueSpec("JSON")],
                       help: "bind $NAME to the JSON value in --jq's program (two words, as jq takes them)", repeatable: true)).inGroup(GlobalOptions.Group.output.rawValue)),
        .choice({ $0.errorFormat = $1 }, OptionSpec("error-format", value: ValueSpec("FORMAT", kind: .choice(["text", "json"]), default: "text"),
                       help: "print errors as one text line or as a JSON object")),
        .choice({ $0.errorBody = $1 }, (OptionSpec("error-body", value: ValueSpec("WHERE", kind: .choice(["stdout", "stderr", "none"])),
                       help: "where an API error reply's body goes (api: stdout on a terminal, else stderr; other commands: none)")).inGroup(GlobalOptions.Group.request.rawValue)),
        .choice({ $0.color = $1 }, OutputOptions.color),
        .flag({ $0.help = $1 }, OptionSpec.flag("help", short: "h", help: "show help for the command")),
        .flag({ $0.version = $1 }, OptionSpec.flag("version", help: "print douctl's version")),
    ]

    /// Every global option read and every conflict refused while binding, so what a run
    /// does later (`--dry-run` included) never changes which usage errors a user sees.
    func validate() throws(OptionError) {
        if let apiBase, !(apiBase.hasPrefix("http://") || apiBase.hasPrefix("https://")) {
            throw OptionError("invalid value '\(apiBase)' for --api-base: expected an http:// or https:// URL")
        }
        if clientKey != nil && clientCert == nil { throw OptionError("--key needs --cert (the client certificate it belongs to)") }
        if let proxy, proxy.isEmpty || proxy.contains(" ") {
            throw OptionError("invalid proxy '\(Redaction.redactURL(proxy))': expected a URL such as http://proxy.example:3128")
        }
        if unixSocket == "" { throw OptionError("invalid value '' for --unix-socket: expected the path of a Unix domain socket") }
        try validateJQVariables()
    }

    /// A variable name `$NAME` can reach (jq's identifiers); `a=1` is most likely the one-word
    /// `NAME=VALUE` form douctl took before, now two words as in jq.
    private func validateJQVariables() throws(OptionError) {
        for (option, name) in jqStrings.map({ ("--arg", $0.name) }) + jqJSON.map({ ("--argjson", $0.name) }) where !Self.isJQIdentifier(name) {
            if let equals = name.firstIndex(of: "=") {
                throw OptionError("\(option) takes two words, as jq: \(option) \(name[..<equals]) \(name[name.index(after: equals)...]) (not NAME=VALUE)")
            }
            throw OptionError("invalid variable name '\(name)' for \(option): a jq name is letters, digits and _, not starting with a digit")
        }
    }

    static func isJQIdentifier(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
        }
    }

    /// The run's JSON style: --pretty, --compact, else pretty on a terminal.
    func prettyJSON(isTerminal: Bool) -> Bool {
        if pretty { return true }
        if compact { return false }
        return isTerminal
    }
}
