#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CCurl
import DouctlSystem

/// `douctl keeper serve`: this user's connection keeper. It listens on a Unix socket (mode
/// 0600 in a 0700 directory, each peer's uid checked with SO_PEERCRED), and for each client
/// connection opens, or lends from its pool, a TLS connection to the origin the client
/// names, with the client's TLS settings (CA bundle or directory, client certificate,
/// --insecure), and relays bytes both ways: the client's libcurl speaks HTTP/1.1 through it.
/// It holds no credentials: every request brings its own headers. A connection goes back
/// to the pool only when the client marked its last exchange complete; one left mid-way
/// (Ctrl-C, --max-time) is closed. Connections are pooled per origin and TLS setting, idle
/// ones closed after the idle time, and the keeper exits when it has been idle that long.
public final class KeeperServer: @unchecked Sendable {
    public let directory: String
    public let version: String
    public let idleSeconds: Double
    private var socketPath: String { KeeperRoute.socketPath(directory: directory, version: version) }

    /// A held connection: a CONNECT_ONLY libcurl handle.
    private final class Held: @unchecked Sendable {
        let handle: UnsafeMutableRawPointer
        let origin: String
        var exchanges = 0
        var idleSince = 0.0
        init(handle: UnsafeMutableRawPointer, origin: String) {
            self.handle = handle
            self.origin = origin
        }
    }

    private struct State {
        var pool: [String: [Held]] = [:]
        var active = 0
        var lastActivity = currentUnixTime()
        var stopping = false
        var served = 0
        var reused = 0
        /// Origins (and TLS settings) that negotiated h2 (true) or HTTP/1.1 (false) with ALPN.
        var speaksH2: [String: Bool] = [:]
        /// The HTTP/2 connection each h2 origin's requests share (`KeeperH2Origin`).
        var engines: [String: KeeperH2Origin] = [:]
    }

    private let state = LockedValue(State())
    /// The handshake answer's tail: a tab and the Accept-Encoding value this keeper's libcurl
    /// sends for CURLOPT_ACCEPT_ENCODING "" (asked of it once, at start), or "" when unknown.
    private var acceptEncodingTail = ""

    public init(directory: String, version: String, idleSeconds: Double) {
        self.directory = directory
        self.version = version
        self.idleSeconds = idleSeconds
    }

