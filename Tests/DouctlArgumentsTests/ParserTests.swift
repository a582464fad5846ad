import DouctlSystem
import DouctlArguments
import Testing

@Suite("Parser: argv → parsed command")
struct ParserTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let argv: [String]
        let path: [String]
        let options: [String: [String]]
        let arguments: [String: [String]]
        var testDescription: String { argv.joined(separator: " ") }
    }

    static let cases: [Case] = [
        Case(argv: ["api", "/v2/user/~me"], path: ["api"], options: [:], arguments: ["PATH": ["/v2/user/~me"]]),
        // --opt value and --opt=value
        Case(argv: ["api", "--method", "POST", "/x"], path: ["api"], options: ["method": ["POST"]], arguments: ["PATH": ["/x"]]),
        Case(argv: ["api", "--method=PUT", "/x"], path: ["api"], options: ["method": ["PUT"]], arguments: ["PATH": ["/x"]]),
        Case(argv: ["api", "--method=", "/x"], path: ["api"], options: ["method": [""]], arguments: ["PATH": ["/x"]]),
        Case(argv: ["api", "--raw-field", "a=b=c", "/x"], path: ["api"], options: ["raw-field": ["a=b=c"]], arguments: ["PATH": ["/x"]]),
        // short with separate value, attached value
        Case(argv: ["api", "-X", "DELETE", "/x"], path: ["api"], options: ["method": ["DELETE"]], arguments: ["PATH": ["/x"]]),
        Case(argv: ["api", "-XDELETE", "/x"], path: ["api"], options: ["method": ["DELETE"]], arguments: ["PATH": ["/x"]]),
        // clustered short flags, the last one taking a value
        Case(argv: ["api", "-vif", "k=v", "/x"], path: ["api"], options: ["verbose": [""], "include": [""], "raw-field": ["k=v"]], arguments: ["PATH": ["/x"]]),
        Case(argv: ["api", "-vifk=v", "/x"], path: ["api"], options: ["verbose": [""], "include": [""], "raw-field": ["k=v"]], arguments: ["PATH": ["/x"]]),
        Case(argv: ["-vv", "api", "/x"], path: ["api"], options: ["verbose": ["", ""]], arguments: ["PATH": ["/x"]]),
        // repeatable
        Case(argv: ["api", "-f", "a=1", "-f", "b=2", "/x"], path: ["api"], options: ["raw-field": ["a=1", "b=2"]], arguments: ["PATH": ["/x"]]),
        // global options before and after the command word
        Case(argv: ["--profile", "work", "api", "/x"], path: ["api"], options: ["profile": ["work"]], arguments: ["PATH": ["/x"]]),
        Case(argv: ["api", "/x", "--profile", "work"], path: ["api"], options: ["profile": ["work"]], arguments: ["PATH": ["/x"]]),
        Case(argv: ["shuo", "--profile=work", "post", "hi"], path: ["shuo", "post"], options: ["profile": ["work"]], arguments: ["TEXT": ["hi"]]),
        // -- ends options; - is a value
        Case(argv: ["shuo", "post", "--", "--not-an-option"], path: ["shuo", "post"], options: [:], arguments: ["TEXT": ["--not-an-option"]]),
        Case(argv: ["shuo", "post", "-"], path: ["shuo", "post"], options: [:], arguments: ["TEXT": ["-"]]),
        Case(argv: ["shuo", "post", "--image", "-"], path: ["shuo", "post"], options: ["image": ["-"]], arguments: [:]),
        Case(argv: ["api", "-f", "-", "/x"], path: ["api"], options: ["raw-field": ["-"]], arguments: ["PATH": ["/x"]]),
        // a negative number is a value, not an option
        Case(argv: ["shuo", "post", "-12"], path: ["shuo", "post"], options: [:], arguments: ["TEXT": ["-12"]]),
        // optional, variadic, required-after-variadic
        Case(argv: ["shuo", "post"], path: ["shuo", "post"], options: [:], arguments: [:]),
        Case(argv: ["shuo", "delete", "1", "2", "3"], path: ["shuo", "delete"], options: [:], arguments: ["ID": ["1", "2", "3"]]),
        Case(argv: ["shuo", "comment", "1", "你好"], path: ["shuo", "comment"], options: [:], arguments: ["ID": ["1"], "TEXT": ["你好"]]),
        Case(argv: ["copy", "a", "b", "c"], path: ["copy"], options: [:], arguments: ["SOURCE": ["a", "b"], "TARGET": ["c"]]),
        // values in range and in the allowed set
        Case(argv: ["shuo", "timeline", "--count", "200"], path: ["shuo", "timeline"], options: ["count": ["200"]], arguments: [:]),
        Case(argv: ["api", "--progress", "never", "/x"], path: ["api"], options: ["progress": ["never"]], arguments: ["PATH": ["/x"]]),
        // hidden commands still parse
        Case(argv: ["secret"], path: ["secret"], options: [:], arguments: [:]),
    ]

    @Test(arguments: cases)
    func parses(_ example: Case) throws {
        let outcome = try Fixture.parser.parse(example.argv)
        guard case .run(let parsed) = outcome else {
            Issue.record("expected a command, got \(outcome)")
            return
        }
        #expect(parsed.path == example.path)
        #expect(parsed.options == example.options)
        #expect(parsed.arguments == example.arguments)
    }

    @Test func defaultsApplyWhenOptionsAreAbsent() throws {
        guard case .run(let parsed) = try Fixture.parser.parse(["api", "/x"]) else {
            Issue.record("expected a command")
            return
        }
        #expect(parsed.value("progress") == "auto")
        #expect(parsed.number("timeout") == 30)
        #expect(parsed.value("error-format") == "text")
        #expect(parsed.has("progress") == false)
        #expect(parsed.value("method") == nil)
    }

    @Test func lastValueWinsForSingleOptions() throws {
        guard case .run(let parsed) = try Fixture.parser.parse(["api", "-X", "GET", "-X", "POST", "/x"]) else {
            Issue.record("expected a command")
            return
        }
        #expect(parsed.value("method") == "POST")
        #expect(parsed.count("method") == 2)
    }

    @Test(arguments: [
        (["--help"], [String]()),
        (["-h"], []),
        (["shuo", "--help"], ["shuo"]),
        (["shuo", "post", "-h"], ["shuo", "post"]),
        (["shuo", "post", "--image", "x", "--help"], ["shuo", "post"]),
        (["help"], []),
        (["help", "shuo", "post"], ["shuo", "post"]),
        (["shuo"], ["shuo"]),
        // --help wins over mistakes that follow it
        (["api", "--help", "--bogus"], ["api"]),
        (["-vh", "api"], ["api"]),
    ])
    func helpRequests(argv: [String], path: [String]) throws {
        #expect(try Fixture.parser.parse(argv) == .help(path: path))
    }

    @Test func versionFlag() throws {
        #expect(try Fixture.parser.parse(["--version"]) == .version)
        #expect(try Fixture.parser.parse(["api", "/x", "--version"]) == .version)
    }
}

