import DouctlJSON
import DouctlServer
import DouctlSystem

/// How the sandbox's replies are built: JSON bodies, HTML pages and redirects. Each API
/// family adds its own error envelope (`Reply.douban`, `Reply.coding`, `Reply.standard`).
enum Reply {
    static func json(_ status: Int, _ value: JSON, headers: [(String, String)] = []) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: [("Content-Type", "application/json; charset=utf-8")] + headers,
                           body: .bytes(value.serialized(.compact)))
    }

    static let noStore = [("Cache-Control", "no-store"), ("Pragma", "no-cache")]

    static func html(_ status: Int, _ page: String) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store")],
                           body: .bytes(Array(page.utf8)))
    }

    static func redirect(_ location: String) -> HTTPServerResponse {
        let page = "<!doctype html><title>Redirecting</title><p>Redirecting to <a href=\"\(HTMLText.escape(location))\">\(HTMLText.escape(location))</a></p>\n"
        return HTTPServerResponse(status: 302, headers: [("Location", location), ("Content-Type", "text/html; charset=utf-8"),
                                                         ("Cache-Control", "no-store")],
                                  body: .bytes(Array(page.utf8)))
    }
}