    /// Serves until idle or stopped. Returns the exit status: 0, also when another keeper
    /// already serves (this one is then not needed); 1 when it cannot listen.
    public func serve(log: (String) -> Void) -> Int32 {
        guard CurlLibrary.isLoadable else {
            log("douctl keeper: cannot load libcurl")
            return 1
        }
        if let problem = Self.prepareDirectory(directory) {
            log("douctl keeper: \(problem)")
            return 1
        }
        let lockPath = directory + "/keeper-\(version).lock"
        let lock = open(lockPath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard lock >= 0 else {
            log("douctl keeper: cannot open \(lockPath): \(String(cString: strerror(errno)))")
            return 1
        }
        // Another keeper holds the lock: it serves, this one is not needed.
        guard flock(lock, LOCK_EX | LOCK_NB) == 0 else { return 0 }
        if let value = Self.libcurlAcceptEncoding(directory: directory) { acceptEncodingTail = "\t" + value }
        unlink(socketPath)
        let listener = ccurl_unix_listen(socketPath)
        guard listener >= 0 else {
            log("douctl keeper: cannot listen on \(socketPath): \(String(cString: strerror(-listener)))")
            return 1
        }
        var me = stat()
        lstat(socketPath, &me)
        while true {
            var ready = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            let count = poll(&ready, 1, 250)
            let now = currentUnixTime()
            let finished = state.withLock { state -> Bool in
                if state.stopping { return true }
                closeIdle(&state, now: now)
                // A stream on an HTTP/2 connection is a client served, its session long handed over.
                if state.engines.values.contains(where: { $0.isBusy }) { state.lastActivity = now }
                return state.active == 0 && now - state.lastActivity >= idleSeconds
            }
            if finished { break }
            guard count > 0 else { continue }
            let client = ccurl_unix_accept(listener)
            guard client >= 0 else { continue }
            // Another user's process is never served (the socket's mode should stop it first).
            guard ccurl_peer_uid(client) == Int(geteuid()) else {
                close(client)
                continue
            }
            state.withLock {
                $0.active += 1
                $0.lastActivity = now
            }
            do {
                try startDetachedThread(stackSize: 256 << 10) { [self] in
                    session(client)
                    state.withLock {
                        $0.active -= 1
                        $0.lastActivity = currentUnixTime()
                    }
                }
            } catch {
                close(client)
                state.withLock { $0.active -= 1 }
            }
        }
        // The socket is removed only while it is still this keeper's.
        var now = stat()
        if lstat(socketPath, &now) == 0 && now.st_ino == me.st_ino { unlink(socketPath) }
        close(listener)
        state.withLock { state in
            for held in state.pool.values.joined() { ccurl_easy_cleanup(held.handle) }
            state.pool = [:]
            for engine in state.engines.values { engine.stop() }
        }
        return 0
    }

    /// Makes the keeper's directory (0700) or checks it is this user's and private.
    static func prepareDirectory(_ directory: String) -> String? {
        // Its parent too (a config directory no command has made yet), private as well.
        if let slash = directory.lastIndex(of: "/"), slash != directory.startIndex {
            _ = mkdir(String(directory[..<slash]), 0o700)
        }
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            return "cannot make \(directory): \(String(cString: strerror(errno)))"
        }
        var info = stat()
        guard lstat(directory, &info) == 0 else { return "cannot read \(directory): \(String(cString: strerror(errno)))" }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { return "\(directory) is not a directory" }
        guard info.st_uid == geteuid() else { return "\(directory) belongs to another user" }
        guard info.st_mode & 0o077 == 0 else { return "\(directory) is open to other users (chmod 700 it)" }
        return nil
    }

    private func closeIdle(_ state: inout State, now: Double) {
        for (key, list) in state.pool {
            let (keep, expired) = (list.filter { now - $0.idleSince < idleSeconds }, list.filter { now - $0.idleSince >= idleSeconds })
            for held in expired { ccurl_easy_cleanup(held.handle) }
            state.pool[key] = keep.isEmpty ? nil : keep
        }
    }

    // MARK: - one client

    private func session(_ client: Int32) {
        // A client handed to an HTTP/2 connection's thread is that thread's to close.
        var handedOver = false
        defer { if !handedOver { close(client) } }
        // The greeting goes with the first answer, in one write: a client waiting for a kept
        // connection wakes once. (One that must be opened gets the greeting first.)
        let greeting = "\(KeeperRoute.protocolName) \(version)\n"
        var lines: [String] = []
        var reader = KeeperWire.Lines(client)
        while true {
            guard case .line(let line) = reader.next(within: 5, cancellation: nil) else { return }
            if line.isEmpty { break }
            lines.append(line)
            if lines.count > 16 { return }
        }
        // A client waits for the answer before its request: bytes already here break that.
        guard !reader.leftover else { return }
        // A client of another version or protocol gets the greeting (which says ours) and nothing more.
        guard lines.first == "\(KeeperRoute.protocolName) \(version)", lines.count > 1 else {
            _ = KeeperWire.writeAll(client, Array(greeting.utf8))
            return
        }
        switch lines[1] {
        case "status":
            _ = KeeperWire.writeAll(client, Array((greeting + statusLines()).utf8))
        case "stop":
            state.withLock { $0.stopping = true }
            _ = KeeperWire.writeAll(client, Array((greeting + "stopping \(getpid())\n").utf8))
        case "connect":
            var fields: [String: String] = [:]
            for line in lines.dropFirst(2) {
                guard let space = line.firstIndex(of: " ") else { continue }
                fields[String(line[..<space])] = String(line[line.index(after: space)...])
            }
            handedOver = relay(client, fields, greeting: greeting)
        default:
            _ = KeeperWire.writeAll(client, Array(greeting.utf8))
        }
    }

