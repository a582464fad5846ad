#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CCurl
import DouctlSystem

/// Settings shared by every request of one douctl run.
public struct HTTPClientConfiguration: Sendable {
    /// Seconds allowed to connect, and for which a transfer may move no bytes at all.
    /// Not a cap on the whole transfer: a 1 GiB upload may take as long as it needs.
    public var timeout: Double
    public var retry: RetryPolicy
    public var userAgent: String
    /// Receives `-v` lines ("> GET …", "< HTTP/1.1 200", "* …"), secrets already redacted.
    public var verboseLog: (@Sendable (String) -> Void)?
    /// Receives one line for a person before each retry and its wait ("HTTP 503; trying
    /// again in 1.2s (try 2 of 3)"), so no retry is silent; nil: `-v` alone hears of it.
    public var announce: (@Sendable (String) -> Void)?
    /// Wall time and the waits between retries: the run's clock (a test's virtual one).
    public var clock: RunClock
    /// The run's stop request (Ctrl-C, `--max-time`, or a test's): polled during transfers
    /// (true aborts with `.stopped` and the reason) and ending the waits between retries; the API
    /// client and batches read it from here too.
    public var cancellation: Cancellation
    /// Which certificates to trust and which to present.
    public var tls: TLSOptions
    /// A proxy for every request (`http://user:pass@host:port`). Nil lets libcurl read
    /// http_proxy, HTTPS_PROXY, ALL_PROXY and NO_PROXY itself, as curl does.
    public var proxy: String?
    /// A proxy for the requests whose scheme no proxy variable covers (a profile's proxy:
    /// the environment wins over it, scheme by scheme). Keyed by "http" and "https".
    public var fallbackProxies: [String: String]
    /// Redirect hops followed for GET and HEAD before giving up; 0: none followed, a 3xx
    /// is the reply (the recording proxy's clients follow redirects themselves).
    public var maxRedirects: Int
    /// Query parameters that carry credentials: dropped when a redirect leaves the origin.
    /// The default is the bearer token's URI query parameter of RFC 6750 §2.3.
    public var credentialParameters: Set<String>
    /// Bytes of each request and reply body `-v` shows before "… (N more bytes)".
    public var verboseBodyLimit: Int
    /// Connect to this Unix domain socket instead of the URL's host and port (curl's
    /// --unix-socket); the URL still gives the Host header, the path and TLS's name.
    public var unixSocket: String?
    /// The connection keeper https requests go through (`KeeperRoute`), or nil: direct.
    /// Requests through a proxy or `unixSocket` always go direct.
    public var keeper: KeeperRoute?
    /// Plain-http requests with no proxy are sent by douctl's own HTTP/1.1 code when they can
    /// be sent exactly as libcurl would (`SocketExchange`): a small call then never loads
    /// libcurl. False (`DOUCTL_LIBCURL` names a libcurl): every request through libcurl.
    public var ownPlainHTTP: Bool

    public init(
        timeout: Double = 30,
        retry: RetryPolicy = .standard,
        userAgent: String = "douctl",
        verboseLog: (@Sendable (String) -> Void)? = nil,
        announce: (@Sendable (String) -> Void)? = nil,
        clock: RunClock = .system,
        cancellation: Cancellation = .process,
        tls: TLSOptions = .init(),
        proxy: String? = nil,
        fallbackProxies: [String: String] = [:],
        maxRedirects: Int = 10,
        credentialParameters: Set<String> = ["access_token"],
        verboseBodyLimit: Int = 4096,
        unixSocket: String? = nil,
        keeper: KeeperRoute? = nil,
        ownPlainHTTP: Bool = true
    ) {
        self.timeout = timeout
        self.retry = retry
        self.userAgent = userAgent
        self.verboseLog = verboseLog
        self.announce = announce
        self.clock = clock
        self.cancellation = cancellation
        self.tls = tls
        self.proxy = proxy
        self.fallbackProxies = fallbackProxies
        self.maxRedirects = maxRedirects
        self.credentialParameters = credentialParameters
        self.verboseBodyLimit = verboseBodyLimit
        self.unixSocket = unixSocket
        self.keeper = keeper
        self.ownPlainHTTP = ownPlainHTTP
    }
}

/// TLS settings. Nil fields mean libcurl's defaults (the system's CA store, no client
/// certificate). Peers are always verified unless `insecure`, and TLS 1.2 is the minimum.
public struct TLSOptions: Sendable, Equatable {
    /// A PEM file of CA certificates to trust instead of the system's.
    public var caBundle: String?
    /// A directory of hashed CA certificates (c_rehash / openssl rehash).
    public var caPath: String?
    /// A PEM client certificate for mutual TLS, and its key (the key may be in the same file).
    public var clientCertificate: String?
    public var clientKey: String?
    /// Skip verifying the server's certificate and host name.
    public var insecure: Bool

    public init(caBundle: String? = nil, caPath: String? = nil, clientCertificate: String? = nil, clientKey: String? = nil, insecure: Bool = false) {
        self.caBundle = caBundle
        self.caPath = caPath
        self.clientCertificate = clientCertificate
        self.clientKey = clientKey
        self.insecure = insecure
    }
}

/// The libcurl version douctl would use, or why it cannot (for `douctl version`).
public enum CurlLibrary {
    public static func load() throws(TransportError) {
        if ccurl_load() != 0 {
            throw .libraryUnavailable(ccurl_load_error().map { String(cString: $0) } ?? "cannot load libcurl")
        }
    }

