import DouctlJSON
import DouctlServer
import DouctlTestSupport
import Foundation
import Testing

/// Proxies, redirects, retried transport errors and what `-v` shows, through the built
/// binary against real servers and a real proxy on 127.0.0.1.
@Suite("proxies, redirects, retries, -v")
struct NetworkTests {
    // MARK: proxies

    @Test func httpsGoesThroughAConnectProxyFromTheEnvironment() throws {
        let pki = try TestPKI.shared()
        let server = try TestServer(json: #"{"ok":true}"#)
        let relay = try TLSRelay(certificate: pki.serverCertificate, key: pki.serverKey, backendPort: server.port)
        let proxy = try TestProxy()
        for variable in ["HTTPS_PROXY", "https_proxy", "ALL_PROXY"] {
            let result = try Douctl().run(["api", relay.baseURL + "/x", "--cacert", pki.caCertificate], environment: [variable: proxy.url])
            #expect(result.status == 0, "\(variable): \(result)")
        }
        #expect(proxy.log == Array(repeating: "CONNECT localhost:\(relay.port) auth=-", count: 3))
        #expect(server.received.count == 3)
    }

    @Test func httpGoesThroughTheProxyUnlessNoProxySaysSo() throws {
        let server = try TestServer(json: #"{"ok":true}"#)
        let proxy = try TestProxy()
        let url = "http://127.0.0.1:\(server.port)/v2/x?a=1"
        let through = try Douctl().run(["api", url], environment: ["http_proxy": proxy.url])
        #expect(through.status == 0, "\(through)")
        #expect(proxy.log == ["GET \(url) auth=-"])
        let direct = try Douctl().run(["api", url], environment: ["http_proxy": proxy.url, "NO_PROXY": "127.0.0.1"])
        #expect(direct.status == 0)
        #expect(proxy.log.count == 1, "NO_PROXY must bypass the proxy")
        #expect(server.received.count == 2)
    }

    @Test func proxyOptionAndProfileKeyWithCredentialsRedacted() throws {
        let server = try TestServer(json: #"{"ok":true}"#)
        let proxy = try TestProxy(credentials: "alice:s3cret-pass")
        let douctl = Douctl()
        let proxyURL = "http://alice:s3cret-pass@127.0.0.1:\(proxy.port)"
        let byOption = try douctl.run(["api", "http://127.0.0.1:\(server.port)/x", "--proxy", proxyURL, "-v"])
        #expect(byOption.status == 0, "\(byOption)")
        #expect(!byOption.stderr.contains("s3cret-pass"))
        #expect(proxy.log.first?.hasPrefix("GET http://127.0.0.1:\(server.port)/x auth=Basic ") == true)
        // The profile key, and a variable wins over it.
        #expect(try douctl.run("profile", "add", "behind", "--api-base", "http://127.0.0.1:\(server.port)", "--proxy", proxyURL).status == 0)
        #expect(try douctl.run(["api", "/y", "--profile", "behind"]).status == 0)
        #expect(proxy.log.count == 2)
        let show = try douctl.run("profile", "show", "behind")
        #expect(show.stdoutText.contains("alice:***@127.0.0.1:\(proxy.port)"), "\(show)")
        #expect(!show.stdoutText.contains("s3cret-pass"))
        let dead = "http://127.0.0.1:\(refusingPort())"
        #expect(try douctl.run("config", "set", "proxy", dead, "--profile", "behind").status == 0)
        let envWins = try douctl.run(["api", "/z", "--profile", "behind"], environment: ["http_proxy": proxyURL])
        #expect(envWins.status == 0, "\(envWins)")
        #expect(proxy.log.count == 3)
        // Scheme by scheme: https_proxy says nothing about http://, so the profile's (dead) proxy applies.
        let otherScheme = try douctl.run(["api", "/z", "--profile", "behind", "--no-retry"], environment: ["https_proxy": proxyURL])
        #expect(otherScheme.status == 7, "\(otherScheme)")
        #expect(proxy.log.count == 3)
        // A proxy that cannot be reached is a network error that never shows the password.
        let wrong = try douctl.run(["api", "http://127.0.0.1:\(server.port)/x", "--proxy", "http://alice:s3cret-pass@127.0.0.1:\(unusedPort())", "--no-retry", "-v"])
        #expect(wrong.status == 7)
        #expect(!wrong.stderr.contains("s3cret-pass"), "\(wrong)")
        #expect(server.received.count == 3)
    }

    @Test func proxyCredentialsFromTheEnvironmentAreRedactedInVerboseOutput() throws {
        let pki = try TestPKI.shared()
        let server = try TestServer(json: #"{"ok":true}"#)
        let relay = try TLSRelay(certificate: pki.serverCertificate, key: pki.serverKey, backendPort: server.port)
        let proxy = try TestProxy(credentials: "bob:hunter2-proxy")
        let result = try Douctl().run(["api", relay.baseURL + "/x", "--cacert", pki.caCertificate, "-v"],
                                      environment: ["HTTPS_PROXY": "http://bob:hunter2-proxy@127.0.0.1:\(proxy.port)"])
        #expect(result.status == 0, "\(result)")
        #expect(!result.stderr.contains("hunter2-proxy"))
        #expect(result.stderr.contains("bob:***@127.0.0.1"), "\(result)")
        #expect(proxy.log.first?.hasPrefix("CONNECT localhost:\(relay.port) auth=Basic ") == true)
        // Wrong credentials: the CONNECT is refused, and the error keeps the secret out too.
        let refused = try Douctl().run(["api", relay.baseURL + "/x", "--cacert", pki.caCertificate, "--no-retry"],
                                       environment: ["HTTPS_PROXY": "http://bob:wrong-pass@127.0.0.1:\(proxy.port)"])
        #expect(refused.status == 7, "\(refused)")
        #expect(!refused.stderr.contains("wrong-pass"))
        #expect(server.received.count == 1)
    }

    // MARK: redirects

    /// Two origins: `a` redirects as `route` says; `b` records what arrives.
    func origins(_ route: @escaping @Sendable (TestServer.Received, UInt16) -> HTTPServerResponse) throws -> (a: TestServer, b: TestServer) {
        let b = try TestServer(json: #"{"landed":true}"#)
        let port = b.port
        let a = try TestServer { request in route(request, port) }
        return (a, b)
    }

    static func redirect(_ location: String, status: Int = 302) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: [("Location", location), ("Content-Type", "application/json")], body: .bytes(Array(#"{"moved":true}"#.utf8)))
    }

    static let landed = HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(Array(#"{"here":true}"#.utf8)))

    @Test func credentialsStayWithTheirOrigin() throws {
        let (a, b) = try origins { request, port in
            switch request.path {
            case "/start": return Self.redirect("/same?x=1", status: 301)
            case "/same": return Self.redirect("http://127.0.0.1:\(port)/elsewhere?\(request.target.split(separator: "?").last ?? "")", status: 307)
            default: return Self.landed
            }
        }
        let douctl = Douctl(environment: ["DOUCTL_TOKEN": "tok-123456"])
        #expect(try douctl.run("profile", "add", "q", "--api-base", a.baseURL, "--token-placement", "query").status == 0)
        #expect(try douctl.run("profile", "add", "h", "--api-base", a.baseURL).status == 0)

        let query = try douctl.run(["api", "/start", "--profile", "q", "-H", "Cookie: session=abc"])
        #expect(query.status == 0, "\(query)")
        #expect(try query.json()["landed"]?.boolValue == true)
        #expect(a.received.map(\.path) == ["/start", "/same"])
        #expect(a.received.allSatisfy { $0.queryValue("access_token") == "tok-123456" && $0.header("Cookie") == "session=abc" }, "same origin keeps them")
        let crossed = try #require(b.received.first)
        #expect(crossed.path == "/elsewhere")
        #expect(crossed.queryValue("x") == "1")
        #expect(crossed.queryValue("access_token") == nil, "the token query parameter never leaves its origin")
        #expect(crossed.header("Cookie") == nil)

        let header = try douctl.run(["api", "/start", "--profile", "h"])
        #expect(header.status == 0, "\(header)")
        #expect(a.received.suffix(2).allSatisfy { $0.header("Authorization") == "Bearer tok-123456" })
        #expect(b.received.count == 2)
        #expect(b.received.last?.header("Authorization") == nil)
    }

    @Test func atMostTenRedirects() throws {
        let (a, _) = try origins { request, _ in
            let hop = Int(request.queryValue("n") ?? "0") ?? 0
            return hop < 10 ? Self.redirect("/loop?n=\(hop + 1)") : Self.landed
        }
        let ten = try Douctl().run(["api", a.baseURL + "/loop"])
        #expect(ten.status == 0, "\(ten)")
        #expect(a.received.count == 11)
        let (endless, _) = try origins { _, _ in Self.redirect("/loop") }
        let tooMany = try Douctl().run(["api", endless.baseURL + "/loop"])
        #expect(tooMany.status == 7)
        #expect(tooMany.errorLine.hasPrefix("douctl: too many redirects (more than 10)"), "\(tooMany)")
        #expect(endless.received.count == 11)
    }

    @Test func neverDowngradesHTTPSToHTTP() throws {
        let pki = try TestPKI.shared()
        let (a, b) = try origins { _, port in Self.redirect("http://127.0.0.1:\(port)/plain") }
        let relay = try TLSRelay(certificate: pki.serverCertificate, key: pki.serverKey, backendPort: a.port)
        let result = try Douctl(environment: ["DOUCTL_TOKEN": "tok-123456"]).run(["api", relay.baseURL + "/x", "--cacert", pki.caCertificate])
        #expect(result.status == 7)
        #expect(result.errorLine == "douctl: refusing to follow the redirect from \(relay.baseURL)/x to http://127.0.0.1:\(b.port)/plain: it downgrades https to plain http")
        #expect(b.received.isEmpty)
    }

    @Test func headAndSeeOtherFollowToo() throws {
        let (a, b) = try origins { request, port in
            switch request.path {
            case "/head": return Self.redirect("http://127.0.0.1:\(port)/landed", status: 308)
            case "/get": return Self.redirect("/landed", status: 303)
            default: return Self.landed
            }
        }
        let head = try Douctl().run(["api", "-X", "HEAD", a.baseURL + "/head", "--include"])
        #expect(head.status == 0, "\(head)")
        #expect(head.stdoutText.hasPrefix("HTTP/1.1 200"))
        #expect(b.received.map(\.method) == ["HEAD"])
        let seeOther = try Douctl().run(["api", a.baseURL + "/get"])
        #expect(seeOther.status == 0, "\(seeOther)")
        #expect(a.received.map(\.path) == ["/head", "/get", "/landed"])
        #expect(a.received.map(\.method) == ["HEAD", "GET", "GET"])
    }

    @Test func aPostAnswered303IsNotFollowedAndNotASuccess() throws {
        let (a, b) = try origins { _, port in Self.redirect("http://127.0.0.1:\(port)/elsewhere", status: 303) }
        let result = try Douctl().run(["api", a.baseURL + "/form", "-f", "text=hi", "--include"])
        // Issue 22: was exit 0 with the 303 printed as if the post had happened.
        #expect(result.status == 7, "\(result)")
        #expect(result.stdoutText.isEmpty, "\(result)")
        #expect(result.errorLine.contains("HTTP 303 to http://127.0.0.1:\(b.port)/elsewhere"), "\(result)")
        #expect(a.received.map(\.method) == ["POST"])
        #expect(b.received.isEmpty)
    }

    // MARK: retried transport errors end with their own message (issue 16.1)

    @Test func retriedDNSFailureEndsWithItsOwnMessage() throws {
        let result = try Douctl().run(["api", "http://example.invalid/", "-v"])
        #expect(result.status == 7)
        #expect(result.stderr.contains("trying again in"), "the retry path ran: \(result)")
        #expect(result.errorLine.components(separatedBy: "\n").last == "douctl: cannot connect: Could not resolve host: example.invalid")
        #expect(!result.stderr.contains("bad argument"))
    }

    @Test func retriedRefusedConnectionEndsWithItsOwnMessage() throws {
        let port = unusedPort()
        let result = try Douctl().run(["api", "http://127.0.0.1:\(port)/x", "-v"])
        #expect(result.status == 7)
        #expect(result.stderr.components(separatedBy: "trying again in").count == 3, "two retries: \(result)")
        let last = result.errorLine.components(separatedBy: "\n").last ?? ""
        #expect(last.hasPrefix("douctl: cannot connect: Failed to connect to 127.0.0.1 port \(port)"), "\(result)")
    }

    // MARK: -v

    @Test func verboseShowsBodiesWithSecretsMaskedAndNoPointers() throws {
        let filler = String(repeating: "x", count: 6000)
        let server = try TestServer { _ in
            HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json")],
                               body: .bytes(Array(#"{"access_token":"reply-secret-1","refresh_token":"reply-secret-2","user":"ahbei","filler":"\#(filler)"}"#.utf8)))
        }
        let douctl = Douctl()
        let form = try douctl.run(["api", server.baseURL + "/form", "-f", "text=hello", "-f", "password=hunter2", "-v"])
        #expect(form.status == 0)
        let lines = form.stderr.components(separatedBy: "\n")
        #expect(lines.contains("> text=hello&password=***"), "\(form)")
        #expect(lines.contains { $0.hasPrefix(#"< {"access_token":"***","refresh_token":"***","user":"ahbei","filler":"xxx"#) }, "\(form)")
        #expect(lines.contains { $0.hasPrefix("< … (") && $0.hasSuffix(" more bytes)") })
        for secret in ["hunter2", "reply-secret-1", "reply-secret-2"] { #expect(!form.stderr.contains(secret)) }
        #expect(!lines.contains { $0.contains(filler) }, "at most 4 KiB of a body")
        #expect(!lines.contains { $0.range(of: "0x[0-9a-fA-F]{6,}", options: .regularExpression) != nil }, "no pointer addresses: \(form)")

        // A file part is summarized, never dumped.
        let picture = try TemporaryDirectory.file(named: "pic.png", bytes: PNGFixture.bytes)
        let upload = try douctl.run(["api", server.baseURL + "/upload", "--attach", "image=" + picture, "-F", "token=abcdef", "-v"])
        #expect(upload.status == 0)
        #expect(upload.stderr.contains("> [\(PNGFixture.bytes.count) bytes from \(picture)]"), "\(upload)")
        #expect(upload.stderr.contains(#"> Content-Disposition: form-data; name="token""#))
        #expect(!upload.stderr.contains("abcdef"))
        #expect(!upload.stderr.contains("IHDR"))
    }
}
