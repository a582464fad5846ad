import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// `--unix-socket PATH` (curl's, xh's and hurl's): requests go to a server listening on a
/// Unix domain socket; the URL still gives the Host header and the path.
@Suite("Unix sockets")
struct UnixSocketTests {
    /// python3's http.server on an AF_UNIX socket, echoing each GET's path and Host.
    final class UnixServer: @unchecked Sendable {
        let process = Process()
        let path: String

        init() throws {
            let python = try Tools.require("python3")
            path = TemporaryDirectory.make(prefix: "douctl-unix") + "/api.sock"
            process.executableURL = URL(fileURLWithPath: python)
            process.arguments = ["-c", """
                import http.server, socketserver, sys, json
                class Handler(http.server.BaseHTTPRequestHandler):
                    def do_GET(self):
                        body = json.dumps({"path": self.path, "host": self.headers.get("Host")}).encode()
                        self.send_response(200)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                    def address_string(self): return "unix"
                    def log_message(self, *args): pass
                socketserver.UnixStreamServer(sys.argv[1], Handler).serve_forever()
                """, path]
            // Not the test runner's own streams: a server holding them open keeps the run waiting.
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            try process.runAlone()
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                if FileManager.default.fileExists(atPath: path) { return }
                Thread.sleep(forTimeInterval: 0.05)
            }
            throw PeerError("python3's server did not start on \(path)")
        }

        func stop() {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }

        deinit { stop() }
    }

    @Test func requestsGoToTheSocket() throws {
        let server = try UnixServer()
        defer { server.stop() }
        let douctl = Douctl()
        let result = try douctl.run("api", "http://docker/v1.43/info?all=1", "--unix-socket", server.path)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == #"{"path":"/v1.43/info?all=1","host":"docker"}"# + "\n")
        let based = try douctl.run("api", "/containers/json", "--api-base", "http://localhost", "--unix-socket", server.path, "--jq", ".path")
        #expect(based.stdoutText == "/containers/json\n", "\(based)")
    }

    @Test func aPathThatIsNoSocketIsExit3BeforeSending() throws {
        let file = TemporaryDirectory.make(prefix: "douctl-unix") + "/plain"
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        let douctl = Douctl()
        let notSocket = try douctl.run("api", "http://localhost/x", "--unix-socket", file)
        #expect(notSocket.status == 3, "\(notSocket)")
        #expect(notSocket.stderr == "douctl: cannot use the Unix socket \(file) (from --unix-socket): not a socket\n")
        let missing = try douctl.run("api", "http://localhost/x", "--unix-socket", file + ".missing")
        #expect(missing.status == 3, "\(missing)")
    }
}
