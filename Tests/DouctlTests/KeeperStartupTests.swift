#if canImport(Glibc)
import Glibc
#endif
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 44: a call through the connection keeper does no TLS in its own process, so it does
/// not read OpenSSL's configuration file; every call that may do TLS here (a direct one, and
/// one the keeper declines, which goes direct in the same process) still applies it exactly.
/// OPENSSL_CONF names the file: one that leaves TLS 1.3 a single cipher suite, which the
/// server sees (libcurl sets the protocol versions itself, so they cannot show it).
@Suite("Keeper calls skip OpenSSL's configuration", .serialized)
struct KeeperStartupTests {
    /// An HTTPS/1.1 server that answers each request with the TLS version and cipher suite
    /// its connection negotiated: {"tls": "TLSv1.3", "cipher": "TLS_AES_256_GCM_SHA384"}.
    static let source = #"""
import json, socket, ssl, sys, threading
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", 0))
server.listen(16)
print("ready %d" % server.getsockname()[1], flush=True)

def serve(raw):
    try:
        conn = context.wrap_socket(raw, server_side=True)
        pending = b""
        while True:
            while b"\r\n\r\n" not in pending:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                pending += chunk
            head, _, pending = pending.partition(b"\r\n\r\n")
            data = json.dumps({"tls": conn.version(), "cipher": conn.cipher()[0]}).encode()
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(data) + data)
    except Exception:
        pass
    finally:
        raw.close()

while True:
    raw, _ = server.accept()
    threading.Thread(target=serve, args=(raw,), daemon=True).start()
"""#

    /// The server, and an OpenSSL configuration file whose system-wide TLS defaults (as a
    /// distribution's openssl.cnf sets them) allow only ChaCha20-Poly1305 in TLS 1.3.
    static func setUp() throws -> (peer: PythonPeer, base: String, pki: TestPKI, capped: String) {
        let pki = try TestPKI.shared()
        let peer = try PythonPeer(name: "tls-version-peer", source: source, arguments: [pki.serverCertificate, pki.serverKey])
        let capped = TemporaryDirectory.make(prefix: "openssl-conf") + "/openssl.cnf"
        let text = """
            openssl_conf = default_conf
            [default_conf]
            ssl_conf = ssl_sect
            [ssl_sect]
            system_default = system_default_sect
            [system_default_sect]
            Ciphersuites = TLS_CHACHA20_POLY1305_SHA256

            """
        try Data(text.utf8).write(to: URL(fileURLWithPath: capped))
        return (peer, peer.base.replacingOccurrences(of: "http://", with: "https://"), pki, capped)
    }

    static let onlySuite = "TLS_CHACHA20_POLY1305_SHA256"

    /// Only libcurl built on OpenSSL 3 reads OPENSSL_CONF (the deferral is for it alone).
    static func requireOpenSSL3(_ douctl: Douctl) throws {
        let version = try douctl.run("version").stdoutText
        if !version.contains("OpenSSL/3") {
            try Test.cancel("skipped: this libcurl is not built on OpenSSL 3 (\(version.split(separator: "\n").last ?? ""))")
        }
    }

    @Test func aDirectCallAppliesOpenSSLsConfiguration() throws {
        let (peer, base, pki, capped) = try Self.setUp()
        let douctl = Douctl()
        try Self.requireOpenSSL3(douctl)
        let plain = try douctl.run("api", base + "/x", "--cacert", pki.caCertificate)
        #expect(plain.status == 0, "\(plain) \(peer.log)")
        #expect(try plain.json()["cipher"]?.scalarText != Self.onlySuite, "without the file: the server's choice")
        let underCap = try douctl.run(["api", base + "/x", "--cacert", pki.caCertificate], environment: ["OPENSSL_CONF": capped])
        #expect(underCap.status == 0, "\(underCap)")
        #expect(try underCap.json()["cipher"]?.scalarText == Self.onlySuite, "the file governs the direct call")
    }

    /// A run that names its own OpenSSL configuration goes direct even with a keeper
    /// running (the keeper holds the system's), and the file governs its handshake.
    @Test func aRunWithItsOwnOpenSSLConfigurationGoesDirectPastARunningKeeper() throws {
        let (peer, base, pki, capped) = try Self.setUp()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try Self.requireOpenSSL3(douctl)
        try KeeperPeer.startKeeper(douctl, base: base, cacert: pki.caCertificate)
        let kept = try douctl.run(["-v", "api", base + "/x", "--cacert", pki.caCertificate])
        #expect(kept.stderr.contains("over the keeper's connection"), "the anchor rode the keeper: \(kept.stderr)")
        let result = try douctl.run(["-v", "api", base + "/x", "--cacert", pki.caCertificate], environment: ["OPENSSL_CONF": capped])
        #expect(result.status == 0, "\(result) \(peer.log)")
        #expect(!result.stderr.contains("keeper"), "OPENSSL_CONF set: the keeper is not asked: \(result.stderr)")
        #expect(try result.json()["cipher"]?.scalarText == Self.onlySuite, "the direct handshake obeyed the file")
    }

    /// The files a douctl run opens (its main thread, under strace), as strace wrote them.
    static func filesOpened(_ douctl: Douctl, _ arguments: [String]) throws -> (result: Douctl.Result, opened: String) {
        let strace = try Tools.require("strace")
        let log = TemporaryDirectory.make(prefix: "strace") + "/opens"
        let traced = Douctl(configDirectory: douctl.configDirectory, environment: douctl.environment)
        let result = try traced.run(via: [strace, "-qq", "-e", "trace=open,openat", "-o", log], arguments)
        return (result, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
    }

    /// A call the keeper carries never opens OpenSSL's configuration file (the system's,
    /// OPENSSLDIR/openssl.cnf); a call the keeper declines goes direct in the same process
    /// and opens it before its handshake, as a direct call does.
    @Test func aCallThroughTheKeeperDoesNotReadOpenSSLsConfiguration() throws {
        let (peer, base, pki, _) = try Self.setUp()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try Self.requireOpenSSL3(douctl)
        // No keeper yet: the call is meant for one, is declined, goes direct (and starts one).
        let declined = try Self.filesOpened(douctl, ["-v", "api", base + "/x", "--cacert", pki.caCertificate])
        #expect(declined.result.status == 0, "\(declined.result) \(peer.log)")
        #expect(declined.result.stderr.contains("* keeper: none is running"), "the call was meant for the keeper: \(declined.result.stderr)")
        #expect(declined.opened.contains("openssl.cnf"), "a declined call going direct reads the configuration: \(declined.opened)")
        try KeeperPeer.waitFor("the keeper's socket") { FileManager.default.fileExists(atPath: KeeperPeer.socketPath(douctl)) && (try? KeeperPeer.status(douctl)["running"]) == .bool(true) }
        let kept = try Self.filesOpened(douctl, ["-v", "api", base + "/x", "--cacert", pki.caCertificate])
        #expect(kept.result.status == 0, "\(kept.result) \(peer.log)")
        #expect(kept.result.stderr.contains("over the keeper's connection"), "the keeper carried the call: \(kept.result.stderr)")
        #expect(try kept.result.json()["tls"]?.scalarText == "TLSv1.3")
        #expect(kept.opened.contains("openat("), "strace saw the run's opens: \(kept.opened)")
        #expect(!kept.opened.contains("openssl.cnf"), "a call through the keeper read OpenSSL's configuration")
        let direct = try Self.filesOpened(douctl, ["api", base + "/x", "--cacert", pki.caCertificate, "--no-keep"])
        #expect(direct.result.status == 0, "\(direct.result)")
        #expect(direct.opened.contains("openssl.cnf"), "a direct call reads it: \(direct.opened)")
    }
}

/// The same for a direct call to a plain http URL: no TLS, so the file is not read, until a
/// redirect to https, whose handshake it governs.
@Suite("Plain http calls skip OpenSSL's configuration", .serialized)
struct PlainHTTPStartupTests {
    /// An HTTP/1.1 server that redirects every request to the https base it is given.
    static let source = #"""
