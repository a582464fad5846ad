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

    /// The keeper path loads libcurl without reading the file; with no keeper to take the
    /// call, the same process goes direct, and the file must govern that handshake.
    @Test func aCallTheKeeperDeclinesGoesDirectUnderOpenSSLsConfiguration() throws {
        let (peer, base, pki, capped) = try Self.setUp()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try Self.requireOpenSSL3(douctl)
        let result = try douctl.run(["-v", "api", base + "/x", "--cacert", pki.caCertificate], environment: ["OPENSSL_CONF": capped])
        #expect(result.status == 0, "\(result) \(peer.log)")
        #expect(result.stderr.contains("* keeper: none is running"), "the call was meant for the keeper: \(result.stderr)")
        #expect(try result.json()["cipher"]?.scalarText == Self.onlySuite, "the direct handshake obeyed the file")
    }

    /// A call the keeper carries never opens OPENSSL_CONF: the file is a FIFO whose writer
    /// notes when anyone opens it for reading (a writer's open returns only then).
    @Test func aCallThroughTheKeeperDoesNotReadOpenSSLsConfiguration() throws {
        let (peer, base, pki, _) = try Self.setUp()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try Self.requireOpenSSL3(douctl)
        try KeeperPeer.startKeeper(douctl, base: base, cacert: pki.caCertificate)
        let fifo = TemporaryDirectory.make(prefix: "openssl-fifo") + "/openssl.cnf"
        #expect(mkfifo(fifo, 0o600) == 0)
        let opened = OpenedFlag()
        let writer = Thread {
            let fd = open(fifo, O_WRONLY | O_CLOEXEC)
            opened.set()
            if fd >= 0 { close(fd) }
        }
        writer.start()
        let result = try douctl.run(["-v", "api", base + "/x", "--cacert", pki.caCertificate], environment: ["OPENSSL_CONF": fifo])
        let wasOpened = opened.value
        // Release the writer if nobody opened the FIFO.
        let release = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        try KeeperPeer.waitFor("the FIFO's writer to end") { opened.value }
        if release >= 0 { close(release) }
        #expect(result.status == 0, "\(result) \(peer.log)")
        #expect(result.stderr.contains("over the keeper's connection"), "the keeper carried the call: \(result.stderr)")
        #expect(try result.json()["tls"]?.scalarText == "TLSv1.3")
        #expect(!wasOpened, "a call through the keeper read OPENSSL_CONF")
        // The same file read by a direct call (so the FIFO does show a reader).
        let again = OpenedFlag()
        let secondWriter = Thread {
            let fd = open(fifo, O_WRONLY | O_CLOEXEC)
            again.set()
            if fd >= 0 { close(fd) }
        }
        secondWriter.start()
        let direct = try douctl.run(["api", base + "/x", "--cacert", pki.caCertificate, "--no-keep"], environment: ["OPENSSL_CONF": fifo])
        #expect(direct.status == 0, "\(direct)")
        #expect(again.value, "a direct call reads OPENSSL_CONF")
        let releaseAgain = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        try KeeperPeer.waitFor("the second writer to end") { again.value }
        if releaseAgain >= 0 { close(releaseAgain) }
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
