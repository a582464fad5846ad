import Foundation
import Testing
import DouctlTestSupport

/// Running real shells and formatters from the renderer tests.
enum RenderTestSupport {
    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Where a tool is installed; otherwise the test is skipped (or fails under
    /// DOUCTL_REQUIRE_TOOLS=1), see `Tools`.
    static func tool(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        try Tools.require(name, sourceLocation: sourceLocation)
    }

    /// Runs `executable` with `arguments`, killing it after `timeout` seconds.
    static func run(_ executable: String, _ arguments: [String], stdin: String = "", directory: URL? = nil,
                    environment: [String: String] = [:], timeout: Double = 60) throws -> Output {
        let scratch = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let inURL = scratch.appendingPathComponent("stdin")
        let outURL = scratch.appendingPathComponent("stdout")
        let errURL = scratch.appendingPathComponent("stderr")
        try Data(stdin.utf8).write(to: inURL)
        try Data().write(to: outURL)
        try Data().write(to: errURL)
        let input = try FileHandle(forReadingFrom: inURL)
        let output = try FileHandle(forWritingTo: outURL)
        let errors = try FileHandle(forWritingTo: errURL)
        defer {
            try? input.close()
            try? output.close()
            try? errors.close()
        }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        if let directory { process.currentDirectoryURL = directory }
        var env = ProcessInfo.processInfo.environment
        env["LC_ALL"] = "C.UTF-8"
        env["TERM"] = "dumb"
        for (key, value) in environment { env[key] = value }
        process.environment = env
        try process.runAlone()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() > deadline {
                process.terminate()
                process.waitUntilExit()
                throw Failure(description: "\(executable) \(arguments) did not finish within \(timeout) s")
            }
            Thread.sleep(forTimeInterval: 0.005)
        }
        process.waitUntilExit()
        return Output(
            status: process.terminationStatus,
            stdout: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
            stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("douctl-render-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A directory with a few files and a subdirectory, for file and directory completion.
    static func filesDirectory() throws -> URL {
        let directory = try temporaryDirectory()
        for name in ["report.txt", "readme.md", "notes.txt", "-dash.txt"] {
            try Data().write(to: directory.appendingPathComponent(name))
        }
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("pics"), withIntermediateDirectories: false)
        return directory
    }

    /// What a shell completion test runs in: `files` (filesDirectory, the shell's working
    /// directory) and `scripts` (where the rendered script goes); `remove()` deletes both.
    struct ShellScratch {
        let files: URL
        let scripts: URL

        init() throws {
            files = try filesDirectory()
            scripts = try temporaryDirectory()
        }

        func remove() {
            try? FileManager.default.removeItem(at: files)
            try? FileManager.default.removeItem(at: scripts)
        }
    }

    static func write(_ text: String, to url: URL) throws {
        try Data(text.utf8).write(to: url)
    }

    /// A shell single-quoted word (bash, zsh).
    static func quoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// Terminal output without overstrike (what `col -b` does): "X\bX" → "X", "_\bX" → "X".
    static func plain(_ text: String) -> String {
        var out: [Character] = []
        var backspace = false
        for character in text {
            if character == "\u{8}" {
                backspace = true
                continue
            }
            if backspace, !out.isEmpty { out.removeLast() }
            backspace = false
            out.append(character)
        }
        return String(out)
    }
}
