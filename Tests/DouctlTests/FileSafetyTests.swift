import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// The config directory in hostile places: read-only, full, reached through a symbolic link
/// or someone else's file, on a path with spaces and non-ASCII. douctl reports each with one
/// line and never leaves a half-written or replaced file behind.
@Suite("file safety")
struct FileSafetyTests {
    /// Skips the running test, naming what is missing — unless DOUCTL_REQUIRE_TOOLS=1 makes a
    /// missing capability a failure. (A local helper, to merge easily with a shared one.)
    static func skip(_ reason: String) throws -> Never {
        if ProcessInfo.processInfo.environment["DOUCTL_REQUIRE_TOOLS"] == "1" {
            Issue.record("required but unavailable: \(reason)")
            throw Unavailable(reason: reason)
        }
        try Test.cancel("skipped: \(reason)")
    }

    struct Unavailable: Error, CustomStringConvertible {
        var reason: String
        var description: String { reason }
    }

    /// Runs a system command; its exit status and combined output.
    @discardableResult
    static func system(_ arguments: [String]) -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        do { try process.runAlone() } catch { return (127, "\(error)") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// A small tmpfs mounted at a fresh directory, or a skip naming why it cannot be.
    static func mountTmpfs(kilobytes: Int) throws -> String {
        let directory = TemporaryDirectory.make(prefix: "douctl-tmpfs")
        let mounted = system(["mount", "-t", "tmpfs", "-o", "size=\(kilobytes)k,mode=0700", "tmpfs", directory])
        if mounted.status != 0 {
            try skip("mounting a tmpfs is not permitted here (mount: \(mounted.output.trimmingCharacters(in: .whitespacesAndNewlines)))")
        }
        return directory
    }

    static func unmount(_ directory: String) {
        system(["umount", directory])
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Fills the file system at `mount` to its last block; the filler's path, to free it.
    @discardableResult
    static func fillToTheLastBlock(_ mount: String) -> String {
        let filler = mount + "/filler"
        _ = FileManager.default.createFile(atPath: filler, contents: nil)
        if let handle = FileHandle(forWritingAtPath: filler) {
            let block = Data(count: 4096)
            while (try? handle.write(contentsOf: block)) != nil {}
            try? handle.close()
        }
        return filler
    }

    static func files(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    static func read(_ path: String) -> String? {
        try? String(contentsOfFile: path, encoding: .utf8)
    }

    func files(in directory: String) -> [String] { Self.files(in: directory) }
    func read(_ path: String) -> String? { Self.read(path) }

    // MARK: -

    @Test func readOnlyConfigDirectoryIsReportedAndNothingChanges() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        let directory = fixture.douctl.configDirectory
        let before = files(in: directory)
        let credentials = fixture.credentials
        let issued = fixture.sandbox.issueToken(user: "linglu")
        var remount: String?
        if geteuid() == 0 {
            // Permissions do not stop root: make the directory read-only with a bind mount.
            let bound = Self.system(["mount", "--bind", directory, directory])
            if bound.status != 0 { try Self.skip("running as root and a read-only bind mount is not permitted (mount: \(bound.output))") }
            remount = directory
            let readOnly = Self.system(["mount", "-o", "remount,bind,ro", directory])
            if readOnly.status != 0 {
                Self.unmount(directory)
                try Self.skip("running as root and a read-only remount is not permitted (mount: \(readOnly.output))")
            }
        } else {
            chmod(directory, 0o500)
        }
        defer {
            if let remount { Self.system(["umount", remount]) } else { chmod(directory, 0o700) }
        }
        // Reading still works.
        let me = try fixture.douctl.run("user", "me")
        #expect(me.status == 0, "\(me)")
        // Writing is one clear line, exit 3.
        let login = try fixture.douctl.run(["auth", "login", "--with-token"], input: Array((issued.accessToken + "\n").utf8))
        #expect(login.status == 3, "\(login)")
        #expect(login.errorLine.hasPrefix("douctl: "), "\(login)")
        #expect(!login.errorLine.contains("\n"))
        let add = try fixture.douctl.run("profile", "add", "work", "--preset", "douban")
        #expect(add.status == 3, "\(add)")
        #expect(add.errorLine.hasPrefix("douctl: "), "\(add)")
        #expect(files(in: directory) == before)
        #expect(fixture.credentials == credentials)
    }

    @Test func fullDiskLeavesTheOldFilesWholeAndNoTempFiles() throws {
        let mount = try Self.mountTmpfs(kilobytes: 256)
        defer { Self.unmount(mount) }
        let fixture = try SandboxFixture()
        let directory = mount + "/douctl"
        try SandboxProfiles.write(base: fixture.sandbox.baseURL, in: directory)
        let tokens = fixture.sandbox.issueToken()
        try Credentials.write(["sandbox": tokens.accessToken], in: directory, expiresAt: "2099-01-01T00:00:00Z",
                              refreshTokens: ["sandbox": tokens.refreshToken])
        let douctl = Douctl(configDirectory: directory)
        let config = read(directory + "/config.json")
        let credentials = read(directory + "/credentials.json")
        #expect(credentials != nil)
        Self.fillToTheLastBlock(mount)
        // Lock files take an inode, not a block, so they may appear; nothing else may.
        let before = files(in: directory) + [".config.lock", ".credentials.lock"]

        let issued = fixture.sandbox.issueToken(user: "linglu")
        let login = try douctl.run(["auth", "login", "--with-token"], input: Array((issued.accessToken + "\n").utf8))
        #expect(login.status == 3, "\(login)")
        #expect(login.errorLine.hasPrefix("douctl: "), "\(login)")
        #expect(login.errorLine.lowercased().contains("space"), "names the cause: \(login)")
        let add = try douctl.run("profile", "add", "work", "--preset", "douban", "--client-id", String(repeating: "k", count: 8192))
        #expect(add.status == 3, "\(add)")
        #expect(Set(files(in: directory)).isSubset(of: before), "no temp files left behind: \(files(in: directory))")
        print("full disk: \(login.errorLine) / \(add.errorLine)")
        #expect(read(directory + "/credentials.json") == credentials)
        #expect(read(directory + "/config.json") == config)
        // And the old token still works.
        let me = try douctl.run("user", "me")
        #expect(me.status == 0, "\(me)")
    }

    @Test func credentialsThatAreASymbolicLinkAreRefused() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        let directory = fixture.douctl.configDirectory
        let elsewhere = TemporaryDirectory.make(prefix: "elsewhere") + "/tokens.json"
        try FileManager.default.moveItem(atPath: directory + "/credentials.json", toPath: elsewhere)
        try FileManager.default.createSymbolicLink(atPath: directory + "/credentials.json", withDestinationPath: elsewhere)
        let target = read(elsewhere)

        let me = try fixture.douctl.run("user", "me")
        #expect(me.status == 3, "\(me)")
        #expect(me.errorLine == "douctl: \(directory)/credentials.json is a symbolic link; refusing to use it. Replace it with the file itself, or remove it and log in again", "\(me)")
        let issued = fixture.sandbox.issueToken(user: "linglu")
        let login = try fixture.douctl.run(["auth", "login", "--with-token"], input: Array((issued.accessToken + "\n").utf8))
        #expect(login.status == 3, "\(login)")
        #expect(login.errorLine.contains("is a symbolic link; refusing to use it"))
        #expect(read(elsewhere) == target, "the link's target is untouched")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/credentials.json")) == elsewhere)
    }

    @Test func credentialsOwnedByAnotherUserAreRefused() throws {
        guard geteuid() == 0 else { try Self.skip("giving a file to another user needs root (chown)") }
        let fixture = try SandboxFixture()
        try fixture.login()
        let path = fixture.douctl.configDirectory + "/credentials.json"
        let before = fixture.credentials
        #expect(chown(path, 4242, 4242) == 0)
        let me = try fixture.douctl.run("user", "me")
        #expect(me.status == 3, "\(me)")
        #expect(me.errorLine == "douctl: \(path) is owned by another user (uid 4242, not 0); refusing to use it. Remove it and log in again, or fix it with: chown 0 \(path)", "\(me)")
        let logout = try fixture.douctl.run("auth", "logout")
        #expect(logout.status == 3, "\(logout)")
        #expect(fixture.credentials == before)
    }

    // MARK: config others can write (ssh's "Bad owner or permissions")

    /// A profile whose signing_command leaves a mark: whoever can write config.json chooses
    /// the program douctl runs, as the user running it.
    static func commandSigningFixture() throws -> (fixture: SandboxFixture, marker: String) {
        let fixture = try SandboxFixture()
        try fixture.login()
        let marker = TemporaryDirectory.make(prefix: "marker") + "/ran"
        for (key, value) in [("signing", "command"), ("signing_command", "touch '\(marker)'; echo '{}'")] {
            let set = try fixture.douctl.run("config", "set", key, value, "--profile", "sandbox")
            #expect(set.status == 0, "\(set)")
        }
        return (fixture, marker)
    }

    @Test func aConfigOthersCanWriteRunsNothing() throws {
        let (fixture, marker) = try Self.commandSigningFixture()
        let path = fixture.douctl.configDirectory + "/config.json"
        #expect(chmod(path, 0o666) == 0)
        let me = try fixture.douctl.run("user", "me")
        #expect(me.status == 3, "\(me)")
        #expect(me.errorLine == "douctl: bad owner or permissions on \(path) (it is writable by other users (mode 666)); refusing to use it. Fix it with: chmod go-w \(path)", "\(me)")
        #expect(!FileManager.default.fileExists(atPath: marker), "signing_command ran")
        #expect(fixture.sandbox.requests.isEmpty, "nothing was sent")

        #expect(chmod(path, 0o664) == 0)
        let group = try fixture.douctl.run("user", "me")
        #expect(group.status == 3 && group.errorLine.contains("it is writable by its group (mode 664)"), "\(group)")
        #expect(!FileManager.default.fileExists(atPath: marker))

        #expect(chmod(path, 0o644) == 0)
        let fixed = try fixture.douctl.run("user", "me")
        #expect(fixed.status == 0, "\(fixed)")
        #expect(FileManager.default.fileExists(atPath: marker), "the user's own config is followed")
    }

    @Test func aConfigInADirectoryOthersCanWriteIsRefusedUnlessSticky() throws {
        let (fixture, marker) = try Self.commandSigningFixture()
        let directory = fixture.douctl.configDirectory
        #expect(chmod(directory, 0o777) == 0)
        let me = try fixture.douctl.run("user", "me")
        #expect(me.status == 3, "\(me)")
        #expect(me.errorLine == "douctl: bad owner or permissions on \(directory)/config.json (its directory \(directory) is writable by other users (mode 777)); refusing to use it. Fix it with: chmod go-w \(directory)", "\(me)")
        #expect(!FileManager.default.fileExists(atPath: marker))

        // Sticky, as /tmp: others may add names but not replace the user's own.
        #expect(chmod(directory, 0o1777) == 0)
        let sticky = try fixture.douctl.run("user", "me")
        #expect(sticky.status == 0, "\(sticky)")
        #expect(FileManager.default.fileExists(atPath: marker))

        // A symbolic link to a config in a directory others can write: the target's directory counts too.
        #expect(chmod(directory, 0o700) == 0)
        let shared = TemporaryDirectory.make(prefix: "shared")
        try FileManager.default.moveItem(atPath: directory + "/config.json", toPath: shared + "/config.json")
        try FileManager.default.createSymbolicLink(atPath: directory + "/config.json", withDestinationPath: shared + "/config.json")
        #expect(chmod(shared, 0o777) == 0)
        let linked = try fixture.douctl.run("user", "me")
        #expect(linked.status == 3 && linked.errorLine.contains("(its directory \(shared) is writable by other users (mode 777))"), "\(linked)")
        #expect(chmod(shared, 0o755) == 0)
        #expect(try fixture.douctl.run("user", "me").status == 0)
    }

    @Test func aConfigOwnedByAnotherUserRunsNothing() throws {
        guard geteuid() == 0 else { try Self.skip("giving a file to another user needs root (chown)") }
        let (fixture, marker) = try Self.commandSigningFixture()
        let path = fixture.douctl.configDirectory + "/config.json"
        // nobody (65534): the second local user, owning a file that is otherwise 0600.
        #expect(chown(path, 65534, 65534) == 0)
        let me = try fixture.douctl.run("user", "me")
        #expect(me.status == 3, "\(me)")
        #expect(me.errorLine == "douctl: bad owner or permissions on \(path) (it is owned by another user (uid 65534, not 0)); refusing to use it. Fix it with: chown 0 \(path)", "\(me)")
        #expect(!FileManager.default.fileExists(atPath: marker), "signing_command ran")
        let set = try fixture.douctl.run("config", "set", "api_base", "http://127.0.0.1:9", "--profile", "sandbox")
        #expect(set.status == 3, "not rewritten either: \(set)")

        // A directory of someone else's holding the user's own file is refused too.
        #expect(chown(path, 0, 0) == 0)
        #expect(chown(fixture.douctl.configDirectory, 65534, 65534) == 0)
        let directory = try fixture.douctl.run("user", "me")
        #expect(directory.status == 3 && directory.errorLine.contains("(its directory \(fixture.douctl.configDirectory) is owned by another user (uid 65534, not 0))"), "\(directory)")
        #expect(!FileManager.default.fileExists(atPath: marker))
    }

    @Test func aCABundleOthersCanWriteIsRefused() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        let bundle = TemporaryDirectory.make(prefix: "ca") + "/ca.pem"
        #expect(FileManager.default.createFile(atPath: bundle, contents: Data("# no certificates\n".utf8)))
        #expect(chmod(bundle, 0o666) == 0)
        #expect(try fixture.douctl.run("config", "set", "ca_bundle", bundle, "--profile", "sandbox").status == 0)
        let me = try fixture.douctl.run("user", "me")
        #expect(me.status == 3, "\(me)")
        #expect(me.errorLine == "douctl: bad owner or permissions on the CA bundle \(bundle) (it is writable by other users (mode 666)); refusing to use it. Fix it with: chmod go-w \(bundle)", "\(me)")
        #expect(fixture.sandbox.requests.isEmpty)
    }

    @Test func configDirectoryWithSpacesAndNonASCII() throws {
        let fixture = try SandboxFixture()
        let directory = TemporaryDirectory.make(prefix: "my douctl") + "/配置 Ünïcödé dir/douctl"
        try SandboxProfiles.write(base: fixture.sandbox.baseURL, in: directory)
        let douctl = Douctl(configDirectory: directory)
        let issued = fixture.sandbox.issueToken()
        let login = try douctl.run(["auth", "login", "--with-token"], input: Array((issued.accessToken + "\n").utf8))
        #expect(login.status == 0, "\(login)")
        let me = try douctl.run("user", "me")
        #expect(me.status == 0, "\(me)")
        #expect(try me.json()["uid"]?.stringValue == "ahbei")
        #expect(try douctl.run("profile", "add", "work", "--preset", "douban").status == 0)
        #expect(try douctl.run("--config-dir", directory, "profile", "show", "work").status == 0)
        let status = try douctl.run("auth", "status")
        #expect(status.status == 0, "\(status)")
        let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/credentials.json")
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(files(in: directory).allSatisfy { !$0.contains(".tmp") })
    }
}
