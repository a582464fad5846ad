import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 24 (a person at a terminal) and issue 21's printer, through the built binary on a
/// real pseudo-terminal (`script`) against the sandbox or a slow server on 127.0.0.1.
@Suite("Terminal views, colour and the printer")
struct TerminalViewTests {
    static let longText = "今天天气很好，我们去公园散步吧。路上看到很多人在放风筝，孩子们笑得很开心。The weather is lovely."

    /// Runs `douctl ARGS` on a terminal COLUMNS wide; returns the screen's rows.
    func screen(_ fixture: SandboxFixture, _ arguments: String, columns: Int = 40, environment: [String: String] = [:]) throws -> (raw: String, lines: [String]) {
        var env = fixture.douctl.environment
        env.merge(environment) { $1 }
        let raw = try runUnderScript("stty cols \(columns) rows 50 2>/dev/null; \(Douctl.binary) \(arguments)", environment: env)
        return (raw, Screen(raw).lines)
    }

    static func width(_ text: String) -> Int {
        text.unicodeScalars.reduce(0) { total, scalar in
            let wide = (0x2E80...0x9FFF).contains(scalar.value) || (0xFF00...0xFF60).contains(scalar.value)
            return total + (wide ? 2 : 1)
        }
    }

    @Test func timelineOnATerminalIsAFeedWrappedByDisplayWidth() throws {
        let fixture = try SandboxFixture()
        defer { fixture.stop() }
        try fixture.login()
        #expect(try fixture.douctl.run("shuo", "post", Self.longText).status == 0)
        let (raw, lines) = try screen(fixture, "shuo timeline --count 3 --color never")
        #expect(!raw.contains("\"text\""), "a view, not JSON: \(raw)")
        #expect(!raw.contains("\u{1B}["), "--color never")
        let header = try #require(lines.first { $0.contains("@ahbei") }, "\(lines)")
        #expect(header.contains("just now"))
        // The text is wrapped within 40 columns, 中文 counted as two.
        #expect(lines.allSatisfy { Self.width($0) <= 40 }, "\(lines)")
        let start = try #require(lines.firstIndex(of: header))
        let body = lines[(start + 1)...].prefix { !$0.hasPrefix("♥") }.joined()
        #expect(body.replacingOccurrences(of: " ", with: "") == Self.longText.replacingOccurrences(of: " ", with: ""), "\(lines)")
        #expect(lines.contains { $0.hasPrefix("♥ 0  💬 0") })
        // On the terminal with colour: bold names, dim times.
        let colored = try screen(fixture, "shuo timeline --count 1").raw
        #expect(colored.contains("\u{1B}[1m"), "\(colored)")
        #expect(colored.contains("\u{1B}[2m"), "\(colored)")
        #expect(!(try screen(fixture, "shuo timeline --count 1", environment: ["NO_COLOR": "1"]).raw.contains("\u{1B}[1m")))
    }

    @Test func aPipeGetsExactlyTheJSONItAlwaysHad() throws {
        let fixture = try SandboxFixture()
        defer { fixture.stop() }
        try fixture.login()
        #expect(try fixture.douctl.run("shuo", "post", "中文 and text").status == 0)
        for command in [["shuo", "timeline"], ["user", "me"], ["user", "search", "a"], ["auth", "status", "--no-check"]] {
            let piped = try fixture.douctl.run(command)
            #expect(piped.status == 0, "\(piped)")
            #expect(!piped.stdoutText.contains("\u{1B}"))
            // Compact JSON, one document, as before: the same bytes as asking for JSON.
            #expect(piped.stdoutText == (try fixture.douctl.run(command + ["--json"]).stdoutText))
            #expect(piped.stdoutText == (try fixture.douctl.run(command + ["--format", "json"]).stdoutText))
            #expect(!piped.stdoutText.dropLast().contains("\n"), "compact: \(piped.stdoutText)")
            _ = try JSONParser.parse(Array(piped.stdoutText.utf8))
        }
        // The view can be asked for in a pipe, without colour unless asked.
        let text = try fixture.douctl.run("user", "me", "--format", "text")
        #expect(text.stdoutText.hasPrefix("阿北 @ahbei"), "\(text)")
        #expect(!text.stdoutText.contains("\u{1B}"))
        #expect(try fixture.douctl.run("user", "me", "--json", "--color", "always").stdoutText.contains("\u{1B}[34;1m\"id\""))
    }

