#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CCurl
import DouctlSystem

/// Where this user's connection keeper listens (`douctl keeper serve`), and how a client
/// starts one when none answers. The keeper holds TLS connections a finished douctl
/// process leaves behind, so the next process's request rides one instead of paying for a
/// TCP and TLS handshake (ssh's ControlMaster/ControlPersist). See `KeeperServer`.
public struct KeeperRoute: Sendable, Equatable {
    /// The keeper's Unix socket: one per douctl version (`keeper-VERSION.sock`), so two
    /// versions side by side each keep their own and never speak to the other's.
    public var socketPath: String
    /// The version both ends must be (the handshake repeats it).
    public var version: String
    /// What starts a keeper (`douctl keeper serve --idle 60`); nil: never start one.
    public var start: [String]?

    public init(socketPath: String, version: String, start: [String]?) {
        self.socketPath = socketPath
        self.version = version
        self.start = start
    }

    /// The version of the keeper's protocol (the first line each end sends).
    public static let protocolName = "douctl-keeper 1"
    /// The idle time a keeper stays for when nothing says otherwise.
    public static let defaultIdleSeconds = 60.0

    /// `$XDG_RUNTIME_DIR/douctl` (a per-user tmpfs that logging out empties), else the
    /// config directory's `keeper` directory.
    public static func directory(environment: [String: String], configDirectory: String) -> String {
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            return runtime + "/douctl"
        }
        return configDirectory + "/keeper"
    }

    public static func socketPath(directory: String, version: String) -> String {
        directory + "/keeper-\(version).sock"
    }

    /// "60s", "5m", "1h" or plain seconds; nil for anything else.
    public static func idleSeconds(_ text: String) -> Double? {
        var digits = Substring(text)
        var unit = 1.0
        if let last = text.last, "smh".contains(last) {
            digits = digits.dropLast()
            unit = last == "s" ? 1 : last == "m" ? 60 : 3600
        }
        guard let value = Double(digits), value.isFinite, value > 0, value * unit <= 86_400 * 7 else { return nil }
        return value * unit
    }
}

/// The client's side of the keeper, one per `HTTPClient`: libcurl's socket callbacks for a
/// request sent through it. Each socket libcurl asks for is a connection to the keeper that
/// has already said, in its handshake, which origin and TLS settings it carries; libcurl
/// then speaks plain HTTP/1.1 over it and the keeper relays the bytes to the origin's
/// connection. After an exchange ends cleanly the client marks it so
/// (`ccurl_keeper_mark_clean`); a connection left any other way (Ctrl-C, `--max-time`, an
/// error) is never lent again.
final class KeeperLink {
    let route: KeeperRoute
    let log: ((String) -> Void)?
    private let cancellation: Cancellation
    /// Set for each transfer through the keeper: what the keeper connects to.
    var target: (host: String, port: UInt16, tls: TLSOptions, timeout: Double)?
    /// The keeper is gone, not ours or speaks something else: this process goes direct.
    var unusable = false
    private var startedOne = false
    /// This transfer's socket was refused (no keeper, or it could not connect): the hop is
    /// sent again direct.
    var declined = false
    /// The wait for the keeper was cut by Ctrl-C or `--max-time`.
    var stopped = false
    /// The keeper sockets libcurl holds open.
    private(set) var open: Set<Int32> = []
    /// The last socket's story for `-v` ("reused (request 3 on it)", "new").
    private(set) var lastConnection = ""
    /// This transfer asked for a socket (libcurl did not reuse the one it holds).
    var opened = false
    /// The sockets whose requests the keeper carries on its HTTP/2 connection (it answered
    /// `ok h2 …`): libcurl speaks HTTP/1.1 to the keeper, the origin hears HTTP/2.
    private(set) var overHTTP2: Set<Int32> = []
    /// This transfer's socket is one of those (set when libcurl is about to send on it).
    var currentOverHTTP2 = false
    /// The keeper's libcurl offers an encoding this process cannot decode (or the keeper did
    /// not say what it offers): a request asking for a compressed reply goes through libcurl.
    var compressedNeedsLibcurl = false

    init(route: KeeperRoute, log: ((String) -> Void)?, cancellation: Cancellation) {
        self.route = route
        self.log = log
        self.cancellation = cancellation
    }

    /// The socket libcurl is connecting to the keeper, before its handshake.
    private var pending: Int32?
    /// libcurl could not connect to the keeper's socket (a stale socket file).
    var connectFailed = false

    /// libcurl wants a connection for `target`: a Unix socket it connects to the keeper
    /// (`handshake` follows in `ready`), or -1 (CURL_SOCKET_BAD) with `declined` set.
    func openSocket() -> Int32 {
        guard !unusable, target != nil else {
            declined = true
            return -1
        }
        var info = stat()
        guard lstat(route.socketPath, &info) == 0 else {
            unusable = true
            declined = true
            startKeeper(why: "none is running")
            return -1
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            declined = true
            return -1
        }
        pending = fd
        return fd
    }

