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
    /// Polled during transfers and waits; true aborts with `.interrupted`.
    public var isCancelled: @Sendable () -> Bool
    /// Waits between retries; tests replace it to run instantly.
    public var sleep: @Sendable (Double) -> Void

    public init(
        timeout: Double = 30,
        retry: RetryPolicy = .standard,
        userAgent: String = "douctl",
        verboseLog: (@Sendable (String) -> Void)? = nil,
        isCancelled: @escaping @Sendable () -> Bool = { Interrupt.requested },
        sleep: @escaping @Sendable (Double) -> Void = interruptibleSleep
    ) {
        self.timeout = timeout
        self.retry = retry
        self.userAgent = userAgent
        self.verboseLog = verboseLog
        self.isCancelled = isCancelled
        self.sleep = sleep
    }
}

/// Sleeps in short steps so Ctrl-C is noticed promptly.
public let interruptibleSleep: @Sendable (Double) -> Void = { seconds in
    var remaining = seconds
    while remaining > 0 && !Interrupt.requested {
        let step = min(remaining, 0.05)
        usleep(useconds_t(step * 1_000_000))
        remaining -= step
    }
}

/// The libcurl version douctl would use, or why it cannot (for `douctl version`).
public enum CurlLibrary {
    public static func load() throws(TransportError) {
        if ccurl_load() != 0 {
            throw .libraryUnavailable(ccurl_load_error().map { String(cString: $0) } ?? "cannot load libcurl")
        }
    }

    public static var version: String? {
        ccurl_version().map { String(cString: $0) }
    }
}

/// Sends HTTP requests through one libcurl easy handle, which keeps connections alive
/// between requests (pagination reuses the socket). Not thread-safe: give each thread its own.
public final class HTTPClient {
    public let configuration: HTTPClientConfiguration
    private var handle: UnsafeMutableRawPointer?

    public init(_ configuration: HTTPClientConfiguration = .init()) {
        self.configuration = configuration
    }

    deinit { ccurl_easy_cleanup(handle) }

    /// Sends `request` and streams the reply body to `sink` (return false to stop).
    /// Retries per the policy; a reply that will be retried never reaches the sink.
    /// A transfer that breaks after body bytes reached the sink is retried only when
    /// `restartSink` can take them back (it returns true after discarding them).
    /// HTTP error statuses are replies, not errors: the caller judges them.
    /// `head`, when given, sees the final reply's head before its first body byte reaches
    /// the sink (a download decides there whether bytes go to a file or to an error report).
    public func send(
        _ request: HTTPRequest,
        progress: ((TransferProgress) -> Void)? = nil,
        restartSink: (() -> Bool)? = nil,
        head headReady: ((HTTPResponseHead) -> Void)? = nil,
        sink: (UnsafeRawBufferPointer) -> Bool
    ) throws(TransportError) -> HTTPResponseHead {
        let policy = configuration.retry
        let started = currentUnixTime()
        var attempt = 1
        while true {
            let mayRetry = attempt < policy.maxAttempts && request.body.isReplayable
            let outcome = withoutActuallyEscaping(sink) { sink in
                perform(request, attempt: attempt, progress: progress, sink: sink, headReady: headReady) { head in
                    mayRetry && request.isIdempotent && policy.retryableStatuses.contains(head.status)
                }
            }
            switch outcome {
            case .failure(let error, let delivered):
                let retryable: Bool
                switch error {
                case .cannotConnect, .timedOut, .connectionLost: retryable = true
                default: retryable = false
                }
                guard mayRetry, retryable, request.isIdempotent || error.neverReachedServer,
                      delivered == 0 || restartSink?() == true else {
                    throw error
                }
                let delay = policy.delay(afterAttempt: attempt, retryAfter: nil)
                guard policy.allowsRetry(elapsed: currentUnixTime() - started, delay: delay) else { throw error }
                configuration.verboseLog?("* \(error.message); retrying in \(formatSeconds(delay)) (attempt \(attempt + 1) of \(policy.maxAttempts))")
                configuration.sleep(delay)
            case .reply(let head, let held):
                if let held {
                    let delay = policy.delay(afterAttempt: attempt, retryAfter: head.header("Retry-After"))
                    if mayRetry, policy.allowsRetry(elapsed: currentUnixTime() - started, delay: delay) {
                        configuration.verboseLog?("* HTTP \(head.status); retrying in \(formatSeconds(delay)) (attempt \(attempt + 1) of \(policy.maxAttempts))")
                        configuration.sleep(delay)
                    } else {
                        headReady?(head)
                        _ = held.withUnsafeBytes { sink($0) }
                        return head
                    }
                } else {
                    return head
                }
            }
            if configuration.isCancelled() { throw .interrupted }
            attempt += 1
        }
    }

    /// Sends `request` and collects the whole reply body in memory.
    public func fetch(_ request: HTTPRequest, progress: ((TransferProgress) -> Void)? = nil) throws(TransportError) -> HTTPResponse {
        var body: [UInt8] = []
        let head = try send(request, progress: progress, restartSink: {
            body.removeAll()
            return true
        }) { chunk in
            body.append(contentsOf: chunk)
            return true
        }
        return HTTPResponse(head: head, body: body)
    }

    // MARK: - one attempt

    private enum Outcome {
        /// `held` is the body when it was held back for a possible retry.
        case reply(HTTPResponseHead, held: [UInt8]?)
        case failure(TransportError, delivered: Int64)
    }