    /// Serves a client's connection: relays it to an HTTP/1.1 connection, or (true) hands it
    /// to the origin's HTTP/2 connection, whose thread then owns it.
    private func relay(_ client: Int32, _ fields: [String: String], greeting: String) -> Bool {
        guard let host = fields["host"], !host.isEmpty, let port = fields["port"].flatMap(UInt16.init) else {
            _ = KeeperWire.writeAll(client, Array((greeting + "no the request named no origin\n").utf8))
            return false
        }
        let origin = "\(host):\(port)"
        // Pooled per origin and TLS setting: a connection verified against one CA bundle,
        // or presenting one client certificate, never serves a request asking for another.
        let key = ["host", "port", "cafile", "capath", "cert", "key", "insecure"].map { "\($0)=\(fields[$0] ?? "")" }.joined(separator: "\n")
        // An origin known to speak h2: its connection's thread (a new one when the last
        // ended idle) takes the client.
        let (speaksH2, engine) = state.withLock { state in
            // One that could not reach its origin is ending: ALPN is asked again.
            if let engine = state.engines[key], engine.lostOrigin {
                state.engines[key] = nil
                state.speaksH2[key] = nil
            }
            return (state.speaksH2[key] == true, state.engines[key])
        }
        if speaksH2 {
            return handOver(client, to: engine, key: key, answer: greeting, origin: origin, host: host, port: port, fields: fields)
        }
        var held = state.withLock { state -> Held? in
            while var list = state.pool[key], let last = list.popLast() {
                state.pool[key] = list.isEmpty ? nil : list
                if ccurl_keeper_alive(last.handle) == 1 { return last }
                ccurl_easy_cleanup(last.handle)
            }
            return nil
        }
        let story: String
        var answer = greeting
        if let held {
            story = "reused: exchange \(held.exchanges + 1) on it, idle \(formatSeconds(currentUnixTime() - held.idleSince))"
            state.withLock { $0.reused += 1 }
        } else {
            guard KeeperWire.writeAll(client, Array(greeting.utf8)) else { return false }
            answer = ""
            // The first connection to an origin offers h2 with ALPN: one that takes it is
            // served over HTTP/2 from then on (this probe's connection is closed: its bytes
            // cannot be relayed), one that does not is relayed as HTTP/1.1 on this connection.
            let offerH2 = state.withLock { $0.speaksH2[key] } == nil && ccurl_multi_load() == 0
            switch connect(host: host, port: port, fields: fields, origin: origin, offerH2: offerH2) {
            case .success(let fresh):
                held = fresh
                story = "new"
                if offerH2 { state.withLock { $0.speaksH2[key] = false } }
            case .h2:
                state.withLock { $0.speaksH2[key] = true }
                return handOver(client, to: nil, key: key, answer: "", origin: origin, host: host, port: port, fields: fields)
            case .failure(let why):
                _ = KeeperWire.writeAll(client, Array("no \(why)\n".utf8))
                return false
            }
        }
        guard let held, KeeperWire.writeAll(client, Array((answer + "ok \(story)\(acceptEncodingTail)\n").utf8)) else {
            if let held { ccurl_easy_cleanup(held.handle) }
            return false
        }
        state.withLock { $0.served += 1 }
        var traffic: Int64 = 0
        let clean = ccurl_keeper_relay(client, held.handle, &traffic) == 1
        guard clean else {
            ccurl_easy_cleanup(held.handle)
            return false
        }
        if traffic > 0 { held.exchanges += 1 }
        held.idleSince = currentUnixTime()
        state.withLock { $0.pool[key, default: []].append(held) }
        return false
    }

