import Foundation
import Testing
import DouctlTestSupport

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
        process.executableURL = URL(fileURLWithPath: try Tools.require("bash"))
        process.arguments = ["--norc", "-c", script]
        process.environment = douctl.environment
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.runAlone()
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

    /// Completions offer a command only the global options it takes (before: every one everywhere).
    @Test func bashOffersOnlyTheGlobalOptionsACommandTakes() throws {
        let douctl = Douctl()
        let version = try bashComplete(["douctl", "version", "--"], douctl: douctl)
        #expect(!version.contains("--cacert") && !version.contains("--profile"), "\(version)")
        #expect(version.contains("--error-format"))
        let sandbox = try bashComplete(["douctl", "sandbox", "--c"], douctl: douctl)
        #expect(sandbox.contains("--config-dir") && !sandbox.contains("--cacert") && !sandbox.contains("--cache"), "\(sandbox)")
        #expect(try bashComplete(["douctl", "api", "/x", "--cace"], douctl: douctl) == ["--cacert"])
        #expect(try bashComplete(["douctl", "--cace"], douctl: douctl) == ["--cacert"], "before a command word, every global")
    }

    @Test(arguments: [("zsh", ["-n"], "completions/_douctl"), ("fish", ["--no-execute"], "completions/douctl.fish"), ("bash", ["-n"], "completions/douctl.bash")])
    func shellsAcceptTheScripts(name: String, arguments: [String], file: String) throws {
        let shell = try Tools.require(name)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: shell)
        process.arguments = arguments + [Self.repository + "/" + file]
        let errors = Pipe()
        process.standardError = errors
        try process.runAlone()
        process.waitUntilExit()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0 && text.isEmpty, "\(shell): \(text)")
    }

    static let manPage = repository + "/man/douctl.1"

    @Test func manPageRendersWithoutWarnings() throws {
        let groff = Process()
        groff.executableURL = URL(fileURLWithPath: try Tools.require("groff"))
        groff.arguments = ["-man", "-Tutf8", "-ww", "-z", Self.manPage]
        let errors = Pipe()
        groff.standardError = errors
        try groff.runAlone()
        groff.waitUntilExit()
        let warnings = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(groff.terminationStatus == 0 && warnings.isEmpty, "groff: \(warnings)")
    }

    @Test func manPageLintsClean() throws {
        let mandoc = Process()
        mandoc.executableURL = URL(fileURLWithPath: try Tools.require("mandoc"))
        mandoc.arguments = ["-Tlint", "-W", "warning", Self.manPage]
        let output = Pipe()
        mandoc.standardOutput = output
        try mandoc.runAlone()
        mandoc.waitUntilExit()
        let lint = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(mandoc.terminationStatus == 0 && lint.isEmpty, "mandoc: \(lint)")
    }

    @Test func manPageHasEverySectionOptionKeyAndVariable() throws {
        let text = try String(contentsOfFile: Self.manPage, encoding: .utf8)
        for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "GLOBAL OPTIONS", "FILES", "ENVIRONMENT", "NETWORKS", "EXIT STATUS", "EXAMPLES", "CODING", "SEE ALSO"] {
            #expect(text.contains(".SH \"\(section)\"") || text.contains(".SH \(section)"), "missing section \(section)")
        }
        let variables = ["http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE",
                         "DOUCTL_TOKEN", "DOUCTL_PROFILE", "DOUCTL_CONFIG_DIR", "BROWSER", "NO_COLOR"]
        for variable in variables {
            #expect(text.contains(variable), "ENVIRONMENT lacks \(variable)")
        }
        // roff escapes '-' in option names as '\-'.
        let plain = text.replacingOccurrences(of: "\\-", with: "-")
        for option in ["--cacert", "--capath", "--cert", "--key", "--insecure", "--proxy"] {
            #expect(plain.contains(option), "the man page lacks \(option)")
        }
        for key in ["ca_bundle", "ca_path", "client_cert", "client_key", "insecure", "proxy"] {
            #expect(plain.contains(key), "the man page lacks the key \(key)")
        }
    }

    @Test func demoRunsGreen() throws {
        let temporary = TemporaryDirectory.make(prefix: "douctl-demo-tmp")
        let result = try Douctl(environment: ["TMPDIR": temporary]).run(["demo"], timeout: 120)
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.contains("everything worked"))
        #expect(result.stderr.contains("$ douctl shuo post"))
        let lines = try result.lines()
        #expect(lines.count == 8)
        #expect(lines.last?["deleted"]?.boolValue == true)
        // The temporary config directory (and the sandbox's pictures) are gone afterwards.
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary) == [])
    }

    @Test func installScriptInstallsAndUninstalls() throws {
        try Tools.require("bash")
        try Tools.require("install")
        let stage = TemporaryDirectory.make(prefix: "stage")
        func script(_ arguments: [String]) throws -> Int32 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Self.repository + "/scripts/install.sh")
            process.arguments = arguments
            process.environment = ["PATH": "/usr/bin:/bin", "DESTDIR": stage, "PREFIX": "/usr/local", "DOUCTL_BINARY": Douctl.binary]
            process.standardOutput = FileHandle.nullDevice
            try process.runAlone()
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
