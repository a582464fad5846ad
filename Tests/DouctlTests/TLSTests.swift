import DouctlJSON
import DouctlSandbox
import Foundation
import Testing
import DouctlTestSupport

/// HTTPS against real TLS peers on 127.0.0.1 (python3's ssl module in front of a recording
/// HTTP server), with certificates the test made (openssl): trust, identity, the errors.
@Suite("TLS")
struct TLSTests {
    /// A recording JSON server behind TLS with `certificate`.
    struct Peer {
        let server: TestServer
        let relay: TLSRelay
        var url: String { relay.baseURL + "/v2/thing" }
        var ipURL: String { "https://127.0.0.1:\(relay.port)/v2/thing" }
    }

    func peer(_ certificate: String? = nil, clientCA: String? = nil, maximumTLS11: Bool = false, maximumTLS12: Bool = false) throws -> (TestPKI, Peer) {
        let pki = try TestPKI.shared()
        let server = try TestServer(json: #"{"ok":true}"#)
        let relay = try TLSRelay(certificate: certificate ?? pki.serverCertificate, key: pki.serverKey,
                                 backendPort: server.port, clientCA: clientCA, maximumTLS11: maximumTLS11, maximumTLS12: maximumTLS12)
        return (pki, Peer(server: server, relay: relay))
    }

    // MARK: trust

    @Test func trustsTheCAGivenWithCacert() throws {
        let (pki, peer) = try peer()
        let douctl = Douctl()
        for url in [peer.url, peer.ipURL] {
            let result = try douctl.run(["api", url, "--cacert", pki.caCertificate])
            #expect(result.status == 0, "\(result)")
            #expect(try result.json()["ok"]?.boolValue == true)
        }
        #expect(peer.server.received.count == 2)
    }

    @Test func untrustedCertificateSaysHowToTrustIt() throws {
        let (_, peer) = try peer()
        let result = try Douctl().run(["api", peer.ipURL, "--no-retry"])
        #expect(result.status == 7)
        #expect(result.errorLine.hasPrefix("douctl: TLS: the certificate of 127.0.0.1 is not trusted ("), "\(result)")
        #expect(result.errorLine.contains("--cacert FILE") && result.errorLine.contains("ca_bundle"))
        let json = try Douctl().run(["api", peer.ipURL, "--no-retry", "--error-format", "json"])
        let error = try JSONParser.parse(json.stderrBytes)
        #expect(error["exit"]?.int64Value == 7)
        #expect(error["error"]?.stringValue?.hasPrefix("TLS: the certificate of 127.0.0.1 is not trusted") == true, "\(json)")
        #expect(peer.server.received.isEmpty)
    }

    @Test func environmentVariablesAsCurlReadsThem() throws {
        let (pki, peer) = try peer()
        let douctl = Douctl()
        for variable in ["SSL_CERT_FILE", "CURL_CA_BUNDLE"] {
            let result = try douctl.run(["api", peer.url], environment: [variable: pki.caCertificate])
            #expect(result.status == 0, "\(variable): \(result)")
        }
        // SSL_CERT_DIR: a directory of hashed certificates (openssl rehash).
        let hashed = TemporaryDirectory.make(prefix: "douctl-capath")
        let hash = try openssl(["x509", "-hash", "-noout", "-in", pki.caCertificate]).trimmingCharacters(in: .whitespacesAndNewlines)
        try FileManager.default.copyItem(atPath: pki.caCertificate, toPath: hashed + "/\(hash).0")
        #expect(try douctl.run(["api", peer.url], environment: ["SSL_CERT_DIR": hashed]).status == 0)
        #expect(try douctl.run(["api", peer.url, "--capath", hashed]).status == 0)
        #expect(peer.server.received.count == 4)
    }

    @Test func precedenceIsOptionThenEnvironmentThenProfile() throws {
        let (pki, peer) = try peer()
        let douctl = Douctl()
        #expect(try douctl.run("profile", "add", "tls", "--api-base", peer.relay.baseURL, "--ca-bundle", pki.caCertificate).status == 0)
        #expect(try douctl.run("config", "get", "ca_bundle", "--profile", "tls").stdoutText == pki.caCertificate + "\n")
        // The profile's CA alone works.
        let byProfile = try douctl.run(["api", "/v2/thing", "--profile", "tls"])
        #expect(byProfile.status == 0, "\(byProfile)")
        // The environment wins over the profile: an unrelated CA fails.
        let byEnvironment = try douctl.run(["api", "/v2/thing", "--profile", "tls", "--no-retry"], environment: ["SSL_CERT_FILE": pki.otherCACertificate])
        #expect(byEnvironment.status == 7)
        #expect(byEnvironment.errorLine.contains("is not trusted"))
        // The option wins over the environment.
        let byOption = try douctl.run(["api", "/v2/thing", "--profile", "tls", "--cacert", pki.caCertificate], environment: ["SSL_CERT_FILE": pki.otherCACertificate])
        #expect(byOption.status == 0, "\(byOption)")
        let optionLoses = try douctl.run(["api", "/v2/thing", "--profile", "tls", "--cacert", pki.otherCACertificate, "--no-retry"], environment: ["SSL_CERT_FILE": pki.caCertificate])
        #expect(optionLoses.status == 7)
        #expect(peer.server.received.count == 2)
    }

    @Test func missingCAFileIsExit3BeforeAnythingIsSent() throws {
        let (_, peer) = try peer()
        let douctl = Douctl()
        let missing = TemporaryDirectory.make(prefix: "douctl-none") + "/ca.pem"
        let result = try douctl.run(["api", peer.url, "--cacert", missing])
        #expect(result.status == 3)
        #expect(result.errorLine == "douctl: cannot read the CA bundle \(missing) (from --cacert): No such file or directory")
        let unreadable = try TemporaryDirectory.file(named: "ca.pem", bytes: Array("x".utf8))
        chmod(unreadable, 0o000)
        if getuid() != 0 {
            #expect(try douctl.run(["api", peer.url, "--cacert", unreadable]).status == 3)
        }
        let directory = try douctl.run(["api", peer.url, "--cacert", FileManager.default.temporaryDirectory.path])
        #expect(directory.status == 3)
        #expect(directory.errorLine.hasSuffix("(from --cacert): not a regular file"), "\(directory)")
        let keyAlone = try douctl.run(["api", peer.url, "--key", missing])
        #expect(keyAlone.status == 2)
        #expect(keyAlone.errorLine == "douctl: --key needs --cert (the client certificate it belongs to)")
        let fromEnvironment = try douctl.run(["api", peer.url], environment: ["SSL_CERT_FILE": missing])
        #expect(fromEnvironment.status == 3)
        #expect(fromEnvironment.errorLine.contains("(from SSL_CERT_FILE)"))
        #expect(try douctl.run(["api", peer.url, "--cert", missing]).status == 3)
        #expect(peer.server.received.isEmpty)
    }

    // MARK: the distinct failures

    @Test func hostNameMismatch() throws {
        let pki = try TestPKI.shared()
        let (_, peer) = try peer(pki.wrongHostCertificate)
        let result = try Douctl().run(["api", peer.url, "--cacert", pki.caCertificate])
        #expect(result.status == 7)
        #expect(result.errorLine.hasPrefix("douctl: TLS: the certificate of localhost is for another host name ("), "\(result)")
        #expect(peer.server.received.isEmpty)
    }

    @Test func expiredCertificate() throws {
        let pki = try TestPKI.shared()
        let (_, peer) = try peer(pki.expiredCertificate)
        let result = try Douctl().run(["api", peer.url, "--cacert", pki.caCertificate])
        #expect(result.status == 7)
        #expect(result.errorLine.hasPrefix("douctl: TLS: the certificate of localhost has expired"), "\(result)")
    }

    /// Plain HTTP behind an https:// URL: the message says what the handshake said, and
    /// what it means, not that douctl needs TLS 1.2.
    @Test func handshakeFailureWithAPeerThatIsNotTLS() throws {
        let notTLS = try PeerProcess(["plain"])
        let result = try Douctl().run(["api", "https://127.0.0.1:\(notTLS.port)/x"])
        #expect(result.status == 7)
        #expect(result.errorLine.hasPrefix("douctl: TLS handshake with 127.0.0.1 failed ("), "\(result)")
        #expect(result.errorLine.hasSuffix("): the server did not answer in TLS; if it speaks plain HTTP, use an http:// URL"), "\(result)")
        #expect(!result.errorLine.contains("TLS 1.2"), "\(result)")
        #expect(result.stderr.components(separatedBy: "\n").filter { !$0.isEmpty }.count == 1, "not retried: \(result)")
    }

    @Test func refusesTLSOlderThan12() throws {
        let (pki, peer) = try peer(maximumTLS11: true)
        let result = try Douctl().run(["api", peer.url, "--cacert", pki.caCertificate])
        #expect(result.status == 7)
        #expect(result.errorLine.hasPrefix("douctl: TLS handshake with localhost failed ("), "\(result)")
        #expect(result.errorLine.hasSuffix("): no TLS version in common; douctl needs TLS 1.2 or later"), "\(result)")
        #expect(peer.server.received.isEmpty)
    }

    /// A TLS 1.2 server that wants a client certificate, asked without one: the failure
    /// names the handshake's own words and the client certificate, never the TLS version.
    @Test func aTLS12ServerWantingAClientCertificateIsNotCalledAVersionProblem() throws {
        let pki = try TestPKI.shared()
        let (_, peer) = try peer(clientCA: pki.clientCACertificate, maximumTLS12: true)
        let douctl = Douctl()
        let without = try douctl.run(["api", peer.url, "--cacert", pki.caCertificate, "--no-retry"])
        #expect(without.status == 7)
        #expect(without.errorLine.hasPrefix("douctl: TLS"), "\(without)")
        #expect(!without.errorLine.contains("TLS 1.2 or later"), "\(without)")
        #expect(without.errorLine.contains("alert") || without.errorLine.contains("certificate"), "what the handshake said: \(without)")
        let with = try douctl.run(["api", peer.url, "--cacert", pki.caCertificate, "--cert", pki.clientCertificate, "--key", pki.clientKey])
        #expect(with.status == 0, "\(with)")
    }

    @Test func clientCertificateRequiredRefusedAndAccepted() throws {
        let pki = try TestPKI.shared()
        let (_, peer) = try peer(clientCA: pki.clientCACertificate)
        let douctl = Douctl()
        let without = try douctl.run(["api", peer.url, "--cacert", pki.caCertificate])
        #expect(without.status == 7)
        #expect(without.errorLine.hasPrefix("douctl: TLS: localhost refused the client certificate or requires one ("), "\(without)")
        #expect(without.errorLine.contains("--cert FILE --key FILE"))
        // A certificate from a CA the server does not accept.
        let wrong = try douctl.run(["api", peer.url, "--cacert", pki.caCertificate, "--cert", pki.serverCertificate, "--key", pki.serverKey])
        #expect(wrong.status == 7)
        #expect(wrong.errorLine.contains("refused the client certificate"), "\(wrong)")
        let with = try douctl.run(["api", peer.url, "--cacert", pki.caCertificate, "--cert", pki.clientCertificate, "--key", pki.clientKey])
        #expect(with.status == 0, "\(with)")
        // The profile keys do the same.
        #expect(try douctl.run("profile", "add", "mtls", "--api-base", peer.relay.baseURL, "--ca-bundle", pki.caCertificate,
                               "--client-cert", pki.clientCertificate, "--client-key", pki.clientKey).status == 0)
        #expect(try douctl.run(["api", "/v2/thing", "--profile", "mtls"]).status == 0)
        #expect(peer.server.received.count == 2)
    }

    @Test func insecureWarnsOnEveryUseAndIsNotStored() throws {
        let pki = try TestPKI.shared()
        let (_, peer) = try peer(pki.wrongHostCertificate)
        let douctl = Douctl()
        for _ in 0..<2 {
            let result = try douctl.run(["api", peer.url, "--insecure"])
            #expect(result.status == 0, "\(result)")
            #expect(result.stderr == "douctl: warning: --insecure: TLS certificates and host names are not verified; anyone on the path can read and change this traffic\n")
        }
        let config = (try? String(contentsOfFile: douctl.configDirectory + "/config.json", encoding: .utf8)) ?? ""
        #expect(!config.contains("insecure"))
        #expect(try douctl.run("profile", "add", "lab", "--api-base", peer.relay.baseURL, "--insecure", "true").status == 0)
        let byProfile = try douctl.run(["api", "/v2/thing", "--profile", "lab"])
        #expect(byProfile.status == 0)
        #expect(byProfile.stderr.hasPrefix("douctl: warning: profile key insecure: TLS certificates"))
    }

    @Test func verboseShowsTheTLSVersionAndTheCertificate() throws {
        let (pki, peer) = try peer()
        let result = try Douctl().run(["api", peer.url, "--cacert", pki.caCertificate, "-v"])
        #expect(result.status == 0)
        let lines = result.stderr.components(separatedBy: "\n")
        #expect(lines.contains { $0.hasPrefix("* SSL connection using TLSv1.3") || $0.hasPrefix("* SSL connection using TLSv1.2") }, "\(result)")
        #expect(lines.contains("*  subject: CN=localhost"))
        #expect(lines.contains("*  issuer: CN=douctl test CA"))
        #expect(lines.contains { $0.hasPrefix("*  expire date: ") })
    }

    /// The same failures through libcurl built on GnuTLS (Debian's libcurl3-gnutls), when it
    /// is installed: its messages differ, the classification must not.
    @Test func gnuTLSBuildsClassifyTheSame() throws {
        let library = "/usr/lib/x86_64-linux-gnu/libcurl-gnutls.so.4"
        guard FileManager.default.fileExists(atPath: library) else {
            try Test.cancel("skipped: needs libcurl-gnutls.so.4, which is not installed")
        }
        let pki = try TestPKI.shared()
        let douctl = Douctl(environment: ["DOUCTL_LIBCURL": library])
        let version = try douctl.run("version")
        #expect(version.stdoutText.contains("GnuTLS"), "\(version)")
        let (_, good) = try peer()
        #expect(try douctl.run(["api", good.url, "--cacert", pki.caCertificate]).status == 0)
        let untrusted = try douctl.run(["api", good.url, "--no-retry"])
        #expect(untrusted.errorLine.hasPrefix("douctl: TLS: the certificate of localhost is not trusted"), "\(untrusted)")
        let (_, expired) = try peer(pki.expiredCertificate)
        let expiredResult = try douctl.run(["api", expired.url, "--cacert", pki.caCertificate])
        #expect(expiredResult.errorLine.hasPrefix("douctl: TLS: the certificate of localhost has expired"), "\(expiredResult)")
        let (_, wrongHost) = try peer(pki.wrongHostCertificate)
        let wrongHostResult = try douctl.run(["api", wrongHost.url, "--cacert", pki.caCertificate])
        #expect(wrongHostResult.errorLine.hasPrefix("douctl: TLS: the certificate of localhost is for another host name"), "\(wrongHostResult)")
        let (_, mutual) = try peer(clientCA: pki.clientCACertificate)
        let refused = try douctl.run(["api", mutual.url, "--cacert", pki.caCertificate, "--no-retry"])
        #expect(refused.errorLine.hasPrefix("douctl: TLS: localhost refused the client certificate or requires one"), "\(refused)")
        let accepted = try douctl.run(["api", mutual.url, "--cacert", pki.caCertificate, "--cert", pki.clientCertificate, "--key", pki.clientKey])
        #expect(accepted.status == 0, "\(accepted)")
        for result in [untrusted, expiredResult, wrongHostResult, refused] { #expect(result.status == 7) }
    }

    // MARK: the sandbox behind TLS

    @Test func loginRefreshAndPictureUploadOverTLS() throws {
        let pki = try TestPKI.shared()
        let sandbox = try Sandbox(SandboxConfiguration())
        try sandbox.start()
        defer { sandbox.stop() }
        let relay = try TLSRelay(certificate: pki.serverCertificate, key: pki.serverKey, backendPort: sandbox.port)
        let douctl = Douctl(environment: ["SSL_CERT_FILE": pki.caCertificate])
        try SandboxProfiles.write(base: relay.baseURL, in: douctl.configDirectory)

        let login = try douctl.run("auth", "login", "--device", "--no-browser")
        #expect(login.status == 0, "\(login)")
        #expect(try douctl.run("user", "me").status == 0)

        sandbox.expireAccessTokens()
        let before = try JSONParser.parse(Array(try String(contentsOfFile: douctl.configDirectory + "/credentials.json", encoding: .utf8).utf8))
        let me = try douctl.run("user", "me")
        #expect(me.status == 0, "\(me)")
        let after = try JSONParser.parse(Array(try String(contentsOfFile: douctl.configDirectory + "/credentials.json", encoding: .utf8).utf8))
        #expect(before["profiles"]?["sandbox"]?["access_token"]?.stringValue != after["profiles"]?["sandbox"]?["access_token"]?.stringValue)
        #expect(sandbox.requests.contains { $0.path == "/service/auth2/token" && $0.formValue("grant_type") == "refresh_token" })

        let picture = try TemporaryDirectory.file(named: "pic.png", bytes: PNGFixture.bytes)
        let post = try douctl.run("shuo", "post", "over TLS", "--image", picture)
        #expect(post.status == 0, "\(post)")
        let upload = try #require(sandbox.requests.last { $0.path == "/shuo/v2/statuses/" })
        #expect(upload.contentLength == upload.bodySize && !upload.isChunked, "Content-Length framing")
        #expect(upload.part("image")?.bytes == PNGFixture.bytes)
    }

    func openssl(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Tools.require("openssl"))
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        try process.runAlone()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
