import DouctlArguments
@testable import DouctlCommands
import DouctlTestSupport
import DouctlSystem
import Foundation
import Testing

/// `--dry-run` through the whole command layer, in process: the run's transport (a
/// scripted one with no answers) is never used, because the dry run's clients are built
/// over `DryRunTransport`; each command prints its curl lines and nothing else, reads no
/// token store and writes nothing to disk.
@Suite struct DryRunCommandTests {
    /// Each command, and the start of every line it prints (one per request).
    static let cases: [(arguments: [String], lines: [String])] = [
        (["api", "/v2/user/~me"], ["curl -sS -g 'http://127.0.0.1:9/v2/user/~me' -A douctl/"]),
        (["api", "/v2/x", "-f", "text=a b"], ["curl -sS -g -X POST http://127.0.0.1:9/v2/x -A douctl/"]),
        (["api", "/v2/x", "--paginate", "--record", "RECORD", "--cache", "5m"], ["curl -sS -g http://127.0.0.1:9/v2/x -A douctl/"]),
        (["user", "get", "{me}"], ["curl -sS -g http://127.0.0.1:9/v2/user/%7Bme%7D -A douctl/"]),
        (["shuo", "delete", "1", "2"], ["curl -sS -g -X DELETE http://127.0.0.1:9/shuo/v2/statuses/1 -A douctl/",
                                        "curl -sS -g -X DELETE http://127.0.0.1:9/shuo/v2/statuses/2 -A douctl/"]),
        (["shuo", "timeline", "--all"], ["curl -sS -g http://127.0.0.1:9/shuo/v2/statuses/home_timeline -A douctl/"]),
        (["download", "/x/a.bin", "/x/b.bin", "-d", "HOME"], ["curl -sS -g http://127.0.0.1:9/x/a.bin -A douctl/",
                                                             "curl -sS -g http://127.0.0.1:9/x/b.bin -A douctl/"]),
        (["download", "/x/a.bin", "-o", "HOME/a.bin"], ["curl -sS -g http://127.0.0.1:9/x/a.bin -A douctl/"]),
    ]

    @Test func eachCommandPrintsItsRequestsAndSendsReadsAndWritesNothing() throws {
        for (arguments, expected) in Self.cases {
            let transport = ScriptedTransport()
            let douctl = try InProcessDouctl(transport: transport)
            // A corrupt store: reading it would fail the command.
            try FileManager.default.createDirectory(atPath: douctl.configDirectory, withIntermediateDirectories: true)
            try Data("{corrupt".utf8).write(to: URL(fileURLWithPath: douctl.configDirectory + "/credentials.json"))
            let entriesBefore = try FileManager.default.contentsOfDirectory(atPath: douctl.home.path).sorted()
            let argv = arguments.map { $0.replacingAll("RECORD", with: douctl.home.path + "/recorded").replacingAll("HOME", with: douctl.home.path) }
            let result = try douctl.run(argv + ["--api-base", "http://127.0.0.1:9", "--dry-run"])
            #expect(result.status == 0, "\(arguments): \(result)")
            #expect(result.stderr.isEmpty, "\(arguments): \(result)")
            let lines = result.stdoutText.split(separator: "\n").map(String.init)
            #expect(lines.count == expected.count, "\(arguments): \(result)")
            for (line, start) in zip(lines, expected) {
                #expect(line.hasPrefix(start), "\(arguments): \(line)")
            }
            #expect(transport.requests.isEmpty, "\(arguments): the run's transport sent nothing")
            #expect(try FileManager.default.contentsOfDirectory(atPath: douctl.home.path).sorted() == entriesBefore,
                    "\(arguments): no download, cache or recording written")
            #expect(try String(contentsOfFile: douctl.configDirectory + "/credentials.json", encoding: .utf8) == "{corrupt")
        }
    }

    /// The commands that call the API, as the tree declares them (`Command.callingAPI`).
    static let callingAPI: Set<String> = ["api", "user", "shuo", "upload", "download"]

    /// Every command, parsed with --dry-run: accepted exactly by the commands that call the
    /// API (and by every leaf below them), refused by every other one as an option it does
    /// not take; its help and completions list --dry-run exactly as the parser takes it.
    @Test func theParserTakesDryRunExactlyWhereTheCommandCallsTheAPI() throws {
        #expect(Set(CommandTree.commandsCallingAPI) == Self.callingAPI)
        let root = Douctl.rootSpec
        let help = HelpRenderer(root: root)
        let bash = BashCompletion.render(root).split(separator: "\n")
        for (path, spec) in ParseTests.leaves {
            let calls = Self.callingAPI.contains(path[0])
            #expect(CommandTree.root.callsAPI(path) == calls, "\(path)")
            let argv = ParseTests.minimalArgv(path, spec) + ["--dry-run"]
            do {
                let outcome = try ArgumentParser(root: root).parse(argv)
                #expect(calls, "\(argv) parsed: \(outcome)")
            } catch {
                #expect(!calls, "\(argv): \(error.message)")
                #expect(error.message == "option '--dry-run' does not apply to 'douctl \(path.joined(separator: " "))'", "\(argv)")
                #expect(error.path == path)
            }
            if !spec.isHidden {
                #expect(help.help(path).contains("--dry-run") == calls, "help of \(path)")
            }
        }
        for (path, calls) in [("auth status", false), ("config list", false), ("user me", true), ("api", true)] {
            let line = bash.first { $0.contains("'\(path)')") || $0.contains(" \(path))") }
            #expect(line.map { $0.contains(" --dry-run ") } == calls, "bash completion of \(path): \(line ?? "none")")
        }
    }

    /// At run time, through `Douctl.main`: a command that does not call the API never
    /// starts with --dry-run; one that does prints its request.
    @Test func aCommandThatDoesNotCallTheAPIRefusesDryRunWithItsUsageLine() throws {
        let douctl = try InProcessDouctl(transport: ScriptedTransport())
        let refused = try douctl.run("auth", "status", "--dry-run")
        #expect(refused.status == 2)
        #expect(refused.stderr == "douctl: option '--dry-run' does not apply to 'douctl auth status'\n" + HelpRenderer(root: Douctl.rootSpec).usageLine(["auth", "status"]) + "\n")
        let printed = try douctl.run("user", "me", "--api-base", "http://127.0.0.1:9", "--dry-run")
        #expect(printed.status == 0 && printed.stdoutText.hasPrefix("curl -sS -g 'http://127.0.0.1:9/v2/user/~me'"), "\(printed)")
    }

    @Test func aStepThatNeedsARealReplyStopsWithTheDryRunLine() throws {
        let picture = try TemporaryDirectory.file(named: "p.png", bytes: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0])
        let transport = ScriptedTransport()
        let douctl = try InProcessDouctl(transport: transport)
        // Coding posts a picture's URL, which only the upload's reply would give.
        let result = try douctl.run("--profile", "coding-sandbox", "shuo", "post", "hi", "--image", picture, "--api-base", "http://127.0.0.1:9", "--dry-run")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText.split(separator: "\n").count == 1, "\(result)")
        #expect(result.stderr == "douctl: dry run: the next request depends on the reply to the one above; stopping there\n")
        #expect(transport.requests.isEmpty)
    }
}
