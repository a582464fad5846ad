#if canImport(Glibc)
import Glibc
#endif
import DouctlTestSupport
import Foundation
import Testing

/// A real HTTP/2 origin for the keeper's HTTP/2 side (issue 44): nginx with `http2` over TLS
/// (the test PKI's server certificate) in front of a python3 HTTP/1.1 backend. nginx logs
/// each request's connection serial number (`$connection`), so a test can count the TLS
/// connections its requests came on. The backend: `/slow` answers after 30 s; `/late?s=N`
/// after N seconds; `/big?mb=N` sends N MiB; `/upload` says the body's size and SHA-256;
/// `/to-elsewhere?to=URL` redirects there; anything else echoes the method, path and
/// Authorization. The backend's log (`backend.log`) has a line per request as it arrives,
/// with the Authorization it carried.
final class H2KeeperPeer: @unchecked Sendable {
    let nginx: Process
    let backend: PythonPeer
    let root: String
    let port: UInt16
    let pki: TestPKI
    var base: String { "https://127.0.0.1:\(port)" }

    init() throws {
        let pki = try TestPKI.shared()
        self.pki = pki
        _ = try Tools.require("nginx")
        backend = try PythonPeer(name: "h2-keeper-backend", source: Self.backendSource)
        let root = TemporaryDirectory.make(prefix: "douctl-h2-keeper")
        self.root = root
        let upstream = backend.base.replacingOccurrences(of: "http://", with: "")
        (nginx, port) = try NginxPeer.start(root: root) { port in """
          log_format conn '$connection $request_method $request_uri $status';
          access_log \(root)/access.log conn;
          client_max_body_size 0;
          proxy_buffering off;
          proxy_read_timeout 120s;
          http2_max_concurrent_streams 128;
          server {
            listen 127.0.0.1:\(port) ssl http2;
            ssl_certificate \(pki.serverCertificate); ssl_certificate_key \(pki.serverKey);
            location / { proxy_pass http://\(upstream); proxy_http_version 1.1; proxy_set_header Connection ""; }
          }
        """ }
    }

    deinit { NginxPeer.stop(nginx) }

    /// Each logged request: its connection's serial number and its path.
    func requests() -> [(connection: String, path: String, status: String)] {
        let text = (try? String(contentsOfFile: root + "/access.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ").map(String.init)
            return parts.count == 4 ? (parts[0], parts[2], parts[3]) : nil
        }
    }

    /// Waits until nginx has logged a request for `path` (it logs when a request ends).
    func waitForLog(_ path: String, within seconds: Double = 20) throws -> (connection: String, path: String, status: String) {
        var found: (connection: String, path: String, status: String)?
        try KeeperPeer.waitFor("nginx to log \(path)", within: seconds) {
            found = requests().last { $0.path == path }
            return found != nil
        }
        return found ?? ("", "", "")
    }

    static let backendSource = #"""
import hashlib, json, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
    def reply(self, body, status=200):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def handle_any(self):
        path, _, query = self.path.partition("?")
        params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
        sys.stderr.write("%s %s auth=%s\n" % (self.command, self.path, self.headers.get("Authorization", "")))
        sys.stderr.flush()
        digest, size = hashlib.sha256(), 0
        length = int(self.headers.get("Content-Length") or 0)
        while size < length:
            block = self.rfile.read(min(1 << 20, length - size))
            if not block:
                break
            digest.update(block)
            size += len(block)
        if path == "/slow":
            time.sleep(30)
            return self.reply({"slow": True})
        if path == "/late":
            time.sleep(float(params.get("s", "1")))
            return self.reply({"late": True, "path": path})
        if path == "/big":
            total = int(params.get("mb", "1")) << 20
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(total))
            self.end_headers()
            block = bytes(range(256)) * 4096
            sent = 0
            while sent < total:
                n = min(len(block), total - sent)
                self.wfile.write(block[:n])
                sent += n
            return
        if path == "/to-elsewhere":
            self.send_response(302)
            self.send_header("Location", params.get("to", "/"))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if path == "/upload":
            return self.reply({"bytes": size, "sha256": digest.hexdigest(), "method": self.command})
        self.reply({"method": self.command, "path": path, "auth": self.headers.get("Authorization", ""), "agent": self.headers.get("User-Agent", "")})
    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any
    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "42")
        self.end_headers()

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print("ready %d" % server.server_address[1], flush=True)
server.serve_forever()
"""#
}
