#if canImport(Glibc)
import Glibc
#endif
import DouctlJSON
import DouctlSandbox
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 33, items 4–9: what a new user met in the first hour, round two. The built binary
/// against the sandbox, on a pseudo-terminal (`script`, tmux) where only a real terminal
/// shows it; the same views on injected terminals run in process (TerminalViewInProcessTests).
@Suite("The first hour, round two: views, verbs, install, paginate")
struct FirstHourViewsTests {
    static func plain(_ text: String) -> String {
        Screen(text).lines.joined(separator: "\n")
    }

    // MARK: 4. the demo on a terminal shows what a person sees

    @Test func demoOnATerminalShowsTheViewsTheTypedCommandsShow() throws {
        let temporary = TemporaryDirectory.make(prefix: "douctl-demo-tty")
        var environment = Douctl(environment: ["TMPDIR": temporary]).environment
        environment["NO_COLOR"] = "1"
        let raw = try runUnderScript("stty cols 80 rows 50 2>/dev/null; \(Douctl.binary) demo", environment: environment)
        ViewExpectations.demo(raw: raw, screen: Screen(raw).lines)
    }

    // MARK: 5. emoji sequences wrap where the terminal wraps them

    /// A status of skin-toned thumbs, VS16 hearts, flags and a ZWJ family, one paragraph
    /// each, shown by `shuo get` in tmux 50 columns wide: no line of the view is wrapped
    /// again by tmux, and each line holds as many clusters as tmux itself fits in 50
    /// columns (each cluster's width measured in the same tmux first). Before: douctl
    /// counted 👍🏽 as 2 columns where tmux 3.3a draws 4, and the thumbs overflowed.
    @Test func emojiSequencesWrapWhereTmuxWrapsThem() throws {
        let tmux = try Tmux()
        defer { tmux.stop() }
        let clusters = ["👍🏽", "❤️", "🇨🇳", "👨‍👩‍👧"]
        let widths = try clusters.map { try tmux.width(of: $0) }
        let fixture = try SandboxFixture()
        defer { fixture.stop() }
        try fixture.login()
        let text = clusters.map { String(repeating: $0, count: 60) }.joined(separator: "\n")
        let id = try #require(try fixture.douctl.run("shuo", "post", text).json()["id"]?.scalarText)
        let (rows, joined) = try tmux.show("\(Douctl.binary) shuo get \(id) --color never", environment: fixture.douctl.environment, until: "♥")
        #expect(rows == joined, "tmux wrapped a line of the view again:\n\(rows.joined(separator: "\n"))")
        for (cluster, width) in zip(clusters, widths) {
            let perLine = 50 / width
            let lines = joined.filter { !$0.isEmpty && $0.allSatisfy { $0 == Character(cluster) } }
            var expected = Array(repeating: perLine, count: 60 / perLine)
            if 60 % perLine > 0 { expected.append(60 % perLine) }
            #expect(lines.map(\.count) == expected, "\(cluster) is \(width) columns in tmux: \(lines)")
        }
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
        // The view on a terminal runs in process (TerminalViewInProcessTests); here, asked for.
        let shown = try fixture.douctl.run("shuo", "get", id, "--format", "text", "--color", "never")
        #expect(shown.status == 0, "\(shown)")
        ViewExpectations.codingFeed(Screen(shown.stdoutText).lines, base: fixture.sandbox.baseURL)
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
        let fd = InstallScript.holdLock(lockPath)
        defer { close(fd) }
        let (status, text) = try InstallScript.run(repository: repository, environment: [
            "TMPDIR": temporary, "DOUCTL_BUILD_LOCK_WAIT": "1", "DESTDIR": root + "/stage", "PREFIX": "/usr/local"])
        #expect(status == 1, "\(text)")
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.first == "install.sh: waiting for another SwiftPM build (pid \(pid)) to finish: it holds the lock on \(build) (up to 1s; DOUCTL_BUILD_LOCK_WAIT sets it)", "\(text)")
        #expect(lines.count == 3 && lines[1].contains("DOUCTL_BINARY=.build/release/douctl scripts/install.sh"), "offers the way that does not wait (issue 40): \(text)")
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

/// A tmux server of its own (its own socket), for what a real terminal multiplexer draws:
/// panes 50 columns wide, read back with capture-pane.
struct Tmux {
    let path: String
    let socket = "douctl-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    let scratch = TemporaryDirectory.make(prefix: "douctl-tmux")
    var environment: [String: String] = ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "SHELL": "/bin/sh", "TERM": "xterm-256color"]

    init() throws {
        path = try Tools.require("tmux")
    }

    /// Runs `tmux -L SOCKET ARGS`; its stdout ("" when it fails). Spawned with nothing but
    /// close-on-exec pipes: the server a first command forks keeps whatever it inherits, and
    /// Foundation's Process waited for that server to end.
    @discardableResult
    func run(_ arguments: [String], environment extra: [String: String] = [:]) throws -> String {
        let output = try? Subprocess.run([path, "-L", socket, "-f", "/dev/null"] + arguments, input: [], environment: environment.merging(extra) { $1 })
        return String(decoding: output ?? [], as: UTF8.self)
    }

    /// Runs `command` in a new 50-column window and waits (at most 30 s) for `done` on screen;
    /// the screen's rows as drawn, and joined where tmux wrapped them.
    func show(_ command: String, environment extra: [String: String], until done: String) throws -> (rows: [String], joined: [String]) {
        let script = scratch + "/show.sh"
        // The server keeps the environment it started with: the command's own goes in its script.
        let exports = extra.sorted { $0.key < $1.key }.map { "export \($0.key)='\($0.value.replacingOccurrences(of: "'", with: "'\\''"))'" }
        try Data((exports + [command, "sleep 60"]).joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: script))
        try run(["new-session", "-d", "-s", "show", "-x", "50", "-y", "100", "sh \(script)"])
        let deadline = Date().addingTimeInterval(30)
        var rows: [String] = []
        while Date() < deadline {
            rows = lines(try run(["capture-pane", "-p", "-t", "show"]))
            if rows.contains(where: { $0.contains(done) }) { break }
            Thread.sleep(forTimeInterval: 0.2)
        }
        return (rows, lines(try run(["capture-pane", "-p", "-J", "-t", "show"])))
    }

    /// The columns tmux gives `cluster`: printed alone in a window, where its cursor ends.
    func width(of cluster: String) throws -> Int {
        let file = scratch + "/cluster"
        try Data(cluster.utf8).write(to: URL(fileURLWithPath: file))
        let session = "measure\(UInt32.random(in: 0...UInt32.max))"
        try run(["new-session", "-d", "-s", session, "-x", "50", "-y", "5", "cat \(file); sleep 60"])
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let column = Int(try run(["display-message", "-p", "-t", session, "#{cursor_x}"]).trimmingCharacters(in: .whitespacesAndNewlines)), column > 0 {
                return column
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        throw TestFailure("tmux never drew \(cluster)")
    }

    func stop() {
        _ = try? run(["kill-server"])
    }

    private func lines(_ text: String) -> [String] {
        var rows = text.split(separator: "\n", omittingEmptySubsequences: false).map { String($0) }
        while rows.last == "" { rows.removeLast() }
        return rows
    }
}