    /// `load` for a transfer that does no TLS in this process (through the keeper): when it
    /// is the first load, OpenSSL's configuration file waits for the first `load` (ccurl.c).
    static func loadForPlainTransfer() throws(TransportError) {
        if ccurl_load_plain() != 0 {
            throw .libraryUnavailable(ccurl_load_error().map { String(cString: $0) } ?? "cannot load libcurl")
        }
    }

    public static var version: String? {
        ccurl_version().map { String(cString: $0) }
    }
}

/// Sends HTTP requests through one libcurl easy handle, which keeps connections alive
/// between requests (pagination reuses the socket). Not thread-safe: give each thread its own.
public final class HTTPClient: HTTPTransport {
    /// A transfer moving fewer bytes a second than this (up and down together) for
    /// `timeout` seconds has stalled and fails with `.timedOut` (documented under --timeout).
    public static let stallBytesPerSecond = 100

    public let configuration: HTTPClientConfiguration
    private var handle: UnsafeMutableRawPointer?
    /// The keeper's side in this client, made on the first request that may use it. It
    /// outlives `handle` (declared after it): libcurl's close callback reaches it.
    private var keeperLink: KeeperLink?
    /// `-v`: the keeper's word on the connection the last transfer used, when it used one.
    private var keeperStory: String?
    /// The keeper's side for requests carried without libcurl (`SocketExchange`).
    private var keeperExchange: SocketExchange?
    /// Plain-http requests carried without libcurl, straight to the origin (`SocketExchange`).
    private var directExchange: SocketExchange?
    /// Requests this client sent straight to a plain-http origin without libcurl (the tests' witness).
    private(set) var carriedDirectWithoutLibcurl = 0
    /// The last transfer's request went on from the keeper over HTTP/2.
    private var keeperOverHTTP2 = false

    public init(_ configuration: HTTPClientConfiguration = .init()) {
        self.configuration = configuration
    }

    deinit {
        ccurl_easy_cleanup(handle)
        handle = nil
    }

    /// Sends `request` and streams the reply body to `sink` (return false to stop).
    /// Retries per the policy; a reply that will be retried never reaches the sink.
    /// A transfer that breaks after body bytes reached the sink is retried only when
    /// `restartSink` dropped them, or kept them and named the headers that ask for the rest.
    /// HTTP error statuses are replies, not errors: the caller judges them.
    /// `head`, when given, sees the final reply's head before its first body byte reaches
    /// the sink (a download decides there whether bytes go to a file or to an error report).
    public func send(
        _ request: HTTPRequest,
        progress: ((TransferProgress) -> Void)? = nil,
        restartSink: (() -> SinkRestart)? = nil,
        head headReady: ((HTTPResponseHead) -> Void)? = nil,
        sink: (UnsafeRawBufferPointer) -> Bool
    ) throws(TransportError) -> HTTPResponseHead {
        let policy = configuration.retry
        let started = configuration.clock.now()
        var current = request
        var attempt = 1
        var redirects = 0
        while true {
            let hop = current
            let hopAttempt = attempt
            let outcome = withoutActuallyEscaping(sink) { sink in
                perform(hop, progress: progress, sink: sink, headReady: headReady) { head in
                    self.redirectLocation(head, of: hop) != nil || policy.retries(status: head.status, of: hop, attempt: hopAttempt)
                }
            }
            switch outcome {
            case .failure(let error, let delivered):
                // A failed handle may hold state a new transfer must not inherit (libcurl
                // refuses some options on a handle whose transfer failed): start afresh.
                ccurl_easy_cleanup(handle)
                handle = nil
                guard policy.retries(error, of: current, attempt: attempt) else { throw error }
                if delivered > 0 {
                    switch restartSink?() ?? .refused {
                    case .refused:
                        throw error
                    case .fromStart:
                        break
                    case .resuming(let headers):
                        for header in headers { current.headers.set(header.name, header.value) }
                        configuration.verboseLog?("* keeping the \(delivered) bytes received; the retry asks for the rest")
                    }
                }
                try waitToRetry(after: error, attempt: attempt, started: started)
            case .reply(var head, let held):
                head.url = current.url
                if let location = redirectLocation(head, of: current) {
                    redirects += 1
                    current = try redirected(current, to: location, status: head.status, count: redirects)
                    attempt = 1
                    if configuration.cancellation.isRequested { throw .stopped(configuration.cancellation.stopReason) }
                    continue
                }
                // A body was held back only while the status might be retried.
                guard let held else { return head }
                let clock = configuration.clock
                let delay = policy.delay(afterAttempt: attempt, retryAfter: RateLimitNotice.retryAfter(head, now: clock.now())?.seconds)
                guard policy.retries(status: head.status, of: current, attempt: attempt),
                      policy.allowsRetry(elapsed: clock.now() - started, delay: delay) else {
                    headReady?(head)
                    _ = held.withUnsafeBytes { sink($0) }
                    return head
                }
                announceRetry("HTTP \(head.status)", delay: delay, attempt: attempt)
                clock.sleep(delay, configuration.cancellation)
            }
            if configuration.cancellation.isRequested { throw .stopped(configuration.cancellation.stopReason) }
            attempt += 1
        }
    }

