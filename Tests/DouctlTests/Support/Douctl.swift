import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// Runs the built `douctl` binary, the way a user or a script would: its own process,
/// a temporary config directory, a controlled environment, bytes on stdin.
struct Douctl {
    /// The binary SwiftPM built next to this test bundle.
    static let binary: String = {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent("douctl").path
    }()

    /// A fresh, private config directory (removed when the test process ends).
    let configDirectory: String
    var environment: [String: String]

    init(configDirectory: String? = nil, environment: [String: String] = [:]) {
        self.configDirectory = configDirectory ?? TemporaryDirectory.make(prefix: "douctl-config")
        var base: [String: String] = [
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            "HOME": TemporaryDirectory.make(prefix: "douctl-home"),
            "LANG": "C.UTF-8",
            "DOUCTL_CONFIG_DIR": self.configDirectory,
            // No test starts a connection keeper unless it asks for one (KeeperPeer.douctl):
            // a keeper outlives the run, and one test's would serve another's requests.
            "DOUCTL_KEEP": "0",
        ]
        // Under scripts/sanitize.sh, douctl is built with a sanitizer too: give it the same options.
        for name in ["ASAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS", "UBSAN_OPTIONS"] {
            if let value = ProcessInfo.processInfo.environment[name] { base[name] = value }
        }
        base.merge(environment) { $1 }
        self.environment = base
    }

    typealias Result = CommandResult

    /// Runs `douctl arguments…`, feeding `input` on stdin; kills it after `timeout` seconds.
    @discardableResult
    func run(_ arguments: [String], input: [UInt8]? = nil, environment extra: [String: String] = [:], timeout: Double = 60) throws -> Result {
        try run(via: [], arguments, input: input, environment: extra, timeout: timeout)
    }

    /// The same, the binary started by a wrapper (`strace -o LOG`, …): `wrapper + [binary] + arguments`.
    func run(via wrapper: [String], _ arguments: [String], input: [UInt8]? = nil, environment extra: [String: String] = [:], timeout: Double = 60) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: wrapper.first ?? Self.binary)
        process.arguments = wrapper.isEmpty ? arguments : Array(wrapper.dropFirst()) + [Self.binary] + arguments
        var environment = self.environment
        environment.merge(extra) { $1 }
        process.environment = environment
        let stdout = Pipe(), stderr = Pipe(), stdin = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = input == nil ? FileHandle.nullDevice : stdin
        try process.runAlone()
        if let input {
            let writer = stdin.fileHandleForWriting
            DispatchQueue.global().async {
                try? writer.write(contentsOf: input)
                try? writer.close()
            }
        }
        let collected = Collector(stdout: stdout.fileHandleForReading, stderr: stderr.fileHandleForReading)
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() > deadline {
                process.interrupt()
                Thread.sleep(forTimeInterval: 0.5)
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                Issue.record("douctl \(arguments.joined(separator: " ")) did not finish within \(timeout)s")
                break
            }
            Thread.sleep(forTimeInterval: 0.005)
        }
        process.waitUntilExit()
        let (out, err) = collected.finish()
        return Result(status: process.terminationStatus, stdout: out, stderrBytes: err)
    }

    @discardableResult
    func run(_ arguments: String..., input: String? = nil, environment extra: [String: String] = [:]) throws -> Result {
        try run(arguments, input: input.map { Array($0.utf8) }, environment: extra)
    }
}

/// Drains stdout and stderr concurrently so a chatty child never blocks on a full pipe.
final class Collector: @unchecked Sendable {
    private var out = Data(), err = Data()
    private let group = DispatchGroup()

    init(stdout: FileHandle, stderr: FileHandle) {
        group.enter()
        DispatchQueue.global().async {
            self.out = stdout.readDataToEndOfFile()
            self.group.leave()
        }
        group.enter()
        DispatchQueue.global().async {
            self.err = stderr.readDataToEndOfFile()
            self.group.leave()
        }
    }

    /// What both pipes carried. They end when the child does, unless a process it started
    /// holds them: after `timeout` seconds that is recorded and the run goes on without them,
    /// so one stray descendant fails its test instead of holding the whole suite.
    func finish(timeout: Double = 10) -> ([UInt8], [UInt8]) {
        guard group.wait(timeout: .now() + timeout) == .success else {
            Issue.record("douctl's stdout or stderr stayed open \(timeout)s after it exited (a process it started holds it)")
            return ([], [])
        }
        return ([UInt8](out), [UInt8](err))
    }
}
