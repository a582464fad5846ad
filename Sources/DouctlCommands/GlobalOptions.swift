import DouctlArguments

/// Options accepted before or after the command word, each by the commands it applies to:
/// help, version and error-format by all; the others by group (`Group`), which each command
/// takes or not (`Command.inheriting`, in `CommandTree`).
enum GlobalOptions {
    /// Groups of global options a command takes or not.
    enum Group: String {
        /// --profile, --config-dir: commands that read the config directory.
        case profile
        /// --api-base, -v, --timeout, retries, --max-time, rate limits, the cache, --record,
        /// --dry-run, --error-body: commands that send API requests.
        case request
        /// TLS and proxy options: commands that send requests.
        case network
        /// --pretty, --compact: commands that print JSON.
        case output
    }

    static let specs: [OptionSpec] = ungrouped.map { option in
        guard let group = groupOf[option.long] else { return option }
        return option.inGroup(group.rawValue)
    }

    private static let groupOf: [String: Group] = {
        var table: [String: Group] = [:]
        for name in ["profile", "config-dir"] { table[name] = .profile }
        for name in ["api-base", "verbose", "timeout", "no-retry", "retry", "retry-max-time", "max-time", "wait-on-rate-limit", "cache", "cache-only", "record", "dry-run", "error-body"] { table[name] = .request }
        for name in ["cacert", "capath", "cert", "key", "insecure", "proxy"] { table[name] = .network }
        for name in ["pretty", "compact"] { table[name] = .output }
        return table
    }()

    private static let ungrouped: [OptionSpec] = [
        OptionSpec("profile", value: ValueSpec("NAME", completion: .dynamic("profiles")),
                   help: "use this profile (env DOUCTL_PROFILE; default: config's default_profile, else douban)"),
        OptionSpec("config-dir", value: ValueSpec("DIR", completion: .directory),
                   help: "config directory (env DOUCTL_CONFIG_DIR; default $XDG_CONFIG_HOME/douctl or ~/.config/douctl)"),
        OptionSpec("api-base", value: ValueSpec("URL"), help: "send API requests to this base URL, for this call only"),
        .flag("verbose", short: "v", help: "log requests and replies on stderr, secrets redacted"),
        OptionSpec("timeout", value: ValueSpec("SECONDS", kind: .number, default: "30"),
                   help: "give up connecting, or when a transfer stalls (under 100 bytes a second, up and down together) for this long (exit 7)"),
        .flag("no-retry", help: "do not retry failed idempotent requests (same as --retry 0)"),
        OptionSpec("retry", value: ValueSpec("N", kind: .integer(0...100), default: "2"),
                   help: "retry failed idempotent requests up to N times (connection errors, 429, 502, 503, 504)"),
        OptionSpec("retry-max-time", value: ValueSpec("SECONDS", kind: .number),
                   help: "start no retry after this long since the first try"),
        OptionSpec("max-time", value: ValueSpec("SECONDS", kind: .number),
                   help: "give up on the whole command after this long (exit 7)"),
        .flag("wait-on-rate-limit", help: "when rate limited, wait until the limit resets (Retry-After) and go on"),
        OptionSpec("cache", value: ValueSpec("DURATION"), help: "answer GET/HEAD from the response cache when younger than DURATION (30s, 5m, 1h), else fetch and store"),
        .flag("cache-only", help: "answer GET/HEAD only from the response cache; send nothing"),
        OptionSpec("record", value: ValueSpec("DIR", completion: .directory), help: "write every exchange to DIR as JSON, secrets scrubbed (serve it back: douctl sandbox --replay DIR)"),
        .flag("dry-run", help: "print the requests as curl command lines instead of sending them (token as $DOUCTL_TOKEN)"),
        OptionSpec("cacert", value: ValueSpec("FILE", completion: .file),
                   help: "trust the CA certificates in this PEM file instead of the system's (else $CURL_CA_BUNDLE, $SSL_CERT_FILE, profile ca_bundle)"),
        OptionSpec("capath", value: ValueSpec("DIR", completion: .directory),
                   help: "trust the hashed CA certificates in this directory (else $SSL_CERT_DIR, profile ca_path)"),
        OptionSpec("cert", value: ValueSpec("FILE", completion: .file),
                   help: "present this PEM client certificate (mutual TLS; else profile client_cert)"),
        OptionSpec("key", value: ValueSpec("FILE", completion: .file),
                   help: "the client certificate's private key, when not in the --cert file (else profile client_key)"),
        .flag("insecure", short: "k", help: "do not verify the server's TLS certificate (warns on every use)"),
        OptionSpec("proxy", value: ValueSpec("URL"),
                   help: "send requests through this proxy (else $HTTPS_PROXY, $http_proxy, $ALL_PROXY, profile proxy)"),
        .flag("pretty", help: "indent JSON output (default when stdout is a terminal)"),
        .flag("compact", help: "print JSON on one line (default when stdout is not a terminal)"),
        OptionSpec("error-format", value: ValueSpec("FORMAT", kind: .choice(["text", "json"]), default: "text"),
                   help: "print errors as one text line or as a JSON object"),
        OptionSpec("error-body", value: ValueSpec("WHERE", kind: .choice(["stdout", "stderr", "none"])),
                   help: "where an API error reply's body goes (api: stdout on a terminal, else stderr; other commands: none)"),
        OutputOptions.color,
        .flag("help", short: "h", help: "show help for the command"),
        .flag("version", help: "print douctl's version"),
    ]
}

/// The option that names a JSON output style, or nil to follow the terminal.
enum OutputStyle {
    static func pretty(_ parsed: ParsedCommand, isTerminal: Bool) -> Bool {
        if parsed.has("pretty") { return true }
        if parsed.has("compact") { return false }
        return isTerminal
    }
}
