@testable import DouctlCommands
import DouctlHTTP
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Testing

/// Issue 31: what douctl decides on a terminal — which view, its width, colours, NO_COLOR,
/// text summaries, progress, escaped server text, inline pictures, questions — run in
/// process on a terminal the test describes (`ProcessContext.terminal`, as gh's
/// `iostreams.Test()`), against a scripted transport or an in-process sandbox. These were
/// the binary tests run under `script`; the binary keeps one test per behaviour, and only
/// what a real terminal shows (TIOCGWINSZ, redraws on a real screen, inline pictures on a
/// tty, tmux's widths) still runs there (TerminalViewTests, OutputOwnerTests, …).
@Suite struct TerminalViewInProcessTests {
    static let base = ["--api-base", InProcessDouctl.scriptedBase]
    static let longText = "今天天气很好，我们去公园散步吧。路上看到很多人在放风筝，孩子们笑得很开心。The weather is lovely."

    /// A pipe to another program (`| jq`).
    static let pipe = TerminalFacts(stdoutFeedsProgram: true)

    /// A person at a terminal whose stdout goes to a file (`> out.json`).
    static let terminalWithStdoutInAFile: TerminalFacts = {
        var facts = TerminalFacts.terminal(columns: 100)
        facts.stdoutIsTerminal = false
        facts.stdoutColumns = nil
        return facts
    }()

    /// `douctl` on the terminal `facts` describes. `oneScreen`: stdout and stderr are one
    /// descriptor, as on a terminal, so `stdoutText` is everything the screen got, in order.
    static func on(_ facts: TerminalFacts, _ douctl: InProcessDouctl, oneScreen: Bool = false) -> InProcessDouctl {
        var douctl = douctl
        douctl.configure = { process in
            process.terminal = facts
            if oneScreen { process.standardError = process.standardOutput }
        }
        return douctl
    }

    static func scripted(_ facts: TerminalFacts, _ answers: [ScriptedTransport.Answer], oneScreen: Bool = false) throws -> (InProcessDouctl, ScriptedTransport) {
        let transport = ScriptedTransport(answers)
        return (on(facts, try InProcessDouctl.scripted(transport), oneScreen: oneScreen), transport)
    }

    static func rows(_ text: String) -> [String] { Screen(text).lines }

    static func bytes(_ status: Int, _ body: [UInt8], type: String = "application/octet-stream") -> ScriptedTransport.Answer {
        .reply(HTTPResponse(head: HTTPResponseHead(status: status, headers: [HTTPHeader("Content-Type", type)]), body: body))
    }

    // MARK: - views: which, how wide, what colour

    @Test func timelineOnATerminalIsAFeedWrappedByDisplayWidth() throws {
        let run = try SandboxRun()
        defer { run.stop() }
        try run.login()
        #expect(try run.douctl.run("shuo", "post", Self.longText).status == 0)
        let terminal = Self.on(.terminal(columns: 40), run.douctl)
        let plain = try terminal.run("shuo", "timeline", "--count", "3", "--color", "never")
        #expect(plain.status == 0, "\(plain)")
        #expect(!plain.stdoutText.contains("\"text\""), "a view, not JSON: \(plain)")
        #expect(!plain.stdoutText.contains("\u{1B}["), "--color never")
        let lines = Self.rows(plain.stdoutText)
        let header = try #require(lines.first { $0.contains("@ahbei") }, "\(lines)")
        #expect(header.contains("just now"))
        // Wrapped within 40 columns, 中文 counted as two.
        #expect(lines.allSatisfy { DisplayWidth.of($0) <= 40 }, "\(lines)")
        let start = try #require(lines.firstIndex(of: header))
        let body = lines[(start + 1)...].prefix { !$0.hasPrefix("♥") }.joined()
        #expect(body.replacingAll(" ", with: "") == Self.longText.replacingAll(" ", with: ""), "\(lines)")
        #expect(lines.contains { $0.hasPrefix("♥ 0  💬 0") })
        // With colour: bold names, dim times; NO_COLOR switches it off.
        let colored = try terminal.run("shuo", "timeline", "--count", "1").stdoutText
        #expect(colored.contains("\u{1B}[1m") && colored.contains("\u{1B}[2m"), "\(colored)")
        #expect(!(try terminal.run(["shuo", "timeline", "--count", "1"], environment: ["NO_COLOR": "1"]).stdoutText.contains("\u{1B}[1m")))
    }

