#if canImport(Glibc)
import Glibc
#endif
import DouctlTestSupport
import Foundation
import Testing

/// nginx from Debian, started for one test: the common configuration (in the foreground,
/// one worker, its pid, logs and temp files in `root`, JSON by default), the test's own
/// lines inside `http { }`, and a wait until `port` answers.
enum NginxPeer {
    /// Starts nginx on a free port (`http` is given the port), and returns it with the port.
    /// The port is picked, freed and then bound by nginx, so another of the suite's listeners or
    /// client sockets can take it in between: nginx then fails to bind and exits, and a test
    /// that only waited for the port to answer would talk to a stranger. So the start counts
    /// only when nginx is running and has written its pid file (nginx writes it after binding),
    /// and a lost port is tried again with another.
    static func start(root: String, http: (UInt16) -> String) throws -> (process: Process, port: UInt16) {
        let nginx = try Tools.require("nginx")
        var why = ""
        for _ in 0..<5 {
            let port = unusedPort()
            let pidFile = root + "/nginx.pid"
            unlink(pidFile)
            let config = """
            daemon off; master_process off; worker_processes 1; pid \(pidFile);
            error_log \(root)/error.log;
            events { worker_connections 64; }
            http {
              client_body_temp_path \(root); proxy_temp_path \(root); fastcgi_temp_path \(root); uwsgi_temp_path \(root); scgi_temp_path \(root);
              default_type application/json;
            \(http(port))
            }
            """
            try Data(config.utf8).write(to: URL(fileURLWithPath: root + "/nginx.conf"))
            let process = Process()
            process.executableURL = URL(fileURLWithPath: nginx)
            process.arguments = ["-p", root, "-c", root + "/nginx.conf"]
            process.standardError = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            try process.runAlone()
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline && process.isRunning {
                if access(pidFile, F_OK) == 0 && canConnect(port: port) && process.isRunning { return (process, port) }
                Thread.sleep(forTimeInterval: 0.05)
            }
            stop(process)
            why = (try? String(contentsOfFile: root + "/error.log", encoding: .utf8)) ?? ""
            guard why.contains("Address already in use") else { break }
        }
        throw PeerError("nginx did not start: \(why)")
    }

    static func stop(_ process: Process) {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
