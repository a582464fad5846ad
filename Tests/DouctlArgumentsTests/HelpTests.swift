import DouctlArguments
import Testing

@Suite("Help rendering")
struct HelpTests {
    let help = HelpRenderer(root: Fixture.root, rootEpilogue: "EXIT STATUS\n  0  ok\n")

    @Test func groupHelpListsVisibleSubcommandsOnly() {
        let text = help.help([])
        #expect(text.hasPrefix("tool — a test tool\n"))
        #expect(text.contains("COMMANDS\n  shuo "))
        #expect(text.contains("  api "))
        #expect(!text.contains("secret"))
        #expect(text.contains("EXIT STATUS\n  0  ok\n"))
    }

    @Test func leafHelpShowsArgumentsOptionsDefaultsAndGlobals() {
        let text = help.help(["api"])
        #expect(text.contains("ARGUMENTS\n  PATH"))
        #expect(text.contains("-X, --method METHOD"))
        #expect(text.contains("(repeatable)"))
        #expect(text.contains("(auto|always|never) [default: auto]"))
        #expect(text.contains("INHERITED OPTIONS\n"))
        #expect(text.contains("--profile NAME"))
        #expect(text.contains("Run 'tool --help' for what they do.\n"))
        #expect(!text.contains("GLOBAL OPTIONS"), "the globals are described once, in the root's help")
    }

    /// A command that inherits some groups of the global options lists only those.
    @Test func leafHelpListsOnlyTheGlobalsItInherits() throws {
        var root = Fixture.root
        root.options = [
            OptionSpec("profile", value: ValueSpec("NAME"), help: "profile").inGroup("profile"),
            OptionSpec("cacert", value: ValueSpec("FILE"), help: "CA file").inGroup("network"),
            .flag("help", short: "h", help: "help"),
        ]
        let index = try #require(root.subcommands.firstIndex { $0.name == "api" })
        root.subcommands[index].inheritedGroups = ["profile"]
        let text = HelpRenderer(root: root).help(["api"])
        #expect(text.contains("INHERITED OPTIONS\n  --profile NAME, -h/--help\n"), "\(text)")
        #expect(!text.contains("--cacert"))
        let parser = ArgumentParser(root: root)
        #expect(throws: UsageError.self) { try parser.parse(["api", "/x", "--cacert", "f"]) }
        #expect(throws: UsageError.self) { try parser.parse(["--cacert", "f", "api", "/x"]) }
        guard case .run(let parsed) = try parser.parse(["--profile", "p", "api", "/x"]) else {
            Issue.record("did not parse")
            return
        }
        #expect(parsed.value("profile") == "p")
    }
}
