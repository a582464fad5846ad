import DouctlSystem

/// One request as a handler sees it: the head parsed and decoded, the body still on the wire.
public final class HTTPServerRequest: @unchecked Sendable {
    /// As sent, e.g. "GET" (methods are case-sensitive); "GET" for a HEAD that a handler
    /// made with `HTTPServer.answeringHEAD` serves as the GET it stands for.
    public let method: String
    /// The method on the wire: `method`, or "HEAD" where that is served as a GET.
    public let sentMethod: String
    /// The raw request-target, e.g. "/shuo/v2/statuses/?a=1".
    public let target: String
    /// The percent-decoded path, e.g. "/shuo/v2/statuses/" (`+` stays `+` in paths).
    public let path: String
    /// The path as sent, still percent-encoded, for handlers that must tell `%2F` from `/`.
    public let rawPath: String
    /// The query as sent (without `?`), or nil when the target had none.
    public let rawQuery: String?
    /// The query decoded by form rules (`+` is a space), in order, repeats kept.
    public let query: [(name: String, value: String)]
    /// As sent, e.g. "HTTP/1.1".
    public let version: String
    public let headers: HTTPHeaders
    /// The declared body length; nil when the body is chunked or there is none.
    public let contentLength: Int64?
    public let isChunked: Bool
    /// The peer's IP address, e.g. "127.0.0.1" or "::1".
    public let remoteAddress: String
    public let remotePort: UInt16
    public let body: HTTPRequestBody

    init(head: RequestHead, path rawPath: Substring, query rawQuery: Substring?, framing: RequestFraming,
         remoteAddress: String, remotePort: UInt16, body: HTTPRequestBody) {
        method = head.method
        sentMethod = head.method
        target = head.target
        self.rawPath = String(rawPath)
        path = PercentEncoding.decodeString(rawPath.utf8, plusAsSpace: false)
        self.rawQuery = rawQuery.map(String.init)
        query = rawQuery.map { FormURLEncoded.parse(String($0)) } ?? []
        version = head.version
        headers = head.headers
        contentLength = framing.contentLength
        isChunked = framing.isChunked
        self.remoteAddress = remoteAddress
        self.remotePort = remotePort
        self.body = body
    }

    /// A request built in memory, to call a handler without a socket (tests of the sandbox).
    /// An unparseable target becomes the path as is.
    public convenience init(method: String, target: String, headers: HTTPHeaders = HTTPHeaders(),
                            body: [UInt8] = [], remoteAddress: String = "127.0.0.1") {
        let parts = (try? RequestParser.splitTarget(target, method: method)) ?? (path: Substring(target), query: nil)
        let head = RequestHead(method: method, target: target, version: "HTTP/1.1", minorVersion: 1, headers: headers)
        let framing = RequestFraming(contentLength: body.isEmpty ? nil : Int64(body.count), isChunked: false,
                                     keepAlive: true, expectsContinue: false)
        self.init(head: head, path: parts.path, query: parts.query, framing: framing,
                  remoteAddress: remoteAddress, remotePort: 0, body: HTTPRequestBody(bytes: body))
    }

    /// The same request with another method (its body is the same, still on the wire);
    /// `sentMethod` stays what was sent.
    private init(_ other: HTTPServerRequest, method: String) {
        self.method = method
        sentMethod = other.sentMethod
        target = other.target
        rawPath = other.rawPath
        path = other.path
        rawQuery = other.rawQuery
        query = other.query
        version = other.version
        headers = other.headers
        contentLength = other.contentLength
        isChunked = other.isChunked
        remoteAddress = other.remoteAddress
        remotePort = other.remotePort
        body = other.body
    }

    /// A HEAD as the GET it asks about (RFC 9110 §9.3.2); any other request as it is.
    public var asGETWhenHEAD: HTTPServerRequest {
        method == "HEAD" ? HTTPServerRequest(self, method: "GET") : self
    }

    /// The first query value named `name` (names compare exactly), or nil.
    public func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }

    /// Every query value named `name`, in order.
    public func queryValues(_ name: String) -> [String] {
        query.filter { $0.name == name }.map(\.value)
    }

    /// The media type of `Content-Type`, lowercased and without parameters ("multipart/form-data").
    public var mediaType: String? {
        headers["Content-Type"].map { value in
            HTTPSyntax.asciiLowercased(HTTPSyntax.trimmingWhitespace(value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0]))
        }
    }
}