    /// libcurl connected (or reused a connection) and is about to send the request: a new
    /// socket does its handshake first. Non-zero aborts the transfer (`declined`, `stopped`).
    func ready() -> Int32 {
        guard let fd = pending, let target else {
            // A socket libcurl reuses: this process's keeper socket, when it holds one.
            currentOverHTTP2 = open.count == 1 && open.contains { overHTTP2.contains($0) }
            return 0
        }
        pending = nil
        switch handshake(fd, target) {
        case .ready(let story, let h2, _):
            lastConnection = story
            opened = true
            open.insert(fd)
            if h2 { overHTTP2.insert(fd) }
            currentOverHTTP2 = h2
            return 0
        case .declined(let why, let forGood):
            declined = true
            if forGood { unusable = true }
            log?("* keeper: \(why); going direct")
            return 1
        case .stopped:
            stopped = true
            return 1
        }
    }

    /// A socket that never reached the handshake: its connect failed.
    func closeSocket(_ fd: Int32) {
        if pending == fd {
            pending = nil
            connectFailed = true
        }
        open.remove(fd)
        overHTTP2.remove(fd)
        close(fd)
    }

    /// The keeper's socket is there but nobody listens (a keeper that died): a new keeper
    /// takes its place for the calls after this one.
    func noteConnectFailure() {
        connectFailed = false
        unusable = true
        declined = true
        startKeeper(why: "nothing answers at \(route.socketPath)")
    }

    /// What the keeper is started with of this process's environment: where libraries and
    /// files are, never a credential (DOUCTL_TOKEN and the like stay here).
    static func keeperEnvironment() -> [String] {
        let kept: Set<String> = ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "DOUCTL_LIBCURL", "LD_LIBRARY_PATH",
                                 "ASAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS", "UBSAN_OPTIONS"]
        var entries: [String] = []
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "="), kept.contains(String(text[..<equals])) { entries.append(text) }
            entry += 1
        }
        return entries
    }

    func startKeeper(why: String) {
        guard let start = route.start, !startedOne else {
            log?("* keeper: \(why); going direct")
            return
        }
        startedOne = true
        let started = Subprocess.spawnDetached(start, environment: Self.keeperEnvironment()) != nil
        log?("* keeper: \(why); \(started ? "started one for the calls after this" : "could not start one"); this call goes direct")
    }

    /// After a transfer that ended well: its socket (still open) served a whole exchange.
    func markClean(_ fd: Int32) {
        // Over HTTP/2 the keeper reads each request and reply itself: it knows where they end.
        guard open.contains(fd), !overHTTP2.contains(fd) else { return }
        _ = ccurl_keeper_mark_clean(fd)
    }

    enum Handshake {
        /// `acceptEncoding`: what the keeper's libcurl sends for CURLOPT_ACCEPT_ENCODING ""
        /// (nil when the keeper did not say).
        case ready(String, h2: Bool, acceptEncoding: String?)
        case declined(String, forGood: Bool)
        case stopped
    }

    func handshake(_ fd: Int32, _ target: (host: String, port: UInt16, tls: TLSOptions, timeout: Double)) -> Handshake {
        let uid = ccurl_peer_uid(fd)
        guard uid == Int(getuid()) else {
            return .declined("the listener at \(route.socketPath) is not this user's (uid \(uid))", forGood: true)
        }
        var fields = [
            ("host", target.host), ("port", String(target.port)),
            ("timeout-ms", String(Int(min(max(target.timeout, 0.001), 1_000_000) * 1000))),
        ]
        if let value = target.tls.caBundle { fields.append(("cafile", value)) }
        if let value = target.tls.caPath { fields.append(("capath", value)) }
        if let value = target.tls.clientCertificate { fields.append(("cert", value)) }
        if let value = target.tls.clientKey { fields.append(("key", value)) }
        if target.tls.insecure { fields.append(("insecure", "1")) }
        // A value that would break the line framing (a path with a newline) is not sent.
        guard !fields.contains(where: { $0.1.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D || $0 == 0 }) }) else {
            return .declined("a TLS setting's path has a line break", forGood: false)
        }
        var text = "\(KeeperRoute.protocolName) \(route.version)\nconnect\n"
        for (name, value) in fields { text += "\(name) \(value)\n" }
        text += "\n"
        guard KeeperWire.writeAll(fd, Array(text.utf8)) else {
            return .declined("the keeper closed the connection", forGood: true)
        }
        // The greeting comes at once from a keeper; a listener that says nothing is not one.
        var lines = KeeperWire.Lines(fd)
        switch lines.next(within: 1, cancellation: cancellation) {
        case .line(let greeting):
            guard greeting == "\(KeeperRoute.protocolName) \(route.version)" else {
                let shown = TerminalText.escaped(String(greeting.prefix(80)))
                return .declined(greeting.hasPrefix(KeeperRoute.protocolName) ? "the keeper is another douctl version (\(shown))" : "the listener at \(route.socketPath) is not a douctl keeper", forGood: true)
            }
        case .stopped: return .stopped
        case .failed: return .declined("the listener at \(route.socketPath) did not answer as a keeper", forGood: true)
        }
        switch lines.next(within: target.timeout + 5, cancellation: cancellation) {
        case .line(let answer):
            if answer.hasPrefix("ok "), !lines.leftover {
                // "ok [h2 ]STORY[<TAB>ACCEPT-ENCODING]": after a tab, the Accept-Encoding
                // value the keeper's libcurl sends (a client carrying the request itself sends it).
                let parts = answer.split(separator: "\t", maxSplits: 1, omittingEmptySubsequences: false)
                var story = String(parts[0].dropFirst(3))
                let acceptEncoding = parts.count > 1 ? Self.acceptEncodingValue(parts[1]) : nil
                let h2 = story.hasPrefix("h2 ")
                if h2 { story.removeFirst(3) }
                story = TerminalText.escaped(String(story.prefix(200)))
                log?("* keeper: \(story.hasPrefix("reused") ? "reusing its connection" : "a new connection") to \(target.host):\(target.port)\(h2 ? " over HTTP/2" : "") (\(story))")
                return .ready(story, h2: h2, acceptEncoding: acceptEncoding)
            }
            let why = answer.hasPrefix("no ") ? TerminalText.escaped(String(answer.dropFirst(3).prefix(300))) : "it answered something else"
            return .declined("the keeper could not connect to \(target.host):\(target.port) (\(why))", forGood: false)
        case .stopped: return .stopped
        case .failed: return .declined("the keeper did not answer", forGood: true)
        }
    }
}

