import DouctlSystem
import Foundation
import Testing
import DouctlTestSupport

/// Certificates for the TLS tests, made with the openssl command line once per test run:
/// a test CA → a server certificate for 127.0.0.1 and localhost, an expired one, one for
/// another host name; a second CA → a client certificate (mutual TLS); and a CA nobody uses.
final class TestPKI: Sendable {
    let directory: String
    var caCertificate: String { directory + "/ca.pem" }
    var otherCACertificate: String { directory + "/other-ca.pem" }
    var serverCertificate: String { directory + "/server.pem" }
    var serverKey: String { directory + "/server.key" }
    var expiredCertificate: String { directory + "/expired.pem" }
    var wrongHostCertificate: String { directory + "/wrong-host.pem" }
    var clientCACertificate: String { directory + "/client-ca.pem" }
    var clientCertificate: String { directory + "/client.pem" }
    var clientKey: String { directory + "/client.key" }

    private static let made = LockedValue<TestPKI?>(nil)

    /// The run's certificates (made on first use); skips the test when openssl is missing.
    static func shared() throws -> TestPKI {
        let openssl = try Tools.require("openssl")
        return try made.withLock { existing in
            if let existing { return existing }
            let pki = try TestPKI(openssl: openssl)
            existing = pki
            return pki
        }
    }