    /// Before another attempt after a transient failure: waits the policy's delay, or
    /// throws `error` when the retry budget is spent.
    private func waitToRetry(after error: TransportError, attempt: Int, started: Double) throws(TransportError) {
        let policy = configuration.retry
        let delay = policy.delay(afterAttempt: attempt, retryAfter: nil)
        guard policy.allowsRetry(elapsed: configuration.clock.now() - started, delay: delay) else { throw error }
        announceRetry(error.message, delay: delay, attempt: attempt)
        configuration.clock.sleep(delay, configuration.cancellation)
    }

    /// Says why, how long and which try, for a person (`announce`) or else under `-v`.
    private func announceRetry(_ why: String, delay: Double, attempt: Int) {
        let line = "\(why); trying again in \(formatSeconds(delay)) (try \(attempt + 1) of \(configuration.retry.maxAttempts))"
        if let announce = configuration.announce { announce(line) } else { configuration.verboseLog?("* " + line) }
    }

    /// `-v`: which HTTP version the exchange used (HTTP/2 is negotiated by ALPN over TLS when
    /// the server offers it) and whether it opened a connection or reused a kept-alive one.
    private func logProtocol(_ handle: UnsafeMutableRawPointer, _ log: (String) -> Void) {
        var version = 0, connects = 0
        ccurl_getinfo_long(handle, CCURLINFO_HTTP_VERSION, &version)
        ccurl_getinfo_long(handle, CCURLINFO_NUM_CONNECTS, &connects)
        let names = [1: "HTTP/1.0", 2: "HTTP/1.1", 3: "HTTP/2", 30: "HTTP/3"]
        if let keeperStory {
            // Over HTTP/2 the keeper carries the request on; this process spoke HTTP/1.1 to it.
            log("* \(keeperOverHTTP2 ? "HTTP/2" : names[version] ?? "HTTP") over the keeper's connection (\(keeperStory))")
            return
        }
        log("* \(names[version] ?? "HTTP") over \(connects > 0 ? "a new connection" : "a reused connection")")
    }

    // MARK: - redirects

    /// Redirects are followed here, not by libcurl (FOLLOWLOCATION stays off): libcurl would
    /// drop Authorization on a host change, but it would carry the access_token query
    /// parameter and any Cookie header along, and compare hosts rather than origins.
    /// GET and HEAD follow any of them. Other methods follow only 307 and 308 (which keep
    /// the method and body, RFC 9110 §15.4.8) on the same origin, as curl --post301 --post302
    /// would not: the body and its credentials stay with the origin they were meant for.
    /// Any other 3xx is the reply, and the core reports it as a request not carried out.
    private static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    func redirectLocation(_ head: HTTPResponseHead, of request: HTTPRequest) -> String? {
        let method = request.method.uppercased()
        // A body read from a pipe cannot be sent again: the 3xx is then the reply.
        guard configuration.maxRedirects > 0, request.body.isReplayable, Self.redirectStatuses.contains(head.status),
              let location = head.header("Location"), !location.isEmpty else { return nil }
        if method == "GET" || method == "HEAD" { return location }
        guard head.status == 307 || head.status == 308, let base = HTTPURL(request.url),
              let target = base.resolve(location), target.sameOrigin(as: base) else { return nil }
        return location
    }

    private func redirected(_ request: HTTPRequest, to location: String, status: Int, count: Int) throws(TransportError) -> HTTPRequest {
        let shown = Redaction.redactURL(location)
        guard count <= configuration.maxRedirects else {
            throw .redirect("too many redirects (more than \(configuration.maxRedirects)), the last to \(shown)")
        }
        guard let base = HTTPURL(request.url), var target = base.resolve(location) else {
            throw .redirect("cannot follow the redirect to \(shown): not an http or https URL")
        }
        if base.scheme == "https" && target.scheme == "http" {
            throw .redirect("refusing to follow the redirect from \(Redaction.redactURL(request.url)) to \(shown): it downgrades https to plain http")
        }
        var next = request
        // The request's own secrets (an API key in a header or query parameter the profile
        // chose) are credentials too, by value.
        let secretParameters = configuration.credentialParameters.union(
            (base.query ?? "").split(separator: "&").compactMap { pair -> String? in
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2, request.secrets.contains(PercentEncoding.decode(String(parts[1]), plusAsSpace: true)) else { return nil }
                return String(parts[0])
            })
        if target.sameOrigin(as: base) {
            // A Location on the same origin may drop the query; the credential parameters
            // the request carried (access_token) still belong here.
            target = target.addingQueryParameters(from: base, named: secretParameters)
        } else {
            // Credentials belong to the origin they were made for (RFC 9110 §15.4).
            next.headers.removeAll { Self.originBoundHeaders.contains($0.name.lowercased()) || request.secrets.contains($0.value) }
            target = target.removingQueryParameters(secretParameters)
            target.userinfo = ""
        }
        next.url = target.text
        configuration.verboseLog?("* HTTP \(status): following the redirect to \(Redaction.redactURL(next.url)) (\(count) of at most \(configuration.maxRedirects))")
        return next
    }

    /// Headers that carry credentials for one origin only.
    private static let originBoundHeaders: Set<String> = ["authorization", "cookie", "x-xsrf-token", "proxy-authorization"]

    // MARK: - one attempt

    private enum Outcome {
        /// `held` is the body when it was held back for a possible retry.
        case reply(HTTPResponseHead, held: [UInt8]?)
        case failure(TransportError, delivered: Int64)
    }

