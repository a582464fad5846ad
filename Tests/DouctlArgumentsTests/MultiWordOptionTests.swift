import DouctlArguments
import Testing

/// Options followed by several words (`--arg NAME VALUE`, as jq takes them): parsed as whole
/// uses, bound as typed pairs, shown with every value name, and skipped by the one rule
/// that finds the command path (`ArgumentParser.commandPath`).
@Suite("Parser: options taking several words")
struct MultiWordOptionTests {
    static let arg = OptionSpec("arg", values: [ValueSpec("NAME"), ValueSpec("VALUE")], help: "bind a string", repeatable: true)
    static let level = OptionSpec("level", short: "L", values: [ValueSpec("NAME"), ValueSpec("N", kind: .integer(0...9))], help: "a level")
    static let root = CommandSpec(
        "tool", abstract: "a test tool",
        options: [arg, level, OptionSpec("profile", value: ValueSpec("NAME"), help: "profile"), .flag("help", short: "h", help: "help")],
        subcommands: [
            CommandSpec("shuo", abstract: "statuses", subcommands: [
                CommandSpec("get", abstract: "get", arguments: [ArgumentSpec("ID", help: "id")]),
            ]),
            CommandSpec("api", abstract: "api", arguments: [ArgumentSpec("PATH", help: "path")]),
        ])
    static let parser = ArgumentParser(root: root)

    struct Bound: CommandOptions {
        var strings: [(String, String)] = []
        static let bindings: [OptionBinding<Bound>] = [.pairs({ $0.strings = $1 }, MultiWordOptionTests.arg)]
    }

    func parsed(_ argv: [String]) throws -> ParsedCommand {
        guard case .run(let parsed) = try Self.parser.parse(argv) else { throw UsageError("not a run", path: []) }
        return parsed
    }

    @Test func bothWordsAreTakenAndBoundAsPairs() throws {
        let command = try parsed(["--arg", "who", "阿北", "api", "/x", "--arg", "n", "--not-an-option", "-L", "x", "3"])
        #expect(command.path == ["api"])
        #expect(command.argument("PATH") == "/x")
        #expect(command.valueGroups("arg", size: 2) == [["who", "阿北"], ["n", "--not-an-option"]])
        #expect(command.valueGroups("level", size: 2) == [["x", "3"]])
        let bound = try Bound.bind(command)
        #expect(bound.strings.map { [$0.0, $0.1] } == [["who", "阿北"], ["n", "--not-an-option"]])
    }

    @Test(arguments: [
        (["api", "/x", "--arg", "who"], "option '--arg' needs 2 values (NAME VALUE); VALUE is missing"),
        (["api", "/x", "--arg"], "option '--arg' needs 2 values (NAME VALUE); NAME VALUE is missing"),
        (["api", "/x", "-L", "x"], "option '-L' needs 2 values (NAME N); N is missing"),
        (["api", "/x", "--arg=who", "x"], "option '--arg' takes 2 words: --arg NAME VALUE (not --arg=…)"),
        (["api", "/x", "-Lx", "3"], "option '-L' takes 2 words: -L NAME N"),
        (["api", "/x", "--level", "x", "ten"], "invalid value 'ten' for --level N: expected an integer"),
    ])
    func aMissingOrJoinedWordIsAUsageErrorNamingTheOption(argv: [String], message: String) {
        #expect(throws: UsageError(message, path: ["api"])) { try Self.parser.parse(argv) }
    }

    /// The path finder skips both words: `--arg shuo get` binds $shuo, it is not a command.
    @Test func theCommandPathSkipsEveryWordOfTheOption() {
        #expect(Self.parser.commandPath(["--arg", "a", "b", "shuo", "get", "1"]) == ["shuo", "get"])
        #expect(Self.parser.commandPath(["--arg", "shuo", "get", "api", "/x"]) == ["api"])
        #expect(Self.parser.commandPath(["-L", "x", "1", "--profile", "p", "shuo", "get"]) == ["shuo", "get"])
        #expect(Self.parser.commandPath(["--bogus", "shuo", "--arg", "get", "x", "get"]) == ["shuo", "get"])
        #expect(Self.parser.commandPath(["help", "shuo", "get"]) == ["shuo", "get"])
        #expect(Self.parser.commandPath(["--arg", "a"]) == [])
        #expect(Self.parser.commandPath(["nope", "shuo"]) == [])
    }

    @Test func helpAndTheManPageShowEveryValueName() {
        let help = HelpRenderer(root: Self.root)
        #expect(help.help([]).contains("--arg NAME VALUE"))
        #expect(help.help([]).contains("-L, --level NAME N"))
        #expect(help.synopsis([]).isEmpty == false)
        #expect(help.help(["api"]).contains("--arg NAME VALUE"), "inherited options list both words")
        let man = ManPage(root: Self.root, date: "2025-01-15", version: "1", description: [], extraSections: []).render()
        #expect(man.contains("\\fB\\-\\-arg\\fR \\fINAME\\fR \\fIVALUE\\fR"), "\(man)")
    }
}
