#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import DouctlCommands
import DouctlHTTP
import DouctlSystem
import DouctlTestSupport
import Testing

/// The output wing (issue 31) in process: views, colours and progress on an injected
/// terminal (`TerminalFacts`, as gh's `iostreams.Test`), the progress rule when stdout feeds
/// another program, and exit 141 for a reader that went away, for every way of printing.
@Suite struct OutputTests {
    static let base = ["--api-base", InProcessDouctl.scriptedBase]
    static let user = #"{"id":"1000001","uid":"ahbei","name":"阿北","created":"2005-03-01 10:00:00","desc":"豆瓣的创始人"}"#

    /// An in-process douctl on the terminal `facts` describes.
    static func douctl(_ transport: ScriptedTransport, on facts: TerminalFacts?) throws -> InProcessDouctl {
        var douctl = try InProcessDouctl.scripted(transport)
        douctl.configure = { process in process.terminal = facts }
        return douctl
    }

    // MARK: - views on an injected terminal

    @Test func aTerminalGetsTheViewAndAPipeTheJSON() throws {
        let onTerminal = try Self.douctl(ScriptedTransport([.json(200, Self.user)]), on: .terminal(columns: 60)).run(["user", "get", "ahbei"] + Self.base)
        #expect(onTerminal.status == 0, "\(onTerminal)")
        #expect(onTerminal.stdoutText.contains("阿北") && !onTerminal.stdoutText.hasPrefix("{"), "a card, not JSON: \(onTerminal.stdoutText)")
        let inPipe = try Self.douctl(ScriptedTransport([.json(200, Self.user)]), on: TerminalFacts()).run(["user", "get", "ahbei"] + Self.base)
        #expect(inPipe.stdoutText.hasPrefix("{\"id\":\"1000001\""), "\(inPipe)")
        let asked = try Self.douctl(ScriptedTransport([.json(200, Self.user)]), on: .terminal(columns: 60)).run(["user", "get", "ahbei", "--json", "--color", "never"] + Self.base)
        #expect(asked.stdoutText.hasPrefix("{\n"), "--json on a terminal: pretty JSON: \(asked.stdoutText)")
    }