    private func perform(
        _ request: HTTPRequest,
        progress: ((TransferProgress) -> Void)?,
        sink: @escaping (UnsafeRawBufferPointer) -> Bool,
        headReady: ((HTTPResponseHead) -> Void)? = nil,
        holdBody: @escaping (HTTPResponseHead) -> Bool
    ) -> Outcome {
        if let keeper = keeperRoute(for: request) {
            // Carried without libcurl when it can be sent exactly as libcurl would (SocketExchange).
            if progress == nil, SocketExchange.carries(request), !(request.acceptsCompression && keeper.link.compressedNeedsLibcurl) {
                let exchange = keeperExchange ?? SocketExchange()
                keeperExchange = exchange
                switch performWithoutCurl(request, sink: sink, headReady: headReady, exchange: exchange, route: .keeper(keeper.link),
                                          host: keeper.host, port: keeper.port, holdBody: holdBody) {
                case .reply(let head, let held, let story):
                    keeperStory = story
                    return .reply(head, held: held)
                case .failure(let error, let delivered):
                    return .failure(error, delivered: delivered)
                case .declined:
                    return perform(request, progress: progress, sink: sink, headReady: headReady, keeper: nil, holdBody: holdBody)
                case .viaLibcurl:
                    break
                }
            }
            let outcome = perform(request, progress: progress, sink: sink, headReady: headReady, keeper: keeper, holdBody: holdBody)
            // Refused before anything was sent (no keeper, or it could not connect): the
            // same hop goes direct, and a failure is then libcurl's own, as without one.
            guard keeper.link.declined else { return outcome }
        } else if progress == nil, let origin = plainOrigin(of: request), SocketExchange.carries(request),
                  !(request.acceptsCompression && directExchange?.compressedNeedsLibcurl == true) {
            // Plain http, no proxy: douctl speaks HTTP/1.1 to the origin itself, and a call
            // that goes this way never loads libcurl (issue 44.4).
            let exchange = directExchange ?? SocketExchange()
            directExchange = exchange
            keeperStory = nil
            switch performWithoutCurl(request, sink: sink, headReady: headReady, exchange: exchange, route: .direct,
                                      host: origin.host, port: origin.port, holdBody: holdBody) {
            case .reply(let head, let held, _):
                carriedDirectWithoutLibcurl += 1
                return .reply(head, held: held)
            case .failure(let error, let delivered):
                carriedDirectWithoutLibcurl += 1
                return .failure(error, delivered: delivered)
            case .declined, .viaLibcurl:
                break
            }
        }
        return perform(request, progress: progress, sink: sink, headReady: headReady, keeper: nil, holdBody: holdBody)
    }

    /// The origin of a request douctl may carry to it itself, without libcurl: plain http, no
    /// proxy (configured, or in a variable libcurl reads) and no Unix socket, no user:password
    /// in the URL (libcurl would send it as Basic), no IPv6 zone; nil otherwise, or when
    /// `DOUCTL_LIBCURL` names the libcurl to carry every request.
    private func plainOrigin(of request: HTTPRequest) -> (host: String, port: UInt16)? {
        guard configuration.ownPlainHTTP, configuration.unixSocket == nil, doesNoTLS(request),
              let url = HTTPURL(request.url), url.scheme == "http", url.userinfo.isEmpty, Self.isPlainHost(url.host) else { return nil }
        return (url.host, url.effectivePort)
    }

