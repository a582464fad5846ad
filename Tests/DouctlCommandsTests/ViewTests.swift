#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import DouctlCommands
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Testing

/// Issue 24: the human views, colour and display widths, as pure functions; and issue 21's
/// printer: progress and result lines on one terminal.
@Suite("Views, colour and the terminal printer")
struct ViewTests {
    static func strip(_ text: String) -> String {
        var out = ""
        var characters = Array(text)[...]
        while let character = characters.popFirst() {
            if character == "\u{1B}" {
                while let next = characters.popFirst(), !next.isLetter {}
                continue
            }
            out.append(character)
        }
        return out
    }

    // MARK: - display width

    @Test func displayWidthCountsWideCharactersAsTwoColumns() {
        #expect(DisplayWidth.of("abc") == 3)
        #expect(DisplayWidth.of("中文ab") == 6)
        #expect(DisplayWidth.of("ｆｕｌｌ") == 8)
        #expect(DisplayWidth.of("e\u{301}") == 1)
        #expect(DisplayWidth.of("👍") == 2)
        #expect(DisplayWidth.of("你好，世界！") == 12)
    }

    /// Issue 33: emoji sequences. Each row: the cluster's code points, its columns as one
    /// glyph (kitty, WezTerm, Ghostty, foot, iTerm2), and code point by code point as tmux
    /// 3.3a lays it out (measured: print it in a pane, read #{cursor_x}).
    static let emojiWidths: [(scalars: [UInt32], graphemes: Int, tmux33: Int)] = [
        ([0x1F44D], 2, 2),                                  // 👍
        ([0x1F44D, 0x1F3FD], 2, 4),                         // 👍🏽 skin-tone modifier
        ([0x1F3FD], 2, 2),                                  // a lone modifier
        ([0x2764], 1, 1),                                   // ❤ text presentation
        ([0x2764, 0xFE0F], 2, 1),                           // ❤️ VS16
        ([0x263A, 0xFE0F], 2, 1),                           // ☺️
        ([0x1F1E8, 0x1F1F3], 2, 2),                         // 🇨🇳 regional-indicator pair
        ([0x1F1E8], 1, 1),                                  // a lone regional indicator
        ([0x1F468, 0x200D, 0x1F469, 0x200D, 0x1F467], 2, 2), // 👨‍👩‍👧 ZWJ
        ([0x1F469, 0x200D, 0x1F4BB], 2, 2),                 // 👩‍💻
        ([0x1F3F3, 0xFE0F, 0x200D, 0x1F308], 2, 1),         // 🏳️‍🌈
        ([0x23, 0xFE0F, 0x20E3], 2, 1),                     // #️⃣ keycap
        ([0x65, 0x301], 1, 1),                              // é, combining
        ([0x1F600, 0xFE0E], 2, 2),                          // 😀︎ VS15 (kept wide: never under-count)
        ([0x1100, 0x1161, 0x11A8], 2, 2),                   // 각 from jamo
        ([0x2B50], 2, 2),                                   // ⭐
        ([0x1FAE8], 2, 2),                                  // 🫨 (Unicode 15)
    ]

    @Test func emojiSequencesCountAsTheTerminalDrawsThem() {
        for row in Self.emojiWidths {
            let text = String(String.UnicodeScalarView(row.scalars.compactMap(Unicode.Scalar.init)))
            #expect(text.count == 1, "one cluster: \(row.scalars)")
            #expect(DisplayWidth.of(text, .graphemes) == row.graphemes, "\(text) \(row.scalars.map { String($0, radix: 16) })")
            #expect(DisplayWidth.of(text, .codePoints) == row.tmux33, "\(text) \(row.scalars.map { String($0, radix: 16) })")
        }
        // Wrapping follows the model: 30 thumbs with a skin tone at 50 columns.
        let thumbs = String(repeating: "👍🏽", count: 30)
        #expect(DisplayWidth.wrap(thumbs, width: 50, .codePoints).map(\.count) == [12, 12, 6])
        #expect(DisplayWidth.wrap(thumbs, width: 50, .graphemes).map(\.count) == [25, 5])
        #expect(DisplayWidth.truncate("👍🏽👍🏽👍🏽", to: 6, .codePoints) == "👍🏽…")
    }