extension KeeperLink {
    /// An Accept-Encoding value as the keeper told it: tokens, commas and spaces only (it goes
    /// into a request head verbatim), at most 200 bytes; nil for anything else.
    static func acceptEncodingValue(_ text: Substring) -> String? {
        guard !text.isEmpty, text.utf8.count <= 200,
              text.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2C || $0 == 0x20 || $0 == 0x2D || $0 == 0x2E || $0 == 0x5F }),
              !KeeperDecoding.names(String(text)).isEmpty else { return nil }
        return String(text)
    }
}

/// Lines on a keeper socket, read a byte at a time so nothing after the line is taken from
/// libcurl (the keeper writes nothing more until the request is sent anyway).
enum KeeperWire {
    enum Read { case line(String), stopped, failed }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                send(fd, buffer.baseAddress.map { $0 + offset }, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if written < 0 && errno == EINTR { continue }
            if written < 0 && errno == EAGAIN {
                // libcurl's sockets are non-blocking.
                var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                if poll(&ready, 1, 2000) <= 0 { return false }
                continue
            }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }

    /// Reads a keeper socket's lines. Neither end sends anything after the lines the other
    /// waits for until it has its answer, so reading in blocks never takes bytes meant for
    /// libcurl; `leftover` says whether the peer broke that rule.
    struct Lines {
        let fd: Int32
        private var buffer: [UInt8] = []
        var leftover: Bool { !buffer.isEmpty }

        init(_ fd: Int32) { self.fd = fd }

        /// The next line (without its LF), waiting at most `seconds` in slices that notice a stop.
        mutating func next(within seconds: Double, cancellation: Cancellation?, limit: Int = 4096) -> Read {
            let deadline = currentUnixTime() + seconds
            while true {
                if let newline = buffer.firstIndex(of: 0x0A) {
                    let line = String(decoding: buffer[..<newline], as: UTF8.self)
                    buffer.removeSubrange(...newline)
                    return .line(line)
                }
                if buffer.count > limit { return .failed }
                if cancellation?.isRequested == true { return .stopped }
                let left = deadline - currentUnixTime()
                if left <= 0 { return .failed }
                var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let count = poll(&ready, 1, Int32(min(left, 0.05) * 1000) + 1)
                if count < 0 && errno != EINTR { return .failed }
                guard count > 0 else { continue }
                var chunk = [UInt8](repeating: 0, count: 2048)
                let got = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if got < 0 && (errno == EINTR || errno == EAGAIN) { continue }
                guard got > 0 else { return .failed }
                buffer.append(contentsOf: chunk[..<got])
            }
        }
    }
}

// MARK: - C entry points (the link comes in as the context pointer)

let keeperOpenCallback: ccurl_opensocket_callback = { context, _, _ in
    guard let context else { return -1 }
    return Unmanaged<KeeperLink>.fromOpaque(context).takeUnretainedValue().openSocket()
}

let keeperReadyCallback: ccurl_prereq_callback = { context, _, _, _, _ in
    guard let context else { return 1 }
    return Unmanaged<KeeperLink>.fromOpaque(context).takeUnretainedValue().ready()
}

let keeperCloseCallback: ccurl_closesocket_callback = { context, fd in
    guard let context else {
        close(fd)
        return 0
    }
    Unmanaged<KeeperLink>.fromOpaque(context).takeUnretainedValue().closeSocket(fd)
    return 0
}