    /// A host douctl resolves as libcurl would: an ASCII name (letters, digits, "-", ".", "_";
    /// an international name goes through libcurl's IDN conversion) or a bracketed IPv6
    /// literal without a zone. Anything else is libcurl's to accept or refuse.
    static func isPlainHost(_ host: String) -> Bool {
        let bytes = Array(host.utf8)
        guard let first = bytes.first else { return false }
        if first == 0x5B {
            guard bytes.count > 2, bytes.last == 0x5D else { return false }
            return DirectConnect.literal(String(decoding: bytes[1..<(bytes.count - 1)], as: UTF8.self), port: 80)?.family == AF_INET6
        }
        return bytes.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D || $0 == 0x2E || $0 == 0x5F }
    }

    /// The keeper a request goes through, with the URL libcurl is given for it: an https
    /// URL made http (libcurl speaks plain HTTP/1.1 to the keeper, which holds the TLS
    /// connection), or nil to go direct.
    private func keeperRoute(for request: HTTPRequest) -> (link: KeeperLink, url: String, host: String, port: UInt16)? {
        guard let route = configuration.keeper, configuration.proxy == nil, configuration.unixSocket == nil,
              configuration.fallbackProxies["https"] == nil,
              var url = HTTPURL(request.url), url.scheme == "https", url.userinfo.isEmpty,
              keeperLink?.unusable != true else { return nil }
        let link = keeperLink ?? KeeperLink(route: route, log: configuration.verboseLog, cancellation: configuration.cancellation)
        keeperLink = link
        let port = url.effectivePort
        let host = url.host
        url.scheme = "http"
        url.port = port
        return (link, url.text, host, port)
    }

    private func performWithoutCurl(
        _ request: HTTPRequest, sink: @escaping (UnsafeRawBufferPointer) -> Bool, headReady: ((HTTPResponseHead) -> Void)?,
        exchange: SocketExchange, route: SocketExchange.Route, host: String, port: UInt16, holdBody: @escaping (HTTPResponseHead) -> Bool
    ) -> SocketExchange.Result {
        let (transfer, shownHold) = makeTransfer(request, progress: nil, sink: sink, headReady: headReady, holdBody: holdBody,
                                                 overHTTP2: { exchange.overHTTP2 })
        var headers = request.headers
        if headers.value(of: "Host") == nil {
            let defaultPort: UInt16 = route.isKeeper ? 443 : 80
            headers.insert(HTTPHeader("Host", port == defaultPort ? host : "\(host):\(port)"), at: 0)
        }
        let result = exchange.run(request, headers: headers, route: route, host: host, port: port,
                                  configuration: configuration, transfer: transfer, holdBody: shownHold)
        keeperOverHTTP2 = exchange.overHTTP2
        return result
    }

    /// One transfer's callbacks, for libcurl's path and the keeper client's alike, and the
    /// hold decision they use. Over the keeper's HTTP/2 connection the head is given the
    /// version the origin spoke, as a direct call's (`-i` shows HTTP/2 200).
    private func makeTransfer(
        _ request: HTTPRequest, progress: ((TransferProgress) -> Void)?, sink: @escaping (UnsafeRawBufferPointer) -> Bool,
        headReady: ((HTTPResponseHead) -> Void)?, holdBody: @escaping (HTTPResponseHead) -> Bool, overHTTP2: @escaping () -> Bool
    ) -> (Transfer, (HTTPResponseHead) -> Bool) {
        let shownHead = headReady.map { ready in { (head: HTTPResponseHead) in ready(overHTTP2() ? Self.asHTTP2(head) : head) } }
        let shownHold = { (head: HTTPResponseHead) in holdBody(overHTTP2() ? Self.asHTTP2(head) : head) }
        let transfer = Transfer(
            body: request.body, sink: sink, progress: progress,
            isCancelled: { [cancellation = configuration.cancellation] in cancellation.isRequested }, log: configuration.verboseLog, holdBody: shownHold, headReady: shownHead,
            requestBodySummary: configuration.verboseLog == nil ? nil : VerboseBody.describe(request, limit: configuration.verboseBodyLimit),
            bodyLimit: configuration.verboseBodyLimit,
            secrets: configuration.verboseLog == nil ? [] : Redaction.credentials(of: request),
            boundsDecoding: request.acceptsCompression)
        return (transfer, shownHold)
    }

    private func perform(
        _ request: HTTPRequest,
        progress: ((TransferProgress) -> Void)?,
        sink: @escaping (UnsafeRawBufferPointer) -> Bool,
        headReady: ((HTTPResponseHead) -> Void)?,
        keeper: (link: KeeperLink, url: String, host: String, port: UInt16)?,
        holdBody: @escaping (HTTPResponseHead) -> Bool
    ) -> Outcome {
        let handle: UnsafeMutableRawPointer
        do { handle = try freshHandle(plain: keeper != nil || doesNoTLS(request)) } catch { return .failure(error, delivered: 0) }

        // Over the keeper's HTTP/2 connection the reply reaches libcurl as HTTP/1.1.
        let link = keeper?.link
        link?.currentOverHTTP2 = false
        let (transfer, shownHold) = makeTransfer(request, progress: progress, sink: sink, headReady: headReady, holdBody: holdBody,
                                                 overHTTP2: { link?.currentOverHTTP2 == true })
        transfer.bytesOnTheWire = {
            var received: Int64 = 0
            return ccurl_getinfo_offset(handle, CCURLINFO_SIZE_DOWNLOAD_T, &received) == CCURLE_OK ? received : 0
        }
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        var headerList: UnsafeMutableRawPointer?
        defer { ccurl_slist_free_all(headerList) }

        var problems: [Int32] = []
        func check(_ result: Int32) { if result != CCURLE_OK { problems.append(result) } }
        setTransferOptions(handle, url: keeper?.url ?? request.url, transfer: transfer, context: context, check: check)
        setTLSAndProxyOptions(handle, url: request.url, check: check)
        var headers = setMethodAndBody(handle, request, context: context, check: check)
        if let keeper {
            // libcurl connects to the keeper's socket through the link, which tells the
            // keeper the origin and TLS settings; the Host header is the origin's own.
            keeper.link.target = (keeper.host, keeper.port, configuration.tls, configuration.timeout)
            keeper.link.declined = false
            keeper.link.stopped = false
            keeper.link.opened = false
            keeper.link.connectFailed = false
            check(ccurl_setopt_string(handle, CCURLOPT_UNIX_SOCKET_PATH, keeper.link.route.socketPath))
            // The keeper is local: http_proxy (read by libcurl for the http URL it is given)
            // must not send the request elsewhere. (An https proxy makes the request go direct.)
            check(ccurl_setopt_string(handle, CCURLOPT_PROXY, ""))
            check(ccurl_setopt_socket_callbacks(handle, keeperOpenCallback, keeperReadyCallback, keeperCloseCallback, Unmanaged.passUnretained(keeper.link).toOpaque()))
            if headers.value(of: "Host") == nil {
                headers.insert(HTTPHeader("Host", keeper.port == 443 ? keeper.host : "\(keeper.host):\(keeper.port)"), at: 0)
            }
        }
        // "" asks for every encoding this libcurl decodes; the write callback sees decoded bytes.
        if request.acceptsCompression { check(ccurl_setopt_string(handle, CCURLOPT_ACCEPT_ENCODING, "")) }
        if let socket = configuration.unixSocket { check(ccurl_setopt_string(handle, CCURLOPT_UNIX_SOCKET_PATH, socket)) }
        // Redirects are followed by `send`, hop by hop (see `redirected`).
        check(ccurl_setopt_long(handle, CCURLOPT_FOLLOWLOCATION, 0))
        for header in headers {
            // The last line of defence (callers check first, with their own exit codes): bytes,
            // not Characters, since "\r\n" is one Character and `contains("\r")` misses it.
            if let problem = HTTPSyntax.headerProblem(name: header.name, value: header.value) {
                return .failure(.invalidRequest(problem), delivered: 0)
            }
            let line = header.value.isEmpty ? "\(header.name);" : "\(header.name): \(header.value)"
            // withCString: passing `line` itself would copy a short (inline) string to the heap.
            // A command line's bytes that are not UTF-8 go out as themselves (EscapedBytes).
            if EscapedBytes.contains(line) {
                headerList = ccurl_slist_append(headerList, EscapedBytes.cString(line))
            } else {
                headerList = line.withCString { ccurl_slist_append(headerList, $0) }
            }
        }
        if headerList != nil { check(ccurl_setopt_pointer(handle, CCURLOPT_HTTPHEADER, headerList)) }
        if let problem = problems.first {
            return .failure(.invalidRequest(String(cString: ccurl_easy_strerror(problem))), delivered: 0)
        }

        let result = ccurl_easy_perform(handle)
        if let keeper {
            if keeper.link.stopped { return .failure(.stopped(configuration.cancellation.stopReason), delivered: 0) }
            if result == CCURLE_COULDNT_CONNECT && keeper.link.connectFailed { keeper.link.noteConnectFailure() }
            if keeper.link.declined && (result == CCURLE_COULDNT_CONNECT || result == CCURLE_ABORTED_BY_CALLBACK) {
                return .failure(.cannotConnect("keeper"), delivered: 0)
            }
            keeper.link.declined = false
            // The exchange is whole: the keeper may lend its connection again.
            let socket = ccurl_active_socket(handle)
            keeperOverHTTP2 = keeper.link.currentOverHTTP2 || keeper.link.overHTTP2.contains(socket)
            if result == CCURLE_OK { keeper.link.markClean(socket) }
            keeperStory = keeper.link.opened ? keeper.link.lastConnection : "kept open by this process"
        } else {
            keeperStory = nil
        }
        transfer.finishLog()
        let reached = outcome(of: result, handle, transfer, host: HTTPURL(request.url)?.host ?? "the server", holdBody: shownHold)
        if keeper != nil, keeperOverHTTP2, case .reply(let head, let held) = reached { return .reply(Self.asHTTP2(head), held: held) }
        return reached
    }

    /// A reply head the keeper carried from an HTTP/2 origin, as the origin gave it.
    static func asHTTP2(_ head: HTTPResponseHead) -> HTTPResponseHead {
        var head = head
        head.version = "HTTP/2"
        head.reason = ""
        return head
    }

    /// Whether a direct transfer of `request` certainly does no TLS: plain http, with no proxy
    /// that could be an https one (here, in the profile, or in a variable libcurl reads). A
    /// redirect to https is its own hop and asks again.
    private func doesNoTLS(_ request: HTTPRequest) -> Bool {
        guard configuration.proxy == nil, configuration.fallbackProxies.isEmpty,
              request.url.utf8.starts(with: "http://".utf8) else { return false }
        let variables: [String] = ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"]
        return variables.allSatisfy { getenv($0) == nil }
    }

    /// The kept-alive easy handle, reset for a new transfer (created on first use, after
    /// libcurl is loaded). `plain`: this transfer does no TLS here (it goes through the keeper).
    private func freshHandle(plain: Bool = false) throws(TransportError) -> UnsafeMutableRawPointer {
        if plain { try CurlLibrary.loadForPlainTransfer() } else { try CurlLibrary.load() }
        if handle == nil { handle = ccurl_easy_init() }
        guard let handle else { throw .libraryUnavailable("curl_easy_init failed") }
        ccurl_easy_reset(handle)
        return handle
    }

    /// What every transfer sets: the URL, timeouts, buffer sizes, and the callbacks that
    /// tie libcurl to `transfer`.
    private func setTransferOptions(
        _ handle: UnsafeMutableRawPointer, url: String, transfer: Transfer, context: UnsafeMutableRawPointer,
        check: (Int32) -> Void
    ) {
        // A PATH's bytes that are not UTF-8 go to libcurl as themselves (it sends %ff), not
        // as their escapes' UTF-8 (EscapedBytes).
        if EscapedBytes.contains(url) {
            check(ccurl_setopt_string(handle, CCURLOPT_URL, EscapedBytes.cString(url)))
        } else {
            check(ccurl_setopt_string(handle, CCURLOPT_URL, url))
        }
        check(restrictProtocols(handle, CCURLOPT_PROTOCOLS_STR, fallback: CCURLOPT_PROTOCOLS))
        check(ccurl_setopt_string(handle, CCURLOPT_USERAGENT, configuration.userAgent))
        check(ccurl_setopt_long(handle, CCURLOPT_NOSIGNAL, 1))
        check(ccurl_setopt_pointer(handle, CCURLOPT_ERRORBUFFER, transfer.errorBuffer))
        // Clamped to a million seconds, so any finite --timeout converts to an Int safely.
        let timeout = configuration.timeout.isNaN ? 30 : min(max(configuration.timeout, 0.001), 1_000_000)
        check(ccurl_setopt_long(handle, CCURLOPT_CONNECTTIMEOUT_MS, Int(timeout * 1000)))
        // Stalled = under `stallBytesPerSecond` for the whole timeout (curl's --speed-limit
        // and --speed-time): a reply trickling 2 bytes a second ends too, not only silence.
        check(ccurl_setopt_long(handle, CCURLOPT_LOW_SPEED_LIMIT, HTTPClient.stallBytesPerSecond))
        check(ccurl_setopt_long(handle, CCURLOPT_LOW_SPEED_TIME, max(1, Int(timeout.rounded(.up)))))
        // A hint only: libcurl refuses to change the buffer of a handle that has one, so a
        // refusal must not fail the request (it did, on retries: issue 16.1).
        _ = ccurl_setopt_long(handle, CCURLOPT_BUFFERSIZE, 256 * 1024)
        // 64 KiB, libcurl's default and curl's: file reads and socket sends alternate in
        // small steps, so the disk and the network overlap. 2 MiB won against a sink that
        // discards the body, but behind nginx (which writes the body to disk before
        // proxying) it took 1.57x curl's time: 103 sends after 2 MiB reads on 200 MB, curl
        // 3,202 (issue 34.3; Benchmarks/upload_nginx.py).
        check(ccurl_setopt_long(handle, CCURLOPT_UPLOAD_BUFFERSIZE, 64 * 1024))

        check(ccurl_setopt_data_callback(handle, CCURLOPT_WRITEFUNCTION, writeCallback))
        check(ccurl_setopt_pointer(handle, CCURLOPT_WRITEDATA, context))
        check(ccurl_setopt_data_callback(handle, CCURLOPT_HEADERFUNCTION, headerCallback))
        check(ccurl_setopt_pointer(handle, CCURLOPT_HEADERDATA, context))
        check(ccurl_setopt_long(handle, CCURLOPT_NOPROGRESS, 0))
        check(ccurl_setopt_progress_callback(handle, progressCallback))
        check(ccurl_setopt_pointer(handle, CCURLOPT_XFERINFODATA, context))
        if configuration.verboseLog != nil {
            check(ccurl_setopt_long(handle, CCURLOPT_VERBOSE, 1))
            check(ccurl_setopt_debug_callback(handle, debugCallback))
            check(ccurl_setopt_pointer(handle, CCURLOPT_DEBUGDATA, context))
        }
    }

    /// TLS 1.2 at least, the configured CAs and client certificate, and the proxy.
    private func setTLSAndProxyOptions(_ handle: UnsafeMutableRawPointer, url: String, check: (Int32) -> Void) {
        check(ccurl_setopt_long(handle, CCURLOPT_SSLVERSION, Int(CCURL_SSLVERSION_TLSv1_2)))
        let tls = configuration.tls
        if let caBundle = tls.caBundle { check(ccurl_setopt_string(handle, CCURLOPT_CAINFO, EscapedBytes.cString(caBundle))) }
        if let caPath = tls.caPath { check(ccurl_setopt_string(handle, CCURLOPT_CAPATH, EscapedBytes.cString(caPath))) }
        if let certificate = tls.clientCertificate { check(ccurl_setopt_string(handle, CCURLOPT_SSLCERT, EscapedBytes.cString(certificate))) }
        if let key = tls.clientKey { check(ccurl_setopt_string(handle, CCURLOPT_SSLKEY, EscapedBytes.cString(key))) }
        if tls.insecure {
            check(ccurl_setopt_long(handle, CCURLOPT_SSL_VERIFYPEER, 0))
            check(ccurl_setopt_long(handle, CCURLOPT_SSL_VERIFYHOST, 0))
        }
        if let proxy = configuration.proxy ?? HTTPURL(url).flatMap({ configuration.fallbackProxies[$0.scheme] }) {
            check(ccurl_setopt_string(handle, CCURLOPT_PROXY, proxy))
        }
    }

    /// The method and how the body is read; returns the request's headers, with
    /// `Transfer-Encoding: chunked` added for a body of unknown length.
    private func setMethodAndBody(
        _ handle: UnsafeMutableRawPointer, _ request: HTTPRequest, context: UnsafeMutableRawPointer, check: (Int32) -> Void
    ) -> [HTTPHeader] {
        let method = request.method.uppercased()
        var headers = request.headers
        switch (method, request.body) {
        case ("HEAD", _):
            check(ccurl_setopt_long(handle, CCURLOPT_NOBODY, 1))
        case ("GET", .none):
            check(ccurl_setopt_long(handle, CCURLOPT_HTTPGET, 1))
        case (_, .none) where method != "POST" && method != "PUT" && method != "PATCH":
            check(ccurl_setopt_long(handle, CCURLOPT_HTTPGET, 1))
            check(ccurl_setopt_string(handle, CCURLOPT_CUSTOMREQUEST, method))
        default:
            // POST semantics carry any body; CUSTOMREQUEST renames the method on the wire.
            check(ccurl_setopt_long(handle, CCURLOPT_POST, 1))
            check(ccurl_setopt_data_callback(handle, CCURLOPT_READFUNCTION, readCallback))
            check(ccurl_setopt_pointer(handle, CCURLOPT_READDATA, context))
            check(ccurl_setopt_seek_callback(handle, seekCallback))
            check(ccurl_setopt_pointer(handle, CCURLOPT_SEEKDATA, context))
            if let length = request.body.length {
                check(ccurl_setopt_offset(handle, CCURLOPT_POSTFIELDSIZE_LARGE, length))
            } else if headers.value(of: "Transfer-Encoding") == nil {
                headers.append(HTTPHeader("Transfer-Encoding", "chunked"))
            }
            if method != "POST" { check(ccurl_setopt_string(handle, CCURLOPT_CUSTOMREQUEST, method)) }
        }
        return headers
    }

    /// A finished `curl_easy_perform`: the reply (its body held back when `holdBody` says
    /// so), or the failure, classified.
    private func outcome(
        of result: Int32, _ handle: UnsafeMutableRawPointer, _ transfer: Transfer, host: String,
        holdBody: (HTTPResponseHead) -> Bool
    ) -> Outcome {
        // A held body cut at its bound ends the transfer on purpose: the reply stands.
        let cutOnPurpose = result == CCURLE_WRITE_ERROR && transfer.heldBodyCut
        guard result == CCURLE_OK || cutOnPurpose else {
            // A proxy that refused the credentials answers the CONNECT 407: sending the
            // same credentials again cannot help, so this is not a transient failure.
            var connectCode = 0
            ccurl_getinfo_long(handle, CCURLINFO_HTTP_CONNECTCODE, &connectCode)
            if connectCode == 407 { return .failure(.proxyRefused(host: host), delivered: 0) }
            var verifyResult = 0
            ccurl_getinfo_long(handle, CCURLINFO_SSL_VERIFYRESULT, &verifyResult)
            return .failure(classify(result, transfer, host: host, verifyResult: verifyResult), delivered: transfer.deliveredBytes)
        }
        if let log = configuration.verboseLog { logProtocol(handle, log) }
        var status = 0
        ccurl_getinfo_long(handle, CCURLINFO_RESPONSE_CODE, &status)
        var head = transfer.head ?? HTTPResponseHead(status: status)
        if head.status == 0 { head.status = status }
        // Over plain http the proxy's 407 is the reply itself; it is the same failure.
        if head.status == 407 { return .failure(.proxyRefused(host: host), delivered: 0) }
        let held = transfer.heldBody.isEmpty && !holdBody(head) ? nil : transfer.heldBody
        return .reply(head, held: held)
    }

    /// HTTP and HTTPS only. The string option exists since libcurl 7.85; older libraries
    /// (Ubuntu 22.04 ships 7.81) take the bitmask option instead.
    private func restrictProtocols(_ handle: UnsafeMutableRawPointer, _ option: Int32, fallback: Int32) -> Int32 {
        let result = ccurl_setopt_string(handle, option, "http,https")
        if result == CCURLE_UNKNOWN_OPTION {
            return ccurl_setopt_long(handle, fallback, Int(CCURLPROTO_HTTP_AND_HTTPS))
        }
        return result
    }

    private func classify(_ result: Int32, _ transfer: Transfer, host: String, verifyResult: Int) -> TransportError {
        // libcurl's error buffer keeps the first message of the transfer; "getpeername()
        // failed" is an aside libcurl logs on a connection already reset, not the failure.
        let useStrerror = transfer.errorText.isEmpty || transfer.errorText.hasPrefix("getpeername()")
        let detail = useStrerror ? String(cString: ccurl_easy_strerror(result)) : transfer.errorText
        let redacted = Redaction.redactURL(detail)
        let gnuTLS = CurlLibrary.version?.containsBytes("GnuTLS") == true
        if let failure = TLSClassifier.classify(result, detail: redacted, verifyResult: verifyResult, sentCertificate: configuration.tls.clientCertificate != nil, gnuTLS: gnuTLS) {
            return .tls(failure, host: host, detail: TLSClassifier.shorten(redacted))
        }
        if result == CCURLE_ABORTED_BY_CALLBACK && transfer.wasCancelled { return .stopped(configuration.cancellation.stopReason) }
        if result == CCURLE_WRITE_ERROR, let stop = transfer.stop { return .stopped(stop) }
        if let failure = transfer.reader.failure { return failure }
        switch result {
        case CCURLE_WRITE_ERROR where transfer.sinkRefused:
            return .outputFailed("the output was closed")
        case CCURLE_WRITE_ERROR where transfer.framingError != nil:
            return .malformedReply(transfer.framingError ?? "")
        case CCURLE_COULDNT_CONNECT, CCURLE_COULDNT_RESOLVE_HOST, CCURLE_COULDNT_RESOLVE_PROXY, CCURLE_PROXY:
            return .cannotConnect(redacted)
        case CCURLE_OPERATION_TIMEDOUT:
            return .timedOut(redacted)
        case CCURLE_UNSUPPORTED_PROTOCOL where transfer.errorText.containsBytes("HTTP/0.9"):
            // libcurl takes a reply without an HTTP status line (garbage, HTTP/0.9) as 0.9.
            return .malformedReply("no HTTP status line (\(redacted))")
        case CCURLE_UNSUPPORTED_PROTOCOL where transfer.errorText.lowercased().containsBytes("response"):
            // "Unsupported response code in HTTP response", "Unsupported HTTP version (7.3) in response".
            return .malformedReply(redacted)
        case CCURLE_WEIRD_SERVER_REPLY, CCURLE_BAD_CONTENT_ENCODING:
            return .malformedReply(redacted)
        case CCURLE_URL_MALFORMAT, CCURLE_UNSUPPORTED_PROTOCOL:
            return .invalidRequest(redacted)
        case CCURLE_GOT_NOTHING:
            return .connectionLost("the server closed the connection without replying")
        case CCURLE_PARTIAL_FILE:
            return .connectionLost("the reply ended early (\(redacted))")
        default:
            return .connectionLost(redacted)
        }
    }
}

func formatSeconds(_ seconds: Double) -> String {
    let tenths = Int((seconds * 10).rounded())
    return "\(tenths / 10).\(tenths % 10)s"
}
