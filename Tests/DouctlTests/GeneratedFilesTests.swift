import Foundation
import Testing

/// The checked-in completions and man page must be exactly what douctl generates, and must
/// work in real shells and formatters.
@Suite("completions and man page")
struct GeneratedFilesTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    @Test(arguments: [
        (["completion", "bash"], "completions/douctl.bash"),
        (["completion", "zsh"], "completions/_douctl"),
        (["completion", "fish"], "completions/douctl.fish"),
        (["__man"], "man/douctl.1"),
    ])
    func checkedInFilesMatchTheGenerator(arguments: [String], file: String) throws {
        let generated = try Douctl().run(arguments)
        #expect(generated.status == 0)
        let checkedIn = try Data(contentsOf: URL(fileURLWithPath: Self.repository + "/" + file))
        #expect([UInt8](checkedIn) == generated.stdout,
                "\(file) is stale; regenerate it: .build/debug/douctl \(arguments.joined(separator: " ")) > \(file)")
    }

    /// Completes `words` (the last one is being typed) with the checked-in bash script.
    func bashComplete(_ words: [String], douctl: Douctl) throws -> [String] {
        let quoted = words.map { "'\($0.replacingOccurrences(of: "'", with: "'\\''"))'" }.joined(separator: " ")
        let script = """
        source '\(Self.repository)/completions/douctl.bash'
        douctl() { '\(Douctl.binary)' "$@"; }
        COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1)
        COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
        _douctl
        printf '%s\\n' "${COMPREPLY[@]}"
        """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/bash")
        process.arguments = ["--norc", "-c", script]
        process.environment = douctl.environment
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init).sorted()
    }

    @Test func bashCompletesCommandsOptionsValuesAndProfiles() throws {
        let douctl = Douctl()
        try douctl.run("profile", "add", "work", "--preset", "douban")
        let top = try bashComplete(["douctl", ""], douctl: douctl)
        #expect(["api", "auth", "shuo", "upload", "user", "sandbox", "demo", "completion"].allSatisfy(top.contains))
        #expect(!top.contains("__complete") && !top.contains("__man"))
        #expect(try bashComplete(["douctl", "sh"], douctl: douctl) == ["shuo"])
        #expect(try bashComplete(["douctl", "shuo", "t"], douctl: douctl) == ["timeline"])
        let options = try bashComplete(["douctl", "upload", "--p"], douctl: douctl)
        #expect(options.contains("--parallel") && options.contains("--progress") && options.contains("--profile") && options.contains("--pretty"))
        #expect(try bashComplete(["douctl", "upload", "--progress", ""], douctl: douctl) == ["always", "auto", "never"])
        #expect(try bashComplete(["douctl", "--error-format", "j"], douctl: douctl) == ["json"])
        #expect(try bashComplete(["douctl", "completion", ""], douctl: douctl) == ["bash", "fish", "zsh"])
        let profiles = try bashComplete(["douctl", "shuo", "get", "--profile", ""], douctl: douctl)
        #expect(profiles.contains("work") && profiles.contains("sandbox") && profiles.contains("douban"))
        #expect(try bashComplete(["douctl", "--profile", "wo"], douctl: douctl) == ["work"])
    }

    @Test func shellsAcceptTheScripts() throws {
        for (shell, arguments, file) in [("/usr/bin/zsh", ["-n"], "completions/_douctl"), ("/usr/bin/fish", ["--no-execute"], "completions/douctl.fish"), ("/usr/bin/bash", ["-n"], "completions/douctl.bash")] {
            guard FileManager.default.isExecutableFile(atPath: shell) else {
                Issue.record("\(shell) is not installed (.ci/run installs it)")
                continue
            }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: shell)
            process.arguments = arguments + [Self.repository + "/" + file]
            let errors = Pipe()
            process.standardError = errors
            try process.run()
            process.waitUntilExit()
            let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(process.terminationStatus == 0 && text.isEmpty, "\(shell): \(text)")
        }
    }

    @Test func manPageRendersWithoutWarnings() throws {
        let page = Self.repository + "/man/douctl.1"
        let groff = Process()
        groff.executableURL = URL(fileURLWithPath: "/usr/bin/groff")
        groff.arguments = ["-man", "-Tutf8", "-ww", "-z", page]
        let errors = Pipe()
        groff.standardError = errors
        try groff.run()
        groff.waitUntilExit()
        let warnings = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(groff.terminationStatus == 0 && warnings.isEmpty, "groff: \(warnings)")
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/mandoc") {
            let mandoc = Process()
            mandoc.executableURL = URL(fileURLWithPath: "/usr/bin/mandoc")
            mandoc.arguments = ["-Tlint", "-W", "warning", page]
            let output = Pipe()
            mandoc.standardOutput = output
            try mandoc.run()
            mandoc.waitUntilExit()
            let lint = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(mandoc.terminationStatus == 0 && lint.isEmpty, "mandoc: \(lint)")
        }
        let text = try String(contentsOfFile: page, encoding: .utf8)
        for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "GLOBAL OPTIONS", "FILES", "ENVIRONMENT", "EXIT STATUS", "EXAMPLES", "CODING", "SEE ALSO"] {
            #expect(text.contains(".SH \"\(section)\"") || text.contains(".SH \(section)"), "missing section \(section)")
        }
        for variable in ["http_proxy", "HTTPS_PROXY", "NO_PROXY", "DOUCTL_TOKEN", "DOUCTL_PROFILE", "DOUCTL_CONFIG_DIR", "BROWSER", "NO_COLOR"] {
            #expect(text.contains(variable.replacingOccurrences(of: "_", with: "_")), "ENVIRONMENT lacks \(variable)")
        }
    }

    @Test func demoRunsGreen() throws {
        let result = try Douctl().run(["demo"], timeout: 120)
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.contains("everything worked"))
        #expect(result.stderr.contains("$ douctl shuo post"))
        let lines = try result.lines()
        #expect(lines.count == 8)
        #expect(lines.last?["deleted"]?.boolValue == true)
    }

    @Test func installScriptInstallsAndUninstalls() throws {
        let stage = TemporaryDirectory.make(prefix: "stage")
        func script(_ arguments: [String]) throws -> Int32 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Self.repository + "/scripts/install.sh")
            process.arguments = arguments
            process.environment = ["PATH": "/usr/bin:/bin", "DESTDIR": stage, "PREFIX": "/usr/local", "DOUCTL_BINARY": Douctl.binary]
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            return process.terminationStatus
        }
        let installed = ["bin/douctl", "share/man/man1/douctl.1", "share/bash-completion/completions/douctl",
                         "share/zsh/site-functions/_douctl", "share/fish/vendor_completions.d/douctl.fish"].map { stage + "/usr/local/" + $0 }
        #expect(try script(["install"]) == 0)
        for path in installed { #expect(FileManager.default.fileExists(atPath: path), "\(path) was not installed") }
        #expect(FileManager.default.isExecutableFile(atPath: installed[0]))
        #expect(try script(["uninstall"]) == 0)
        for path in installed { #expect(!FileManager.default.fileExists(atPath: path), "\(path) was not removed") }
    }
}
