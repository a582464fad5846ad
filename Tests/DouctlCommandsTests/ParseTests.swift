import DouctlArguments
import DouctlCore
@testable import DouctlCommands
import DouctlJSON
import DouctlTestSupport
import Testing

/// The real command tree, parsed: every command path, its flags and aliases, and the usage
/// errors (exit 2 and the documented line). Nothing here runs a command.
@Suite("Command tree: parsing")
struct ParseTests {
    static let parser = ArgumentParser(root: Douctl.rootSpec)

    /// Every command path from the root, groups and leaves, hidden ones included.
    static let paths: [(path: [String], spec: CommandSpec)] = {
        var found: [([String], CommandSpec)] = []
        func visit(_ spec: CommandSpec, _ path: [String]) {
            for child in spec.subcommands {
                found.append((path + [child.name], child))
                visit(child, path + [child.name])
            }
        }
        visit(Douctl.rootSpec, [])
        return found
    }()

    static var leaves: [(path: [String], spec: CommandSpec)] { paths.filter { !$0.spec.isGroup } }

    /// A value the parser accepts for `kind`.
    static func sample(_ kind: ValueKind) -> String {
        switch kind {
        case .string: return "x"
        case .integer(let range): return String(range?.lowerBound ?? 1)
        case .number: return "1"
        case .choice(let choices): return choices.first ?? "x"
        }
    }

    /// How many values an argument needs at least.
    static func required(_ argument: ArgumentSpec) -> Int {
        switch argument.arity {
        case .required: return 1
        case .optional: return 0
        case .variadic(let minimum): return minimum
        }
    }

    /// The path and just enough arguments for the command to parse.
    static func minimalArgv(_ path: [String], _ spec: CommandSpec) -> [String] {
        path + spec.arguments.flatMap { Array(repeating: sample($0.kind), count: required($0)) }
    }

    func parsed(_ argv: [String]) throws -> ParsedCommand {
        guard case .run(let parsed) = try Self.parser.parse(argv) else {
            throw TestFailure("\(argv) did not parse to a command to run")
        }
        return parsed
    }

    @Test func theTreeHasTheDocumentedCommands() {
        let top = Douctl.rootSpec.subcommands.filter { !$0.isHidden }.map(\.name)
        #expect(top == ["auth", "user", "shuo", "upload", "download", "api", "config", "profile", "cache", "keeper", "sandbox", "demo", "completion", "version"])
        #expect(Self.leaves.count >= 40, "\(Self.leaves.map { $0.path.joined(separator: " ") })")
    }

    @Test func everyLeafParsesWithItsRequiredArgumentsAndHasARunFunction() throws {
        for (path, spec) in Self.leaves {
            let argv = Self.minimalArgv(path, spec)
            let outcome = try Self.parser.parse(argv)
            guard case .run(let parsed) = outcome else {
                Issue.record("\(argv) parsed to \(outcome)")
                continue
            }
            #expect(parsed.path == path)
            for argument in spec.arguments where Self.required(argument) > 0 {
                #expect(parsed.argumentValues(argument.name).count == Self.required(argument), "\(argv): \(argument.name)")
            }
            #expect(Douctl.tree.find(path)?.prepare != nil, "\(path) is in the specs but nothing runs it")
        }
    }

