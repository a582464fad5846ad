import DouctlCore
import DouctlHTTP
import DouctlSystem
import Testing

/// An HTTP transport that answers from a script and records every request, so the core's
/// HTTP behaviour is tested in-process: no sockets, no libcurl, no waiting.
public final class ScriptedTransport: HTTPTransport, @unchecked Sendable {
    /// What one request gets: a reply, or a transport failure.
    public enum Answer: Sendable {
        case reply(HTTPResponse)
        case failure(TransportError)

        public static func json(_ status: Int, _ text: String, headers: [HTTPHeader] = []) -> Answer {
            .reply(HTTPResponse(head: HTTPResponseHead(status: status, headers: [HTTPHeader("Content-Type", "application/json")] + headers),
                                body: Array(text.utf8)))
        }
    }

    public private(set) var requests: [HTTPRequest] = []
    private var script: [Answer]
    /// Sees each request as it is sent (a test's clock, say).
    public var observe: ((HTTPRequest) -> Void)?
    /// Reports an upload of this many bytes before each reply (for the progress display):
    /// none, half, then all, as libcurl does (its first report is 0 bytes sent); 0 reports
    /// nothing.
    public var reportsUploadOf: Int64 = 0
    /// Reports a download of this many bytes, half then all, as each reply arrives (for the
    /// progress display); 0 reports nothing.
    public var reportsDownloadOf: Int64 = 0

    public init(_ script: [Answer] = []) {
        self.script = script
    }

    /// Adds answers for the requests still to come.
    public func then(_ answers: Answer...) {
        script += answers
    }

    /// Answers not used by the requests sent so far.
    public var unused: Int { script.count }

    public func send(
        _ request: HTTPRequest,
        progress: ((TransferProgress) -> Void)?,
        restartSink: (() -> SinkRestart)?,
        head: ((HTTPResponseHead) -> Void)?,
        sink: (UnsafeRawBufferPointer) -> Bool
    ) throws(TransportError) -> HTTPResponseHead {
        requests.append(request)
        observe?(request)
        if reportsUploadOf > 0, let progress {
            progress(TransferProgress(uploaded: 0, uploadTotal: reportsUploadOf))
            progress(TransferProgress(uploaded: reportsUploadOf / 2, uploadTotal: reportsUploadOf))
            progress(TransferProgress(uploaded: reportsUploadOf, uploadTotal: reportsUploadOf))
        }
        guard !script.isEmpty else {
            Issue.record("an unscripted request: \(request.method) \(request.url)")
            throw .connectionLost("no scripted answer for \(request.method) \(request.url)")
        }
        switch script.removeFirst() {
        case .failure(let error):
            throw error
        case .reply(let response):
            var responseHead = response.head
            if responseHead.url == nil { responseHead.url = request.url }
            head?(responseHead)
            if reportsDownloadOf > 0, let progress {
                progress(TransferProgress(downloaded: reportsDownloadOf / 2, downloadTotal: reportsDownloadOf))
                progress(TransferProgress(downloaded: reportsDownloadOf, downloadTotal: reportsDownloadOf))
            }
            // A sink that refuses the bytes stops the transfer, as libcurl's does (HTTPClient).
            guard response.body.withUnsafeBytes({ sink($0) }) else { throw .outputFailed("the output was closed") }
            return responseHead
        }
    }
}

extension HTTPRequest {
    public func header(_ name: String) -> String? { headers.value(of: name) }

    /// The query of the URL, decoded.
    public var query: [(String, String)] {
        guard let question = url.firstIndex(of: "?") else { return [] }
        return URLParts.parseQuery(String(url[url.index(after: question)...]))
    }

    public func queryValue(_ name: String) -> String? { query.last { $0.0 == name }?.1 }

    /// The URL without its query.
    public var path: String { String(url.prefix { $0 != "?" }) }

    /// A form body's fields, decoded.
    public var form: [(String, String)] {
        guard case .bytes(let bytes) = body else { return [] }
        return URLParts.parseQuery(String(decoding: bytes, as: UTF8.self).replacingAll("+", with: " "))
    }

    public func formValue(_ name: String) -> String? { form.last { $0.0 == name }?.1 }
}

