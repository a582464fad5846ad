import DouctlJSON
import DouctlSandbox
import DouctlTestSupport
import Foundation
import Testing

/// A refresh spends a single-use refresh token: douctl makes sure the rotated one can be
/// stored before it sends the old one, and cleans up the temp files killed writers left.
@Suite("credentials: room before a refresh, and abandoned temp files")
struct CredentialReservationTests {
    static func read(_ path: String) -> String? { FileSafetyTests.read(path) }
    static func files(in directory: String) -> [String] { FileSafetyTests.files(in: directory) }

    static func refreshRequests(_ sandbox: Sandbox) -> [RecordedRequest] {
        sandbox.requests.filter { request in
            request.path == "/service/auth2/token" && request.form.contains { $0.name == "grant_type" && $0.value == "refresh_token" }
        }
    }

    @Test func aRefreshOnAFullDiskSpendsNothingAndSucceedsOnceThereIsRoom() throws {
        let mount = try FileSafetyTests.mountTmpfs(kilobytes: 256)
        defer { FileSafetyTests.unmount(mount) }
        let fixture = try SandboxFixture()
        let directory = mount + "/douctl"
        try SandboxProfiles.write(base: fixture.sandbox.baseURL, in: directory)
        let tokens = fixture.sandbox.issueToken()
        try Credentials.write(["sandbox": tokens.accessToken], in: directory, expiresAt: "2001-01-01T00:00:00Z",
                              refreshTokens: ["sandbox": tokens.refreshToken])
        fixture.sandbox.expireAccessTokens()
        let douctl = Douctl(configDirectory: directory)
        let credentials = Self.read(directory + "/credentials.json")
        #expect(credentials?.contains(tokens.refreshToken) == true)
        let filler = FileSafetyTests.fillToTheLastBlock(mount)
        let before = Set(Self.files(in: directory) + [".config.lock", ".credentials.lock"])

        for arguments in [["auth", "refresh"], ["user", "me"]] {
            let full = try douctl.run(arguments)
            #expect(full.status == 3, "\(arguments): \(full)")
            #expect(full.errorLine.hasPrefix("douctl: cannot store credentials in \(directory) ("), "\(full)")
            #expect(full.errorLine.lowercased().contains("space"), "names the cause: \(full)")
            #expect(full.errorLine.hasSuffix("the stored credentials are unchanged; the refresh token was not used"), "\(full)")
            print("full disk, douctl \(arguments.joined(separator: " ")): \(full.errorLine)")
        }
        #expect(Self.refreshRequests(fixture.sandbox).isEmpty, "the single-use refresh token never left: \(fixture.sandbox.requests.map(\.path))")
        #expect(Self.read(directory + "/credentials.json") == credentials)
        #expect(Set(Self.files(in: directory)).isSubset(of: before), "no temp files left behind: \(Self.files(in: directory))")

        // With room again, the same refresh token still works.
        try FileManager.default.removeItem(atPath: filler)
        let refreshed = try douctl.run("auth", "refresh")
        #expect(refreshed.status == 0, "\(refreshed)")
        #expect(Self.refreshRequests(fixture.sandbox).map(\.status) == [200])
        let stored = Self.read(directory + "/credentials.json") ?? ""
        #expect(!stored.contains(tokens.refreshToken), "rotated")
        let me = try douctl.run("user", "me")
        #expect(me.status == 0, "\(me)")
    }

    @Test func tempFilesOfKilledWritersAreRemovedNeverALiveOnes() throws {
        let fixture = try SandboxFixture()
        try fixture.login(expiresAt: "2001-01-01T00:00:00Z")
        fixture.sandbox.expireAccessTokens()
        let directory = fixture.douctl.configDirectory
        // What a writer killed with -9 long ago left behind.
        let abandoned = directory + "/.credentials.json.tmp-4242-dead"
        try Data(#"{"profiles": {"sandbox": {"access_tok"#.utf8).write(to: URL(fileURLWithPath: abandoned))
        // A live writer: a login holding its temp file just before the rename (and the lock).
        let issued = fixture.sandbox.issueToken(user: "linglu")
        let writer = try RunningDouctl(fixture.douctl, ["auth", "login", "--with-token"], environment: ["DOUCTL_TEST_HOLD_BEFORE_RENAME": "30"])
        writer.send(issued.accessToken + "\n")
        let temporaries = { Self.files(in: directory).filter { $0.hasPrefix(".credentials.json.tmp-") && $0 != ".credentials.json.tmp-4242-dead" } }
        let deadline = Date().addingTimeInterval(30)
        while temporaries().isEmpty && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        let live = temporaries()
        #expect(live.count == 1, "the writer reached its temp file: \(Self.files(in: directory))")

        // A second process that must write waits for the lock: it never touches the live temp file.
        let refresher = try RunningDouctl(fixture.douctl, ["auth", "refresh"])
        Thread.sleep(forTimeInterval: 1)
        #expect(temporaries() == live, "the live writer's temp file is left alone")
        writer.kill(SIGKILL)
        _ = writer.finish(timeout: 30)
        let refreshed = refresher.finish(timeout: 60)
        #expect(refreshed.status == 0, "\(refreshed)")
        #expect(Self.files(in: directory).allSatisfy { !$0.contains(".tmp-") }, "abandoned temp files removed: \(Self.files(in: directory))")
        #expect(try fixture.douctl.run("user", "me").status == 0)
    }
}
