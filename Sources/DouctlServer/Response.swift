import DouctlSystem
/// What a handler returns. The server owns the framing: it writes `Content-Length` (or chunked
/// encoding for a `.stream` of unknown length) and `Connection` itself, ignoring handler values
/// for those three fields (except a `Content-Length` on a reply to HEAD with an empty body, which
/// is how a handler can describe the GET it stands for).
public struct HTTPServerResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: Body
    /// Close the connection after this response (also implied by a `Connection: close` header).
    public var closeConnection: Bool = false
    /// Send nothing at all and reset the connection: the "server died before replying" fault.
    public var resetConnection: Bool = false

    public enum Body: Sendable {
        case empty
        case bytes([UInt8])
        /// Streamed from disk; the length comes from `fstat`. A missing file is a 404.
        case file(path: String)
        /// Produced while being sent. With a length, the producer must write exactly that many
        /// bytes (fewer closes the connection after them); nil means chunked encoding.
        case stream(length: Int64?, @Sendable (HTTPResponseBodyWriter) throws -> Void)
    }

    public init(status: Int, headers: [(String, String)] = [], body: Body = .empty) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func text(_ status: Int, _ text: String,
                            contentType: String = "text/plain; charset=utf-8") -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: [("Content-Type", contentType)], body: .bytes(Array(text.utf8)))
    }

    /// `json` must already be serialized JSON text.
    public static func json(_ status: Int, _ json: String) -> HTTPServerResponse {
        text(status, json, contentType: "application/json; charset=utf-8")
    }

    public static func bytes(_ status: Int, _ bytes: [UInt8],
                             contentType: String = "application/octet-stream") -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: [("Content-Type", contentType)], body: .bytes(bytes))
    }

    /// Resets the connection without answering (fault injection).
    public static func reset() -> HTTPServerResponse {
        var response = HTTPServerResponse(status: 500)
        response.resetConnection = true
        return response
    }

    /// The first value of header `name` (case-insensitive), for tests and middleware.
    public func header(_ name: String) -> String? {
        headers.first { HTTPSyntax.caseInsensitiveEquals($0.0, name) }?.1
    }
}

