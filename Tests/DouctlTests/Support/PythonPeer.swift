import DouctlTestSupport
import Foundation
import Testing

/// A real server nobody here wrote, run by python3 from a one-file script on 127.0.0.1
/// (Django REST Framework, WsgiDAV, Datasette): the script prints "ready PORT" when it
/// listens, and exits when the test process does (`orphanWatch` runs first). Skipped, naming the PyPI package, when
/// python3 cannot import it (a failure under DOUCTL_REQUIRE_TOOLS=1; .ci/run installs them).
final class PythonPeer: @unchecked Sendable {
    let base: String
    let directory: String
    private let process: Process

    var log: String { (try? String(contentsOfFile: directory + "/peer.log", encoding: .utf8)) ?? "" }

    /// python3 that imports `module`; otherwise skip (fail under DOUCTL_REQUIRE_TOOLS=1).
    static func require(module: String, package: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let what = "python3 with \(package)"
        if let python = Tools.find("python3") {
            let probe = Process()
            probe.executableURL = URL(fileURLWithPath: python)
            probe.arguments = ["-c", "import \(module)"]
            probe.standardOutput = FileHandle.nullDevice
            probe.standardError = FileHandle.nullDevice
            try probe.runAlone()
            probe.waitUntilExit()
            if probe.terminationStatus == 0 { return }
        }
        if Tools.areRequired {
            Issue.record("\(what) is not installed, and DOUCTL_REQUIRE_TOOLS=1 makes a missing tool a failure", sourceLocation: sourceLocation)
            throw TestFailure("\(what) is not installed")
        }
        try Test.cancel("skipped: needs \(what) (python3 -m pip install \(package)), which is not installed", sourceLocation: sourceLocation)
    }

    /// Runs `source` as `python3 SCRIPT ARGUMENTS…` (with `{dir}` in an argument replaced
    /// by the peer's own temporary directory) and waits for its "ready PORT" line.
    init(name: String, source: String, arguments: [String] = []) throws {
        let directory = TemporaryDirectory.make(prefix: "douctl-\(name)")
        self.directory = directory
        let script = directory + "/peer.py"  // not the name of a module it imports
        try Data((Self.orphanWatch + "\n" + source).utf8).write(to: URL(fileURLWithPath: script))
        (process, base) = try Self.launch(name: name, script: script, arguments: arguments.map { $0.replacingOccurrences(of: "{dir}", with: directory) },
                                          directory: directory, log: "peer.log", waiting: 180)
    }

    deinit { if process.isRunning { process.terminate() } }

    /// Starts `python3 SCRIPT ARGUMENTS…` in `directory`, stdout to ready.txt and stderr to
    /// `log` there, and waits (at most `waiting` seconds) for its "ready PORT" line: the
    /// process and its base URL. Django OAuth Toolkit's provider starts the same way.
    static func launch(name: String, script: String, arguments: [String], directory: String, log: String, waiting: Double) throws -> (Process, String) {
        let readyFile = directory + "/ready.txt"
        _ = FileManager.default.createFile(atPath: readyFile, contents: nil)
        _ = FileManager.default.createFile(atPath: directory + "/" + log, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Tools.require("python3"))
        process.arguments = [script] + arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: readyFile))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/" + log))
        process.standardInput = FileHandle.nullDevice
        try process.runAlone()
        let deadline = Date().addingTimeInterval(waiting)
        while Date() < deadline && process.isRunning {
            let text = (try? String(contentsOfFile: readyFile, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("ready ") }) {
                return (process, "http://127.0.0.1:\(line.dropFirst(6))")
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        if process.isRunning { process.terminate() }
        let text = (try? String(contentsOfFile: directory + "/" + log, encoding: .utf8)) ?? ""
        throw TestFailure("\(name) did not start:\n\(text.suffix(3000))")
    }

    /// Ends the script when the test process goes (Python code for the scripts).
    /// The end of a peer's script that serves the ASGI app `app` (a Python expression) with
    /// uvicorn on a free port and prints "ready PORT" once it listens, as `launch` waits for.
    /// The script must import socket, threading, time and uvicorn; this starts on a new line
    /// (a raw string literal drops its last newline).
    static func servedByUvicorn(app: String) -> String {
        """

        probe = socket.socket(); probe.bind(("127.0.0.1", 0)); port = probe.getsockname()[1]; probe.close()
        server = uvicorn.Server(uvicorn.Config(\(app), host="127.0.0.1", port=port, log_level="warning"))
        def announce():
            while not server.started: time.sleep(0.05)
            print("ready %d" % port, flush=True)
        threading.Thread(target=announce, daemon=True).start()
        server.run()

        """
    }

    static let orphanWatch = """
    import os, threading, time
    def _orphaned(parent=os.getppid()):
        while os.getppid() == parent: time.sleep(1)
        os._exit(0)
    threading.Thread(target=_orphaned, daemon=True).start()
    """
}
