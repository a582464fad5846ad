@testable import DouctlCommands
import DouctlHTTP
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Testing

/// Issue 40 (items 1, 2, 3, 9, 10): replies that are not JSON on a terminal and in a pipe,
/// text error bodies, the login line, narrow terminals — in process, on a terminal the test
/// describes. The binary runs on a real pseudo-terminal in RepliesOnARealTerminalTests.
@Suite struct RepliesOnATerminalTests {
    typealias Views = TerminalViewInProcessTests
    static let base = ["--api-base", InProcessDouctl.scriptedBase]
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR\u{1B}c\u{1B}[2J".utf8)

    static func reply(_ body: [UInt8], type: String?, status: Int = 200) -> ScriptedTransport.Answer {
        .reply(HTTPResponse(head: HTTPResponseHead(status: status, headers: type.map { [HTTPHeader("Content-Type", $0)] } ?? []), body: body))
    }

    // MARK: - 1. binary on a terminal

    /// An image, an octet stream, text with a NUL, bytes that are not UTF-8: not shown on a
    /// terminal (one line on stderr, exit 0, as xh's "binary data not shown"; before: the
    /// bytes went to the tty); `-o -` prints them anyway, as curl's; a pipe gets them as sent.
    @Test(arguments: [
        ("image/png", png), ("application/octet-stream", Array("hello".utf8)),
        ("text/plain", Array("a\u{0}b".utf8)), (nil, [0xFF, 0xFE, 0x41, 0x00, 0x80]),
    ] as [(String?, [UInt8])])
    func aBinaryReplyIsNotShownOnATerminal(type: String?, body: [UInt8]) throws {
        for extra in [[], ["--raw"]] {
            let (terminal, _) = try Views.scripted(.terminal(columns: 80), [Self.reply(body, type: type)])
            let shown = try terminal.run(["api", "/file"] + extra + Self.base)
            #expect(shown.status == 0, "\(shown)")
            #expect(shown.stdout.isEmpty, "\(type ?? "no type") \(extra): \(shown.stdout)")
            #expect(shown.stderr.contains("binary reply (\(type ?? "binary data")"), "\(shown.stderr)")
            #expect(shown.stderr.contains("not shown on a terminal: use -o FILE to save it, or -o - to print it here anyway"), "\(shown.stderr)")
        }
        let (forced, _) = try Views.scripted(.terminal(columns: 80), [Self.reply(body, type: type)])
        #expect(try forced.run(["api", "/file", "-o", "-"] + Self.base).stdout == body)
        let (piped, _) = try Views.scripted(Views.pipe, [Self.reply(body, type: type)])
        let raw = try piped.run(["api", "/file"] + Self.base)
        #expect(raw.status == 0 && raw.stdout == body && raw.stderr.isEmpty, "\(raw)")
    }

    /// Text that is not JSON reaches a terminal with what it would obey escaped (OSC, CSI,
    /// C1), its lines and tabs kept; a pipe gets the bytes as sent.
    @Test func textWithControlsIsEscapedOnATerminalAndRawInAPipe() throws {
        let body = Array("hi\u{1B}]0;pwned\u{07} there\r\nnext\u{9B}2J\tline\n".utf8)
        let (terminal, _) = try Views.scripted(.terminal(columns: 80), [Self.reply(body, type: "text/plain; charset=utf-8")])
        let shown = try terminal.run(["api", "/text"] + Self.base)
        #expect(shown.status == 0, "\(shown)")
        #expect(shown.stdoutText == "hi\\x1B]0;pwned\\x07 there\r\nnext\\u009B2J\tline\n", "\(shown.stdoutText)")
        let (piped, _) = try Views.scripted(Views.pipe, [Self.reply(body, type: "text/plain; charset=utf-8")])
        #expect(try piped.run(["api", "/text"] + Self.base).stdout == body)
    }

    /// The escaper keeps a sequence cut between two chunks whole.
    @Test func theEscaperWaitsForASequenceCutBetweenChunks() {
        var escaper = TerminalBody.Escaper()
        let bytes = Array("a\u{9B}b\r".utf8) + Array("\nc\u{202E}".utf8)
        var out: [UInt8] = []
        for cut in [2, 5, 7] {
            escaper = TerminalBody.Escaper()
            out = Array(bytes[..<cut]).withUnsafeBytes { escaper.feed($0) }
            out += Array(bytes[cut...]).withUnsafeBytes { escaper.feed($0) }
            out += escaper.finish()
            #expect(String(decoding: out, as: UTF8.self) == "a\\u009Bb\r\nc\\u202E", "cut at \(cut)")
        }
    }

    // MARK: - 2. non-JSON replies are not capped

    /// A 65 MiB octet stream through `api` in a pipe: every byte, exit 0 (before: exit 8
    /// at 64 MiB unless --raw).
    @Test func aNonJSONReplyLargerThanTheBoundStreams() throws {
        let body = [UInt8](repeating: 0x41, count: (65 << 20) + 3)
        let (piped, _) = try Views.scripted(Views.pipe, [Self.reply(body, type: "application/octet-stream")])
        let result = try piped.run(["api", "/big.bin"] + Self.base)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.count == body.count)
    }

