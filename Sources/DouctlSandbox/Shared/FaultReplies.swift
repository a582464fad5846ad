import DouctlServer
import DouctlSystem

/// How injected faults reach the client: a status fault's reply, and the reset, truncated or
/// dribbled body of a reply that was otherwise acted on normally.
extension FaultInjector {
    /// An injected status: 429 and 500 in the API family's own error body, 502–504 as the front
    /// proxy's HTML page (503 with `Retry-After`).
    static func statusReply(_ code: Int, _ exchange: Exchange, described: Bool = false) -> HTTPServerResponse {
        // An API from a description (--openapi) has no error body of its own: 429 and 500 as
        // RFC 9457 problem documents (429 with Retry-After).
        if described, code == 429 || code == 500 {
            let title = code == 429 ? "Too Many Requests" : "Internal Server Error"
            let body = "{\"type\":\"about:blank\",\"title\":\"\(title)\",\"status\":\(code),\"detail\":\"injected by douctl sandbox --fault\"}"
            return HTTPServerResponse(status: code, headers: [("Content-Type", "application/problem+json")] + (code == 429 ? [("Retry-After", "1")] : []),
                                      body: .bytes(Array(body.utf8)))
        }
        if case .coding = exchange.route, let response = CodingRouter.faultReply(code) { return response }
        if let response = DoubanRouter.faultReply(code, exchange) { return response }
        // 502/503/504 come from the front proxy, as an HTML page.
        let reason = code == 502 ? "Bad Gateway" : code == 503 ? "Service Temporarily Unavailable" : "Gateway Time-out"
        var response = Reply.html(code, "<html>\r\n<head><title>\(code) \(reason)</title></head>\r\n<body>\r\n<center><h1>\(code) \(reason)</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")
        if code == 503 { response.headers.append(("Retry-After", "1")) }
        return response
    }

    /// Applies `reset`, `truncate` and `slow-body` to a finished reply.
    func shape(_ response: HTTPServerResponse, shouldStop: @escaping @Sendable () -> Bool) -> HTTPServerResponse {
        let reset = resetFires()
        let truncate = truncateFires()
        let pause = slowBodyPause
        guard reset || truncate || pause != nil else { return response }
        var bytes: [UInt8]
        switch response.body {
        case .empty: bytes = []
        case .bytes(let body): bytes = body
        case .file(let path):
            guard let content = try? FileIO.readFile(path) else { return response }
            bytes = content
        case .stream: return response
        }
        var shaped = response
        if reset {
            let sent = bytes.count / 2
            let declared = max(Int64(bytes.count), 1)
            shaped.body = .stream(length: declared) { [bytes] writer in
                if sent > 0 { try writer.write(Array(bytes[..<sent])) }
                try writer.abortConnection()
            }
            return shaped
        }
        if truncate && bytes.count > 1 {
            bytes = Array(bytes[..<(bytes.count / 2)])
            shaped.body = .bytes(bytes)
            shaped.headers.removeAll { $0.0.lowercased() == "content-length" }
        }
        guard let pause, !bytes.isEmpty else { return shaped }
        // At most ~20 pieces, each at least 64 bytes: small enough to dribble, few enough to finish.
        let pieceSize = max(64, (bytes.count + 19) / 20)
        shaped.body = .stream(length: Int64(bytes.count)) { [bytes] writer in
            var offset = 0
            while offset < bytes.count {
                let end = min(offset + pieceSize, bytes.count)
                try writer.write(Array(bytes[offset..<end]))
                offset = end
                if offset < bytes.count { SandboxClock.pause(pause, shouldStop: shouldStop) }
            }
        }
        return shaped
    }
}