    @Test(arguments: [30, 50, 80, 120])
    func theFeedFitsEveryWidth(columns: Int) throws {
        let status = #"{"id":1,"text":"\#(Self.longText)","created_at":"2025-01-01 00:00:00","user":{"uid":"ahbei","screen_name":"阿北"}}"#
        let (douctl, _) = try Self.scripted(.terminal(columns: columns), [.json(200, status)])
        let result = try douctl.run(["shuo", "get", "1", "--color", "never"] + Self.base)
        #expect(result.status == 0, "\(result)")
        let lines = Self.rows(result.stdoutText)
        #expect(lines.first?.hasPrefix("阿北 @ahbei") == true, "\(lines)")
        for line in lines { #expect(DisplayWidth.of(line) <= columns, "\(columns): '\(line)'") }
    }

    @Test func aPipeGetsExactlyTheJSONItAlwaysHad() throws {
        let run = try SandboxRun()
        defer { run.stop() }
        try run.login()
        #expect(try run.douctl.run("shuo", "post", "中文 and text").status == 0)
        let piped = Self.on(Self.pipe, run.douctl)
        for command in [["shuo", "timeline"], ["user", "me"], ["user", "search", "a"], ["auth", "status", "--no-check"]] {
            let result = try piped.run(command)
            #expect(result.status == 0, "\(result)")
            #expect(!result.stdoutText.contains("\u{1B}"))
            // Compact JSON, one document: the same bytes as asking for JSON.
            #expect(result.stdoutText == (try piped.run(command + ["--json"]).stdoutText))
            #expect(result.stdoutText == (try piped.run(command + ["--format", "json"]).stdoutText))
            #expect(!result.stdoutText.dropLast().contains("\n"), "compact: \(result.stdoutText)")
            _ = try result.json()
        }
        // The view can be asked for in a pipe, without colour unless asked.
        let text = try piped.run("user", "me", "--format", "text")
        #expect(text.stdoutText.hasPrefix("阿北 @ahbei"), "\(text)")
        #expect(!text.stdoutText.contains("\u{1B}"))
        #expect(try piped.run("user", "me", "--json", "--color", "always").stdoutText.contains("\u{1B}[34;1m\"id\""))
    }

    @Test func jsonOnATerminalIsColouredLikeJqUnlessSwitchedOff() throws {
        let run = try SandboxRun()
        defer { run.stop() }
        try run.login()
        let terminal = Self.on(.terminal(columns: 40), run.douctl)
        let key = "\u{1B}[34;1m\"uid\"\u{1B}[0m"
        let json = try terminal.run("user", "me", "--json").stdoutText
        #expect(json.contains(key) && json.contains("\u{1B}[0;32m\"ahbei\""), "\(json)")
        let api = try terminal.run("api", "/v2/user/~me").stdoutText
        #expect(api.contains(key), "\(api)")
        // An array streams through the incremental reformatter, coloured as it goes.
        let (list, _) = try Self.scripted(.terminal(columns: 40), [.json(200, #"[{"uid":"ahbei"},{"uid":"x"}]"#)])
        let streamed = try list.run(["api", "/list"] + Self.base).stdoutText
        #expect(streamed.contains(key) && streamed.contains("\u{1B}[0;32m\"x\""), "\(streamed)")
        for (arguments, environment) in [(["user", "me", "--json"], ["NO_COLOR": "1"]), (["user", "me", "--json", "--color", "never"], [:]),
                                         (["api", "/v2/user/~me"], ["NO_COLOR": "x"])] {
            let plain = try terminal.run(arguments, environment: environment).stdoutText
            #expect(plain.contains("\"uid\": \"ahbei\""), "pretty JSON: \(plain)")
            #expect(!plain.contains("\u{1B}["), "\(arguments) \(environment): \(plain)")
        }
        // --color always wins over NO_COLOR.
        #expect(try terminal.run(["user", "me", "--json", "--color", "always"], environment: ["NO_COLOR": "1"]).stdoutText.contains(key))
    }

    @Test func authStatusProfileListAndUsersReadAsText() throws {
        let run = try SandboxRun()
        defer { run.stop() }
        try run.login()
        let status = Self.rows(try Self.on(.terminal(columns: 80), run.douctl).run("auth", "status", "--color", "never").stdoutText)
        #expect(status.contains { $0.hasPrefix("profile") && $0.hasSuffix("sandbox") }, "\(status)")
        #expect(status.contains { $0.hasPrefix("logged_in") && $0.hasSuffix("true") }, "\(status)")
        let profiles = Self.rows(try Self.on(.terminal(columns: 120), run.douctl).run("profile", "list", "--color", "never").stdoutText)
        #expect(profiles.first?.hasPrefix("NAME") == true, "\(profiles)")
        #expect(profiles.contains { $0.hasPrefix("sandbox ") }, "\(profiles)")
        let me = Self.rows(try Self.on(.terminal(columns: 60), run.douctl).run("user", "me", "--color", "never").stdoutText)
        #expect(me.first?.hasPrefix("阿北 @ahbei") == true, "\(me)")
    }

    /// A status whose text carries escape sequences (clear the screen, retitle the window) is
    /// shown with them in caret notation, on a terminal and in a view asked for in a pipe.
    @Test func aHostileStatusCannotDriveTheTerminal() throws {
        let body = #"{"id":1,"text":"hi\u001b[2J\u001b]0;pwned\u0007 there","created_at":"2025-01-01 00:00:00","user":{"uid":"x","screen_name":"evil\u001b[8m"}}"#
        for (facts, extra) in [(TerminalFacts.terminal(), [String]()), (Self.pipe, ["--format", "text"])] {
            let (douctl, _) = try Self.scripted(facts, [.json(200, body)], oneScreen: true)
            let screen = try douctl.run(["shuo", "get", "1", "--color", "never"] + extra + Self.base).stdoutText
            #expect(!screen.contains("\u{1B}"), "\(screen)")
            #expect(screen.contains("evil^[[8m @x"), "\(screen)")
            #expect(screen.contains("hi^[[2J^[]0;pwned^G there"), "\(screen)")
        }
    }

    // MARK: - text summaries

    @Test func uploadAndDeleteSummariesReadAsTextOnATerminal() throws {
        let file = try TemporaryDirectory.file(named: "图片.bin", bytes: Array("hello".utf8))
        let upload = ["upload", file, "--to", "/u", "--progress", "never", "--color", "never"] + Self.base
        let (terminal, _) = try Self.scripted(.terminal(columns: 120), [.json(200, "{}")], oneScreen: true)
        #expect(Self.rows(try terminal.run(upload).stdoutText) == ["uploaded \(file)"])
        let (deleting, transport) = try Self.scripted(.terminal(), [.json(204, "")], oneScreen: true)
        #expect(Self.rows(try deleting.run(["shuo", "delete", "7", "--color", "never"] + Self.base).stdoutText) == ["deleted 7"])
        #expect(transport.requests.map(\.method) == ["DELETE"])
        let (piped, _) = try Self.scripted(Self.pipe, [.json(200, "{}")])
        #expect(try piped.run(upload).stdoutText == "{\"file\":\"\(file)\",\"ok\":true,\"reply\":{}}\n")
    }

    @Test func downloadSummaryReadsAsTextOnATerminal() throws {
        let directory = try TemporaryDirectory(prefix: "views-download")
        let (terminal, _) = try Self.scripted(.terminal(columns: 120), [Self.bytes(200, Array("hello".utf8))], oneScreen: true)
        let shown = try terminal.run(["download", "http://api.test/files/图片.bin", "-d", directory.path, "--progress", "never", "--color", "never"] + Self.base)
        #expect(shown.status == 0, "\(shown)")
        #expect(Self.rows(shown.stdoutText) == ["downloaded \(directory.path)/图片.bin"], "\(shown)")
        let (piped, _) = try Self.scripted(Self.pipe, [Self.bytes(200, Array("hello".utf8))])
        let line = try piped.run(["download", "http://api.test/files/again.bin", "-d", directory.path] + Self.base)
        #expect(try line.json()["path"]?.stringValue == "\(directory.path)/again.bin", "\(line)")
        #expect(try line.json()["sha256"]?.stringValue == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824")
    }

    // MARK: - progress

    @Test func uploadProgressOnlyOnATerminalAndNeverOnStdout() throws {
        let file = try TemporaryDirectory.file(named: "big.bin", bytes: Array(repeating: 1, count: 4 << 20))
        let upload = ["upload", file, "--to", "/u"] + Self.base
        func run(_ facts: TerminalFacts, _ extra: [String] = []) throws -> CommandResult {
            let (douctl, transport) = try Self.scripted(facts, [.json(200, "{}")])
            transport.reportsUploadOf = (4 << 20) + 200  // the file and its part headers
            return try douctl.run(upload + extra)
        }
        let shown = try run(Self.terminalWithStdoutInAFile)
        #expect(shown.status == 0, "\(shown)")
        #expect(shown.stderr.contains("big.bin") && shown.stderr.contains("done, 4.0 MiB"), "\(shown)")
        #expect(shown.stderr.contains("\u{1B}[2K"), "redrawn in place")
        #expect(shown.stdoutText.hasPrefix("{\"file\":") && !shown.stdoutText.contains("\u{1B}") && !shown.stdoutText.contains("MiB"), "\(shown)")
        // Not a terminal: nothing, unless --progress always (then plain lines).
        #expect(try run(TerminalFacts()).stderr.isEmpty)
        let always = try run(TerminalFacts(), ["--progress", "always"])
        #expect(always.stderr.contains("big.bin") && !always.stderr.contains("\u{1B}"), "\(always)")
        // A terminal, but --progress never.
        #expect(!(try run(Self.terminalWithStdoutInAFile, ["--progress", "never"]).stderr.contains("MiB")))
    }

    @Test func downloadProgressOnlyOnATerminalAndNeverOnStdout() throws {
        let directory = try TemporaryDirectory(prefix: "views-progress")
        func run(_ facts: TerminalFacts, _ name: String) throws -> CommandResult {
            let (douctl, transport) = try Self.scripted(facts, [Self.bytes(200, Array("hello".utf8))])
            transport.reportsDownloadOf = 1 << 20  // what the bar and the done line count
            return try douctl.run(["download", "http://api.test/\(name)", "-d", directory.path] + Self.base)
        }
        let shown = try run(Self.terminalWithStdoutInAFile, "big.bin")
        #expect(shown.status == 0, "\(shown)")
        #expect(shown.stderr.contains("big.bin") && shown.stderr.contains("done, 1.0 MiB"), "\(shown)")
        #expect(shown.stderr.contains("\u{1B}[2K"), "redrawn in place")
        #expect(shown.stdoutText.hasPrefix(#"{"url":"#) && !shown.stdoutText.contains("\u{1B}"), "\(shown)")
        #expect(try run(Self.pipe, "again.bin").stderr.isEmpty, "no progress without a terminal")
    }

    /// The done line counts the bytes the bar counted, so the two never disagree; both count
    /// the file (issue 40: 5 B, not the 321 B of the multipart body around it).
    @Test func theDoneLineCountsWhatTheBarCounted() throws {
        let file = try TemporaryDirectory.file(named: "tiny.txt", bytes: Array("hello".utf8))
        let (douctl, transport) = try Self.scripted(Self.pipe, [.json(200, "{}")])
        transport.reportsUploadOf = 321
        let result = try douctl.run(["upload", file, "--to", "/u", "--progress", "always"] + Self.base)
        #expect(result.status == 0, "\(result)")
        let lines = result.stderr.split(separator: "\n").map(String.init)
        let bar = try #require(lines.first { $0.contains(" / ") }, "\(lines)")
        let total = try #require(bar.components(separatedBy: " / ").last?.components(separatedBy: "  ").first)
        #expect(total == "5 B", "\(bar)")
        #expect(lines.last?.contains("done, 5 B in") == true, "not the body's 321 B: \(lines)")
    }

    /// Every progress row fits the terminal's columns and never cuts a figure in half.
    @Test(arguments: [40, 60, 100])
    func progressFitsTheTerminal(columns: Int) throws {
        let file = try TemporaryDirectory.file(named: "a-rather-long-file-name-for-a-narrow-terminal.bin", bytes: Array(repeating: 1, count: 3 << 20))
        var facts = TerminalFacts.terminal(columns: columns)
        facts.stdoutIsTerminal = false
        facts.stdoutColumns = nil
        let (douctl, transport) = try Self.scripted(facts, [.json(200, "{}")])
        transport.reportsUploadOf = (3 << 20) + 200
        let result = try douctl.run(["upload", file, "--to", "/u"] + Self.base)
        #expect(result.status == 0, "\(result)")
        let rows = result.stderr.replacingAll("\r", with: "\n").split(separator: "\n").map { ViewTests.strip(String($0)) }
            .filter { $0.contains("MiB") && !$0.contains("done") }
        #expect(!rows.isEmpty, "\(result.stderr.debugDescription)")
        for row in rows {
            #expect(DisplayWidth.of(row) <= columns - 1, "\(row.debugDescription)")
            #expect(row.hasSuffix("B") || row.hasSuffix("/s") || row.hasSuffix("%") || row.contains("ETA"), "\(row)")
        }
    }

    /// Four uploads on one terminal (stdout and stderr one screen): every result line stays,
    /// no progress row is left behind, and the 中文 names keep the columns.
    @Test func uploadResultLinesSurviveTheProgressDisplay() throws {
        let files = try ["第一个文件.bin", "second.bin", "第三.bin", "fourth.bin"].map { try TemporaryDirectory.file(named: $0, bytes: [7]) }
        let (douctl, transport) = try Self.scripted(.terminal(columns: 100), Array(repeating: .json(200, "{}"), count: 4), oneScreen: true)
        transport.reportsUploadOf = 3 << 20
        let result = try douctl.run(["upload"] + files + ["--to", "/u", "--color", "never", "--json"] + Self.base)
        #expect(result.status == 0, "\(result)")
        let lines = Self.rows(result.stdoutText)
        for file in files {
            #expect(lines.contains("{\"file\":\"\(file)\",\"ok\":true,\"reply\":{}}"), "\(file) on screen: \(lines)")
        }
        #expect(!lines.contains { $0.contains("ETA") || $0.hasSuffix("/s") || $0.contains("/s ") }, "a stale progress row: \(lines)")
        let done = lines.filter { $0.contains("done, ") }
        #expect(done.count == 4, "\(lines)")
        let columns = done.map { line in line.range(of: "  done, ").map { DisplayWidth.of(String(line[..<$0.lowerBound])) } ?? -1 }
        #expect(columns == [24, 24, 24, 24], "\(done)")
    }

    @Test func apiUploadsShowProgressOnATerminal() throws {
        let file = try TemporaryDirectory.file(named: "payload.bin", bytes: Array(repeating: 7, count: 1024))
        func run(_ facts: TerminalFacts) throws -> CommandResult {
            let (douctl, transport) = try Self.scripted(facts, [.json(200, "{}")])
            transport.reportsUploadOf = 2 << 20
            return try douctl.run(["api", "/up", "--attach", "f=\(file)"] + Self.base)
        }
        let shown = try run(Self.terminalWithStdoutInAFile)
        #expect(shown.status == 0, "\(shown)")
        #expect(shown.stderr.contains("payload.bin") && shown.stderr.contains("sent 2.0 MiB"), "\(shown)")
        #expect(try run(Self.pipe).stderr.isEmpty, "no progress without a terminal")
    }

    // MARK: - inline pictures

    static func statusWithPicture(_ url: String) -> ScriptedTransport.Answer {
        .json(200, #"{"id":1,"text":"有图","created_at":"2025-01-01 00:00:00","user":{"uid":"x","screen_name":"x"},"attachments":[{"media":[{"type":"image","src":"\#(url)"}]}]}"#)
    }

    @Test func anITerm2TerminalGetsThePictureInline() throws {
        let png = DemoPicture.png()
        let (douctl, transport) = try Self.scripted(.terminal(), [Self.statusWithPicture("http://api.test/p.png"), Self.bytes(200, png, type: "image/png")])
        let result = try douctl.run(["shuo", "get", "1", "--images", "--color", "never"] + Self.base, environment: ["TERM_PROGRAM": "iTerm.app"])
        #expect(result.status == 0, "\(result)")
        let screen = result.stdoutText
        let start = try #require(screen.range(of: "\u{1B}]1337;File="), "no inline picture: \(result)")
        let payload = try #require(screen[start.upperBound...].split(separator: ":", maxSplits: 1).last?.split(separator: "\u{07}").first)
        #expect(Base64.decode(String(payload)) == png, "the picture, whole")
        #expect(screen.range(of: "有图").map { $0.lowerBound < start.lowerBound } == true, "the status's view comes first: \(screen)")
        #expect(transport.requests.map(\.url).last == "http://api.test/p.png")
    }

    @Test func aTerminalThatSaysNothingGetsTheNamesAndAPipeGetsJSON() throws {
        let (douctl, transport) = try Self.scripted(.terminal(), [Self.statusWithPicture("http://api.test/p.png")], oneScreen: true)
        let named = try douctl.run(["shuo", "get", "1", "--images", "--color", "never"] + Self.base, environment: ["TERM": "xterm-256color"])
        #expect(named.status == 0, "\(named)")
        #expect(!named.stdoutText.contains("\u{1B}]1337") && !named.stdoutText.contains("\u{1B}_G"), "\(named)")
        #expect(named.stdoutText.contains("shows no inline pictures"), "\(named)")
        #expect(transport.requests.count == 1, "the picture is not fetched")
        // A pipe gets the status's JSON and nothing else, whatever the terminal would say.
        let (piped, _) = try Self.scripted(Self.pipe, [Self.statusWithPicture("http://api.test/p.png")])
        let json = try piped.run(["shuo", "get", "1", "--images"] + Self.base, environment: ["TERM_PROGRAM": "iTerm.app", "TERM": "xterm-kitty"])
        #expect(json.status == 0, "\(json)")
        #expect(try json.json()["text"]?.stringValue == "有图")
        #expect(!json.stdoutText.contains("\u{1B}"))
    }

    @Test func aPictureLargerThanATerminalTakesIsNamedNotDrawn() throws {
        let big = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 0, count: InlineImages.maximumBytes)
        let (douctl, _) = try Self.scripted(.terminal(), [Self.statusWithPicture("http://api.test/big.png"), Self.bytes(200, big, type: "image/png")], oneScreen: true)
        let result = try douctl.run(["shuo", "get", "1", "--images", "--color", "never"] + Self.base, environment: ["TERM_PROGRAM": "iTerm.app"])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText.contains("有图"))
        #expect(result.stdoutText.contains("larger than 8 MiB"), "\(result.stdoutText.prefix(2000))")
        #expect(!result.stdoutText.contains("\u{1B}]1337"), "nothing drawn")
    }

    // MARK: - the first hour on a terminal

    /// The demo on a terminal shows the views the typed commands show, in a screen or two.
    @Test func demoOnATerminalShowsTheViewsTheTypedCommandsShow() throws {
        let scratch = try TemporaryDirectory(prefix: "views-demo")
        let douctl = Self.on(.terminal(columns: 80), try InProcessDouctl(environment: ["TMPDIR": scratch.path, "NO_COLOR": "1"]), oneScreen: true)
        let result = try douctl.run("demo")
        #expect(result.status == 0, "\(result)")
        let raw = result.stdoutText
        ViewExpectations.demo(raw: raw, screen: Self.rows(raw))
    }

    @Test func codingFeedShowsPicturesAndLinkTargets() throws {
        let run = try SandboxRun()
        defer { run.stop() }
        try run.douctl.run("profile", "use", "coding-sandbox")
        let tokens = run.sandbox.issueCodingToken(user: "coder")
        try Credentials.write(["coding-sandbox": tokens.accessToken], in: run.douctl.configDirectory,
                              expiresAt: "2099-01-01T00:00:00Z", refreshTokens: ["coding-sandbox": tokens.refreshToken])
        let picture = try TemporaryDirectory.file(named: "p.png", bytes: DemoPicture.png())
        let posted = try run.douctl.run("shuo", "post", "看这个 [链接](https://example.com/x)", "--image", picture)
        #expect(posted.status == 0, "\(posted)")
        let id = try #require(try posted.json()["id"]?.scalarText)
        let shown = try Self.on(.terminal(columns: 100), run.douctl).run("shuo", "get", id, "--color", "never")
        ViewExpectations.codingFeed(Self.rows(shown.stdoutText), base: run.sandbox.baseURL)
    }

    // MARK: - questions asked only of a person

    @Test func severalPublicPostsAskFirstOnATerminal() throws {
        let run = try SandboxRun()
        defer { run.stop() }
        try run.login()
        let a = try TemporaryDirectory.file(named: "a.png", bytes: DemoPicture.png())
        let b = try TemporaryDirectory.file(named: "b.png", bytes: DemoPicture.png())
        let terminal = Self.on(.terminal(), run.douctl)
        let posts = { run.sandbox.requests.filter { $0.path == "/shuo/v2/statuses/" }.count }
        let declined = try terminal.run(["upload", a, b], input: Array("n\n".utf8))
        #expect(declined.status == 2, "\(declined)")
        #expect(declined.stderr.contains("Post 2 files as 2 public statuses on sandbox? [y/N]"), "\(declined)")
        #expect(posts() == 0)
        let accepted = try terminal.run(["upload", a, b], input: Array("y\n".utf8))
        #expect(accepted.status == 0, "\(accepted)")
        #expect(posts() == 2)
        // --yes, or no terminal, does not ask.
        let yes = try terminal.run("upload", a, b, "--yes")
        #expect(yes.status == 0 && !yes.stderr.contains("[y/N]"), "\(yes)")
        let piped = try Self.on(Self.pipe, run.douctl).run("upload", a, b)
        #expect(piped.status == 0 && !piped.stderr.contains("[y/N]"), "\(piped)")
        #expect(posts() == 6)
    }

    @Test func exportAsksBeforePrintingSecretsOnATerminal() throws {
        let run = try SandboxRun()
        defer { run.stop() }
        let token = try run.login()
        let terminal = Self.on(.terminal(), run.douctl)
        let refused = try terminal.run("auth", "export")
        #expect(refused.status == 2, "\(refused)")
        #expect(!refused.stdoutText.contains(token) && !refused.stderr.contains(token))
        let asked = try terminal.run("auth", "export", "--yes-i-know")
        #expect(asked.status == 0, "\(asked)")
        #expect(asked.stdoutText.contains(token))
        #expect(try Self.on(Self.pipe, run.douctl).run("auth", "export").stdoutText.contains(token), "a pipe gets it")
    }
}