@Suite("Parser: usage errors")
struct UsageErrorTests {
    @Test(arguments: [
        (["shou", "post"], "unknown command 'shou' for 'tool' (did you mean 'shuo'?)", [String]()),
        (["shuo", "psot"], "unknown command 'psot' for 'tool shuo' (did you mean 'post'?)", ["shuo"]),
        (["zzzzzz"], "unknown command 'zzzzzz' for 'tool'", []),
        (["api", "--methd", "GET", "/x"], "unknown option '--methd' for 'tool api' (did you mean '--method'?)", ["api"]),
        (["api", "--profil", "x", "/x"], "unknown option '--profil' for 'tool api' (did you mean '--profile'?)", ["api"]),
        (["--verbos"], "unknown option '--verbos' (did you mean '--verbose'?)", []),
        (["api", "-Q", "/x"], "unknown option '-Q' for 'tool api' (to pass PATH that starts with '-', put -- before it)", ["api"]),
        (["shuo", "post", "-1 分"], "unknown option '-1' for 'tool shuo post' (to pass TEXT that starts with '-', put -- before it)", ["shuo", "post"]),
        (["shuo", "post", "--- 分割线"], "unknown option '--- 分割线' for 'tool shuo post' (to pass TEXT that starts with '-', put -- before it)", ["shuo", "post"]),
        (["api", "/x", "--method"], "option '--method' needs a value (METHOD)", ["api"]),
        (["api", "/x", "-X"], "option '-X' needs a value (METHOD)", ["api"]),
        (["api", "--include=yes", "/x"], "option '--include' takes no value", ["api"]),
        (["api"], "missing argument PATH", ["api"]),
        (["api", "/x", "/y"], "unexpected argument '/y'", ["api"]),
        (["shuo", "delete"], "missing argument ID", ["shuo", "delete"]),
        (["shuo", "comment", "1"], "missing argument TEXT", ["shuo", "comment"]),
        (["copy", "a"], "missing argument TARGET", ["copy"]),
        (["shuo", "timeline", "--count", "abc"], "invalid value 'abc' for --count: expected an integer", ["shuo", "timeline"]),
        (["shuo", "timeline", "--count", "500"], "invalid value '500' for --count: must be between 1 and 200", ["shuo", "timeline"]),
        (["api", "--progress", "alway", "/x"], "invalid value 'alway' for --progress: expected one of auto, always, never (did you mean 'always'?)", ["api"]),
        (["--timeout", "soon", "api", "/x"], "invalid value 'soon' for --timeout: expected a non-negative number", []),
        (["--timeout", "-1", "api", "/x"], "invalid value '-1' for --timeout: expected a non-negative number", []),
        (["help", "shuo", "psot"], "unknown command 'psot' for 'help' (did you mean 'post'?)", ["shuo"]),
    ])
    func rejects(argv: [String], message: String, path: [String]) {
        #expect(throws: UsageError(message, path: path)) {
            try Fixture.parser.parse(argv)
        }
    }

    @Test func usageLineNamesTheCommand() {
        let help = HelpRenderer(root: Fixture.root)
        #expect(help.usageLine(["shuo", "post"]) == "usage: tool shuo post [TEXT] [--image FILE] [--rec-url URL]")
        #expect(help.usageLine(["api"]) == "usage: tool api PATH [-X METHOD] [-f KEY=VALUE]... [-i] [--progress WHEN]")
        #expect(help.usageLine(["shuo"]) == "usage: tool shuo <command> [options]")
    }
}

@Suite("Suggestions")
struct SuggestionTests {
    @Test(arguments: [
        ("post", "post", 0), ("psot", "post", 1), ("pots", "post", 1), ("pst", "post", 1),
        ("timeline", "timelines", 1), ("", "abc", 3), ("abc", "", 3), ("kitten", "sitting", 3),
    ])
    func editDistance(a: String, b: String, distance: Int) {
        #expect(Suggestions.editDistance(a, b) == distance)
    }

    @Test func closestPrefersSmallDistanceAndUniquePrefix() {
        #expect(Suggestions.closest(to: "--imgae", in: ["--image", "--rec-url"]) == "--image")
        #expect(Suggestions.closest(to: "--pre", in: ["--pretty", "--compact"]) == "--pretty")
        #expect(Suggestions.closest(to: "xyz", in: ["post", "get"]) == nil)
    }
}
