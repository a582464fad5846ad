#if canImport(Glibc)
import Glibc
#endif
import DouctlJSON
import DouctlSandbox
import DouctlTestSupport
import Foundation
import Testing

/// Issue 33, items 4–9: what a new user met in the first hour, round two. The built binary
/// against the sandbox, on a pseudo-terminal (`script`) where a person would see it.
@Suite("The first hour, round two")
struct FirstHourRoundTwoTests {
    static func plain(_ text: String) -> String {
        Screen(text).lines.joined(separator: "\n")
    }

    // MARK: 4. the demo on a terminal shows what a person sees

    @Test func demoOnATerminalShowsTheViewsTheTypedCommandsShow() throws {
        let temporary = TemporaryDirectory.make(prefix: "douctl-demo-tty")
        var environment = Douctl(environment: ["TMPDIR": temporary]).environment
        environment["NO_COLOR"] = "1"
        let raw = try runUnderScript("stty cols 80 rows 50 2>/dev/null; \(Douctl.binary) demo", environment: environment)
        let screen = Screen(raw).lines
        #expect(screen.contains { $0.hasPrefix("everything worked") }, "\(screen)")
        // The post, the status read back, the timeline and the comment are feed entries, not JSON...
        #expect(!raw.contains("\"category\""), "JSON of a status on the terminal: \(raw)")
        #expect(!raw.contains("\"original_src\""))
        #expect(screen.filter { $0.hasPrefix("[picture] http://127.0.0.1:") }.count >= 3, "\(screen)")
        #expect(screen.contains("第一条评论 ✓"))
        // ...like and delete say what they did, as typed by hand...
        #expect(screen.contains { $0.hasPrefix("liked ") })
        #expect(screen.contains { $0.hasPrefix("deleted ") })
        #expect(!raw.contains(#""deleted":true"#))
        // ...and the whole demo fits a screen or two (it was 441 lines).
        #expect(screen.count < 100, "\(screen.count) lines")
    }

    // MARK: 6. the Coding feed shows pictures and link targets

    @Test func codingFeedShowsPicturesAndLinkTargets() throws {
        let fixture = try SandboxFixture()
        defer { fixture.stop() }
        try fixture.douctl.run("profile", "use", "coding-sandbox")
        let tokens = fixture.sandbox.issueCodingToken(user: "coder")
        try Credentials.write(["coding-sandbox": tokens.accessToken], in: fixture.douctl.configDirectory,
                              expiresAt: "2099-01-01T00:00:00Z", refreshTokens: ["coding-sandbox": tokens.refreshToken])
        let picture = try TemporaryDirectory.file(named: "p.png", bytes: PNGFixture.bytes)
        let posted = try fixture.douctl.run("shuo", "post", "看这个 [链接](https://example.com/x)", "--image", picture)
        #expect(posted.status == 0, "\(posted)")
        let id = try #require(try posted.json()["id"]?.scalarText)
        let raw = try runUnderScript("stty cols 100 rows 50 2>/dev/null; \(Douctl.binary) shuo get \(id) --color never",
                                     environment: fixture.douctl.environment)
        let lines = Screen(raw).lines
        #expect(lines.contains("看这个 链接"), "\(lines)")
        #expect(lines.contains { $0.hasPrefix("[picture] \(fixture.sandbox.baseURL)/") }, "\(lines)")
        #expect(lines.contains("[link] 链接 https://example.com/x"), "\(lines)")
    }

    // MARK: 7. siblings take the same shape; delete reports every id