    @Test func theWidthModelComesFromWhatTheTerminalSaysOfItself() {
        #expect(DisplayWidth.Model(environment: [:]) == .graphemes)
        #expect(DisplayWidth.Model(environment: ["TERM_PROGRAM": "WezTerm"]) == .graphemes)
        #expect(DisplayWidth.Model(environment: ["TERM_PROGRAM": "tmux", "TERM_PROGRAM_VERSION": "3.3a"]) == .codePoints)
        #expect(DisplayWidth.Model(environment: ["TERM_PROGRAM": "tmux", "TERM_PROGRAM_VERSION": "3.4"]) == .graphemes)
        #expect(DisplayWidth.Model(environment: ["TERM_PROGRAM": "tmux", "TERM_PROGRAM_VERSION": "next-3.6"]) == .graphemes)
        #expect(DisplayWidth.Model(environment: ["TERM_PROGRAM": "tmux"]) == .codePoints, "no version: an old one")
        #expect(DisplayWidth.Model(environment: ["TMUX": "/tmp/tmux-0/default,1,0"]) == .codePoints, "tmux before 3.2")
        // The feed wraps by it: a status of thumbs in tmux 3.3a, 50 columns.
        let status: JSON = ["id": 1, "text": .string(String(repeating: "👍🏽", count: 30))]
        let lines = StatusView.lines(status, width: 50, now: 0, style: TextStyle(enabled: false, widths: .codePoints))
        #expect(lines.dropFirst().prefix(3).map(\.count) == [12, 12, 6], "\(lines)")
    }

    @Test func wrapKeepsEveryLineWithinTheWidthByColumns() {
        let chinese = String(repeating: "豆瓣广播", count: 10) // 40 characters, 80 columns
        let lines = DisplayWidth.wrap(chinese, width: 20)
        #expect(lines.count == 4)
        #expect(lines.allSatisfy { DisplayWidth.of($0) == 20 })
        #expect(lines.joined() == chinese)
        // Latin text breaks at spaces; a mixed line never passes the width.
        let mixed = DisplayWidth.wrap("hello 世界 this is a longer sentence 中文也在这里混合", width: 16)
        #expect(mixed.allSatisfy { DisplayWidth.of($0) <= 16 }, "\(mixed)")
        #expect(mixed.first == "hello 世界 this")
        #expect(DisplayWidth.wrap("a\nb", width: 10) == ["a", "b"])
    }

    @Test func truncationAndPaddingAreByColumns() {
        #expect(DisplayWidth.truncate("中文中文中文", to: 7) == "中文中…")
        #expect(DisplayWidth.pad("照片.jpg", to: 10) == "照片.jpg  ")
        #expect(DisplayWidth.of(DisplayWidth.pad("很长很长很长的中文文件名.png", to: 12)) == 12)
    }

    // MARK: - feed

    static let now = 1_764_000_000.0 // 2025-11-24T16:00:00Z = 2025-11-25 00:00:00 in Beijing

    static let status: JSON = [
        "id": 42, "title": "说：", "text": "今天天气很好，我们去公园散步吧。The weather is lovely today.",
        "created_at": "2025-11-24 23:55:00", "like_count": 3, "comments_count": 1, "reshared_count": 0,
        "attachments": [["type": "image", "media": [["type": "image", "src": "http://s/m/p1.jpg", "original_src": "http://s/raw/p1.jpg"]]]],
        "user": ["id": "1000001", "uid": "ahbei", "screen_name": "阿北"],
    ]

    @Test func aStatusReadsAsAFeedEntry() {
        let lines = StatusView.lines(Self.status, width: 30, now: Self.now, style: .plain)
        #expect(lines.first == "阿北 @ahbei · 5m ago #42")
        #expect(lines.contains("[picture] http://s/raw/p1.jpg"))
        #expect(lines.contains("♥ 3  💬 1  ⟳ 0"))
        #expect(lines.last == "")
        let text = lines[1..<(lines.count - 3)]
        #expect(text.allSatisfy { DisplayWidth.of($0) <= 30 }, "\(text)")
        #expect(text.joined().replacingAll(" ", with: "") == "今天天气很好，我们去公园散步吧。Theweatherislovelytoday.")
    }