    private func perform(
        _ request: HTTPRequest,
        attempt: Int,
        progress: ((TransferProgress) -> Void)?,
        sink: @escaping (UnsafeRawBufferPointer) -> Bool,
        headReady: ((HTTPResponseHead) -> Void)? = nil,
        holdBody: @escaping (HTTPResponseHead) -> Bool
    ) -> Outcome {
        do {
            try CurlLibrary.load()
        } catch {
            return .failure(error, delivered: 0)
        }
        if handle == nil { handle = ccurl_easy_init() }
        guard let handle else {
            return .failure(.libraryUnavailable("curl_easy_init failed"), delivered: 0)
        }
        ccurl_easy_reset(handle)

        let transfer = Transfer(
            body: request.body, sink: sink, progress: progress,
            isCancelled: configuration.isCancelled, log: configuration.verboseLog, holdBody: holdBody, headReady: headReady)
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        var headerList: UnsafeMutableRawPointer?
        defer { ccurl_slist_free_all(headerList) }

        var problems: [Int32] = []
        func check(_ result: Int32) { if result != CCURLE_OK { problems.append(result) } }

        check(ccurl_setopt_string(handle, CCURLOPT_URL, request.url))
        check(restrictProtocols(handle, CCURLOPT_PROTOCOLS_STR, fallback: CCURLOPT_PROTOCOLS))
        check(ccurl_setopt_string(handle, CCURLOPT_USERAGENT, configuration.userAgent))
        check(ccurl_setopt_long(handle, CCURLOPT_NOSIGNAL, 1))
        check(ccurl_setopt_pointer(handle, CCURLOPT_ERRORBUFFER, transfer.errorBuffer))
        // Clamped to a million seconds, so any finite --timeout converts to an Int safely.
        let timeout = configuration.timeout.isNaN ? 30 : min(max(configuration.timeout, 0.001), 1_000_000)
        check(ccurl_setopt_long(handle, CCURLOPT_CONNECTTIMEOUT_MS, Int(timeout * 1000)))
        check(ccurl_setopt_long(handle, CCURLOPT_LOW_SPEED_LIMIT, 1))
        check(ccurl_setopt_long(handle, CCURLOPT_LOW_SPEED_TIME, max(1, Int(timeout.rounded(.up)))))
        check(ccurl_setopt_long(handle, CCURLOPT_BUFFERSIZE, 256 * 1024))
        // Measured with Benchmarks/run.py (1 GiB to a loopback server, vs curl -F): 64 KiB
        // (libcurl's default) ties curl, 512 KiB and 1 MiB are slower, 2 MiB (the maximum)
        // is 0.7-0.8x curl's time. It costs 2 MiB of memory per transfer.
        check(ccurl_setopt_long(handle, CCURLOPT_UPLOAD_BUFFERSIZE, 2 * 1024 * 1024))

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
        if method == "GET" || method == "HEAD" {
            // Follow redirects only where replaying is harmless; libcurl drops the
            // Authorization header when a redirect changes host.
            check(ccurl_setopt_long(handle, CCURLOPT_FOLLOWLOCATION, 1))
            check(ccurl_setopt_long(handle, CCURLOPT_MAXREDIRS, 5))
            check(restrictProtocols(handle, CCURLOPT_REDIR_PROTOCOLS_STR, fallback: CCURLOPT_REDIR_PROTOCOLS))
        }
        for header in headers {
            let line = header.value.isEmpty ? "\(header.name);" : "\(header.name): \(header.value)"
            guard !line.contains("\r"), !line.contains("\n") else {
                return .failure(.invalidRequest("header \(header.name) contains a line break"), delivered: 0)
            }
            headerList = ccurl_slist_append(headerList, line)
        }
        if headerList != nil { check(ccurl_setopt_pointer(handle, CCURLOPT_HTTPHEADER, headerList)) }
        if let problem = problems.first {
            return .failure(.invalidRequest(String(cString: ccurl_easy_strerror(problem))), delivered: 0)
        }

        let result = ccurl_easy_perform(handle)
        if result == CCURLE_OK {
            var status = 0
            ccurl_getinfo_long(handle, CCURLINFO_RESPONSE_CODE, &status)
            var head = transfer.head ?? HTTPResponseHead(status: status)
            if head.status == 0 { head.status = status }
            let held = transfer.heldBody.isEmpty && !holdBody(head) ? nil : transfer.heldBody
            return .reply(head, held: held)
        }
        return .failure(classify(result, transfer), delivered: transfer.deliveredBytes)
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

    private func classify(_ result: Int32, _ transfer: Transfer) -> TransportError {
        let detail = transfer.errorText.isEmpty ? String(cString: ccurl_easy_strerror(result)) : transfer.errorText
        let redacted = Redaction.redactURL(detail)
        switch result {
        case CCURLE_ABORTED_BY_CALLBACK where transfer.wasCancelled:
            return .interrupted
        case _ where transfer.reader.failure != nil:
            return transfer.reader.failure ?? .bodyFile(redacted)
        case CCURLE_WRITE_ERROR where transfer.sinkRefused:
            return .outputFailed("the output was closed")
        case CCURLE_COULDNT_CONNECT, CCURLE_COULDNT_RESOLVE_HOST, CCURLE_COULDNT_RESOLVE_PROXY:
            return .cannotConnect(redacted)
        case CCURLE_OPERATION_TIMEDOUT:
            return .timedOut(redacted)
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
