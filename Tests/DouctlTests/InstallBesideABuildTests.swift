#if canImport(Glibc)
import Glibc
#endif
import DouctlTestSupport
import Foundation
import Testing

/// Issue 40 #13: installing beside a running build. With SwiftPM's lock held (a `swift test`
/// running), `DOUCTL_BINARY=… scripts/install.sh` installs the binary given at once: it builds
/// nothing, so it waits for nothing.
@Suite("install.sh beside a running build")
struct InstallBesideABuildTests {
    @Test func aGivenBinaryIsInstalledWithoutWaitingForTheLock() throws {
        try Tools.require("bash")
        try Tools.require("flock")
        try Tools.require("install")
        let root = TemporaryDirectory.make(prefix: "douctl-install-binary")
        let repository = root + "/repo"
        let temporary = root + "/tmp"
        for directory in [repository + "/scripts", repository + "/.build", repository + "/man", repository + "/completions", temporary] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        let source = GeneratedFilesTests.repository
        try FileManager.default.copyItem(atPath: source + "/scripts/install.sh", toPath: repository + "/scripts/install.sh")
        for file in ["man/douctl.1", "completions/douctl.bash", "completions/_douctl", "completions/douctl.fish"] {
            try FileManager.default.copyItem(atPath: source + "/" + file, toPath: repository + "/" + file)
        }
        let binary = root + "/douctl-built"
        try Data("#!/bin/sh\necho built\n".utf8).write(to: URL(fileURLWithPath: binary))
        // SwiftPM 6's lock on this .build, held for the whole test, as a running `swift test` holds it.
        let build = URL(fileURLWithPath: repository + "/.build").resolvingSymlinksInPath().path
        let fd = InstallScript.holdLock(temporary + "/" + build.replacingOccurrences(of: "/", with: "_") + ".lock")
        defer { close(fd) }
        let (status, text) = try InstallScript.run(repository: repository, environment: [
            "TMPDIR": temporary, "DOUCTL_BUILD_LOCK_WAIT": "30", "DESTDIR": root + "/stage", "PREFIX": "/usr/local", "DOUCTL_BINARY": binary])
        #expect(status == 0, "\(text)")
        #expect(!text.contains("waiting"), "no wait for the lock: \(text)")
        let installed = root + "/stage/usr/local/bin/douctl"
        #expect(FileManager.default.contents(atPath: installed) == FileManager.default.contents(atPath: binary), "the given binary")
        #expect(FileManager.default.isExecutableFile(atPath: installed))
        #expect(FileManager.default.fileExists(atPath: root + "/stage/usr/local/share/man/man1/douctl.1"))
    }
}

/// scripts/install.sh as the tests run it: a copy in `repository`, a lock held as a running
/// SwiftPM build holds it.
enum InstallScript {
    /// flock(2) on `path`, held until the descriptor is closed.
    static func holdLock(_ path: String) -> Int32 {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        #expect(fd >= 0)
        #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
        return fd
    }

    /// Runs the copy's install.sh with `environment` (PATH given); its exit status and stderr.
    static func run(repository: String, environment: [String: String]) throws -> (Int32, String) {
        try runCollectingStderr(repository + "/scripts/install.sh", [], environment: ["PATH": "/usr/bin:/bin"].merging(environment) { $1 })
    }
}

/// Issue 40 #15: the one command that installs every tool a test may skip for, which .ci/run
/// runs and the README names, covers every tool and Python module a test asks for; so a
/// test added with a new tool cannot be skipped on every machine, CI's included, unseen.
@Suite("The test tools' installer")
struct TestToolsInstallerTests {
    static func read(_ path: String) throws -> String {
        String(decoding: try Data(contentsOf: URL(fileURLWithPath: GeneratedFilesTests.repository + "/" + path)), as: UTF8.self)
    }

    /// Every `"NAME"` following `prefix` in the test sources.
    static func literals(after prefix: String) throws -> Set<String> {
        var found = Set<String>()
        let root = GeneratedFilesTests.repository + "/Tests"
        let files = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") } ?? []
        #expect(files.count > 50)
        for file in files {
            let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: root + "/" + file)), as: UTF8.self)
            for piece in text.components(separatedBy: prefix + "\"").dropFirst() {
                // Names only ("jq", "wsgidav, cheroot"): not this file's own search strings.
                if let end = piece.firstIndex(of: "\""), !piece[..<end].isEmpty,
                   piece[..<end].allSatisfy({ $0.isLetter || $0.isNumber || "_-., ".contains($0) }) {
                    found.insert(String(piece[..<end]))
                }
            }
        }
        return found
    }

    @Test func everyToolATestRequiresIsInstalledByTheScriptCIRuns() throws {
        let script = try Self.read("scripts/install-test-tools.sh")
        let ci = try Self.read(".ci/run")
        let readme = try Self.read("README.md")
        #expect(ci.contains("scripts/install-test-tools.sh"), ".ci/run installs the tools with the script")
        #expect(readme.contains("sudo scripts/install-test-tools.sh") && readme.contains("swift test 2>&1 | grep 'skipped:'"),
                "the README names the installer and how to list what was skipped")
        // The shells and man are asked for through a variable; "name" is ToolCheck's own doc comment.
        let tools = try Self.literals(after: "Tools.require(").subtracting(["name"]).union(["bash", "zsh", "fish", "man"])
        #expect(tools.count > 10)
        for tool in tools.sorted() {
            #expect(script.contains(" \(tool):"),
                    "scripts/install-test-tools.sh installs \(tool)")
        }
        // Shared libraries (Tools.requireLibrary): the script installs each one's package.
        for library in try Self.literals(after: "Tools.requireLibrary(").subtracting(["name"]).sorted() {
            #expect(script.contains(" \(library):"), "scripts/install-test-tools.sh installs the library \(library)")
        }
        let modules = try Self.literals(after: "require(module: ")
        #expect(modules.contains("oauth2_provider"))
        for list in modules.sorted() {
            for module in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
                #expect(script.contains("pip_install") && script.range(of: "pip_install[^\n]* \(module)[ \n]", options: .regularExpression) != nil,
                        "scripts/install-test-tools.sh installs the Python module \(module)")
            }
        }
    }
}
