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
        #expect(text.contains("GLOBAL OPTIONS\n"))
        #expect(text.contains("--profile NAME"))
    }
}