    @Test func everyGroupAndEveryHelpRequestAsksForHelp() throws {
        for (path, spec) in Self.paths {
            if spec.isGroup { #expect(try Self.parser.parse(path) == .help(path: path)) }
            #expect(try Self.parser.parse(["help"] + path) == .help(path: path))
            #expect(try Self.parser.parse(path + ["--help"]) == .help(path: path))
            #expect(try Self.parser.parse(path + ["-h"]) == .help(path: path))
        }
        #expect(try Self.parser.parse([]) == .help(path: []))
        #expect(try Self.parser.parse(["--version"]) == .version)
    }

    @Test func everyLeafRejectsAnUnknownOptionWithItsUsageLine() throws {
        let douctl = try InProcessDouctl()
        for (path, spec) in Self.leaves {
            let result = try douctl.run(Self.minimalArgv(path, spec) + ["--zzzzzzzzzz"])
            #expect(result.status == 2)
            #expect(result.stdout.isEmpty)
            let lines = result.stderr.split(separator: "\n").map(String.init)
            #expect(lines.count == 2, "\(result)")
            #expect(lines.first == "douctl: unknown option '--zzzzzzzzzz' for 'douctl \(path.joined(separator: " "))'")
            #expect(lines.last == HelpRenderer(root: Douctl.rootSpec).usageLine(path))
            #expect(lines.last?.hasPrefix("usage: douctl \(path.joined(separator: " "))") == true)
        }
    }

    // MARK: flags and aliases

    @Test func longShortAndInlineFormsMeanTheSame() throws {
        let forms = [
            ["api", "/x", "-X", "POST", "-f", "a=1", "-fb=2", "-H", "X-A: 1", "-i", "--timeout", "5"],
            ["api", "/x", "--method=POST", "--raw-field", "a=1", "--raw-field=b=2", "--header", "X-A: 1", "--include", "--timeout=5"],
            ["--timeout", "5", "api", "-i", "--method", "POST", "/x", "-fa=1", "-f", "b=2", "--header=X-A: 1"],
        ]
        for argv in forms {
            let parsed = try parsed(argv)
            #expect(parsed.path == ["api"])
            #expect(parsed.argument("PATH") == "/x")
            #expect(parsed.value("method") == "POST")
            #expect(parsed.values("raw-field") == ["a=1", "b=2"])
            #expect(parsed.values("header") == ["X-A: 1"])
            #expect(parsed.has("include"))
            #expect(parsed.number("timeout") == 5)
        }
    }

    @Test func shortFlagsClusterAndCount() throws {
        let parsed = try parsed(["-vk", "user", "me", "-v"])
        #expect(parsed.count("verbose") == 2)
        #expect(parsed.has("insecure"))
        #expect(!parsed.has("pretty"))
    }

    /// Each command takes the global options of the groups it declares: every one for
    /// commands that send requests, fewer for the rest; help, --version and --error-format
    /// everywhere.
    @Test func globalOptionsParseWhereTheyApply() throws {
        for argv in [["api", "/x", "--cacert", "c"], ["--cacert", "c", "-k", "user", "me"], ["auth", "status", "--proxy", "http://p"],
                     ["download", "u", "--wait-on-rate-limit"], ["config", "list", "--profile", "p", "--pretty"],
                     ["sandbox", "--config-dir", "d"], ["version", "--error-format", "json"], ["demo", "--compact"]] {
            guard case .run = try Self.parser.parse(argv) else {
                Issue.record("\(argv) did not parse to a run")
                continue
            }
        }
        let root = Douctl.rootSpec
        #expect(root.inheritedOptions(at: ["version"]).map(\.long) == ["error-format", "color", "help", "version"], "--color applies wherever an error line can be printed")
        #expect(root.inheritedOptions(at: ["api"]).count == root.options.count)
        #expect(!root.inheritedOptions(at: ["sandbox"]).map(\.long).contains("cacert"))
    }

    @Test func defaultsApplyWhenAnOptionIsAbsent() throws {
        let parsed = try parsed(["api", "/x"])
        #expect(parsed.value("timeout") == "30")
        #expect(parsed.value("progress") == "auto")
        #expect(parsed.value("error-format") == "text")
        #expect(!parsed.has("timeout"))
    }

    @Test func doubleDashEndsOptionsAndNegativeNumbersAreValues() throws {
        #expect(try parsed(["api", "--", "-v"]).argument("PATH") == "-v")
        #expect(try parsed(["api", "--", "-v"]).count("verbose") == 0)
        #expect(try parsed(["shuo", "post", "-"]).argument("TEXT") == "-")
        #expect(try parsed(["api", "/x", "-f", "n=-1"]).values("raw-field") == ["n=-1"])
    }

    @Test func noRetryIsRetryZero() throws {
        for argv in [["user", "me", "--no-retry"], ["user", "me", "--retry", "0"]] {
            let invocation = try invocation(argv)
            #expect(invocation.session.settings.requests.retry.maxAttempts == 1, "\(argv)")
        }
        #expect(try invocation(["user", "me"]).session.settings.requests.retry.maxAttempts == 3)
        #expect(try invocation(["user", "me", "--retry", "5", "--retry-max-time", "9"]).session.settings.requests.retry.maxAttempts == 6)
        #expect(try invocation(["user", "me", "--retry-max-time", "9"]).session.settings.requests.retry.maxElapsed == 9)
    }

    @Test func mockIsTheOldNameOfReplay() throws {
        let parsed = try parsed(["sandbox", "--mock", "/tmp/x"])
        #expect(parsed.value("mock") == "/tmp/x")
        #expect(Douctl.rootSpec.descendant(["sandbox"])?.option(long: "mock")?.isHidden == true)
        #expect(Douctl.rootSpec.descendant(["sandbox"])?.option(long: "replay")?.isHidden == false)
    }

    @Test func theProfileComesFromTheFlagElseTheEnvironment() throws {
        #expect(try invocation(["user", "me"], environment: ["DOUCTL_PROFILE": "team"]).session.settings.requestedProfile == "team")
        #expect(try invocation(["user", "me", "--profile", "mine"], environment: ["DOUCTL_PROFILE": "team"]).session.settings.requestedProfile == "mine")
        #expect(try invocation(["user", "me"], environment: ["DOUCTL_PROFILE": ""]).session.settings.requestedProfile == nil)
    }

    /// `--arg NAME VALUE` and `--argjson NAME JSON` bind as pairs of words, as jq takes them.
    @Test func jqVariablesAreTypedWhenBound() throws {
        let globals = try GlobalOptionValues.bind(parsed(["api", "/x", "--jq", ".", "--arg", "who", "a=b", "--arg", "e", "", "--argjson", "n", "{\"k\":1}"]))
        #expect(globals.jqStrings.map { "\($0.name)|\($0.value)" } == ["who|a=b", "e|"])
        #expect(globals.jqJSON.map { "\($0.name)|\($0.value)" } == [#"n|{"k":1}"#])
        let none = try GlobalOptionValues.bind(parsed(["api", "/x"]))
        #expect(none.jqStrings.isEmpty && none.jqJSON.isEmpty)
    }

    /// An invocation of `argv`, built but not run.
    func invocation(_ argv: [String], environment: [String: String] = [:]) throws -> CommandContext {
        let parsed = try parsed(argv)
        let context = ProcessContext(arguments: argv, environment: environment, standardInput: -1, standardOutput: -1, standardError: -1)
        let globals = try GlobalOptionValues.bind(parsed)
        let output = Output(stdout: OutputStream(fileDescriptor: -1), stderr: OutputStream(fileDescriptor: -1), terminal: TerminalFacts(),
                            globals: globals, environment: environment)
        return CommandContext(globals: globals, output: output, process: context)
    }

    // MARK: usage errors: exit 2, the error, then the usage line

    @Test(arguments: [
        (["api", "/x", "--paginat"], "douctl: unknown option '--paginat' for 'douctl api' (did you mean '--paginate'?)", ["api"]),
        (["apy"], "douctl: unknown command 'apy' for 'douctl' (did you mean 'api'?)", []),
        (["shuo", "tiemline"], "douctl: unknown command 'tiemline' for 'douctl shuo' (did you mean 'timeline'?)", ["shuo"]),
        (["shuo", "get"], "douctl: missing argument ID", ["shuo", "get"]),
        (["shuo", "get", "1", "2"], "douctl: unexpected argument '2'", ["shuo", "get"]),
        (["shuo", "timeline", "--count", "500"], "douctl: invalid value '500' for --count: must be between 1 and 200", ["shuo", "timeline"]),
        (["shuo", "timeline", "--count", "many"], "douctl: invalid value 'many' for --count: expected an integer", ["shuo", "timeline"]),
        (["api", "/x", "--timeout", "-1"], "douctl: invalid value '-1' for --timeout: expected a non-negative number", ["api"]),
        (["api", "/x", "--error-format", "xml"], "douctl: invalid value 'xml' for --error-format: expected one of text, json", ["api"]),
        (["api", "/x", "-X"], "douctl: option '-X' needs a value (METHOD)", ["api"]),
        // Global options apply only where they mean something (before: all parsed, and were ignored).
        (["version", "--cacert", "x"], "douctl: option '--cacert' does not apply to 'douctl version'", ["version"]),
        (["--cacert", "x", "version"], "douctl: option '--cacert' does not apply to 'douctl version'", ["version"]),
        (["sandbox", "--proxy", "http://127.0.0.1:9"], "douctl: option '--proxy' does not apply to 'douctl sandbox'", ["sandbox"]),
        (["config", "list", "--verbose"], "douctl: option '--verbose' does not apply to 'douctl config list'", ["config", "list"]),
        (["completion", "bash", "--profile", "p"], "douctl: option '--profile' does not apply to 'douctl completion'", ["completion"]),
        // --dry-run only where the command calls the API (before: auth status took it, and
        // refused it at run time without the usage line).
        (["auth", "status", "--dry-run"], "douctl: option '--dry-run' does not apply to 'douctl auth status'", ["auth", "status"]),
        (["--dry-run", "auth", "refresh"], "douctl: option '--dry-run' does not apply to 'douctl auth refresh'", ["auth", "refresh"]),
        (["config", "list", "--dry-run"], "douctl: option '--dry-run' does not apply to 'douctl config list'", ["config", "list"]),
        (["sandbox", "--dry-run"], "douctl: option '--dry-run' does not apply to 'douctl sandbox'", ["sandbox"]),
        (["demo", "--dry-run"], "douctl: option '--dry-run' does not apply to 'douctl demo'", ["demo"]),
        // Key-value options are read as they are bound (issue 31; before: split in the run,
        // without the usage line, and --arg's own word was 'field').
        (["api", "/x", "-f", "novalue"], "douctl: invalid field 'novalue' for -f: expected KEY=VALUE", ["api"]),
        (["api", "/x", "-H", "no colon"], "douctl: invalid header 'no colon': expected 'Name: value'", ["api"]),
        (["upload", "a.png", "-f", "=v"], "douctl: invalid field '=v' for -f: expected KEY=VALUE", ["upload"]),
        (["api", "/x", "--jq", ".", "--arg", "who"], "douctl: option '--arg' needs 2 values (NAME VALUE); VALUE is missing", ["api"]),
        (["user", "me", "--jq", ".", "--argjson", "n=1", "x"], "douctl: --argjson takes two words, as jq: --argjson n 1 (not NAME=VALUE)", ["user", "me"]),
    ])
    func usageErrorsExit2WithTheLineAndTheUsage(argv: [String], line: String, usagePath: [String]) throws {
        let result = try InProcessDouctl().run(argv)
        #expect(result.status == 2, "\(result)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == line + "\n" + HelpRenderer(root: Douctl.rootSpec).usageLine(usagePath) + "\n")
    }

    @Test func aUsageErrorCanBeJSON() throws {
        let result = try InProcessDouctl().run("--error-format", "json", "apy")
        #expect(result.status == 2)
        let error = try JSONParser.parse(result.stderr)
        #expect(error["error"]?.stringValue == "unknown command 'apy' for 'douctl' (did you mean 'api'?)")
        #expect(error["exit"]?.intValue == 2)
        #expect(error["usage"]?.stringValue == HelpRenderer(root: Douctl.rootSpec).usageLine([]))
    }

    @Test func theAPIUsageLineIsTheDocumentedOne() {
        #expect(HelpRenderer(root: Douctl.rootSpec).usageLine(["api"])
                == "usage: douctl api [PATH] [-X METHOD] [-f KEY=VALUE]... [-F KEY=VALUE]... [--attach KEY=FILE]... [-H 'NAME: VALUE']... [--input FILE] [--progress WHEN] [--json] [--paginate] [--slurp] [--items KEY] [--parallel N] [--follow] [-i] [-o FILE] [-I] [--force] [--raw]")
    }
}

/// `ExitStatus` is the one place errors become exit codes, transport failures included.
@Suite struct ExitStatusMapTests {
    @Test(arguments: [
        (DouctlError.transport(.timedOut("no bytes for 30s")), DouctlCommands.ExitStatus.network),
        (.transport(.cannotConnect("refused")), .network),
        (.transport(.interrupted), .interrupted),
        (.transport(.bodyFile("cannot read a.png")), .localInput),
        (.interrupted, .interrupted),
        (.notLoggedIn("douban"), .authentication),
    ])
    func eachErrorHasItsCode(error: DouctlError, expected: DouctlCommands.ExitStatus) {
        #expect(DouctlCommands.ExitStatus(error) == expected)
    }
}