    /// Answers the handshake `ok h2 STORY` and gives the client to the origin's HTTP/2
    /// connection (`engine`, or a new one when it is nil or ending). False when none could
    /// take it (the client is then closed by the caller, and its call fails as a
    /// connection closed without a reply would).
    private func handOver(_ client: Int32, to engine: KeeperH2Origin?, key: String, answer: String, origin: String, host: String, port: UInt16, fields: [String: String]) -> Bool {
        guard let current = engine ?? startEngine(key: key, origin: origin, host: host, port: port, fields: fields) else {
            // This libcurl cannot multiplex: the origin is relayed as HTTP/1.1 from now on,
            // and this client goes direct.
            state.withLock { $0.speaksH2[key] = false }
            _ = KeeperWire.writeAll(client, Array((answer + "no HTTP/2 is not available in the keeper\n").utf8))
            return false
        }
        let story = current.story
        guard KeeperWire.writeAll(client, Array((answer + "ok h2 \(story)\(acceptEncodingTail)\n").utf8)) else { return false }
        state.withLock {
            $0.served += 1
            if story != "new" { $0.reused += 1 }
        }
        if current.accept(client) { return true }
        // It was ending as the client came: a new one takes it (the answer stands).
        state.withLock { state in
            if state.engines[key] === current { state.engines[key] = nil }
        }
        guard let made = startEngine(key: key, origin: origin, host: host, port: port, fields: fields) else { return false }
        return made.accept(client)
    }

    /// A new HTTP/2 connection's thread for `key`, registered until it ends by itself.
    /// The HTTP/2 connection's thread for `key`: the one registered (another client's
    /// session may have started it a moment ago: clients arriving together share one), or
    /// a new one, registered until it ends by itself.
    private func startEngine(key: String, origin: String, host: String, port: UInt16, fields: [String: String]) -> KeeperH2Origin? {
        state.withLock { registry -> KeeperH2Origin? in
            if let running = registry.engines[key], !running.lostOrigin, !running.isClosed { return running }
            let made = KeeperH2Origin.start(origin: origin, host: host, port: port, fields: fields, idleSeconds: idleSeconds, fallback: { [self] client, unread in
                relayHTTP1(client, unread: unread, host: host, port: port, fields: fields, origin: origin)
            }) { [self] ended in
                state.withLock { state in
                    if state.engines[key] === ended { state.engines[key] = nil }
                    if ended.lostOrigin { state.speaksH2[key] = nil }
                }
            }
            if let made { registry.engines[key] = made }
            return made
        }
    }

    /// A client of an h2 origin whose request the HTTP/2 path cannot carry: relayed, on a
    /// thread of its own, over a new HTTP/1.1 connection (ALPN http/1.1 alone), the bytes
    /// already read from it sent first. Closed after, never pooled.
    private func relayHTTP1(_ client: Int32, unread: [UInt8], host: String, port: UInt16, fields: [String: String], origin: String) {
        state.withLock { $0.active += 1 }
        let started = (try? startDetachedThread(stackSize: 256 << 10) { [self] in
            defer {
                close(client)
                state.withLock {
                    $0.active -= 1
                    $0.lastActivity = currentUnixTime()
                }
            }
            guard case .success(let connected) = connectOnce(host: host, port: port, fields: fields, origin: origin, offerH2: false) else { return }
            let handle = connected.0.handle
            defer { ccurl_easy_cleanup(handle) }
            guard Self.sendUpstream(handle, unread) else { return }
            var traffic: Int64 = 0
            _ = ccurl_keeper_relay_sent(client, handle, &traffic)
        }) != nil
        if !started {
            close(client)
            state.withLock { $0.active -= 1 }
        }
    }

