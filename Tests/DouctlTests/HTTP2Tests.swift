import DouctlJSON
import Foundation
import Testing
import DouctlTestSupport

/// HTTP/2 where a server offers it over TLS: libcurl negotiates it with ALPN, `-v` says so,
/// and several requests share the one connection. The peer is a real nginx with http2 on,
/// behind the test CA.
@Suite("HTTP/2")
struct HTTP2Tests {
    /// nginx in the foreground on a free port, serving `directory` over TLS + HTTP/2.
    final class Nginx: @unchecked Sendable {
        let process: Process
        let port: UInt16
        let root: String

        init(pki: TestPKI) throws {
            _ = try Tools.require("nginx")
            let root = TemporaryDirectory.make(prefix: "douctl-nginx")
            self.root = root
            for page in 0..<3 {
                let items = (page * 2..<page * 2 + 2).map { #"{"id":\#($0)}"# }.joined(separator: ",")
                try Data("[\(items)]".utf8).write(to: URL(fileURLWithPath: root + "/page\(page).json"))
            }
            try Data(#"{"ok":true}"#.utf8).write(to: URL(fileURLWithPath: root + "/small.json"))
            (process, port) = try NginxPeer.start(root: root) { port in """
              access_log \(root)/access.log;
              server {
                listen 127.0.0.1:\(port) ssl http2;
                ssl_certificate \(pki.serverCertificate); ssl_certificate_key \(pki.serverKey);
                root \(root);
              }
            """ }
        }

        deinit { NginxPeer.stop(process) }
    }

    /// libcurl's HTTP/2 text lines quote the request's headers (`* h2h3 [authorization:
    /// Bearer …]` in 7.88, `* [HTTP/2] [1] [authorization: …]` in 8.x): every line of `-v`
    /// goes through the same redaction, the token and a URL's password never in clear.
    @Test func verboseOverHTTP2ShowsNoTokenOrPassword() throws {
        let pki = try TestPKI.shared()
        let nginx = try Nginx(pki: pki)
        let base = "https://localhost:\(nginx.port)"
        let token = "tok-0123456789abcdef"
        let douctl = Douctl(environment: ["DOUCTL_TOKEN": token])
        #expect(try douctl.run("profile", "add", "h2", "--api-base", base, "--ca-bundle", pki.caCertificate).status == 0)
        let result = try douctl.run("--profile", "h2", "-v", "api", "/small.json")
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.contains("* HTTP/2 over a new connection"), "\(result.stderr)")
        #expect(!result.stderr.contains(token), "\(result.stderr)")
        #expect(!result.stderr.contains("0123456789abcdef"), "\(result.stderr)")

        let password = "pw-0123456789abcdef"
        let basic = Data("alice:\(password)".utf8).base64EncodedString()
        let withPassword = try Douctl().run("-v", "api", "https://alice:\(password)@localhost:\(nginx.port)/small.json", "--cacert", pki.caCertificate)
        #expect(withPassword.status == 0, "\(withPassword)")
        #expect(!withPassword.stderr.contains(password) && !withPassword.stderr.contains(basic), "\(withPassword.stderr)")
    }

    @Test func http2IsNegotiatedOverTLSAndSaidInVerbose() throws {
        let pki = try TestPKI.shared()
        let nginx = try Nginx(pki: pki)
        let base = "https://localhost:\(nginx.port)"
        let douctl = Douctl()
        let result = try douctl.run("-v", "api", "\(base)/small.json", "--cacert", pki.caCertificate)
        #expect(result.status == 0, "\(result)")
        #expect(try result.json()["ok"]?.boolValue == true)
        #expect(result.stderr.contains("* HTTP/2 over a new connection"), "\(result.stderr)")
        // Several requests in one command share the HTTP/2 connection.
        let both = try douctl.run("-v", "download", "\(base)/page0.json", "\(base)/page1.json", "-d", TemporaryDirectory.make(prefix: "h2"), "--cacert", pki.caCertificate)
        #expect(both.status == 0, "\(both)")
        let protocols = both.stderr.split(separator: "\n").filter { $0.hasPrefix("* HTTP/") }
        #expect(protocols == ["* HTTP/2 over a new connection", "* HTTP/2 over a reused connection"], "\(protocols)")
    }
}