    @Test func theViewFitsTheInjectedWidth() throws {
        let page = #"{"count":1,"start":0,"total":1,"users":[\#(Self.user)]}"#
        for columns in [30, 50] {
            let result = try Self.douctl(ScriptedTransport([.json(200, page)]), on: .terminal(columns: columns))
                .run(["user", "search", "ahbei"] + Self.base)
            #expect(result.status == 0, "\(result)")
            let rows = result.stdoutText.split(separator: "\n")
            #expect(!rows.isEmpty)
            for row in rows { #expect(DisplayWidth.of(String(row)) <= columns, "\(columns): '\(row)'") }
        }
    }

    @Test func colourFollowsTheInjectedTerminalAndNoColor() throws {
        let colored = try Self.douctl(ScriptedTransport([.json(200, #"{"a":1}"#)]), on: .terminal()).run(["api", "/x"] + Self.base)
        #expect(colored.stdoutText.contains("\u{1B}["), "jq's colours on a terminal: \(colored.stdoutText)")
        var plain = try Self.douctl(ScriptedTransport([.json(200, #"{"a":1}"#)]), on: .terminal())
        plain.environment["NO_COLOR"] = "1"
        #expect(try plain.run(["api", "/x"] + Self.base).stdoutText == "{\n  \"a\": 1\n}\n")
    }

    // MARK: - progress: nothing another program prints is erased

    /// Two uploads at once, reporting progress, with stderr on a terminal and stdout as
    /// `facts` say; the stderr bytes.
    static func uploadProgress(_ facts: TerminalFacts, mode: String) throws -> (CommandResult, String) {
        let a = try TemporaryDirectory.file(named: "a.png", bytes: Array(repeating: 1, count: 100))
        let b = try TemporaryDirectory.file(named: "b.png", bytes: Array(repeating: 2, count: 100))
        let transport = ScriptedTransport([.json(200, #"{"id":1}"#), .json(200, #"{"id":2}"#)])
        transport.reportsUploadOf = 100
        let result = try Self.douctl(transport, on: facts).run(["upload", a, b, "--to", "/files", "--parallel", "1", "--progress", mode] + Self.base)
        return (result, result.stderr)
    }

    @Test func stdoutOnTheSameTerminalGetsRowsRedrawnInPlace() throws {
        let (result, stderr) = try Self.uploadProgress(.terminal(), mode: "auto")
        #expect(result.status == 0, "\(result)")
        #expect(stderr.contains("\u{1B}[2K") && stderr.contains("done, "), "\(stderr.debugDescription)")
    }

    @Test(arguments: ["auto", "always"])
    func stdoutToAnotherProgramNeverMovesTheCursorUp(mode: String) throws {
        var facts = TerminalFacts.terminal()
        facts.stdoutIsTerminal = false
        facts.stdoutColumns = nil
        facts.stdoutFeedsProgram = true
        let (result, stderr) = try Self.uploadProgress(facts, mode: mode)
        #expect(result.status == 0, "\(result)")
        #expect(try result.lines().count == 2, "both result lines on stdout")
        // ESC [ n F (up n lines), ESC [ J (erase below) and ESC [ n A are what erased jq's lines.
        for sequence in ["F", "J", "A"] {
            #expect(stderr.range(ofEscapeEnding: sequence) == nil, "\(mode): ESC[…\(sequence) in \(stderr.debugDescription)")
        }
        let finished = stderr.split(separator: "\n").filter { $0.contains("done, ") }
        #expect(finished.count == 2, "each file's line, whole: \(stderr.debugDescription)")
        if mode == "auto" { #expect(!stderr.contains("\r"), "auto draws nothing live: \(stderr.debugDescription)") }
    }

    @Test func progressInAFileKeepsTheFullDisplay() throws {
        var facts = TerminalFacts.terminal()
        facts.stdoutIsTerminal = false
        facts.stdoutColumns = nil
        facts.stdoutFeedsProgram = false  // `> ids.txt`: nobody else draws on the screen
        let (_, stderr) = try Self.uploadProgress(facts, mode: "auto")
        #expect(stderr.contains("\u{1B}[2K"), "\(stderr.debugDescription)")
    }

    // MARK: - one rule for a reader that went away

    /// Runs with stdout a pipe whose reader has gone: every way of printing ends with 141,
    /// quietly.
    static func runWithClosedReader(_ arguments: [String], _ answers: [ScriptedTransport.Answer]) throws -> (status: Int32, stderr: String) {
        let pipe = try FileIO.makePipe()
        close(pipe.read)
        defer { close(pipe.write) }
        let errors = try TemporaryDirectory(prefix: "output-closed")
        let stderrFD = open(errors.path + "/stderr", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        defer { close(stderrFD) }
        var process = ProcessContext(arguments: arguments + base, environment: ["DOUCTL_TOKEN": "t0ken", "HOME": errors.path,
                                                                                "DOUCTL_CONFIG_DIR": errors.path + "/config"],
                                     standardInput: -1, standardOutput: pipe.write, standardError: stderrFD)
        let transport = ScriptedTransport(answers)
        process.makeTransport = { _ in transport }
        process.cancellation = Cancellation()
        process.terminal = TerminalFacts(stdoutFeedsProgram: true)
        let previous = signal(SIGPIPE, SIG_IGN)
        defer { signal(SIGPIPE, previous) }
        let status = Douctl.main(process)
        return (status, String(decoding: try FileIO.readFile(errors.path + "/stderr"), as: UTF8.self))
    }

    static let body = ScriptedTransport.Answer.reply(HTTPResponse(head: HTTPResponseHead(status: 200, headers: [HTTPHeader("Content-Type", "application/octet-stream")]),
                                                                  body: Array(repeating: 0x41, count: 300_000)))

    @Test func downloadToAClosedStdoutIs141LikeEveryOtherCommand() throws {
        let download = try Self.runWithClosedReader(["download", "http://api.test/big.bin", "-o", "-"], [Self.body])
        #expect(download.status == 141 && download.stderr.isEmpty, "\(download)")
        let raw = try Self.runWithClosedReader(["api", "/big.bin", "--raw"], [Self.body])
        #expect(raw.status == 141 && raw.stderr.isEmpty, "\(raw)")
        let lines = try Self.runWithClosedReader(["api", "/items", "--paginate"], [.json(200, "[" + (1...5000).map { #"{"id":\#($0)}"# }.joined(separator: ",") + "]"), .json(200, "[]")])
        #expect(lines.status == 141 && lines.stderr.isEmpty, "\(lines)")
        // --dry-run's request lines are the run's output too (before: written past stdout's
        // owner, a closed reader went unnoticed: exit 0).
        let dry = try Self.runWithClosedReader(["api", "/x", "--dry-run"], [])
        #expect(dry.status == 141 && dry.stderr.isEmpty, "\(dry)")
    }

    // MARK: - an error's head on stderr is for a person

    /// `api -i` on an error: the head goes where the body goes (stderr in a pipe), and what
    /// the server wrote in it reaches the terminal escaped, CRLF line ends kept.
    @Test func anErrorHeadOnStderrIsEscaped() throws {
        let transport = ScriptedTransport([.json(404, #"{"msg":"gone"}"#, headers: [HTTPHeader("X-Note", "a\u{1B}]52;c;cHduZWQ=\u{07}b")])])
        let result = try InProcessDouctl.scripted(transport).run(["api", "/x", "-i", "--no-retry"] + Self.base)
        #expect(result.status == 5, "\(result)")
        #expect(result.stdout.isEmpty)
        #expect(!result.stderrBytes.contains(0x1B) && !result.stderrBytes.contains(0x07), "\(result.stderr.debugDescription)")
        #expect(result.stderr.contains("X-Note: a\\x1B]52;c;cHduZWQ=\\x07b\r\n"), "\(result.stderr.debugDescription)")
    }

    // MARK: - every JSON line goes through --jq

    @Test func uploadResultLinesGoThroughJQ() throws {
        _ = try Tools.require("jq")  // libjq comes with it
        let a = try TemporaryDirectory.file(named: "a.txt", bytes: Array("alpha".utf8))
        let transport = ScriptedTransport([.json(200, #"{"id":41}"#)])
        let result = try InProcessDouctl.scripted(transport).run(["upload", a, "--to", "/files", "--jq", ".reply.id"] + Self.base)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == "41\n", "the batch's lines are the command's output: \(result.stdoutText.debugDescription)")
    }
}

extension String {
    /// Where an escape sequence `ESC [ digits final` ends with `final`, if any.
    func range(ofEscapeEnding final: String) -> Range<String.Index>? {
        var index = startIndex
        while let escape = self[index...].firstIndex(of: "\u{1B}") {
            var cursor = self.index(after: escape)
            guard cursor < endIndex, self[cursor] == "[" else { index = cursor; continue }
            cursor = self.index(after: cursor)
            while cursor < endIndex, self[cursor].isASCII, self[cursor].isNumber || self[cursor] == ";" { cursor = self.index(after: cursor) }
            if cursor < endIndex, String(self[cursor]) == final { return escape..<self.index(after: cursor) }
            index = cursor
        }
        return nil
    }
}