    private static func sendUpstream(_ handle: UnsafeMutableRawPointer, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            var sent = 0
            let result = bytes.withUnsafeBytes { ccurl_easy_send(handle, $0.baseAddress.map { $0 + offset }, bytes.count - offset, &sent) }
            if result == CCURLE_AGAIN {
                var ready = pollfd(fd: ccurl_active_socket(handle), events: Int16(POLLOUT), revents: 0)
                if poll(&ready, 1, 30_000) <= 0 { return false }
                continue
            }
            guard result == CCURLE_OK else { return false }
            offset += sent
        }
        return true
    }

    private struct Failure: Error { var why: String }

    private enum Connected {
        case success(Held)
        /// The origin took h2 (the probe's connection is closed).
        case h2
        case failure(String)
    }

    private func connect(host: String, port: UInt16, fields: [String: String], origin: String, offerH2: Bool) -> Connected {
        switch connectOnce(host: host, port: port, fields: fields, origin: origin, offerH2: offerH2) {
        case .success(let connected):
            let (held, alpn) = connected
            if !offerH2 || alpn == 1 { return .success(held) }
            ccurl_easy_cleanup(held.handle)
            if alpn == 2 { return .h2 }
            // libcurl did not say what ALPN chose: HTTP/1.1 alone, as before.
            switch connectOnce(host: host, port: port, fields: fields, origin: origin, offerH2: false) {
            case .success(let connected): return .success(connected.0)
            case .failure(let failure): return .failure(failure.why)
            }
        case .failure(let failure):
            return .failure(failure.why)
        }
    }

    /// The handshake's connection fields (connect time limit, CA bundle or directory, client
    /// certificate, --insecure) set on a handle, in one place for the HTTP/1.1 relay's
    /// connections and the HTTP/2 side's streams: a TLS setting one of them missed would
    /// let two settings share a connection.
    static func applyConnectionFields(_ fields: [String: String], to handle: UnsafeMutableRawPointer, check: (Int32) -> Void) {
        let timeout = fields["timeout-ms"].flatMap(Int.init).map { min(max($0, 1), 1_000_000_000) } ?? 30_000
        check(ccurl_setopt_long(handle, CCURLOPT_CONNECTTIMEOUT_MS, timeout))
        if let value = fields["cafile"] { check(ccurl_setopt_string(handle, CCURLOPT_CAINFO, value)) }
        if let value = fields["capath"] { check(ccurl_setopt_string(handle, CCURLOPT_CAPATH, value)) }
        if let value = fields["cert"] { check(ccurl_setopt_string(handle, CCURLOPT_SSLCERT, value)) }
        if let value = fields["key"] { check(ccurl_setopt_string(handle, CCURLOPT_SSLKEY, value)) }
        if fields["insecure"] == "1" {
            check(ccurl_setopt_long(handle, CCURLOPT_SSL_VERIFYPEER, 0))
            check(ccurl_setopt_long(handle, CCURLOPT_SSL_VERIFYHOST, 0))
        }
    }

    private func connectOnce(host: String, port: UInt16, fields: [String: String], origin: String, offerH2: Bool) -> Result<(Held, Int32), Failure> {
        guard let handle = ccurl_easy_init() else { return .failure(Failure(why: "curl_easy_init failed")) }
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: 256)
        errorBuffer.initialize(repeating: 0, count: 256)
        defer { errorBuffer.deallocate() }
        var problems: [Int32] = []
        func check(_ result: Int32) { if result != CCURLE_OK { problems.append(result) } }
        check(ccurl_setopt_string(handle, CCURLOPT_URL, "https://\(host):\(port)/"))
        check(ccurl_setopt_long(handle, CCURLOPT_CONNECT_ONLY, 1))
        check(ccurl_setopt_long(handle, CCURLOPT_HTTP_VERSION, Int(offerH2 ? CCURL_HTTP_VERSION_2TLS : CCURL_HTTP_VERSION_1_1)))
        let alpn = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
        alpn.initialize(to: 0)
        defer { alpn.deallocate() }
        if offerH2 { check(ccurl_setopt_alpn_watch(handle, alpn)) }
        check(ccurl_setopt_long(handle, CCURLOPT_NOSIGNAL, 1))
        check(ccurl_setopt_long(handle, CCURLOPT_SSLVERSION, Int(CCURL_SSLVERSION_TLSv1_2)))
        check(ccurl_setopt_long(handle, CCURLOPT_TCP_NODELAY, 1))
        // Never a proxy (a client with one goes direct), whatever this process's environment says.
        check(ccurl_setopt_string(handle, CCURLOPT_PROXY, ""))
        check(ccurl_setopt_pointer(handle, CCURLOPT_ERRORBUFFER, errorBuffer))
        Self.applyConnectionFields(fields, to: handle, check: check)
        if let problem = problems.first {
            ccurl_easy_cleanup(handle)
            return .failure(Failure(why: String(cString: ccurl_easy_strerror(problem))))
        }
        let result = ccurl_easy_perform(handle)
        guard result == CCURLE_OK else {
            let text = String(cString: errorBuffer)
            ccurl_easy_cleanup(handle)
            return .failure(Failure(why: text.isEmpty ? String(cString: ccurl_easy_strerror(result)) : text))
        }
        // The watch's pointer dies with this call: libcurl stops writing to it now.
        if offerH2 {
            _ = ccurl_setopt_long(handle, CCURLOPT_VERBOSE, 0)
            _ = ccurl_setopt_pointer(handle, CCURLOPT_DEBUGDATA, nil)
        }
        return .success((Held(handle: handle, origin: origin), alpn.pointee))
    }

    private func statusLines() -> String {
        let now = currentUnixTime()
        return state.withLock { state in
            var text = "pid \(getpid())\n"
            text += "idle-time \(formatSeconds(idleSeconds))\n"
            text += "in-use \(state.active - 1)\n"
            text += "served \(state.served)\n"
            text += "reused \(state.reused)\n"
            // What clients are told to ask for (the handshake's tab-separated tail).
            if !acceptEncodingTail.isEmpty { text += "accept-encoding \(acceptEncodingTail.dropFirst())\n" }
            let held = state.pool.values.joined().sorted { $0.origin < $1.origin }
            for connection in held {
                text += "held \(connection.origin) (\(connection.exchanges) exchanges, idle \(formatSeconds(now - connection.idleSince)))\n"
            }
            for engine in state.engines.values.sorted(by: { $0.origin < $1.origin }) { text += engine.statusLine(now: now) + "\n" }
            return text
        }
    }

    // MARK: - the commands' side

    /// What a keeper at `socketPath` says to `status` or `stop`: its lines, or nil when
    /// none of ours answers there.
    public static func ask(_ command: String, socketPath: String, version: String) -> [String]? {
        let fd = ccurl_unix_connect(socketPath)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var reader = KeeperWire.Lines(fd)
        guard ccurl_peer_uid(fd) == Int(getuid()),
              KeeperWire.writeAll(fd, Array("\(KeeperRoute.protocolName) \(version)\n\(command)\n\n".utf8)),
              case .line(let greeting) = reader.next(within: 2, cancellation: nil),
              greeting == "\(KeeperRoute.protocolName) \(version)" else { return nil }
        var lines: [String] = []
        while case .line(let line) = reader.next(within: 2, cancellation: nil) {
            lines.append(line)
            if lines.count > 10_000 { break }
        }
        return lines
    }
}