    @Test func aReshareShowsTheOriginalIndented() {
        var reshare = JSONObject([("id", 43), ("title", "转播："), ("text", ""), ("created_at", "2025-11-24 22:00:00"),
                                  ("user", ["uid": "sophia", "screen_name": "Sophia"])])
        reshare["reshared_status"] = Self.status
        let lines = StatusView.lines(.object(reshare), width: 40, now: Self.now, style: .plain)
        #expect(lines[0] == "Sophia @sophia · 2h ago #43 转播：")
        #expect(lines[1] == "  │ 阿北 @ahbei · 5m ago #42")
        #expect(lines.contains("  │ [picture] http://s/raw/p1.jpg"))
    }

    @Test func aCodingTweetReadsTooAndColourIsRestrained() {
        let tweet: JSON = ["id": 7, "content": "<p>冒泡 &amp; <b>hi</b></p>", "created_at": .number("1763996400000"),
                           "likes": 2, "comments": 0, "owner": ["global_key": "coder", "name": "码农"]]
        let plain = StatusView.lines(tweet, width: 40, now: Self.now, style: .plain)
        #expect(plain == ["码农 @coder · 1h ago #7", "冒泡 & hi", "♥ 2  💬 0", ""])
        let colored = StatusView.lines(tweet, width: 40, now: Self.now, style: TextStyle(enabled: true))
        #expect(colored[0].hasPrefix("\u{1B}[1m码农\u{1B}[0m \u{1B}[2m@coder"))
        #expect(colored.map(Self.strip) == plain)
    }