    @Test func jsonOnATerminalIsColouredLikeJqUnlessSwitchedOff() throws {
        let fixture = try SandboxFixture()
        defer { fixture.stop() }
        try fixture.login()
        let key = "\u{1B}[34;1m\"uid\"\u{1B}[0m"
        let json = try screen(fixture, "user me --json").raw
        #expect(json.contains(key), "\(json)")
        #expect(json.contains("\u{1B}[0;32m\"ahbei\""), "\(json)")
        let api = try screen(fixture, "api /v2/user/~me").raw
        #expect(api.contains(key), "\(api)")
        // An array streams through the incremental reformatter, coloured as it goes.
        let list = try TestServer(json: #"[{"uid":"ahbei"},{"uid":"x"}]"#)
        let streamed = try screen(fixture, "api \(list.baseURL)/list").raw
        #expect(streamed.contains(key) && streamed.contains("\u{1B}[0;32m\"x\""), "\(streamed)")
        for (arguments, environment) in [("user me --json", ["NO_COLOR": "1"]), ("user me --json --color never", [:]), ("api /v2/user/~me", ["NO_COLOR": "x"])] {
            let plain = try screen(fixture, arguments, environment: environment).raw
            #expect(plain.contains("\"uid\": \"ahbei\""), "pretty JSON: \(plain)")
            #expect(!plain.contains("\u{1B}["), "\(arguments) \(environment): \(plain)")
        }
        // --color always wins over NO_COLOR.
        #expect(try screen(fixture, "user me --json --color always", environment: ["NO_COLOR": "1"]).raw.contains(key))
    }

    @Test func authStatusProfileListAndUsersReadAsText() throws {
        let fixture = try SandboxFixture()
        defer { fixture.stop() }
        try fixture.login()
        let status = try screen(fixture, "auth status --color never", columns: 80).lines
        #expect(status.contains { $0.hasPrefix("profile") && $0.hasSuffix("sandbox") }, "\(status)")
        #expect(status.contains { $0.hasPrefix("logged_in") && $0.hasSuffix("true") }, "\(status)")
        let profiles = try screen(fixture, "profile list --color never", columns: 120).lines
        #expect(profiles.first?.hasPrefix("NAME") == true, "\(profiles)")
        #expect(profiles.contains { $0.hasPrefix("sandbox ") }, "\(profiles)")
        let me = try screen(fixture, "user me --color never", columns: 60).lines
        #expect(me.first?.hasPrefix("阿北 @ahbei") == true, "\(me)")
    }

    /// Issue 21: `upload --parallel 2` of 4 files to a slow server, stdout and stderr on one
    /// terminal: before, progress redraws erased result lines (1 of 4 stayed); now all 4
    /// stay, no progress row is left behind, and the 中文 names keep the columns.
    @Test func uploadResultLinesSurviveTheProgressDisplay() throws {
        let (files, lines) = try uploadToASlowServerOnATerminal(["第一个文件.bin", "second.bin", "第三.bin", "fourth.bin"], megabytes: 3)
        for file in files {
            #expect(lines.contains("{\"file\":\"\(file)\",\"ok\":true,\"reply\":{}}"), "\(file) on screen: \(lines)")
        }
        #expect(!lines.contains { $0.contains("ETA") || $0.contains("/s ") || $0.hasSuffix("/s") }, "a stale progress row: \(lines)")
        let done = lines.filter { $0.contains("done, ") }
        #expect(done.count == 4, "\(lines)")
        // Names in 24 columns: "done" starts in the same column on every line.
        let columns = done.map { line in line.range(of: "  done, ").map { Self.width(String(line[..<$0.lowerBound])) } ?? -1 }
        #expect(columns == [24, 24, 24, 24], "\(done)")
    }

    /// Issue 21's one printer: `-v` log lines, written from the upload workers, share stderr
    /// with a live progress display. Before, they were
    /// written around it, so the next redraw (cursor up, erase) landed in the wrong rows: log
    /// lines were overwritten and bars were left behind among them ("one.bin  0 B  0 B/s");
    /// now every line goes through the printer, which draws the progress again below it.
    @Test func verboseLinesSurviveTheProgressDisplay() throws {
        let (_, lines) = try uploadToASlowServerOnATerminal(["one.bin", "two.bin", "three.bin"], megabytes: 2, options: ["-v", "--no-retry"])
        let posts = lines.filter { $0.hasPrefix("> POST ") }
        #expect(posts.count == 3, "each request's -v line stays on screen: \(lines)")
        let replies = lines.filter { $0.hasPrefix("< HTTP/") || $0.hasPrefix("< 200") }
        #expect(replies.count >= 3, "each reply's -v line stays on screen: \(lines)")
        // A bar is only ever the live bottom of the screen: none is left between log lines.
        let bars = lines.filter { $0.hasSuffix("B/s") || $0.contains("ETA") }
        #expect(bars.isEmpty, "stale progress rows among the log lines: \(bars)")
        #expect(lines.filter { $0.contains("done, ") }.count == 3, "\(lines)")
    }

    /// `upload --parallel 2` of files named `names` (`megabytes` each) to a server that takes
    /// 0.6 s a reply, stdout and stderr on one 100-column terminal: the files and the screen.
    func uploadToASlowServerOnATerminal(_ names: [String], megabytes: Int, options: [String] = []) throws -> (files: [String], lines: [String]) {
        let server = try TestServer { _ in
            Thread.sleep(forTimeInterval: 0.6)
            return .bytes(200, Array("{}".utf8), contentType: "application/json")
        }
        let directory = TemporaryDirectory.make(prefix: "printer")
        var files: [String] = []
        for name in names {
            let path = directory + "/" + name
            try Data(repeating: 7, count: megabytes << 20).write(to: URL(fileURLWithPath: path))
            files.append(path)
        }
        let arguments = (["upload"] + files + ["--to", "/u", "--parallel", "2"] + options + ["--api-base", server.baseURL, "--color", "never", "--json"]).joined(separator: " ")
        let raw = try runUnderScript("stty cols 100 2>/dev/null; \(Douctl.binary) \(arguments)", environment: Douctl().environment)
        return (files, Screen(raw).lines)
    }

    /// Issue 21: the done line counts the bytes the bar counted (the multipart body), not
    /// the file's size, so the two never disagree.
    @Test func theDoneLineCountsWhatTheBarCounted() throws {
        let server = try TestServer { _ in .bytes(200, Array("{}".utf8), contentType: "application/json") }
        let file = try TemporaryDirectory.file(named: "tiny.txt", bytes: Array("hello".utf8))
        let result = try Douctl().run("upload", file, "--to", "/u", "--api-base", server.baseURL, "--progress", "always")
        #expect(result.status == 0, "\(result)")
        let lines = result.stderr.split(separator: "\n").map(String.init)
        let bar = try #require(lines.first { $0.contains(" / ") }, "\(lines)")
        let total = try #require(bar.components(separatedBy: " / ").last?.components(separatedBy: "  ").first)
        #expect(total != "5 B", "the body is larger than the file")
        #expect(lines.last?.contains("done, \(total) in") == true, "\(lines)")
    }

    /// Issue 24: upload and shuo delete summaries read as text on a terminal; a pipe keeps
    /// the JSON lines.
    @Test func uploadAndDeleteSummariesReadAsTextOnATerminal() throws {
        let fixture = try SandboxFixture()
        defer { fixture.stop() }
        try fixture.login()
        let server = try TestServer { _ in .bytes(200, Array("{}".utf8), contentType: "application/json") }
        let file = try TemporaryDirectory.file(named: "图片.bin", bytes: Array("hello".utf8))
        let upload = try screen(fixture, "upload \(file) --to /u --api-base \(server.baseURL) --progress never --color never", columns: 120).lines
        #expect(upload == ["uploaded \(file)"], "\(upload)")
        let id = try #require(try fixture.douctl.run("shuo", "post", "要删掉的").json()["id"]?.scalarText)
        let deleted = try screen(fixture, "shuo delete \(id) --color never").lines
        #expect(deleted == ["deleted \(id)"], "\(deleted)")
        let piped = try fixture.douctl.run("upload", file, "--to", "/u", "--api-base", server.baseURL)
        #expect(piped.stdoutText == "{\"file\":\"\(file)\",\"ok\":true,\"reply\":{}}\n")
    }

    /// `download` on a terminal says what it saved where; in a pipe, the JSON line as always.
    @Test func downloadSummaryReadsAsTextOnATerminal() throws {
        let fixture = try SandboxFixture()
        defer { fixture.stop() }
        let server = try TestServer { _ in .bytes(200, Array("hello".utf8), contentType: "application/octet-stream") }
        let directory = try TemporaryDirectory()
        let shown = try screen(fixture, "download \(server.baseURL)/files/图片.bin -d \(directory.path) --progress never --color never", columns: 120).lines
        #expect(shown == ["downloaded \(directory.path)/图片.bin"], "\(shown)")
        let piped = try fixture.douctl.run("download", "\(server.baseURL)/files/again.bin", "-d", directory.path)
        #expect(try piped.json()["path"]?.stringValue == "\(directory.path)/again.bin", "\(piped)")
        #expect(try piped.json()["sha256"]?.stringValue == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", "\(piped)")
    }

    /// A status whose text carries escape sequences (clear the screen, retitle the window)
    /// is shown with them in caret notation: a server cannot drive the terminal.
    @Test func aHostileStatusCannotDriveTheTerminal() throws {
        let body = #"{"id":1,"text":"hi\u001b[2J\u001b]0;pwned\u0007 there","created_at":"2025-01-01 00:00:00","user":{"uid":"x","screen_name":"evil\u001b[8m"}}"#
        let server = try TestServer { _ in .bytes(200, Array(body.utf8), contentType: "application/json") }
        let douctl = Douctl(environment: ["DOUCTL_TOKEN": "t0ken"])
        try SandboxProfiles.write(base: server.baseURL, in: douctl.configDirectory)
        let raw = try runUnderScript("\(Douctl.binary) shuo get 1 --color never", environment: douctl.environment)
        #expect(!raw.contains("\u{1B}"), "\(raw)")
        #expect(raw.contains("evil^[[8m @x"), "\(raw)")
        #expect(raw.contains("hi^[[2J^[]0;pwned^G there"), "\(raw)")
    }
}

/// Issue 24: `shuo get --images` draws a status's pictures where the terminal says it can,
/// names them elsewhere, and sends nothing but JSON into a pipe.
@Suite("inline pictures")
struct InlinePictureTests {
    func postedPicture() throws -> (SandboxFixture, String) {
        let fixture = try SandboxFixture()
        try fixture.login()
        let picture = try TemporaryDirectory.file(named: "图.png", bytes: PNGFixture.bytes)
        let posted = try fixture.douctl.run("shuo", "post", "有图", "--image", picture)
        let id = try #require(try posted.json()["id"]?.scalarText, "\(posted)")
        return (fixture, id)
    }