extension CurlLibrary {
    static var isLoadable: Bool { ccurl_load() == 0 }
}

extension KeeperServer {
    /// What this process's libcurl sends as Accept-Encoding for CURLOPT_ACCEPT_ENCODING ""
    /// (every decoder it was built with, in its order: "deflate, gzip, br, zstd" for Debian's),
    /// so a client carrying a request without libcurl asks for exactly what a direct call asks
    /// for. Asked of libcurl itself: one request to a Unix socket of this keeper's, whose head
    /// is read and answered 204 by a thread here. Falls back to the version string's
    /// libraries (zlib, brotli, zstd) when that fails; nil when neither says.
    public static func libcurlAcceptEncoding(directory: String) -> String? {
        guard CurlLibrary.isLoadable else { return nil }
        return acceptEncodingAsked(directory: directory) ?? acceptEncodingFromVersion()
    }

    /// The fallback: the encodings of the libraries curl_version names, in libcurl's order.
    public static func acceptEncodingFromVersion() -> String? {
        guard CurlLibrary.isLoadable else { return nil }
        let libraries = String(cString: ccurl_version()).split(separator: " ")
        func has(_ name: String) -> Bool { libraries.contains { $0.hasPrefix(name + "/") } }
        var names: [String] = []
        if has("zlib") { names += ["deflate", "gzip"] }
        if has("brotli") { names.append("br") }
        if has("zstd") { names.append("zstd") }
        return names.isEmpty ? nil : names.joined(separator: ", ")
    }

