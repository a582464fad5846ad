import DouctlServer
import DouctlSystem

/// `douctl sandbox --proxy-to URL`: a reverse proxy on loopback. Each request is read whole
/// and handed to `forward` (the command sends it upstream with douctl's transport and
/// records the exchange), whose reply goes back to the client; nil (upstream unreachable)
/// is a 502 naming the problem.
public final class ForwardingServer: @unchecked Sendable {
    public struct Exchange: Sendable {
        public var method: String
        /// The request-target as sent, e.g. `/items?a=1`.
        public var target: String
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]
    }

    public struct Answer: Sendable {
        public var status: Int
        public var headers: [(String, String)]
        public var body: [UInt8]

        public init(status: Int, headers: [(String, String)], body: [UInt8]) {
            self.status = status
            self.headers = headers
            self.body = body
        }
    }

    /// Request bodies larger than this are refused (413): a recording holds them in memory.
    public static let bodyLimit = 64 << 20
    /// Hop-by-hop and framing headers, never passed on either way (RFC 9110 §7.6.1).
    public static let hopHeaders: Set<String> = ["connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "trailer",
                                                 "transfer-encoding", "upgrade", "content-length", "host", "expect"]

    private let server: HTTPServer

    public init(host: String, port: UInt16, log: (@Sendable (String) -> Void)?,
                forward: @escaping @Sendable (Exchange) -> Result<Answer, SandboxError>) throws {
        server = try HTTPServer(host: host, port: port) { request in
            let body: [UInt8]
            do { body = try request.body.readAll(limit: Self.bodyLimit) } catch {
                _ = try? request.body.drain()
                return Reply.json(413, ["error": "request_too_large", "detail": .string("bodies over \(Self.bodyLimit >> 20) MiB are not proxied")])
            }
            let headers = request.headers.map { (name: $0.name, value: $0.value) }
                .filter { !Self.hopHeaders.contains(HTTPSyntax.asciiLowercased($0.name)) }
            let exchange = Exchange(method: request.method, target: request.target, headers: headers, body: body)
            let response: HTTPServerResponse
            switch forward(exchange) {
            case .success(let answer):
                let kept = answer.headers.filter { !Self.hopHeaders.contains(HTTPSyntax.asciiLowercased($0.0)) }
                response = HTTPServerResponse(status: answer.status, headers: kept, body: .bytes(answer.body))
            case .failure(let problem):
                response = Reply.json(502, ["error": "bad_gateway", "detail": .string(problem.message)])
            }
            // A credential in the query (access_token, api_key...) is not shown in the log.
            log?("\(TerminalText.escaped(request.method)) \(TerminalText.escaped(ReplayStore.shownTarget(request))) \(response.status) (proxied)")
            return response
        }
    }

    public func start() throws { try server.start() }

    public func stop() { server.stop() }

    public var baseURL: String { server.baseURL }
}
