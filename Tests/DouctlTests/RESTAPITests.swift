import DouctlJSON
import DouctlServer
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 22, "Any OAuth2 provider, any REST API, first try": the built douctl against
/// small fakes of other APIs' shapes on 127.0.0.1, and against servers that lie.
@Suite("Any OAuth2 REST API")
struct RESTAPITests {
    let douctl = Douctl()

    /// The fake's own base URL, known once it listens (Link headers carry absolute URLs).
    final class Base: @unchecked Sendable { var url = "" }

    static func json(_ text: String, status: Int = 200, _ headers: [(String, String)] = []) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: .bytes(Array(text.utf8)))
    }

    static func page(_ query: String) -> Int { Int(query.split(separator: "&").first { $0.hasPrefix("page=") }?.dropFirst(5) ?? "") ?? 1 }

    // MARK: auth_scheme

    @Test func authSchemeChoosesTheAuthorizationScheme() throws {
        let server = try TestServer(json: "{}")
        let added = try douctl.run("profile", "add", "gh", "--api-base", server.baseURL, "--auth-scheme", "token")
        #expect(added.status == 0, "\(added)")
        let result = try douctl.run(["api", "/user", "--profile", "gh"], environment: ["DOUCTL_TOKEN": "ghp_abc123"])
        #expect(result.status == 0, "\(result)")
        // Before: always "Bearer ghp_abc123".
        #expect(server.received.first?.header("Authorization") == "token ghp_abc123")
        #expect(try douctl.run("config", "get", "auth_scheme", "--profile", "gh").stdoutText == "token\n")
        let bad = try douctl.run("profile", "add", "x", "--api-base", server.baseURL, "--auth-scheme", "to ken")
        #expect(bad.status == 2, "\(bad)")
        #expect(bad.errorLine.contains("auth_scheme"))
    }

    // MARK: pagination

    /// GitHub's shape: a bare array per page, `Link: <…?page=2>; rel="next", <…>; rel="last"`.
    static func gitHub(_ base: Base, pages: Int = 3, perPage: Int = 2) -> @Sendable (TestServer.Received) -> HTTPServerResponse {
        { request in
            guard request.path == "/user/repos" else { return json(#"{"id":1,"login":"octo"}"#) }
            let page = Self.page(request.target.split(separator: "?").dropFirst().first.map(String.init) ?? "")
            let items = (1...perPage).map { #"{"id":\#((page - 1) * perPage + $0),"full_name":"octo/r\#((page - 1) * perPage + $0)"}"# }
            var links: [String] = []
            if page < pages { links.append(#"<\#(base.url)/user/repos?per_page=\#(perPage)&page=\#(page + 1)>; rel="next""#) }
            if page > 1 { links.append(#"<\#(base.url)/user/repos?per_page=\#(perPage)&page=\#(page - 1)>; rel="prev""#) }
            links.append(#"<\#(base.url)/user/repos?per_page=\#(perPage)&page=\#(pages)>; rel="last""#)
            return json("[" + items.joined(separator: ",") + "]", [("Link", links.joined(separator: ", "))])
        }
    }

    @Test func paginateFollowsLinkHeaders() throws {
        let base = Base()
        let server = try TestServer(respond: Self.gitHub(base))
        base.url = server.baseURL
        // The page size in PATH's query: before, a full page of 2 looked short against 20
        // and nothing said why the walk ended after page 1.
        let result = try douctl.run("api", "/user/repos?per_page=2", "--paginate", "--api-base", server.baseURL)
        #expect(result.status == 0, "\(result)")
        #expect(try result.lines().map { $0["id"]?.intValue } == [1, 2, 3, 4, 5, 6])
        #expect(server.received.map(\.target) == ["/user/repos?per_page=2", "/user/repos?per_page=2&page=2", "/user/repos?per_page=2&page=3"])
        #expect(result.stderr.isEmpty, "\(result)")
    }

    /// A plain API that neither links nor counts: one page is all douctl can see, and it
    /// says it had to guess.
    @Test func aWalkThatCannotTellWhereItEndsSaysSo() throws {
        let server = try TestServer(json: #"[{"id":1},{"id":2}]"#)
        #expect(try douctl.run("profile", "add", "plain", "--api-base", server.baseURL).status == 0)
        let result = try douctl.run(["--profile", "plain", "api", "/things", "--paginate"], environment: ["DOUCTL_TOKEN": "t0k3n-plain"])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == "{\"id\":1}\n{\"id\":2}\n")
        #expect(result.stderr.contains("says nothing about further pages"), "\(result)")
        #expect(server.received.count == 1)
    }

    @Test func aNextLinkToAnotherOriginStopsWithAnErrorAndSendsNothingThere() throws {
        let elsewhere = try TestServer(json: #"[{"id":99}]"#)
        let server = try TestServer { request in
            Self.json(#"[{"id":1}]"#, [("Link", #"<http://localhost:\#(elsewhere.port)/steal?page=2>; rel="next""#)])
        }
        let result = try douctl.run(["api", "/items", "--paginate", "--api-base", server.baseURL], environment: ["DOUCTL_TOKEN": "secret-token-1"])
        #expect(result.status == 7, "\(result)")
        #expect(result.stdoutText == "{\"id\":1}\n")
        #expect(result.errorLine.contains("another origin"), "\(result)")
        #expect(result.errorLine.contains("localhost:\(elsewhere.port)/steal"), "\(result)")
        #expect(elsewhere.received.isEmpty)
        #expect(server.received.count == 1)
    }

    @Test func aLinkLoopBackToPageOneEndsWithAWarning() throws {
        let server = try TestServer { request in
            let page = Self.page(request.target.split(separator: "?").dropFirst().first.map(String.init) ?? "")
            return Self.json(#"[{"n":\#(page)}]"#, [("Link", "</items?page=\(page == 1 ? 2 : 1)>; rel=\"next\"")])
        }
        let result = try douctl.run("api", "/items", "--paginate", "--api-base", server.baseURL)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == "{\"n\":1}\n{\"n\":2}\n")
        #expect(result.stderr.contains("douctl: warning: page 3 repeats an earlier page"), "\(result)")
        #expect(server.received.count == 3)
    }

    @Test func nextLinksInTheBody() throws {
        let server = try TestServer { request in
            request.target.contains("cursor=b")
                ? Self.json(#"{"data":[{"id":3}],"links":{"next":null}}"#)
                : Self.json(#"{"data":[{"id":1},{"id":2}],"links":{"next":"/v1/things?cursor=b"}}"#)
        }
        let result = try douctl.run("api", "/v1/things", "--paginate", "--api-base", server.baseURL)
        #expect(result.status == 0, "\(result)")
        #expect(try result.lines().map { $0["id"]?.intValue } == [1, 2, 3])
    }

    // MARK: redirects

    @Test func postFollowsA307OnTheSameOriginWithItsBody() throws {
        let server = try TestServer { request in
            request.path == "/old" ? HTTPServerResponse(status: 307, headers: [("Location", "/new"), ("Content-Type", "application/json")], body: .bytes(Array(#"{"moved":true}"#.utf8)))
                : Self.json(#"{"created":"\#(request.bodyText)"}"#, status: 201)
        }
        let result = try douctl.run(["api", "/old", "-f", "title=hi", "--api-base", server.baseURL], environment: ["DOUCTL_TOKEN": "tok-307"])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == "{\"created\":\"title=hi\"}\n")
        #expect(server.received.map { "\($0.method) \($0.path) \($0.bodyText) \($0.header("Authorization") ?? "-")" }
            == ["POST /old title=hi Bearer tok-307", "POST /new title=hi Bearer tok-307"])
    }

    @Test(arguments: [(307, true), (308, true), (302, false), (301, false), (303, false)])
    func aRedirectAfterPostThatIsNotFollowedIsAnError(status: Int, crossOrigin: Bool) throws {
        let elsewhere = try TestServer(json: #"{"landed":true}"#)
        let location = crossOrigin ? "http://localhost:\(elsewhere.port)/new" : "/new"
        let server = try TestServer { request in
            request.path == "/old" ? HTTPServerResponse(status: status, headers: [("Location", location), ("Content-Type", "application/json")], body: .bytes(Array(#"{"moved":true}"#.utf8)))
                : Self.json(#"{"landed":true}"#)
        }
        let result = try douctl.run(["api", "/old", "-f", "title=hi", "--api-base", server.baseURL], environment: ["DOUCTL_TOKEN": "tok-3xx"])
        // Before: exit 0 and the redirect's body on stdout, though nothing was posted.
        #expect(result.status == 7, "\(result)")
        #expect(result.stdoutText.isEmpty)
        #expect(result.errorLine.contains("HTTP \(status)") && result.errorLine.contains(crossOrigin ? location : "/new"), "\(result)")
        #expect(elsewhere.received.isEmpty)
        #expect(server.received.count == 1)
    }

    // MARK: errors by status

    @Test(arguments: [
        (503, "GET", "<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body><center>nginx</center></body></html>", "text/html",
         Int32(1), #"douctl: the API answered HTTP 503 ("503 Service Temporarily Unavailable", GET /x)"#),
        (502, "GET", "<html><body>Bad\u{1B}]0;pwned\u{07} Gateway</body></html>", "text/html", 1, #"douctl: the API answered HTTP 502 ("Bad ]0;pwned Gateway", GET /x)"#),
        (400, "HEAD", "", "application/json", 1, "douctl: the API answered HTTP 400 (HEAD /x)"),
        (400, "GET", "{oops", "application/json", 1, #"douctl: the API answered HTTP 400 ("{oops", GET /x)"#),
    ] as [(Int, String, String, String, Int32, String)])
    func theStatusDecidesTheExitCode(status: Int, method: String, body: String, type: String, exit: Int32, line: String) throws {
        let server = try TestServer { _ in HTTPServerResponse(status: status, headers: [("Content-Type", type)], body: .bytes(Array(body.utf8))) }
        let result = try douctl.run("api", "-X", method, "/x", "--api-base", server.baseURL, "--no-retry", "--error-body", "none")
        // Before: exit 8, "a text/html reply (HTTP 503, GET /x) where JSON was due" and the like.
        #expect(result.status == exit, "\(result)")
        #expect(result.errorLine == line)
    }

    @Test func aProxyThatRefusesTheCredentialsIsOneErrorOverHTTPAndHTTPS() throws {
        let pki = try TestPKI.shared()
        let server = try TestServer(json: #"{"ok":true}"#)
        let relay = try TLSRelay(certificate: pki.serverCertificate, key: pki.serverKey, backendPort: server.port)
        let proxy = try TestProxy(credentials: "bob:right-pass")
        let proxyURL = "http://bob:wrong-pass@127.0.0.1:\(proxy.port)"
        // https: before, "CONNECT tunnel failed, response 407" with the CONNECT sent three times.
        let overTLS = try douctl.run(["api", relay.baseURL + "/x", "--cacert", pki.caCertificate], environment: ["HTTPS_PROXY": proxyURL])
        #expect(overTLS.status == 7, "\(overTLS)")
        #expect(overTLS.errorLine.hasPrefix("douctl: the proxy refused the credentials"), "\(overTLS)")
        #expect(proxy.log.count == 1, "\(proxy.log)")
        // http: before, exit 8 ("an empty reply (HTTP 407 …) where JSON was due").
        let plain = try douctl.run(["api", "http://127.0.0.1:\(server.port)/x"], environment: ["http_proxy": proxyURL])
        #expect(plain.status == 7, "\(plain)")
        #expect(plain.errorLine.hasPrefix("douctl: the proxy refused the credentials"), "\(plain)")
        #expect(proxy.log.count == 2, "\(proxy.log)")
        #expect(!overTLS.stderr.contains("wrong-pass") && !plain.stderr.contains("wrong-pass"))
        #expect(server.received.isEmpty)
    }

    // MARK: advice

    @Test func loginAdviceOnlyWhereLoggingInHelps() throws {
        try Credentials.write(["douban": "stored-token-0000"], in: douctl.configDirectory)
        let server = try TestServer { request in
            request.path == "/shuo/v2/statuses/1"
                ? Self.json(#"{"msg":"need_permission","code":1000,"request":"DELETE /shuo/v2/statuses/1"}"#, status: 403)
                : HTTPServerResponse(status: 401, headers: [("Content-Type", "text/plain")], body: .bytes(Array("no\n".utf8)))
        }
        // Someone else's status: a permission error, which logging in again cannot fix.
        let permission = try douctl.run("api", "-X", "DELETE", "/shuo/v2/statuses/1", "--api-base", server.baseURL, "--error-body", "none")
        #expect(permission.status == 4, "\(permission)")
        #expect(!permission.errorLine.contains("auth login"), "\(permission)")
        // A URL outside the profile's API: no token went there.
        let outside = try douctl.run("api", "http://localhost:\(server.port)/private", "--api-base", server.baseURL, "--error-body", "none")
        #expect(outside.status == 4, "\(outside)")
        #expect(!outside.errorLine.contains("auth login"), "\(outside)")
        // Nor a sentence about douban's api_base: no profile sends credentials there.
        #expect(!outside.errorLine.contains("api_base"), "\(outside)")
        let download = try douctl.run("download", "http://localhost:\(server.port)/file.bin", "--api-base", server.baseURL,
                                      "-o", TemporaryDirectory.make(prefix: "douctl-dl") + "/f")
        #expect(download.status == 4, "\(download)")
        #expect(!download.errorLine.contains("not logged in"), "\(download)")
        // The stored token refused: the advice once, not twice in one line.
        let status = try douctl.run("auth", "status", "--check", "--api-base", server.baseURL)
        #expect(status.status == 4, "\(status)")
        #expect(status.errorLine.ranges(of: "douctl auth login").count == 1, "\(status)")
    }
}