    @Test func anITerm2TerminalGetsThePictureInline() throws {
        let (fixture, id) = try postedPicture()
        defer { fixture.stop() }
        var environment = fixture.douctl.environment
        environment["TERM_PROGRAM"] = "iTerm.app"
        let raw = try runUnderScript("\(Douctl.binary) shuo get \(id) --images --color never", environment: environment)
        let start = try #require(raw.range(of: "\u{1B}]1337;File="), "no inline picture: \(raw)")
        let rest = raw[start.upperBound...]
        let payload = try #require(rest.split(separator: ":", maxSplits: 1).last?.split(separator: "\u{07}").first)
        let bytes = try #require(Base64.decode(String(payload)))
        #expect(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]), "a PNG was drawn")
        #expect(raw.contains("有图"), "the status's view comes first: \(raw)")
    }

    @Test func aTerminalThatSaysNothingGetsTheNamesAndAPipeGetsJSON() throws {
        let (fixture, id) = try postedPicture()
        defer { fixture.stop() }
        var environment = fixture.douctl.environment
        environment["TERM_PROGRAM"] = nil
        environment["TERM"] = "xterm-256color"
        let raw = try runUnderScript("\(Douctl.binary) shuo get \(id) --images --color never", environment: environment)
        #expect(!raw.contains("\u{1B}]1337") && !raw.contains("\u{1B}_G"), "\(raw)")
        #expect(raw.contains("shows no inline pictures"), "\(raw)")
        // A pipe gets the status's JSON and nothing else, whatever the terminal would say.
        let piped = try fixture.douctl.run(["shuo", "get", id, "--images"], environment: ["TERM_PROGRAM": "iTerm.app", "TERM": "xterm-kitty"])
        #expect(piped.status == 0, "\(piped)")
        #expect(try piped.json()["text"]?.stringValue == "有图")
        #expect(!piped.stdoutText.contains("\u{1B}"))
    }
}

/// A picture server that never ends: douctl reads no more than it would draw (8 MiB), names
/// the picture, and still shows the status.
@Suite("inline pictures from a hostile server")
struct HostilePictureTests {
    @Test func aPictureThatNeverEndsIsNamedNotHeld() throws {
        let sent = LockedValue<Int64>(0)
        let flood = try HostileListener { connection, listener in
            guard HostileListener.send(connection, "HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: \(Int64(5) << 30)\r\n\r\n") else { return }
            let block: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 0, count: 256 * 1024 - 8)
            while !listener.isStopped {
                guard (try? LoopbackSocket.sendAll(connection, block)) != nil else { return }
                sent.withLock { $0 += Int64(block.count) }
            }
        }
        defer { flood.stop() }
        let status = #"{"id":1,"text":"有图","created_at":"2025-01-01 00:00:00","user":{"uid":"x","screen_name":"x"},"attachments":[{"media":[{"type":"image","src":"\#(flood.baseURL)/big.png"}]}]}"#
        let server = try TestServer { _ in .bytes(200, Array(status.utf8), contentType: "application/json") }
        let douctl = Douctl(environment: ["DOUCTL_TOKEN": "t0ken"])
        try SandboxProfiles.write(base: server.baseURL, in: douctl.configDirectory)
        var environment = douctl.environment
        environment["TERM_PROGRAM"] = "iTerm.app"
        let raw = try runUnderScript("\(Douctl.binary) shuo get 1 --images --color never; echo \"exit=$?\"", environment: environment)
        #expect(raw.contains("有图"), "\(raw)")
        #expect(raw.contains("larger than 8 MiB"), "\(raw)")
        #expect(!raw.contains("\u{1B}]1337"), "nothing drawn")
        #expect(raw.contains("exit=0"), "\(raw)")
        #expect(sent.value < 64 << 20, "douctl stopped reading after 8 MiB: \(sent.value) bytes went out")
    }
}
