import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 24 (a person at a terminal) and issue 21's printer, through the built binary
/// against the sandbox or a slow server on 127.0.0.1. What douctl decides on a terminal
/// (which view, widths, colours, NO_COLOR, summaries, escaping, the done line) runs in
/// process on injected terminal facts (DouctlCommandsTests' TerminalViewInProcessTests);
/// here, a real pseudo-terminal (`script`) only for what only one shows: the kernel's width
/// and isatty reaching douctl, and redraws on a real screen. Views asked for with
/// `--format text` run in a pipe.
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

    /// A real terminal 40 columns wide (TIOCGWINSZ, isatty): the timeline is a feed wrapped
    /// to its width, coloured unless NO_COLOR says; JSON asked for is coloured like jq's.
    @Test func aRealTerminalGetsTheViewAtItsWidthInColour() throws {
        let fixture = try SandboxFixture()
        defer { fixture.stop() }
        try fixture.login()
        #expect(try fixture.douctl.run("shuo", "post", Self.longText).status == 0)
        let (raw, lines) = try screen(fixture, "shuo timeline --count 3")
        #expect(!raw.contains("\"text\""), "a view, not JSON: \(raw)")
        let header = try #require(lines.first { $0.contains("@ahbei") }, "\(lines)")
        #expect(header.contains("just now"))
        // The text is wrapped within 40 columns, 中文 counted as two.
        #expect(lines.allSatisfy { Self.width($0) <= 40 }, "\(lines)")
        let start = try #require(lines.firstIndex(of: header))
        let body = lines[(start + 1)...].prefix { !$0.hasPrefix("♥") }.joined()
        #expect(body.replacingOccurrences(of: " ", with: "") == Self.longText.replacingOccurrences(of: " ", with: ""), "\(lines)")
        // Bold names, dim times; none with NO_COLOR.
        #expect(raw.contains("\u{1B}[1m") && raw.contains("\u{1B}[2m"), "\(raw)")
        #expect(!(try screen(fixture, "shuo timeline --count 1", environment: ["NO_COLOR": "1"]).raw.contains("\u{1B}[1m")))
        let json = try screen(fixture, "user me --json").raw
        #expect(json.contains("\u{1B}[34;1m\"uid\"\u{1B}[0m") && json.contains("\u{1B}[0;32m\"ahbei\""), "\(json)")
    }

    /// In a pipe: exactly the JSON it always had; the views when asked for, uncoloured.
    @Test func aPipeGetsTheJSONItAlwaysHadAndTheViewsWhenAsked() throws {
        let fixture = try SandboxFixture()
        defer { fixture.stop() }
        try fixture.login()
        #expect(try fixture.douctl.run("shuo", "post", "中文 and text").status == 0)
        let piped = try fixture.douctl.run("shuo", "timeline")
        #expect(piped.status == 0, "\(piped)")
        #expect(!piped.stdoutText.contains("\u{1B}"))
        #expect(piped.stdoutText == (try fixture.douctl.run("shuo", "timeline", "--json").stdoutText))
        #expect(!piped.stdoutText.dropLast().contains("\n"), "compact: \(piped.stdoutText)")
        _ = try JSONParser.parse(Array(piped.stdoutText.utf8))
        let me = try fixture.douctl.run("user", "me", "--format", "text")
        #expect(me.stdoutText.hasPrefix("阿北 @ahbei"), "\(me)")
        #expect(!me.stdoutText.contains("\u{1B}"))
        #expect(try fixture.douctl.run("user", "me", "--json", "--color", "always").stdoutText.contains("\u{1B}[34;1m\"id\""))
        let status = Screen(try fixture.douctl.run("auth", "status", "--format", "text", "--color", "never").stdoutText).lines
        #expect(status.contains { $0.hasPrefix("profile") && $0.hasSuffix("sandbox") }, "\(status)")
        #expect(status.contains { $0.hasPrefix("logged_in") && $0.hasSuffix("true") }, "\(status)")
        let profiles = Screen(try fixture.douctl.run("profile", "list", "--format", "text").stdoutText).lines
        #expect(profiles.first?.hasPrefix("NAME") == true, "\(profiles)")
        #expect(profiles.contains { $0.hasPrefix("sandbox ") }, "\(profiles)")
    }

    /// Issue 21: `upload --parallel 2 -v` of 3 files to a slow server, stdout and stderr on
    /// one real terminal. Before, progress redraws erased result lines (1 of 4 stayed) and
    /// `-v` lines written from the workers landed where the next redraw erased them, leaving
    /// bars among them; now every result and log line stays, no progress row is left
    /// behind, and the 中文 names keep the columns.
    @Test func resultAndVerboseLinesSurviveTheProgressDisplay() throws {
        let (files, lines) = try uploadToASlowServerOnATerminal(["第一个文件.bin", "second.bin", "第三.bin"], megabytes: 2, options: ["-v", "--no-retry"])
        for file in files {
            #expect(lines.contains("{\"file\":\"\(file)\",\"ok\":true,\"reply\":{}}"), "\(file) on screen: \(lines)")
        }
        #expect(lines.filter { $0.hasPrefix("> POST ") }.count == 3, "each request's -v line stays on screen: \(lines)")
        #expect(lines.filter { $0.hasPrefix("< HTTP/") || $0.hasPrefix("< 200") }.count >= 3, "each reply's -v line stays on screen: \(lines)")
        // A bar is only ever the live bottom of the screen: none is left behind.
        #expect(!lines.contains { $0.contains("ETA") || $0.contains("/s ") || $0.hasSuffix("/s") }, "a stale progress row: \(lines)")
        let done = lines.filter { $0.contains("done, ") }
        #expect(done.count == 3, "\(lines)")
        // Names in 24 columns: "done" starts in the same column on every line.
        let columns = done.map { line in line.range(of: "  done, ").map { Self.width(String(line[..<$0.lowerBound])) } ?? -1 }
        #expect(columns == [24, 24, 24], "\(done)")
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

    /// Issue 21: the done line counts the bytes the bar counted, so the two never disagree;
    /// issue 40: both count the file (5 B), not the multipart body around it.
    @Test func theDoneLineCountsWhatTheBarCounted() throws {
        let server = try TestServer { _ in .bytes(200, Array("{}".utf8), contentType: "application/json") }
        let file = try TemporaryDirectory.file(named: "tiny.txt", bytes: Array("hello".utf8))
        let result = try Douctl().run("upload", file, "--to", "/u", "--api-base", server.baseURL, "--progress", "always")
        #expect(result.status == 0, "\(result)")
        let lines = result.stderr.split(separator: "\n").map(String.init)
        let bar = try #require(lines.first { $0.contains(" / ") }, "\(lines)")
        let total = try #require(bar.components(separatedBy: " / ").last?.components(separatedBy: "  ").first)
        #expect(total == "5 B", "the file, not the body: \(bar)")
        #expect(lines.last?.contains("done, \(total) in") == true, "\(lines)")
    }

    /// Issue 24: upload and shuo delete summaries read as text (on a terminal, or asked
    /// for); a pipe keeps the JSON lines.
    @Test func uploadAndDeleteSummariesReadAsText() throws {
        let fixture = try SandboxFixture()
        defer { fixture.stop() }
        try fixture.login()
        let server = try TestServer { _ in .bytes(200, Array("{}".utf8), contentType: "application/json") }
        let file = try TemporaryDirectory.file(named: "图片.bin", bytes: Array("hello".utf8))
        let upload = try fixture.douctl.run("upload", file, "--to", "/u", "--api-base", server.baseURL, "--format", "text", "--color", "never")
        #expect(upload.stdoutText == "uploaded \(file)\n", "\(upload)")
        let id = try #require(try fixture.douctl.run("shuo", "post", "要删掉的").json()["id"]?.scalarText)
        let deleted = try fixture.douctl.run("shuo", "delete", id, "--format", "text", "--color", "never")
        #expect(deleted.stdoutText == "deleted \(id)\n", "\(deleted)")
        let piped = try fixture.douctl.run("upload", file, "--to", "/u", "--api-base", server.baseURL)
        #expect(piped.stdoutText == "{\"file\":\"\(file)\",\"ok\":true,\"reply\":{}}\n")
    }

    /// `download` says what it saved where as text; in a pipe, the JSON line as always.
    @Test func downloadSummaryReadsAsText() throws {
        let server = try TestServer { _ in .bytes(200, Array("hello".utf8), contentType: "application/octet-stream") }
        let directory = try TemporaryDirectory()
        let shown = try Douctl().run("download", "\(server.baseURL)/files/图片.bin", "-d", directory.path, "--format", "text", "--color", "never")
        #expect(shown.stdoutText == "downloaded \(directory.path)/图片.bin\n", "\(shown)")
        let piped = try Douctl().run("download", "\(server.baseURL)/files/again.bin", "-d", directory.path)
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
        let shown = try douctl.run("shuo", "get", "1", "--format", "text", "--color", "never")
        #expect(shown.status == 0, "\(shown)")
        #expect(!shown.stdoutText.contains("\u{1B}"), "\(shown)")
        #expect(shown.stdoutText.contains("evil^[[8m @x"), "\(shown)")
        #expect(shown.stdoutText.contains("hi^[[2J^[]0;pwned^G there"), "\(shown)")
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

    /// A pipe gets the status's JSON and nothing else, whatever the terminal would say (the
    /// terminal that says nothing, and gets the pictures named, runs in process).
    @Test func aPipeGetsJSONWhateverTheTerminalSays() throws {
        let (fixture, id) = try postedPicture()
        defer { fixture.stop() }
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