    /// Issue 33: a Coding tweet's picture and link targets were dropped; Douban's view shows both.
    @Test func aCodingTweetShowsItsPicturesAndLinkTargets() {
        let content = #"<p>看图 <img src="https://c.test/static/p1.png?a=1&amp;b=2" alt="p"> 和 <a href="https://example.com/x" target="_blank">一个链接</a>，"#
            + #"<a href="/u/devmei">@devmei</a> 与 <a href='https://example.com/y'>https://example.com/y</a></p>"#
        let tweet: JSON = ["id": 8, "content": .string(content), "owner": ["global_key": "coder", "name": "码农"]]
        let lines = StatusView.lines(tweet, width: 60, now: Self.now, style: .plain)
        #expect(lines == [
            "码农 @coder #8",
            "看图  和 一个链接，@devmei 与 https://example.com/y",
            "[picture] https://c.test/static/p1.png?a=1&b=2",
            "[link] 一个链接 https://example.com/x",
            "[link] https://example.com/y",
            "",
        ], "\(lines)")
        // A Markdown picture (as Coding stores what was posted) counts too, as --save-images finds it.
        let markdown: JSON = ["id": 9, "content": "hi ![p](https://c.test/p2.jpg)"]
        #expect(StatusView.lines(markdown, width: 60, now: Self.now, style: .plain).contains("[picture] https://c.test/p2.jpg"))
    }

    @Test func agesAreRelativeThenDates() {
        #expect(Age.describe(.string("2025-11-25 00:00:00"), now: Self.now) == "just now")
        #expect(Age.describe(.string("2025-11-21 00:00:00"), now: Self.now) == "4d ago")
        #expect(Age.describe(.string("2024-01-02 08:00:00"), now: Self.now) == "2024-01-02")
        #expect(Age.describe(.string("not a date"), now: Self.now) == "not a date")
    }

    @Test func usersReadAsACardOrRows() {
        let user: JSON = ["id": "1000001", "uid": "ahbei", "name": "阿北", "desc": "豆瓣的创始人", "loc_name": "北京",
                          "alt": "https://www.douban.com/people/ahbei/"]
        #expect(UserView.card(user, width: 40, style: .plain) == [
            "阿北 @ahbei #1000001", "豆瓣的创始人", "北京", "https://www.douban.com/people/ahbei/",
        ])
        let row = UserView.row(["screen_name": "阿北", "uid": "ahbei", "description": .string(String(repeating: "很长的介绍", count: 10))], width: 30, style: .plain)
        #expect(DisplayWidth.of(row) <= 30, "\(row)")
        #expect(row.hasPrefix("阿北 @ahbei  很长"))
        #expect(HumanView.users.document(["users": [user, user]], ViewContext(width: 40, now: 0, style: .plain))?.count == 2)
    }

    @Test func tablesLineUpWithChineseCells() {
        let rows: [JSON] = [["name": "默认", "default": true], ["name": "work", "default": false]]
        let lines = FieldsView.table(rows, columns: ["name", "default"], style: .plain)
        #expect(lines == ["NAME  DEFAULT", "默认  yes", "work  no"])
    }

    @Test func serverTextCannotDriveTheTerminal() {
        let hostile: JSON = ["id": 1, "text": "hi\u{1B}]0;pwned\u{07}\u{1B}[2J\u{9B}31m\nnext\tline",
                             "user": ["uid": "x\u{1B}[8m", "screen_name": "evil\u{1B}[1A"]]
        let lines = StatusView.lines(TerminalText.shown(hostile), width: 80, now: 0, style: .plain)
        #expect(!lines.joined().unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x9B }, "\(lines)")
        #expect(lines[0] == "evil^[[1A @x^[[8m #1")
        #expect(lines[1] == "hi^[]0;pwned^G^[[2J\u{FFFD}31m")
        #expect(lines[2] == "next line", "a tab is a space to wrap at")
    }

    @Test func viewsRunInProcessForWalksAndKeepJSONForSlurp() throws {
        let run = try SandboxRun()
        defer { run.stop() }
        try run.login()
        #expect(try run.douctl.run("shuo", "post", "走一遍").status == 0)
        var capped = run.douctl
        capped.configure = { $0.pageCap = 2 }
        let feed = try capped.run("shuo", "timeline", "--all", "--count", "2", "--format", "text")
        #expect(feed.stdoutText.hasPrefix("阿北 @ahbei · just now"), "\(feed)")
        #expect(feed.stdoutText.contains("\n走一遍\n"))
        #expect(!feed.stdoutText.contains("{"))
        let slurp = try capped.run("shuo", "timeline", "--all", "--slurp", "--count", "2", "--format", "text")
        #expect(slurp.stdoutText.hasPrefix("["), "\(slurp)")
        let colored = try run.douctl.run("user", "me", "--color", "always")
        #expect(colored.stdoutText.hasPrefix("\u{1B}[1;39m{\u{1B}[0m\u{1B}[34;1m\"id\""), "\(colored)")
        #expect(try run.douctl.run("user", "me", "--color", "always", "--format", "text").stdoutText.hasPrefix("\u{1B}[1m阿北\u{1B}[0m"))
    }

    // MARK: - colour

    @Test func jsonIsColouredLikeJq() {
        let json = Array(#"{"a":"x","b":[1,null,true],"c":{"d":-2.5e3}}"#.utf8)
        let colored = String(decoding: JSONColorizer.colorize(json), as: UTF8.self)
        let bold = "\u{1B}[1;39m", reset = "\u{1B}[0m"
        #expect(colored.hasPrefix("\(bold){\(reset)\u{1B}[34;1m\"a\"\(reset):\u{1B}[0;32m\"x\"\(reset),\u{1B}[34;1m\"b\"\(reset):\(bold)[\(reset)\u{1B}[0;39m1\(reset),\u{1B}[0;90mnull\(reset),\u{1B}[0;39mtrue\(reset)"))
        #expect(Self.strip(colored) == String(decoding: json, as: UTF8.self))
        // Strings with escapes and keys inside arrays of objects; pieces give the same bytes as the whole.
        let tricky = Array("[{\"k\\\"\":\"v,\\\\\"},{\"中\":[]}]\n".utf8)
        var pieces = JSONColorizer()
        var chunked: [UInt8] = []
        for byte in tricky { chunked += pieces.feed([byte]) }
        chunked += pieces.finish()
        #expect(chunked == JSONColorizer.colorize(tricky))
        #expect(String(decoding: chunked, as: UTF8.self).contains("\u{1B}[34;1m\"中\"\u{1B}[0m"))
        #expect(Self.strip(String(decoding: chunked, as: UTF8.self)) == String(decoding: tricky, as: UTF8.self))
    }

    @Test func colourSwitches() {
        #expect(ColorChoice.enabled(.auto, isTerminal: true, environment: [:]))
        #expect(!ColorChoice.enabled(.auto, isTerminal: false, environment: [:]))
        #expect(!ColorChoice.enabled(.auto, isTerminal: true, environment: ["NO_COLOR": "1"]))
        #expect(ColorChoice.enabled(.auto, isTerminal: true, environment: ["NO_COLOR": ""]), "an empty NO_COLOR is unset")
        #expect(ColorChoice.enabled(.always, isTerminal: false, environment: ["NO_COLOR": "1"]))
        #expect(!ColorChoice.enabled(.never, isTerminal: true, environment: [:]))
    }

    // MARK: - the terminal printer

    @Test func progressLinesFitTheirColumnsWithChineseNames() {
        let line = ProgressDisplay.layout(name: "/tmp/我的照片和视频合集第一部分.mp4", pieces: ["1.0 MiB / 4.0 MiB", "25%", "1.0 MiB/s", "ETA 0:03"], width: 59)
        #expect(DisplayWidth.of(line) <= 59, "\(line)")
        #expect(DisplayWidth.of(ProgressDisplay.fit("照片.jpg", 24)) == 24)
        #expect(DisplayWidth.of(ProgressDisplay.fit("很长很长很长很长很长很长很长的名字.jpg", 24)) == 24)
    }

    /// Four uploads, two at a time, on one terminal (stdout and stderr the same pipe, as
    /// on a terminal): every result line stays on the screen, no progress row is left.
    @Test func resultLinesAndProgressNeverOverwriteEachOther() throws {
        let ends = try FileIO.makePipe()  // never inherited by a child another test spawns
        let fds = [ends.read, ends.write]
        defer { close(fds[0]) }
        let display = ProgressDisplay(fd: fds[1], style: .redrawInPlace, columns: nil)
        var expected: [String] = []
        for pair in [[0, 1], [2, 3]] {
            for index in pair { display.started(index, name: "文件\(index).bin") }
            for step in 1...3 {
                for index in pair {
                    display.update(index, sent: Int64(step) << 20, total: 3 << 20)
                    usleep(110_000)
                }
            }
            for index in pair {
                display.finished(index, summary: "文件\(index).bin  done")
                let line = "{\"file\":\"文件\(index).bin\",\"ok\":true}"
                expected.append(line)
                try display.emit(Array((line + "\n").utf8), to: fds[1])
            }
        }
        display.stop()
        close(fds[1])
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let got = read(fds[0], &buffer, buffer.count)
            if got <= 0 { break }
            bytes += buffer[0..<got]
        }
        let screen = Screen(String(decoding: bytes, as: UTF8.self)).lines
        for line in expected { #expect(screen.contains(line), "\(screen)") }
        #expect(screen.filter { $0.hasSuffix("done") }.count == 4, "\(screen)")
        #expect(!screen.contains { $0.contains("MiB /") }, "no stale progress row: \(screen)")
    }
}