    /// What streams from its first byte: a media type that does not say JSON (unless the body
    /// begins like an object, an array or a string), or no media type and a first byte no
    /// JSON value begins with; anything else is held as before.
    @Test func whatStreamsFromItsFirstByte() {
        let byte = { (text: String) in text.utf8.first ?? 0 }
        #expect(StreamingReply.isNotJSON(first: byte("h"), mediaType: "text/plain"))
        #expect(StreamingReply.isNotJSON(first: 0x89, mediaType: "image/png"))
        #expect(StreamingReply.isNotJSON(first: 0xFF, mediaType: nil))
        #expect(StreamingReply.isNotJSON(first: byte("<"), mediaType: nil))
        #expect(!StreamingReply.isNotJSON(first: byte("{"), mediaType: "text/html"))
        #expect(!StreamingReply.isNotJSON(first: byte("\""), mediaType: "text/plain"))
        #expect(!StreamingReply.isNotJSON(first: byte("4"), mediaType: nil))
        #expect(!StreamingReply.isNotJSON(first: byte("t"), mediaType: "application/problem+json"))
    }

    // MARK: - 3. text error bodies keep their reason

    /// pypiserver's text/plain 409: the error line carries its first lines (bounded,
    /// controls as spaces), with --error-body stderr as without.
    @Test(arguments: [[], ["--error-body", "stderr"], ["--error-body", "none"]])
    func aTextErrorBodyKeepsItsReason(extra: [String]) throws {
        let body = Array("Package 'demo-1.0.tar.gz' already exists!\n\u{1B}[31mYou may start server with `--overwrite` option.\n".utf8)
        let (piped, _) = try Views.scripted(Views.pipe, [Self.reply(body, type: "text/plain; charset=UTF-8", status: 409)])
        let result = try piped.run(["api", "-X", "POST", "/upload"] + extra + Self.base)
        #expect(result.status == 1, "\(result)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("already exists! [31mYou may start server with `--overwrite` option."), "\(result.stderr)")
        #expect(!result.stderr.contains("\u{1B}"))
    }

    // MARK: - 9. auth login on a terminal

    /// One line on a terminal, as gh says it (before: the stored identity's JSON); the
    /// JSON in a pipe, as before.
    @Test func loginOnATerminalIsOneLine() throws {
        let transport = ScriptedTransport([AuthCommandTests.me])
        let douctl = Views.on(.terminal(columns: 80), try AuthCommandTests.douctl(transport))
        let shown = try douctl.run("auth", "login", "--with-token", "--color", "never", input: "t0ken\n")
        #expect(shown.status == 0, "\(shown)")
        #expect(shown.stdoutText == "✓ Logged in to sandbox as ahbei (1000001).\n", "\(shown)")
        #expect(!shown.stderr.contains("Logged in"), "said once, on stdout: \(shown)")
        let piped = try AuthCommandTests.douctl(ScriptedTransport([AuthCommandTests.me]))
        let json = try piped.run("auth", "login", "--with-token", input: "t0ken\n")
        #expect(try json.json()["user_id"]?.stringValue == "1000001")
        #expect(json.stderr == "Logged in to sandbox as ahbei (1000001).\n")
    }

    // MARK: - 10. narrow terminals

    static let narrowStatus = #"{"id":1402640301,"text":"hi","created_at":"2025-01-01 00:00:00","user":{"uid":"ahbei","screen_name":"阿北的一个很长的名字"},"attachments":[{"type":"image","media":[{"src":"https://img1.doubanio.com/view/status/raw/public/a-very-long-picture-name-1402640301.jpg"}]},{"type":"url","title":"a link","href":"https://example.com/a/rather/long/path/that/will/not/fit/in/forty"}]}"#

    /// 40 columns: the header's parts move to a second line whole (before: the terminal
    /// split the id), and a URL that does not fit gets a line of its own, whole (before:
    /// cut with "…", so it could not be copied or clicked).
    @Test func aNarrowTerminalKeepsIdsAndURLsWhole() throws {
        let (douctl, _) = try Views.scripted(.terminal(columns: 40), [.json(200, Self.narrowStatus)])
        let result = try douctl.run(["shuo", "get", "1402640301", "--color", "never"] + Self.base)
        #expect(result.status == 0, "\(result)")
        let lines = Views.rows(result.stdoutText)
        #expect(!result.stdoutText.contains("…"), "\(lines)")
        #expect(lines.contains("#1402640301"), "\(lines)")
        #expect(lines.contains("[picture]") && lines.contains("https://img1.doubanio.com/view/status/raw/public/a-very-long-picture-name-1402640301.jpg"), "\(lines)")
        #expect(lines.contains("[link] a link") && lines.contains("https://example.com/a/rather/long/path/that/will/not/fit/in/forty"), "\(lines)")
        // Every line but a URL's fits.
        for line in lines where !line.hasPrefix("https://") { #expect(DisplayWidth.of(line) <= 40, "'\(line)'") }
    }
}
