#if canImport(Glibc)
import Glibc
#endif
import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// Issue 44 item 2's per-call bound: a call through the keeper is carried in Swift over the
/// keeper's socket and never loads libcurl (`SocketExchange`), sending the origin exactly
/// what the libcurl path sends. The built binary, the real keeper, a TLS origin on 127.0.0.1.
@Suite("Keeper calls without libcurl")
struct KeeperClientTests {
    /// What the dynamic loader says it opened (LD_DEBUG=files): a keeper call must not name
    /// libcurl; the same call direct must (the probe's own check).
    static func loadsLibcurl(_ result: Douctl.Result) -> Bool {
        result.stderr.contains("libcurl")
    }

    @Test func aKeeperCallLoadsNoLibcurlAndSendsWhatADirectCallSends() throws {
        let server = try KeeperPeer()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try KeeperPeer.startKeeper(douctl, base: server.base, cacert: server.pki.caCertificate)
        let small = try TemporaryDirectory.file(named: "small.json", bytes: Array(#"{"a":1,"b":"two"}"#.utf8))
        let larger = try TemporaryDirectory.file(named: "larger.bin", bytes: (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let cases: [[String]] = [
            ["api", server.base + "/get?q=1&r=two", "-H", "X-Custom: value"],
            ["api", server.base + "/delete", "-X", "DELETE"],
            ["api", server.base + "/post", "-X", "POST", "--input", small],
            ["api", server.base + "/upload", "-X", "PUT", "--input", larger, "-H", "Content-Type: application/octet-stream"],
            ["api", server.base + "/empty-post", "-X", "POST"],
        ]
        for arguments in cases {
            let through = try douctl.run(["-v"] + arguments + ["--cacert", server.pki.caCertificate], environment: ["LD_DEBUG": "files"])
            #expect(through.status == 0, "\(arguments): \(through)")
            #expect(through.stderr.contains("* keeper:"), "\(arguments): it went through the keeper: \(through.stderr)")
            #expect(!Self.loadsLibcurl(through), "\(arguments): a keeper call loaded libcurl")
            let direct = try douctl.run(["-v"] + arguments + ["--cacert", server.pki.caCertificate, "--no-keep"], environment: ["LD_DEBUG": "files"])
            #expect(direct.status == 0, "\(arguments): \(direct)")
            #expect(Self.loadsLibcurl(direct), "the probe sees libcurl when it is loaded")
            #expect(try through.json()["path"] == direct.json()["path"], "\(arguments): the same reply")
            #expect(try through.json()["sha256"] == direct.json()["sha256"], "\(arguments): the origin received the same body")
            let heads = try douctl.run("api", server.base + "/heads", "--cacert", server.pki.caCertificate, "--no-keep").json()
            let list = heads.arrayValue ?? []
            #expect(list.count >= 3)
            // The last three: the keeper call's, the direct call's, this /heads request's own.
            if list.count >= 3 {
                #expect(list[list.count - 3] == list[list.count - 2], "\(arguments): the origin received the same request head")
            }
        }
    }

    /// The reply the keeper relays is read here as libcurl would: a compressed one decoded,
    /// with libcurl not loaded for it.
    @Test func aCompressedReplyIsDecodedWithoutLibcurl() throws {
        let server = try KeeperPeer()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try KeeperPeer.startKeeper(douctl, base: server.base, cacert: server.pki.caCertificate)
        for encoding in ["gzip", "deflate", "chunked-gzip"] {
            let through = try douctl.run(["api", server.base + "/gz?enc=" + encoding, "--cacert", server.pki.caCertificate], environment: ["LD_DEBUG": "files"])
            #expect(through.status == 0, "\(encoding): \(through)")
            #expect(!Self.loadsLibcurl(through), "\(encoding): a keeper call loaded libcurl")
            #expect(try through.json()["decoded"]?.scalarText == encoding, "\(encoding): \(through.stdout)")
        }
    }

    /// --max-time and Ctrl-C through the Swift path: stopped within a second, stdout empty,
    /// the connection never lent again (the next call gets a new one).
    @Test func maxTimeAndCtrlCStopAKeeperCallWithinASecond() throws {
        let server = try KeeperPeer()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try KeeperPeer.startKeeper(douctl, base: server.base, cacert: server.pki.caCertificate)
        let started = Date()
        let slow = try douctl.run(["-v", "api", server.base + "/slow", "--cacert", server.pki.caCertificate, "--max-time", "1"], environment: ["LD_DEBUG": "files"])
        #expect(slow.status == 7, "\(slow)")
        #expect(Date().timeIntervalSince(started) < 3)
        #expect(!Self.loadsLibcurl(slow))
        #expect(slow.stdout.isEmpty)
        let next = try douctl.run("-v", "api", server.base + "/after", "--cacert", server.pki.caCertificate)
        #expect(next.status == 0, "\(next)")
        #expect(next.stderr.contains("* keeper: a new connection"), "\(next.stderr)")
    }
}

extension KeeperClientTests {
    /// Through the keeper's HTTP/2 connection (it answers `ok h2`): the call still loads no
    /// libcurl, -v and -i say HTTP/2 as the libcurl path does, and the reply is the origin's.
    @Test func aCallOverTheKeepersHTTP2ConnectionLoadsNoLibcurl() throws {
        let peer = try H2KeeperPeer()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try KeeperH2Tests.warm(douctl, peer)
        let result = try douctl.run(["-v", "api", peer.base + "/item/h2", "-i", "--cacert", peer.pki.caCertificate], environment: ["LD_DEBUG": "files"])
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.contains("* HTTP/2 over the keeper's connection"), "\(result.stderr)")
        #expect(!Self.loadsLibcurl(result), "a keeper call over HTTP/2 loaded libcurl")
        #expect(result.stdoutText.hasPrefix("HTTP/2 200"), "\(result.stdoutText)")
        #expect(result.stdoutText.contains("/item/h2"), "\(result.stdoutText)")
    }
}
