import DouctlServer
import Foundation
import Testing
import DouctlTestSupport

/// `--jq EXPR`: douctl's output filtered by jq's own engine (the system's libjq), as
/// `douctl ... | jq -rc EXPR` filters it, without the pipe or the second program.
@Suite("JQ")
struct JQTests {
    static let document = #"{"name":"阿北","n":1.50,"big":100000000000000000000,"tags":["a","b"],"o":{"x":null,"s":"tab\there"},"e":"\u001b[31m"}"#

    /// What the real jq binary prints for `input | jq -rc program`.
    static func realJQ(_ jq: String, _ program: String, input: [UInt8]) throws -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: jq)
        process.arguments = ["-rc", program]
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.runAlone()
        try stdin.fileHandleForWriting.write(contentsOf: input)
        try stdin.fileHandleForWriting.close()
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return [UInt8](out)
    }

    @Test func aReplyFilteredIsWhatJqPrintsInAPipe() throws {
        let jq = try Tools.require("jq")
        let server = try TestServer(json: Self.document)
        let douctl = Douctl()
        let plain = try douctl.run("api", "/x", "--api-base", server.baseURL)
        #expect(plain.status == 0)
        for program in [".", ".name", ".n", ".big", ".tags[]", ".o", ".o.s", ".e", "keys", "[.tags[] | ascii_upcase]", "empty", ".missing", "{name, n}"] {
            let filtered = try douctl.run("api", "/x", "--api-base", server.baseURL, "--jq", program)
            #expect(filtered.status == 0, "\(program): \(filtered)")
            #expect(filtered.stdout == (try Self.realJQ(jq, program, input: plain.stdout)), "--jq '\(program)' prints what | jq -rc prints")
        }
        let name = try douctl.run("api", "/x", "--api-base", server.baseURL, "--jq", ".name")
        #expect(name.stdoutText == "阿北\n", "a string is printed as its text, as gh's --jq prints it")
    }

    @Test func aWalkIsFilteredItemByItemAndSlurpFiltersTheArray() throws {
        let server = try TestServer { received in
            let start = Int(received.queryValue("start") ?? "0") ?? 0
            let items = start < 6 ? (start..<start + 2).map { #"{"id":\#($0),"text":"t\#($0)"}"# }.joined(separator: ",") : ""
            return HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(Array(#"{"start":\#(start),"count":2,"total":6,"items":[\#(items)]}"#.utf8)))
        }
        let douctl = Douctl()
        let ids = try douctl.run("api", "/list", "-f", "count=2", "--paginate", "--api-base", server.baseURL, "--jq", ".id")
        #expect(ids.status == 0, "\(ids)")
        #expect(ids.stdoutText == "0\n1\n2\n3\n4\n5\n")
        let slurped = try douctl.run("api", "/list", "-f", "count=2", "--paginate", "--slurp", "--api-base", server.baseURL, "--jq", "map(.id) | add")
        #expect(slurped.stdoutText == "15\n", "\(slurped)")
        let bound = try douctl.run("api", "/list", "-f", "count=2", "--paginate", "--api-base", server.baseURL,
                                   "--jq", #"select(.id >= $min) | "\($who) \(.text)""#, "--argjson", "min", "4", "--arg", "who", "阿北")
        #expect(bound.stdoutText == "阿北 t4\n阿北 t5\n", "\(bound)")
    }

    /// --jq holds its results in blocks (as jq's stdio does in a pipe) rather than writing
    /// each item: what it printed still comes out in full when a later page fails.
    @Test func resultsHeldInBlocksStillComeOutWhenAPageFails() throws {
        let server = try TestServer { received in
            let start = Int(received.queryValue("start") ?? "0") ?? 0
            if start >= 4 { return HTTPServerResponse(status: 500, headers: [("Content-Type", "application/json")], body: .bytes(Array(#"{"msg":"boom"}"#.utf8))) }
            let items = (start..<start + 2).map { #"{"id":\#($0)}"# }.joined(separator: ",")
            return HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(Array(#"{"start":\#(start),"count":2,"items":[\#(items)]}"#.utf8)))
        }
        let douctl = Douctl()
        let result = try douctl.run("api", "/list", "-f", "count=2", "--paginate", "--parallel", "1", "--no-retry", "--api-base", server.baseURL, "--jq", ".id")
        #expect(result.status != 0, "\(result)")
        #expect(result.stdoutText == "0\n1\n2\n3\n", "\(result)")
    }

    /// `--arg NAME VALUE` and `--argjson NAME JSON` are two words, as jq takes them, before
    /// or after the command word; a missing second word, or the one-word NAME=VALUE, is a
    /// usage error naming the option, and nothing is sent.
    @Test func argAndArgjsonTakeTwoWordsAsJqDoes() throws {
        let server = try TestServer(json: #"{"a":1}"#)
        let douctl = Douctl()
        let bound = try douctl.run("--arg", "who", "阿北", "--argjson", "n", #"{"b":2}"#, "api", "/x", "--api-base", server.baseURL,
                                   "--jq", #"[$who, .a + $n.b]"#, "--arg", "api", "/y")
        #expect(bound.status == 0, "\(bound)")
        #expect(bound.stdoutText == #"["阿北",3]"# + "\n", "\(bound)")
        let missing = try douctl.run("api", "/x", "--api-base", server.baseURL, "--jq", "$who", "--arg", "who")
        #expect(missing.status == 2, "\(missing)")
        #expect(missing.stderr.hasPrefix("douctl: option '--arg' needs 2 values (NAME VALUE); VALUE is missing\n"), "\(missing.stderr)")
        let oneWord = try douctl.run("api", "/x", "--api-base", server.baseURL, "--jq", "$who", "--arg", "who=x", "--compact")
        #expect(oneWord.status == 2, "\(oneWord)")
        #expect(oneWord.stderr.hasPrefix("douctl: --arg takes two words, as jq: --arg who x (not NAME=VALUE)\n"), "\(oneWord.stderr)")
        #expect(server.received.count == 1, "usage errors send nothing")
    }

    @Test func aTypedCommandIsFilteredToo() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        let result = try fixture.douctl.run("user", "me", "--jq", "type")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == "object\n")
    }

    @Test func filterErrorsAreOneLineWithTheirOwnExitCodes() throws {
        let server = try TestServer(json: #"{"a":1}"#)
        let douctl = Douctl()
        let compile = try douctl.run("api", "/x", "--api-base", server.baseURL, "--jq", ".a[")
        #expect(compile.status == 2, "\(compile)")
        #expect(compile.stderr.hasPrefix("douctl: invalid --jq program: "), "\(compile.stderr)")
        #expect(server.received.isEmpty, "a program that does not compile sends nothing")
        let badJSON = try douctl.run("api", "/x", "--api-base", server.baseURL, "--jq", ".", "--argjson", "v", "{nope")
        #expect(badJSON.status == 2)
        #expect(badJSON.stderr.hasPrefix("douctl: invalid JSON for --argjson v"), "\(badJSON.stderr)")
        let orphan = try douctl.run("api", "/x", "--api-base", server.baseURL, "--arg", "v", "1")
        #expect(orphan.status == 2)
        let raw = try douctl.run("api", "/x", "--api-base", server.baseURL, "--jq", ".", "--raw")
        #expect(raw.status == 2)
        // Refused where options are bound, as other conflicts are: the usage line follows.
        for extra in [["--raw"], ["-i"], ["-I"], ["-o", "out.json"]] {
            let refused = try douctl.run(["api", "/x", "--api-base", server.baseURL, "--jq", "."] + extra)
            #expect(refused.status == 2, "\(extra): \(refused)")
            #expect(refused.stderr.hasPrefix("douctl: --jq cannot be combined with "), "\(refused.stderr)")
            #expect(refused.stderr.contains("\nusage: douctl api "), "\(extra): \(refused.stderr)")
        }
        #expect(server.received.isEmpty)

        let index = try douctl.run("api", "/x", "--api-base", server.baseURL, "--jq", ".a.b")
        #expect(index.status == 9, "\(index)")
        #expect(index.stdout.isEmpty)
        #expect(index.stderr.hasPrefix("douctl: --jq: Cannot index number with "), "jq's own message: \(index.stderr)")
        #expect(index.stderr.split(separator: "\n").count == 1)
        let raised = try douctl.run("api", "/x", "--api-base", server.baseURL, "--jq", #".a, error("stop here")"#)
        #expect(raised.status == 9)
        #expect(raised.stdoutText == "1\n", "what came before the error is printed")
        #expect(raised.stderr == "douctl: --jq: stop here\n")
    }

    @Test func aMissingLibjqIsOneLineNamingIt() throws {
        let server = try TestServer(json: #"{"a":1}"#)
        let douctl = Douctl(environment: ["DOUCTL_LIBJQ": "/nonexistent/libjq.so.1"])
        let result = try douctl.run("api", "/x", "--api-base", server.baseURL, "--jq", ".a")
        #expect(result.status == 2, "\(result)")
        #expect(result.stderr.hasPrefix("douctl: --jq needs jq's library, libjq: cannot load libjq (/nonexistent/libjq.so.1"), "\(result.stderr)")
        #expect(server.received.isEmpty)
        let without = try douctl.run("api", "/x", "--api-base", server.baseURL)
        #expect(without.status == 0, "without --jq, libjq is never loaded")
    }

    // MARK: - issue 38: --jq as the output wing's document stage

    /// `--max-time` stops a program that would run (and grow) for ever: libjq cannot be
    /// interrupted, so the run stops waiting for it and exits. Before: never (past 580 MB).
    @Test func maxTimeStopsARunningProgram() throws {
        _ = try Tools.require("jq")
        let server = try TestServer(json: #"{"a":1}"#)
        let started = Date()
        let result = try Douctl().run(["api", "/x", "--api-base", server.baseURL, "--jq", "[range(1e9)]", "--max-time", "1"], timeout: 15)
        let seconds = Date().timeIntervalSince(started)
        #expect(result.status == 7, "\(result)")
        #expect(result.stdout.isEmpty, "\(result)")
        #expect(result.stderr.contains("--max-time 1"), "\(result.stderr)")
        #expect(seconds < 4, "stopped \(seconds)s after the start")
    }

    /// Ctrl-C and SIGTERM stop a running program within a second: exit 130, nothing on
    /// stdout. Before: both ignored while jq ran.
    @Test(arguments: [SIGINT, SIGTERM])
    func aSignalStopsARunningProgram(signal: Int32) throws {
        _ = try Tools.require("jq")
        let server = try TestServer(json: #"{"a":1}"#)
        let running = try RunningDouctl(Douctl(), ["api", "/x", "--api-base", server.baseURL, "--jq", "last(range(1e12))"])
        let deadline = Date().addingTimeInterval(10)
        while server.received.isEmpty && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        Thread.sleep(forTimeInterval: 0.3)  // the reply is in jq's hands
        let sent = Date()
        running.kill(signal)
        let result = running.finish(timeout: 10)
        let seconds = Date().timeIntervalSince(sent)
        #expect(result.status == 130, "\(result)")
        #expect(result.stdout.isEmpty, "\(result)")
        #expect(seconds < 2, "stopped \(seconds)s after the signal")
    }

    /// `--error-body stdout | cat`: the error body reaches stdout, unfiltered (--jq filters
    /// documents, never error bodies). Before: written into the finished filter, and lost.
    @Test func anErrorBodyAskedForOnStdoutIsNotFiltered() throws {
        _ = try Tools.require("jq")
        let server = try TestServer(status: 404, json: #"{"msg":"gone"}"#)
        let result = try Douctl().run("api", "/x", "--api-base", server.baseURL, "--jq", ".msg", "--error-body", "stdout", "--no-retry")
        #expect(result.status != 0, "\(result)")
        #expect(result.stdoutText == #"{"msg":"gone"}"# + "\n", "\(result)")
    }

    /// On a real terminal (`script`), a string result is escaped as a view escapes server
    /// text: the OSC 52 clipboard write and the colour never reach the screen as they are.
    @Test func onATerminalServerTextIsEscaped() throws {
        _ = try Tools.require("jq")
        let server = try TestServer(json: #"{"name":"a\u001b]52;c;cHduZWQ=\u0007b\u001b[31mred"}"#)
        let douctl = Douctl()
        let raw = try runUnderScript("\(Douctl.binary) api /x --api-base \(server.baseURL) --jq .name", environment: douctl.environment)
        #expect(raw.contains("a^[]52;c;cHduZWQ=^Gb^[[31mred"), "\(raw.debugDescription)")
        #expect(!raw.contains("\u{1B}]52") && !raw.contains("\u{1B}[31m"), "\(raw.debugDescription)")
    }
}