    private init(openssl: String) throws {
        directory = TemporaryDirectory.make(prefix: "douctl-pki")
        func run(_ arguments: [String]) throws {
            let (status, text) = try runCollectingStderr(openssl, arguments, directory: directory)
            if status != 0 { throw PeerError("openssl \(arguments.joined(separator: " ")) failed: \(text)") }
        }
        func write(_ name: String, _ text: String) throws {
            try Data(text.utf8).write(to: URL(fileURLWithPath: directory + "/" + name))
        }
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        for (name, subject) in [("ca", "douctl test CA"), ("client-ca", "douctl test client CA"), ("other-ca", "douctl unrelated CA")] {
            try run(["req", "-x509"] + curve + ["-keyout", "\(name).key", "-out", "\(name).pem", "-days", "30", "-subj", "/CN=\(subject)",
                     "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        }
        try write("server.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
        try write("wrong.ext", "subjectAltName=DNS:wrong.example\nextendedKeyUsage=serverAuth\n")
        try write("client.ext", "extendedKeyUsage=clientAuth\n")
        try run(["req", "-new"] + curve + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"])
        try run(["req", "-new"] + curve + ["-keyout", "client.key", "-out", "client.csr", "-subj", "/CN=douctl test client"])
        let sign = ["x509", "-req", "-CA", "ca.pem", "-CAkey", "ca.key", "-in", "server.csr"]
        try run(sign + ["-set_serial", "2", "-days", "30", "-extfile", "server.ext", "-out", "server.pem"])
        try run(sign + ["-set_serial", "3", "-days", "-1", "-extfile", "server.ext", "-out", "expired.pem"])
        try run(sign + ["-set_serial", "4", "-days", "30", "-extfile", "wrong.ext", "-out", "wrong-host.pem"])
        try run(["x509", "-req", "-CA", "client-ca.pem", "-CAkey", "client-ca.key", "-in", "client.csr", "-set_serial", "5",
                 "-days", "30", "-extfile", "client.ext", "-out", "client.pem"])
    }
}

struct PeerError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A python3 helper process (see `PeerScript`): prints its port, serves until stopped.
final class PeerProcess: @unchecked Sendable {
    let process = Process()
    let port: UInt16

    init(_ arguments: [String]) throws {
        let python = try Tools.require("python3")
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [try PeerScript.path()] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.runAlone()
        var line: [UInt8] = []
        while true {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            guard let first = byte.first else { break }
            if first == 0x0A { break }
            line.append(first)
        }
        guard let port = UInt16(String(decoding: line, as: UTF8.self)) else {
            process.terminate()
            throw PeerError("the test peer \(arguments.first ?? "") did not start")
        }
        self.port = port
    }

    deinit { stop() }

    /// SIGKILL: a signal a test runner may ignore (and its children inherit) cannot keep it alive.
    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// TLS in front of a plain HTTP server on 127.0.0.1: what douctl sees as https://.
final class TLSRelay: @unchecked Sendable {
    let peer: PeerProcess
    var port: UInt16 { peer.port }
    /// https://localhost:PORT (the name the server certificate carries besides 127.0.0.1).
    var baseURL: String { "https://localhost:\(peer.port)" }

    init(certificate: String, key: String, backendPort: UInt16, clientCA: String? = nil, maximumTLS11: Bool = false, maximumTLS12: Bool = false) throws {
        var arguments = ["relay", certificate, key, String(backendPort)]
        if let clientCA { arguments += ["--client-ca", clientCA] }
        if maximumTLS11 { arguments += ["--max-tls", "1.1"] }
        if maximumTLS12 { arguments += ["--max-tls", "1.2"] }
        peer = try PeerProcess(arguments)
    }
}

/// An HTTP proxy on 127.0.0.1 (CONNECT for https, absolute-form forwarding for http)
/// that logs one line per request: "CONNECT host:port auth=…" or "GET http://… auth=…".
final class TestProxy: @unchecked Sendable {
    let peer: PeerProcess
    let logPath: String
    var port: UInt16 { peer.port }
    var url: String { "http://127.0.0.1:\(peer.port)" }

    init(credentials: String? = nil) throws {
        logPath = TemporaryDirectory.make(prefix: "douctl-proxy") + "/proxy.log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        var arguments = ["proxy", logPath]
        if let credentials { arguments += ["--auth", credentials] }
        peer = try PeerProcess(arguments)
    }

    var log: [String] {
        ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }
}

/// The python3 source of the relay and the proxy, written once per run.
enum PeerScript {
    private static let written = LockedValue<String?>(nil)

    static func path() throws -> String {
        try written.withLock { path in
            if let path { return path }
            let file = TemporaryDirectory.make(prefix: "douctl-peers") + "/peers.py"
            try Data(source.utf8).write(to: URL(fileURLWithPath: file))
            path = file
            return file
        }
    }

    static let source = #"""
"""douctl's test peers: a TLS-terminating relay and an HTTP proxy, on 127.0.0.1.

  peers.py relay CERT KEY BACKEND_PORT [--client-ca CA] [--max-tls 1.1|1.2]
  peers.py proxy LOG [--auth USER:PASS]
  peers.py plain
Each prints its port on the first line of stdout, then serves until killed.
"""
import base64, select, signal, socket, ssl, sys, threading

def pump(a, b):
    """Copies bytes both ways until either side closes. TLS sockets may hold decrypted
    bytes select() cannot see, so pending() is asked first."""
    sockets = [a, b]
    try:
        while True:
            ready = [s for s in sockets if isinstance(s, ssl.SSLSocket) and s.pending()]
            if not ready:
                ready, _, _ = select.select(sockets, [], [], 300)
                if not ready:
                    return
            for s in ready:
                data = s.recv(1 << 18)
                if not data:
                    return
                (b if s is a else a).sendall(data)
    except (OSError, ssl.SSLError):
        pass
    finally:
        for s in sockets:
            try:
                s.close()
            except OSError:
                pass

def listen():
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    print(server.getsockname()[1], flush=True)
    return server

def relay(args):
    cert, key, backend = args[0], args[1], int(args[2])
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    if "--client-ca" in args:
        context.load_verify_locations(args[args.index("--client-ca") + 1])
        context.verify_mode = ssl.CERT_REQUIRED
    if "--max-tls" in args and args[args.index("--max-tls") + 1] == "1.2":
        context.maximum_version = ssl.TLSVersion.TLSv1_2
    elif "--max-tls" in args:
        context.set_ciphers("DEFAULT:@SECLEVEL=0")
        context.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
        context.maximum_version = ssl.TLSVersion.TLSv1_1
    server = listen()
    def serve(raw):
        tls = context.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
        try:
            tls.do_handshake()
        except (OSError, ssl.SSLError):
            # The alert is sent. Closing now, with the client's request unread, would make
            # the kernel answer with a reset that can overtake the alert; drain first.
            try:
                bare = socket.socket(fileno=tls.detach())
                bare.shutdown(socket.SHUT_WR)
                bare.settimeout(5)
                while bare.recv(65536):
                    pass
                bare.close()
            except OSError:
                pass
            return
        try:
            plain = socket.create_connection(("127.0.0.1", backend))
        except OSError:
            tls.close()
            return
        pump(tls, plain)
    while True:
        raw, _ = server.accept()
        threading.Thread(target=serve, args=(raw,), daemon=True).start()

def proxy(args):
    log_path = args[0]
    auth = args[args.index("--auth") + 1] if "--auth" in args else None
    lock = threading.Lock()
    def record(line):
        with lock:
            with open(log_path, "a") as log:
                log.write(line + "\n")
    server = listen()
    def serve(client):
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = client.recv(65536)
                if not chunk:
                    client.close()
                    return
                data += chunk
            head, rest = data.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            method, target, version = lines[0].split(" ", 2)
            headers = [l for l in lines[1:] if l]
            given = [l.split(":", 1)[1].strip() for l in headers if l.lower().startswith("proxy-authorization:")]
            record("%s %s auth=%s" % (method, target, given[0] if given else "-"))
            if auth is not None and given != ["Basic " + base64.b64encode(auth.encode()).decode()]:
                client.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                client.close()
                return
            if method == "CONNECT":
                host, port = target.rsplit(":", 1)
                upstream = socket.create_connection((host, int(port)))
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                if rest:
                    upstream.sendall(rest)
                pump(client, upstream)
                return
            # Absolute-form: forward in origin-form, one request per connection.
            without = target.split("://", 1)[1]
            hostport, _, path = without.partition("/")
            host, _, port = hostport.partition(":")
            upstream = socket.create_connection((host, int(port or 80)))
            kept = [h for h in headers if h.split(":", 1)[0].lower() not in ("proxy-authorization", "proxy-connection", "connection")]
            request = "%s /%s %s\r\n%s\r\nConnection: close\r\n\r\n" % (method, path, version, "\r\n".join(kept))
            upstream.sendall(request.encode("latin-1") + rest)
            pump(client, upstream)
        except (OSError, ValueError):
            try:
                client.close()
            except OSError:
                pass
    while True:
        client, _ = server.accept()
        threading.Thread(target=serve, args=(client,), daemon=True).start()

def plain(args):
    """Answers any connection at once with a plain-text HTTP error: not TLS."""
    server = listen()
    while True:
        client, _ = server.accept()
        try:
            client.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            client.close()
        except OSError:
            pass

if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    {"relay": relay, "proxy": proxy, "plain": plain}[sys.argv[1]](sys.argv[2:])
"""#
}
