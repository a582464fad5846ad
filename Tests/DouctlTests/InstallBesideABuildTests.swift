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
        let fd = open(temporary + "/" + build.replacingOccurrences(of: "/", with: "_") + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        #expect(fd >= 0)
        defer { close(fd) }
        #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: repository + "/scripts/install.sh")
        process.environment = ["PATH": "/usr/bin:/bin", "TMPDIR": temporary, "DOUCTL_BUILD_LOCK_WAIT": "30",
                               "DESTDIR": root + "/stage", "PREFIX": "/usr/local", "DOUCTL_BINARY": binary]
        let stderr = Pipe()
        process.standardError = stderr
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(!text.contains("waiting"), "no wait for the lock: \(text)")
        let installed = root + "/stage/usr/local/bin/douctl"
        #expect(FileManager.default.contents(atPath: installed) == FileManager.default.contents(atPath: binary), "the given binary")
        #expect(FileManager.default.isExecutableFile(atPath: installed))
        #expect(FileManager.default.fileExists(atPath: root + "/stage/usr/local/share/man/man1/douctl.1"))
    }
}
