import DouctlHTTP
import DouctlServer
import Testing

/// `maxRedirects = 0` (the recording proxy's transport): a 3xx is the reply, passed to the
/// proxy's client, which follows it itself; an authorization redirect can then be recorded.
@Suite struct RedirectPassThroughTests {
    @Test func withNoRedirectsAllowedA302IsTheReply() throws {
        let server = try HTTPServer(host: "127.0.0.1", port: 0) { request in
            request.path == "/authorize"
                ? HTTPServerResponse(status: 302, headers: [("Location", "http://127.0.0.1:9/callback?code=c1&state=s")], body: .bytes([]))
                : HTTPServerResponse(status: 200, headers: [], body: .bytes(Array("landed".utf8)))
        }
        try server.start()
        defer { server.stop() }
        var configuration = HTTPClientConfiguration()
        configuration.maxRedirects = 0
        configuration.retry.maxAttempts = 1
        let reply = try HTTPClient(configuration).fetch(HTTPRequest(url: server.baseURL + "/authorize"), errorLimit: 1 << 20)
        #expect(reply.status == 302)
        #expect(reply.head.header("Location") == "http://127.0.0.1:9/callback?code=c1&state=s")

        // With redirects allowed, the same 302 is followed (to /elsewhere on the same server).
        let following = try HTTPServer(host: "127.0.0.1", port: 0) { request in
            request.path == "/authorize"
                ? HTTPServerResponse(status: 302, headers: [("Location", "/elsewhere")], body: .bytes([]))
                : HTTPServerResponse(status: 200, headers: [], body: .bytes(Array("landed".utf8)))
        }
        try following.start()
        defer { following.stop() }
        configuration.maxRedirects = 10
        let followed = try HTTPClient(configuration).fetch(HTTPRequest(url: following.baseURL + "/authorize"), errorLimit: 1 << 20)
        #expect(followed.status == 200)
        #expect(followed.body == Array("landed".utf8))
    }
}