    /// libcurl's own answer: the Accept-Encoding line of a request it sends to a Unix socket
    /// in `directory`, or nil.
    public static func acceptEncodingAsked(directory: String) -> String? {
        guard CurlLibrary.isLoadable else { return nil }
        let path = directory + "/probe-\(getpid()).sock"
        unlink(path)
        let listener = ccurl_unix_listen(path)
        guard listener >= 0 else { return nil }
        defer {
            close(listener)
            unlink(path)
        }
        let head = LockedValue<[UInt8]>([])
        let thread: JoinableThread
        do {
            thread = try JoinableThread(stackSize: 128 << 10) {
                var ready = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
                guard poll(&ready, 1, 6000) > 0 else { return }
                let client = ccurl_unix_accept(listener)
                guard client >= 0 else { return }
                defer { close(client) }
                var received: [UInt8] = []
                var chunk = [UInt8](repeating: 0, count: 4096)
                while received.count < 64 * 1024 {
                    var wait = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
                    guard poll(&wait, 1, 5000) > 0 else { return }
                    let got = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                    if got < 0 && errno == EINTR { continue }
                    guard got > 0 else { return }
                    received += chunk[..<got]
                    if received.count >= 4, received.indices.dropFirst(3).contains(where: { received[$0 - 3] == 0x0D && received[$0 - 2] == 0x0A && received[$0 - 1] == 0x0D && received[$0] == 0x0A }) { break }
                }
                head.withLock { $0 = received }
                _ = KeeperWire.writeAll(client, Array("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n".utf8))
            }
        } catch {
            return nil
        }
        if let handle = ccurl_easy_init() {
            _ = ccurl_setopt_string(handle, CCURLOPT_URL, "http://localhost/")
            _ = ccurl_setopt_string(handle, CCURLOPT_UNIX_SOCKET_PATH, path)
            _ = ccurl_setopt_string(handle, CCURLOPT_ACCEPT_ENCODING, "")
            _ = ccurl_setopt_long(handle, CCURLOPT_NOSIGNAL, 1)
            // A bound on the whole exchange, not just the connect: the answering thread gives
            // up after 6 s, and a request it never accepted would otherwise wait in the
            // listen queue for good, the keeper never starting to serve.
            _ = ccurl_setopt_long(handle, CCURLOPT_TIMEOUT_MS, 5000)
            _ = ccurl_easy_perform(handle)
            ccurl_easy_cleanup(handle)
        }
        thread.join()
        let text = String(decoding: head.withLock { $0 }, as: UTF8.self)
        for line in text.split(separator: "\r\n") {
            guard let colon = line.firstIndex(of: ":"),
                  HTTPSyntax.caseInsensitiveEquals(String(line[..<colon]), "Accept-Encoding") else { continue }
            return KeeperLink.acceptEncodingValue(Substring(HTTPSyntax.trimmingWhitespace(line[line.index(after: colon)...])))
        }
        return nil
    }
}
