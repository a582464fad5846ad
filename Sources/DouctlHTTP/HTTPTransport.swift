/// What the core needs of an HTTP client: send one request and stream its reply. `HTTPClient`
/// (libcurl, with retries and redirects) is the one douctl runs with; tests pass a scripted
/// stand-in, so the API client, the paginator, token refresh and the OAuth flows can be
/// exercised without sockets or waits.
public protocol HTTPTransport: AnyObject {
    /// Sends `request` and streams the reply body to `sink` (return false to stop).
    /// A reply that will be retried never reaches the sink. A transfer that breaks after
    /// body bytes reached the sink is retried only when `restartSink` says what became of
    /// them (`SinkRestart`): dropped, so the request goes again as it was, or kept, so the
    /// retry asks for the rest. HTTP error statuses are replies, not errors: the caller
    /// judges them. `head`, when given, sees the final reply's head before its first body
    /// byte reaches the sink.
    func send(
        _ request: HTTPRequest,
        progress: ((TransferProgress) -> Void)?,
        restartSink: (() -> SinkRestart)?,
        head: ((HTTPResponseHead) -> Void)?,
        sink: (UnsafeRawBufferPointer) -> Bool
    ) throws(TransportError) -> HTTPResponseHead

    /// False for a transport that answers every request itself with a stand-in instead of
    /// sending it (`DryRunTransport`). What only a real reply could say (who is logged in,
    /// the fields a command relies on, a file's bytes) is then not asked of its replies,
    /// and nothing is kept from them: no download, no `-o` file, no rate-limit state.
    var sendsRequests: Bool { get }
}

extension HTTPTransport {
    public var sendsRequests: Bool { true }
}

/// What a sink did with the body bytes a broken attempt gave it, when a retry is due.
public enum SinkRestart: Sendable, Equatable {
    /// It cannot take them back: the failure stands, no retry.
    case refused
    /// It dropped them: the retry sends the request as it was.
    case fromStart
    /// It keeps them: the retry sends the request with these headers set (replacing any of
    /// the same name), e.g. `Range` and `If-Range`, so the reply continues where they end.
    /// The sink judges the reply's head (a 200 means starting over).
    case resuming([HTTPHeader])
}

/// Makes the transport a run's requests go through: libcurl's `HTTPClient` in douctl, a
/// scripted one in tests of the command layer. Each worker thread gets its own.
public typealias TransportFactory = @Sendable (HTTPClientConfiguration) -> any HTTPTransport

extension HTTPClient {
    /// libcurl's client as a `TransportFactory`: the transport a run's requests go through
    /// unless a test puts in its own (or `--dry-run` a `DryRunTransport`). The one default.
    public static let transport: TransportFactory = { HTTPClient($0) }
}

extension HTTPTransport {
    /// Sends `request` and collects the reply body in memory: a successful (2xx) one up to
    /// `limit` bytes (more is `.replyTooLarge`), any other only its first `errorLimit` bytes
    /// (the rest is not read: the transfer stops there).
    public func fetch(
        _ request: HTTPRequest, progress: ((TransferProgress) -> Void)? = nil,
        limit: Int = HTTPResponse.maximumBodyBytes, errorLimit: Int = HTTPResponse.maximumErrorBodyBytes
    ) throws(TransportError) -> HTTPResponse {
        var body = CappedBody()
        var finalHead: HTTPResponseHead?
        var head: HTTPResponseHead
        do {
            head = try send(request, progress: progress, restartSink: {
                body.removeAll()
                return .fromStart
            }, head: { finalHead = $0 }) { chunk in
                let isSuccess = finalHead.map { (200..<300).contains($0.status) } ?? true
                return body.take(chunk, cap: isSuccess ? limit : errorLimit)
            }
        } catch .outputFailed(let detail) {
            guard body.wasCut, let finalHead else { throw .outputFailed(detail) }
            head = finalHead
        }
        // Stopped at the bound: an error reply's first bytes are enough to report it; a
        // successful one cut short is of no use.
        if body.wasCut && (200..<300).contains(head.status) {
            throw .replyTooLarge("the reply is larger than \(Self.describe(limit)), more than douctl holds in memory (\(Redaction.redactURL(request.url)))")
        }
        return HTTPResponse(head: head, body: body.bytes)
    }

    static func describe(_ bytes: Int) -> String {
        bytes >= 1 << 20 ? "\(bytes >> 20) MiB" : "\(bytes >> 10) KiB"
    }
}
