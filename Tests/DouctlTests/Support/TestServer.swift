import DouctlJSON
import DouctlServer
import DouctlSystem
import Foundation

/// A purpose-built HTTP server on 127.0.0.1 for one test: answers with `respond`, and
/// records every request exactly as it arrived (method, target, headers, framing, body bytes).
final class TestServer: @unchecked Sendable {
    struct Received: Sendable {
        var method: String
        var target: String
        var path: String
        var query: [(name: String, value: String)]
        var headers: HTTPHeaders
        var contentLength: Int64?
        var isChunked: Bool
        var body: [UInt8]

        var bodyText: String { String(decoding: body, as: UTF8.self) }
        func header(_ name: String) -> String? { headers[name] }
        var form: [(name: String, value: String)] { FormURLEncoded.parse(body) }
        func queryValue(_ name: String) -> String? { query.first { $0.name == name }?.value }
    }

    private let server: HTTPServer
    private let log = LockedValue<[Received]>([])

    var baseURL: String { server.baseURL }
    var port: UInt16 { server.port }
    var received: [Received] { log.value }

    /// `respond` sees the request (body already read) and returns the reply.
    init(respond: @escaping @Sendable (Received) -> HTTPServerResponse) throws {
        let log = self.log
        server = try HTTPServer(host: "127.0.0.1", port: 0) { request in
            let body = (try? request.body.readAll(limit: 64 << 20)) ?? []
            let received = Received(
                method: request.method, target: request.target, path: request.path, query: request.query,
                headers: request.headers, contentLength: request.contentLength, isChunked: request.isChunked, body: body)
            log.withLock { $0.append(received) }
            return respond(received)
        }
        try server.start()
    }

    /// Always answers `status` with this JSON text.
    convenience init(status: Int = 200, json: String, headers: [(String, String)] = []) throws {
        try self.init { _ in
            HTTPServerResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: .bytes(Array(json.utf8)))
        }
    }

    deinit { server.stop() }

    func stop() { server.stop() }
}