@Suite("inline picture sequences")
struct InlineImageSequenceTests {
    @Test func theProtocolComesOnlyFromWhatTheTerminalSaysOfItself() {
        typealias G = InlineImages.Graphics
        #expect(InlineImages.graphics(environment: ["TERM": "xterm-kitty"], stdoutIsTerminal: true) == G.kitty)
        #expect(InlineImages.graphics(environment: ["TERM_PROGRAM": "iTerm.app"], stdoutIsTerminal: true) == G.iTerm2)
        #expect(InlineImages.graphics(environment: ["TERM_PROGRAM": "WezTerm"], stdoutIsTerminal: true) == G.iTerm2)
        #expect(InlineImages.graphics(environment: ["TERM_PROGRAM": "iTerm.app"], stdoutIsTerminal: false) == nil, "never into a pipe")
        #expect(InlineImages.graphics(environment: ["TERM": "xterm-kitty", "TMUX": "/tmp/t"], stdoutIsTerminal: true) == nil, "tmux would need pass-through")
        #expect(InlineImages.graphics(environment: ["TERM": "xterm-256color"], stdoutIsTerminal: true) == nil, "never guessed")
    }

    @Test func kittyGetsPNGInChunksAndNothingElse() throws {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 7, count: 5000)
        let drawn = String(decoding: try #require(InlineImages.sequence(png, name: "a.png", graphics: .kitty)), as: UTF8.self)
        let chunks = drawn.components(separatedBy: "\u{1B}_G").dropFirst()
        #expect(chunks.count == 2, "6,680 base64 bytes in chunks of 4,096")
        #expect(chunks.first?.hasPrefix("a=T,f=100,m=1;") == true)
        #expect(chunks.last?.hasPrefix("m=0;") == true)
        #expect(InlineImages.sequence([0xFF, 0xD8, 0xFF, 0xE0], name: "a.jpg", graphics: .kitty) == nil, "kitty draws PNG; a JPEG is named")
        #expect(InlineImages.sequence(Array(repeating: 0, count: InlineImages.maximumBytes + 1), name: "big", graphics: .iTerm2) == nil)
    }
}