import socket, sys, threading
target = sys.argv[1]
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", 0))
server.listen(16)
print("ready %d" % server.getsockname()[1], flush=True)

def serve(conn):
    try:
        pending = b""
        while b"\r\n\r\n" not in pending:
            chunk = conn.recv(65536)
            if not chunk:
                return
            pending += chunk
        path = pending.split(b" ")[1].decode()
        if path == "/plain":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\nConnection: close\r\n\r\n{\"tls\": \"none\"}")
        else:
            conn.sendall(("HTTP/1.1 302 Found\r\nLocation: %s%s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n" % (target, path)).encode())
    finally:
        conn.close()

while True:
    conn, _ = server.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
"""#

    @Test func aPlainHTTPCallDoesNotReadOpenSSLsConfigurationButItsRedirectToHTTPSObeysIt() throws {
        let (peer, tlsBase, pki, capped) = try KeeperStartupTests.setUp()
        let douctl = Douctl()
        try KeeperStartupTests.requireOpenSSL3(douctl)
        let redirector = try PythonPeer(name: "redirect-to-tls", source: Self.source, arguments: [tlsBase])
        let fifo = TemporaryDirectory.make(prefix: "openssl-fifo") + "/openssl.cnf"
        #expect(mkfifo(fifo, 0o600) == 0)
        let opened = OpenedFlag()
        let writer = Thread {
            let fd = open(fifo, O_WRONLY | O_CLOEXEC)
            opened.set()
            if fd >= 0 { close(fd) }
        }
        writer.start()
        let plain = try douctl.run(["api", redirector.base + "/plain"], environment: ["OPENSSL_CONF": fifo])
        let wasOpened = opened.value
        let release = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        try KeeperPeer.waitFor("the FIFO's writer to end") { opened.value }
        if release >= 0 { close(release) }
        #expect(plain.status == 0, "\(plain) \(redirector.log)")
        #expect(try plain.json()["tls"]?.scalarText == "none")
        #expect(!wasOpened, "a plain http call read OPENSSL_CONF")
        // http first (no TLS), then the redirect's https hop in the same process.
        let redirected = try douctl.run(["api", redirector.base + "/x", "--cacert", pki.caCertificate], environment: ["OPENSSL_CONF": capped])
        #expect(redirected.status == 0, "\(redirected) \(peer.log)")
        #expect(try redirected.json()["cipher"]?.scalarText == KeeperStartupTests.onlySuite, "the https hop obeyed the file")
        let uncapped = try douctl.run(["api", redirector.base + "/x", "--cacert", pki.caCertificate])
        #expect(try uncapped.json()["cipher"]?.scalarText != KeeperStartupTests.onlySuite, "without the file: the server's choice")
    }
}

/// Set once by another thread.
final class OpenedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var opened = false
    var value: Bool { lock.lock(); defer { lock.unlock() }; return opened }
    func set() { lock.lock(); opened = true; lock.unlock() }
}
