import DouctlHTTP
import DouctlSystem

/// The request path as layers, each owning one concern, composed once where clients are
/// made (`RequestPath.compose`), as gh's RoundTrippers and restish's transports are:
///
///     Credentials → Cache → Quota → Cookies → Recording → transport (curl | dry run | scripted)
///
/// A promise that spans features (a credential only to its origin and an explicit one wins; a
/// cached reply only to the identity that fetched it; a quota per origin) is kept by the one
/// layer that owns it, so every command, walk, worker and download keeps it the same way.
public protocol RequestLayer: AnyObject {
    /// Sends `request` on down and hands its reply back up. A successful (2xx) body goes to
    /// `reply.streaming`'s sink when there is one, else it is held (`HTTPResponse.body`, up
    /// to `HTTPResponse.maximumBodyBytes`); any other reply comes back with its first
    /// `HTTPResponse.maximumErrorBodyBytes` for the layers above to judge.
    func send(_ request: OutgoingRequest, _ reply: ReplyHandling) throws(DouctlError) -> HTTPResponse
}

/// One request on its way down: the HTTP request as it will go out (the credentials layer
/// still adds the profile's credential) and what the layers need to know of it.
public struct OutgoingRequest {
    public var http: HTTPRequest
    /// "GET /v2/user/~me", for errors.
    public var summary: String
    /// Whether the profile's credential may go with it (`APIRequest.sendsToken`).
    public var wantsCredential: Bool

    public init(http: HTTPRequest, summary: String, wantsCredential: Bool) {
        self.http = http
        self.summary = summary
        self.wantsCredential = wantsCredential
    }

    /// False for a body read from a pipe: once sent, it cannot be sent again (no replay
    /// after a refresh, no second try after a rate-limit wait).
    public var isReplayable: Bool { http.body.isReplayable }
}

/// Where a reply's body goes: held in memory (a reply that is read), or, for a 2xx, streamed
/// to a sink as it arrives (downloads, `api` replies printed as they come).
public struct ReplyHandling {
    public var progress: ((TransferProgress) -> Void)?
    public var streaming: Streaming?

    public struct Streaming {
        /// Takes back what a broken attempt already streamed, so a retry may begin again
        /// (or keep it and ask for the rest); nil: no retry after bytes went out.
        public var restart: (() -> SinkRestart)?
        /// Sees a 2xx reply's head before its first body byte.
        public var head: (HTTPResponseHead) -> Void
        public var sink: (UnsafeRawBufferPointer) -> Bool
    }

    public static func buffered(progress: ((TransferProgress) -> Void)? = nil) -> ReplyHandling {
        ReplyHandling(progress: progress, streaming: nil)
    }
}

/// The bottom of the path: the transport, which sends (libcurl), prints (`--dry-run`) or
/// answers from a script (tests). The one place a `TransportError` becomes a `DouctlError`.
final class TransportLayer: RequestLayer {
    let http: any HTTPTransport

    init(_ http: any HTTPTransport) {
        self.http = http
    }

    func send(_ request: OutgoingRequest, _ reply: ReplyHandling) throws(DouctlError) -> HTTPResponse {
        guard let streaming = reply.streaming else {
            do { return try http.fetch(request.http, progress: reply.progress) } catch { throw .transport(error) }
        }
        var errorBody = CappedBody()
        var succeeded = false
        var finalHead: HTTPResponseHead?
        let head: HTTPResponseHead
        do {
            head = try http.send(request.http, progress: reply.progress, restartSink: {
                errorBody.removeAll()
                return succeeded ? streaming.restart?() ?? .refused : .fromStart
            }, head: { received in
                finalHead = received
                succeeded = (200..<300).contains(received.status)
                if succeeded { streaming.head(received) }
            }, sink: { chunk in
                if succeeded { return streaming.sink(chunk) }
                // An error reply is quoted, not kept: the rest of it is never read.
                return errorBody.take(chunk, cap: HTTPResponse.maximumErrorBodyBytes)
            })
        } catch .outputFailed(let detail) {
            guard errorBody.wasCut, let finalHead else { throw .transport(.outputFailed(detail)) }
            head = finalHead
        } catch {
            throw .transport(error)
        }
        return HTTPResponse(head: head, body: succeeded ? [] : errorBody.bytes)
    }
}

/// `--record DIR`: each buffered exchange that really happened, written with every secret in
/// force scrubbed (the request's own and `secrets()`'s: stored tokens, client and signing
/// secrets, cookies).
final class RecordingLayer: RequestLayer {
    let next: RequestLayer
    let recorder: ExchangeRecorder
    let secrets: () -> [String]

    init(_ recorder: ExchangeRecorder, secrets: @escaping () -> [String], next: RequestLayer) {
        self.recorder = recorder
        self.secrets = secrets
        self.next = next
    }

    func send(_ request: OutgoingRequest, _ reply: ReplyHandling) throws(DouctlError) -> HTTPResponse {
        let response = try next.send(request, reply)
        if reply.streaming == nil {
            try recorder.record(request.http, response, secrets: request.http.secrets + secrets())
        }
        return response
    }
}

/// A cookie session (Coding's password login) learns from every real reply of the API's own
/// origin (after redirects, the origin the reply came from); the credentials layer sends it.
final class CookieLayer: RequestLayer {
    let next: RequestLayer
    let session: SessionHooks
    let profile: ResolvedProfile

    init(_ session: SessionHooks, profile: ResolvedProfile, next: RequestLayer) {
        self.session = session
        self.profile = profile
        self.next = next
    }

    func send(_ request: OutgoingRequest, _ reply: ReplyHandling) throws(DouctlError) -> HTTPResponse {
        let response = try next.send(request, reply)
        if profile.isOwnOrigin(response.head.url ?? request.http.url) { try session.received(response, for: request.http) }
        return response
    }
}
