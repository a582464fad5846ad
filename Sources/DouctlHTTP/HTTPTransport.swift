/// What the core needs of an HTTP client: send one request and stream its reply. `HTTPClient`
/// (libcurl, with retries and redirects) is the one douctl runs with; tests pass a scripted
/// stand-in, so the API client, the paginator, token refresh and the OAuth flows can be
/// exercised without sockets or waits.
public protocol HTTPTransport: AnyObject {
    /// Sends `request` and streams the reply body to `sink` (return false to stop).
    /// A reply that will be retried never reaches the sink. A transfer that breaks after
    /// body bytes reached the sink is retried only when `restartSink` can take them back
    /// (it returns true after discarding them). HTTP error statuses are replies, not
    /// errors: the caller judges them. `head`, when given, sees the final reply's head
    /// before its first body byte reaches the sink.
    func send(
        _ request: HTTPRequest,
        progress: ((TransferProgress) -> Void)?,
        restartSink: (() -> Bool)?,
        head: ((HTTPResponseHead) -> Void)?,
        sink: (UnsafeRawBufferPointer) -> Bool
    ) throws(TransportError) -> HTTPResponseHead
}

extension HTTPTransport {
    /// Sends `request` and collects the whole reply body in memory.
    public func fetch(_ request: HTTPRequest, progress: ((TransferProgress) -> Void)? = nil) throws(TransportError) -> HTTPResponse {
        var body: [UInt8] = []
        let head = try send(request, progress: progress, restartSink: {
            body.removeAll()
            return true
        }, head: nil) { chunk in
            body.append(contentsOf: chunk)
            return true
        }
        return HTTPResponse(head: head, body: body)
    }
}
