#if canImport(Glibc)
import Glibc
#endif
import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// An HTTPS/1.1 server with keep-alive on 127.0.0.1 (python3's ssl, the test PKI's server
/// certificate) that counts the TLS connections it accepted, for the keeper's tests:
/// `/count` says how many; `/slow` never answers; `/big?mb=N` sends N MiB; `/upload` reads
/// the body (Content-Length or chunked) and says its size and SHA-256; `/gz?enc=gzip|deflate|chunked-gzip`
/// a compressed reply; `/hostile` a 500 with terminal control sequences in its head and body;
/// `/to-elsewhere?to=URL` redirects there; anything else echoes its connection number, path
/// and Authorization. `/heads` lists every request head it was sent.
final class KeeperPeer: @unchecked Sendable {
    let peer: PythonPeer
    let base: String
    let pki: TestPKI

    init() throws {
        pki = try TestPKI.shared()
        peer = try PythonPeer(name: "keeper-peer", source: Self.source, arguments: [pki.serverCertificate, pki.serverKey])
        base = peer.base.replacingOccurrences(of: "http://127.0.0.1", with: "https://127.0.0.1")
    }

    /// A douctl with a private runtime directory (where the keeper's socket goes) and the
    /// keeper on (the test harness turns it off for every other test).
    static func douctl(idle: String = "30s", extra: [String: String] = [:]) -> Douctl {
        let runtime = TemporaryDirectory.make(prefix: "keeper-run")
        chmod(runtime, 0o700)
        return Douctl(environment: ["XDG_RUNTIME_DIR": runtime, "DOUCTL_KEEP": idle].merging(extra) { $1 })
    }

    static func socketPath(_ douctl: Douctl) -> String {
        (douctl.environment["XDG_RUNTIME_DIR"] ?? "") + "/douctl/keeper-0.1.0.sock"
    }

    /// The first call goes direct and starts the keeper: waits (generously) for its socket.
    static func startKeeper(_ douctl: Douctl, base: String, cacert: String) throws {
        let first = try douctl.run("api", base + "/warm", "--cacert", cacert)
        #expect(first.status == 0, "\(first)")
        try waitFor("the keeper's socket") { FileManager.default.fileExists(atPath: socketPath(douctl)) && (try? status(douctl)["running"]) == .bool(true) }
    }

    /// `keeper status`, as JSON (its output in a pipe).
    static func status(_ douctl: Douctl, _ arguments: [String] = []) throws -> JSON {
        try douctl.run(arguments + ["keeper", "status"]).json()
    }

    static func waitFor(_ what: String, within seconds: Double = 20, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw TestFailure("\(what): not within \(seconds)s")
    }

    func connections(_ douctl: Douctl) throws -> Int {
        // Asked with curl's semantics but not through the keeper: a run of its own, direct.
        let result = try douctl.run("api", base + "/count", "--cacert", pki.caCertificate, "--no-keep")
        return Int(try result.json()["connections"]?.scalarText ?? "") ?? -1
    }

    static let source = #"""
import hashlib, json, socket, ssl, sys, threading, time
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", 0))
server.listen(64)
lock = threading.Lock()
state = {"connections": 0, "heads": []}
print("ready %d" % server.getsockname()[1], flush=True)

def reply(conn, status, body, extra=""):
    data = json.dumps(body).encode()
    conn.sendall(("HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n" % (status, len(data), extra)).encode() + data)

def serve(raw):
    with lock:
        state["connections"] += 1
        number = state["connections"]
    try:
        conn = context.wrap_socket(raw, server_side=True)
    except (OSError, ssl.SSLError):
        return
    pending = b""
    def more():
        nonlocal pending
        data = conn.recv(1 << 20)
        if not data:
            raise EOFError()
        pending += data
    try:
        while True:
            while b"\r\n\r\n" not in pending:
                more()
            head, pending = pending.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            with lock:
                state["heads"].append(head.decode("latin-1"))
            if headers.get("expect", "").lower() == "100-continue":
                conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            digest, size = hashlib.sha256(), 0
            if "content-length" in headers:
                length = int(headers["content-length"])
                while len(pending) < length:
                    more()
                digest.update(pending[:length]); size = length; pending = pending[length:]
            elif headers.get("transfer-encoding", "").lower() == "chunked":
                while True:
                    while b"\r\n" not in pending:
                        more()
                    line, pending = pending.split(b"\r\n", 1)
                    length = int(line.split(b";")[0], 16)
                    while len(pending) < length + 2:
                        more()
                    digest.update(pending[:length]); size += length; pending = pending[length + 2:]
                    if length == 0:
                        break
            path, _, query = target.partition("?")
            params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
            if path == "/count":
                reply(conn, "200 OK", {"connections": state["connections"]})
            elif path == "/heads":
                with lock:
                    reply(conn, "200 OK", state["heads"])
            elif path == "/slow":
                time.sleep(30)
                return
            elif path == "/big":
                total = int(params.get("mb", "1")) << 20
                conn.sendall(("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n" % total).encode())
                block = b"x" * (1 << 20)
                sent = 0
                while sent < total:
                    conn.sendall(block[:min(len(block), total - sent)])
                    sent += min(len(block), total - sent)
            elif path == "/hostile":
                # Terminal control sequences in a header and an error body, and a broken framing after.
                body = b"\x1b]0;pwned\x07\x1b[2J error \x9b31m"
                conn.sendall(b"HTTP/1.1 500 Oops\x1b[31m\r\nX-Evil: \x1b]52;c;cHduZWQ=\x07\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            elif path == "/gz":
                # A compressed reply (asked for by api's Accept-Encoding), framed by length or chunked.
                import zlib
                enc = params.get("enc", "gzip")
                data = json.dumps({"decoded": enc}).encode()
                packer = zlib.compressobj(wbits=31 if "gzip" in enc else 15)
                packed = packer.compress(data) + packer.flush()
                if enc.startswith("chunked"):
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n")
                    for i in range(0, len(packed), 7):
                        piece = packed[i:i + 7]
                        conn.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
                    conn.sendall(b"0\r\n\r\n")
                else:
                    conn.sendall(("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: %s\r\nContent-Length: %d\r\n\r\n" % (enc, len(packed))).encode() + packed)
            elif path == "/upload":
                reply(conn, "200 OK", {"bytes": size, "sha256": digest.hexdigest()})
            elif path == "/to-elsewhere":
                reply(conn, "302 Found", {}, "Location: %s\r\n" % params.get("to", "/"))
            else:
                reply(conn, "200 OK", {"connection": number, "path": path, "auth": headers.get("authorization", "")})
    except (EOFError, OSError, ssl.SSLError, ValueError):
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass

while True:
    raw, _ = server.accept()
    threading.Thread(target=serve, args=(raw,), daemon=True).start()
"""#
}
