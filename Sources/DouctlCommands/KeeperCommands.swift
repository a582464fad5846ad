#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlArguments
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// `douctl keeper status|stop|serve`: the per-user connection keeper (`KeeperServer`).
enum KeeperCommands {
    static let command = Command(group: CommandSpec(
        "keeper",
        abstract: "show or stop the connection keeper that holds https connections between runs",
        discussion: """
        The first douctl that sends an https request and finds no keeper starts one (douctl
        keeper serve, detached) and goes direct; later runs send their requests through it,
        over a Unix socket in $XDG_RUNTIME_DIR/douctl (else the config directory's keeper
        directory; mode 0700, socket 0600, the peer's uid checked), and ride a TLS
        connection an earlier run opened instead of paying for a new handshake. It holds
        no credentials: each request brings its own headers. Connections are pooled per
        origin and TLS setting (CA bundle, client certificate, --insecure); requests
        through a proxy or --unix-socket go direct. An origin that speaks HTTP/2 is
        served over one multiplexed connection the keeper holds: each run's request is a
        stream on it, so parallel runs share it. It exits after an idle time (60s;
        the profile key keep or DOUCTL_KEEP=5m set it). --no-keep, DOUCTL_KEEP=0 or
        keep: false turn it off. A keeper that is gone, stale, another user's or another
        douctl version's is ignored: the request goes direct. Each douctl version has its
        own socket (keeper-VERSION.sock), so two versions side by side keep two keepers.
        """), [
        Command(CommandSpec("status", abstract: "say whether a keeper runs, and the connections it holds (JSON in a pipe)"), options: UserCommands.ViewOnly.self, run: status),
        Command(CommandSpec("stop", abstract: "stop the keeper (its connections close)"), options: NoOptions.self, run: stop),
        Command(CommandSpec("serve", abstract: "run the keeper in the foreground (douctl starts it itself)"), options: ServeOptions.self, run: serve),
    ])

    struct ServeOptions: CommandOptions {
        var idle = KeeperRoute.defaultIdleSeconds
        var directory: String?

        static let bindings: [OptionBinding<Self>] = [
            .number({ $0.idle = $1 }, OptionSpec("idle", value: ValueSpec("SECONDS", kind: .number, default: "60"), help: "exit after this long with nothing to do")),
            .value({ $0.directory = $1 }, OptionSpec("directory", value: ValueSpec("DIR", completion: .directory), help: "listen in DIR (douctl passes the one its runs look in)")),
        ]

        func validate() throws(OptionError) {
            if !(idle > 0 && idle <= 7 * 86_400) { throw OptionError("invalid value for --idle: expected seconds between 0 and a week") }
            if let directory, !directory.hasPrefix("/") { throw OptionError("invalid value '\(directory)' for --directory: expected an absolute path") }
        }
    }

    /// The douctl binary this process runs (the keeper is started from it), or nil when this
    /// is not douctl (a test runner calling the commands in process).
    static let executable: String? = {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let path = String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard path.split(separator: "/").last?.hasPrefix("douctl") == true else { return nil }
        return path
    }()

    private static func directory(_ context: CommandContext) throws(DouctlError) -> String {
        KeeperRoute.directory(environment: context.environment, configDirectory: try context.session.configDirectory().path)
    }

    /// Whether a keeper runs and what it holds, as fields (JSON in a pipe).
    static func status(_ options: UserCommands.ViewOnly, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let path = KeeperRoute.socketPath(directory: try directory(context), version: Douctl.version)
        var fields: [(String, JSON)] = [("running", .bool(false)), ("socket", .string(path))]
        if let lines = KeeperServer.ask("status", socketPath: path, version: Douctl.version) {
            fields[0].1 = .bool(true)
            var held: [JSON] = []
            for line in lines {
                guard let space = line.firstIndex(of: " ") else { continue }
                let (key, value) = (String(line[..<space]), String(line[line.index(after: space)...]))
                switch key {
                case "pid", "in-use", "served", "reused":
                    if let number = Int(value) { fields.append((key.replacingAll("-", with: "_"), .number(String(number)))) }
                case "idle-time": fields.append(("idle_time", .string(value)))
                case "accept-encoding": fields.append(("accept_encoding", .string(value)))
                case "held": held.append(.string(value))
                default: continue
                }
            }
            fields.append(("held", .array(held)))
        }
        context.output.document(.object(JSONObject(fields)), view: .fields)
        return .success
    }

    static func stop(_ options: NoOptions, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let path = KeeperRoute.socketPath(directory: try directory(context), version: Douctl.version)
        guard let lines = KeeperServer.ask("stop", socketPath: path, version: Douctl.version) else {
            context.output.note("keeper: not running (\(path))")
            return .success
        }
        let pid = lines.first.map { $0.split(separator: " ").last.map(String.init) ?? "" } ?? ""
        context.output.note("keeper: stopped (pid \(TerminalText.escaped(pid)))")
        return .success
    }

    static func serve(_ options: ServeOptions, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        var directory = options.directory ?? ""
        if directory.isEmpty { directory = try Self.directory(context) }
        // Started detached by a client: no descriptor of its (a test's pipe) stays open here,
        // and no terminal's Ctrl-C reaches it.
        for fd in Int32(3)..<Int32(1024) { close(fd) }
        _ = setsid()
        // A client that goes away mid-write is an error to handle, not a signal that ends us.
        signal(SIGPIPE, SIG_IGN)
        let server = KeeperServer(directory: directory, version: Douctl.version, idleSeconds: options.idle)
        let status = server.serve { line in context.output.note(line) }
        return status == 0 ? .success : .localInput
    }
}
