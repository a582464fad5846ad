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
    static func start(root: String, port: UInt16, http: String) throws -> Process {
        let nginx = try Tools.require("nginx")
        let config = """
        daemon off; master_process off; worker_processes 1; pid \(root)/nginx.pid;
        error_log \(root)/error.log;
        events { worker_connections 64; }
        http {
          client_body_temp_path \(root); proxy_temp_path \(root); fastcgi_temp_path \(root); uwsgi_temp_path \(root); scgi_temp_path \(root);
          default_type application/json;
        \(http)
        }
        """
        try Data(config.utf8).write(to: URL(fileURLWithPath: root + "/nginx.conf"))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: nginx)
        process.arguments = ["-p", root, "-c", root + "/nginx.conf"]
        process.standardError = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if canConnect(port: port) { return process }
            Thread.sleep(forTimeInterval: 0.05)
        }
        stop(process)
        throw PeerError("nginx did not start: \((try? String(contentsOfFile: root + "/error.log", encoding: .utf8)) ?? "")")
    }

    static func stop(_ process: Process) {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
