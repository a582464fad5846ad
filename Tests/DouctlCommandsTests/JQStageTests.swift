#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import DouctlCommands
import DouctlArguments
import DouctlHTTP
import DouctlSystem
import DouctlTestSupport
import Testing

/// Issue 38, point 5: `--jq` as the output wing's document stage, in process on injected
/// terminals and the scripted transport. It filters reply documents and items, never error
/// bodies or heads; on a terminal its output is escaped as the views escape server text (raw
/// in a pipe, as jq's); a stopped run stops waiting for it; its conflicts are refused at
/// parse time, with the usage line.
@Suite struct JQStageTests {
    static let base = ["--api-base", InProcessDouctl.scriptedBase]
    /// A name carrying an OSC 52 clipboard write, a colour, and a C1 CSI (U+009B).
    static let hostile = #"{"name":"a\u001b]52;c;cHduZWQ=\u0007b\u001b[31mred\u009b2J","n":1}"#

    static func douctl(_ transport: ScriptedTransport, on facts: TerminalFacts) throws -> InProcessDouctl {
        var douctl = try InProcessDouctl.scripted(transport)
        douctl.configure = { process in process.terminal = facts }
        return douctl
    }

    // MARK: - server text on a terminal

    /// A string result is shown as a view shows server text: C0 controls in caret notation,
    /// C1 as U+FFFD. Before: the OSC 52 write and the colour reached the terminal as they were.
    @Test func aStringResultOnATerminalIsEscapedAsViewsEscapeIt() throws {
        _ = try Tools.require("jq")  // libjq comes with it
        let result = try Self.douctl(ScriptedTransport([.json(200, Self.hostile)]), on: .terminal()).run(["api", "/x", "--jq", ".name"] + Self.base)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == "a^[]52;c;cHduZWQ=^Gb^[[31mred\u{FFFD}2J\n", "\(result.stdoutText.debugDescription)")
        #expect(!result.stdout.contains(0x1B) && !result.stdout.contains(0x07))
    }

    /// A JSON result on a terminal spells what the terminal would obey as JSON escapes (the
    /// same value), as douctl's JSON on a terminal does; in a pipe, both are what jq prints.
    @Test func aJSONResultOnATerminalIsEscapedAndAPipeGetsJqsBytes() throws {
        _ = try Tools.require("jq")
        let shown = try Self.douctl(ScriptedTransport([.json(200, Self.hostile)]), on: .terminal()).run(["api", "/x", "--jq", "{name}"] + Self.base)
        #expect(shown.status == 0, "\(shown)")
        #expect(shown.stdoutText == #"{"name":"a\u001b]52;c;cHduZWQ=\u0007b\u001b[31mred\u009B2J"}"# + "\n", "\(shown.stdoutText.debugDescription)")
        let piped = try Self.douctl(ScriptedTransport([.json(200, Self.hostile)]), on: TerminalFacts()).run(["api", "/x", "--jq", ".name"] + Self.base)
        #expect(piped.status == 0, "\(piped)")
        #expect(piped.stdoutText == "a\u{1B}]52;c;cHduZWQ=\u{07}b\u{1B}[31mred\u{9B}2J\n", "raw in a pipe, as jq -r prints it")
    }

    // MARK: - documents only

    /// `--error-body stdout` puts an error reply's body on stdout unfiltered, after what the
    /// filter printed. Before: written into the filter after it had finished, and lost.
    @Test func anErrorBodyOnStdoutPassesByTheFilter() throws {
        _ = try Tools.require("jq")
        let transport = ScriptedTransport([.json(404, #"{"msg":"gone","code":404}"#)])
        let result = try Self.douctl(transport, on: TerminalFacts()).run(["api", "/x", "--jq", ".msg", "--error-body", "stdout", "--no-retry"] + Self.base)
        #expect(result.status != 0, "\(result)")
        #expect(result.stdoutText == #"{"msg":"gone","code":404}"# + "\n", "\(result.stdoutText.debugDescription)")
    }

    /// --jq refuses what prints no documents (heads, bytes as received, a file) while the
    /// options are bound, as other conflicts are: exit 2, the error line, then the usage
    /// line, nothing sent. Before: refused once the command ran, without the usage line.
    @Test(arguments: [(["--raw"], "--raw"), (["-i"], "-i"), (["--include"], "-i"), (["-I"], "-I"), (["--head"], "-I"), (["-o", "out.json"], "-o FILE")])
    func itsConflictsAreRefusedAtParseTime(extra: [String], named: String) throws {
        let transport = ScriptedTransport([.json(200, #"{"a":1}"#)])
        let result = try Self.douctl(transport, on: TerminalFacts()).run(["api", "/x", "--jq", ".a"] + extra + Self.base)
        #expect(result.status == 2, "\(result)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.first == "douctl: --jq cannot be combined with \(named) (it filters the JSON douctl prints)", "\(result.stderr)")
        #expect(lines.last?.hasPrefix("usage: douctl api ") == true, "the usage line follows: \(result.stderr)")
        #expect(transport.unused == 1, "nothing sent")
    }

    @Test func theCheckIsMadeWhereOptionsAreBound() throws {
        let globals = try GlobalOptionValues.bind(parsed(["api", "/x", "--jq", "."]))
        let api = try boundOptions(["api", "/x", "-i"], as: APICommand.APIOptions.self)
        #expect(throws: OptionError("--jq cannot be combined with -i (it filters the JSON douctl prints)")) {
            try JQFilter.checkOptions(globals, presentation: api.presentation)
        }
        let toStdout = try boundOptions(["api", "/x", "-o", "-"], as: APICommand.APIOptions.self)
        try JQFilter.checkOptions(globals, presentation: toStdout.presentation)  // -o - is stdout: filtered
        let dry = try GlobalOptionValues.bind(parsed(["api", "/x", "--jq", ".", "--dry-run"]))
        #expect(throws: OptionError("--jq cannot be combined with --dry-run (it prints requests, not replies)")) {
            try JQFilter.checkOptions(dry, presentation: toStdout.presentation)
        }
    }

    // MARK: - a stopped run

    /// The run is stopped (here by the transport, as Ctrl-C or --max-time would) while the
    /// program runs: the wait for jq's thread ends, nothing more is printed, and the run
    /// ends as a stopped run does (130, "interrupted"). Before: the run waited for the
    /// program and printed its result.
    @Test func aStoppedRunStopsWaitingForTheProgram() throws {
        _ = try Tools.require("jq")
        let transport = ScriptedTransport([.json(200, #"{"a":1}"#)])
        let cancellation = Cancellation()
        transport.observe = { _ in cancellation.request() }
        var douctl = try Self.douctl(transport, on: TerminalFacts())
        douctl.configure = { process in
            process.terminal = TerminalFacts()
            process.cancellation = cancellation
        }
        let result = try douctl.run(["api", "/x", "--jq", "limit(1; range(1e12) | select(. == 1000000))"] + Self.base)
        #expect(result.status == 130, "\(result)")
        #expect(result.stdout.isEmpty, "\(result.stdoutText)")
        #expect(result.stderr == "douctl: interrupted\n", "\(result.stderr)")
    }

    /// The filter's own contract: once stopped, `finish` returns at once, the thread is
    /// abandoned and never writes.
    @Test func aStoppedFilterIsAbandonedAndNeverWrites() throws {
        _ = try Tools.require("jq")
        let cancellation = Cancellation()
        let filter = try JQFilter("limit(1; range(1e12) | select(. == 1000000))", variables: [], cancellation: cancellation)
        let directory = try TemporaryDirectory(prefix: "jq-stage")
        let path = directory.path + "/out"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        defer { close(fd) }
        let stdout = OutputStream(fileDescriptor: fd, isTerminal: false)
        filter.connect(to: stdout, terminal: false)
        #expect(Array("{}".utf8).withUnsafeBytes { filter.take($0) })
        cancellation.request()
        guard case .stopped(let free) = filter.finish(complete: true) else {
            Issue.record("a stopped run ends the filter as stopped")
            return
        }
        #expect(free, "the thread was not inside a write")
        #expect(filter.stopped)
        #expect(!Array("{}".utf8).withUnsafeBytes { filter.take($0) }, "no more input")
        stdout.flush()
        #expect(try FileIO.readFile(path).isEmpty)
    }

    private func parsed(_ argv: [String]) throws -> ParsedCommand {
        guard case .run(let parsed) = try ArgumentParser(root: Douctl.rootSpec).parse(argv) else {
            throw TestFailure("\(argv) did not parse to a run")
        }
        return parsed
    }
}