    @Test func deleteReportsEveryIDAndUncommentTakesTheStatusFirst() throws {
        let fixture = try SandboxFixture()
        defer { fixture.stop() }
        try fixture.login()
        let ids = try (0..<2).map { index in try #require(try fixture.douctl.run("shuo", "post", "第\(index)条").json()["id"]?.scalarText) }
        let result = try fixture.douctl.run(["shuo", "delete"] + ids + ["99999"])
        #expect(result.status == 5, "\(result)")
        let lines = try result.lines()
        #expect(lines.map { $0["id"]?.stringValue } == ids + ["99999"], "\(result)")
        #expect(lines.map { $0["ok"]?.boolValue } == [true, true, false])
        #expect(lines.last?["exit"]?.intValue == 5)
        #expect(result.stderr.split(separator: "\n").count == 1, "one error line, for 99999: \(result)")
        #expect(result.stderr.hasPrefix("douctl: 99999: "), "\(result)")

        let id = try #require(try fixture.douctl.run("shuo", "post", "评论我").json()["id"]?.scalarText)
        let comment = try #require(try fixture.douctl.run("shuo", "comment", id, "沙发").json()["id"]?.scalarText)
        let uncommented = try fixture.douctl.run("shuo", "uncomment", id, comment)
        #expect(uncommented.status == 0, "\(uncommented)")
        #expect(uncommented.stderr.isEmpty)
        #expect(fixture.sandbox.requests.last.map { "\($0.method) \($0.path)" } == "DELETE /shuo/v2/statuses/comment/\(comment)")
    }

    // MARK: 8. install.sh says what it waits for, and gives up

    /// Holds the build lock the way SwiftPM 6 does (flock(2) on `$TMPDIR/<build path with
    /// / as _>.lock`, its PID in `.build/.lock`) and, separately, the way older ones did
    /// (flock on `.build/.lock`); install.sh must say so and exit non-zero within its bound.
    @Test(arguments: [true, false])
    func installScriptGivesUpOnAHeldBuildLock(swiftPM6: Bool) throws {
        try Tools.require("bash")
        try Tools.require("flock")
        let root = TemporaryDirectory.make(prefix: "douctl-install-lock")
        let repository = root + "/repo"
        let temporary = root + "/tmp"
        for directory in [repository + "/scripts", repository + "/.build", temporary] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        try FileManager.default.copyItem(atPath: GeneratedFilesTests.repository + "/scripts/install.sh", toPath: repository + "/scripts/install.sh")
        let build = URL(fileURLWithPath: repository + "/.build").resolvingSymlinksInPath().path
        let pid = String(getpid())
        try Data(pid.utf8).write(to: URL(fileURLWithPath: build + "/.lock"))
        let lockPath = swiftPM6 ? temporary + "/" + build.replacingOccurrences(of: "/", with: "_") + ".lock" : build + "/.lock"
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        #expect(fd >= 0)
        defer { close(fd) }
        #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: repository + "/scripts/install.sh")
        process.environment = ["PATH": "/usr/bin:/bin", "TMPDIR": temporary, "DOUCTL_BUILD_LOCK_WAIT": "1",
                               "DESTDIR": root + "/stage", "PREFIX": "/usr/local"]
        let stderr = Pipe()
        process.standardError = stderr
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 1, "\(text)")
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.first == "install.sh: waiting for another SwiftPM build (pid \(pid)) to finish: it holds the lock on \(build) (up to 1s; DOUCTL_BUILD_LOCK_WAIT sets it)", "\(text)")
        #expect(lines.last?.hasPrefix("install.sh: gave up after 1s: another SwiftPM build (pid \(pid)) still holds the lock on \(build); nothing was installed") == true, "\(text)")
        #expect(!FileManager.default.fileExists(atPath: root + "/stage"), "nothing installed")
    }

    // MARK: 9. api --paginate on a lone object

    @Test func paginateOfALoneObjectPrintsItAsGhDoes() throws {
        let fixture = try SandboxFixture()
        defer { fixture.stop() }
        try fixture.login()
        let result = try fixture.douctl.run("api", "/v2/user/~me", "--paginate")
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.isEmpty, "\(result)")
        let lines = try result.lines()
        #expect(lines.count == 1)
        #expect(lines.first?["uid"]?.stringValue == "ahbei")
    }
}
