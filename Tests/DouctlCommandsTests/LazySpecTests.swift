@testable import DouctlCommands
import DouctlArguments
import Testing

/// Parsing one command line builds only its path's option specs (`Command.spec(along:)`);
/// whatever the line, the outcome is the one the whole tree gives.
@Suite struct LazySpecTests {
    static let lines: [[String]] = [
        ["user", "me"], ["--profile", "user", "shuo", "get", "1"], ["shuo", "timeline", "--all", "--count", "5"],
        ["api", "/x", "-f", "a=b", "--paginate", "--slurp"], ["--timeout", "3", "api", "/x"], ["-v", "user", "me", "--json"],
        ["help", "shuo", "get"], ["shuo", "--help"], ["--version"], ["shuo", "get", "--version"], ["auth", "login", "--web"],
        ["config", "set", "api_base", "http://x"], ["api", "--", "user"], ["shuo", "post", "-", "--image", "a.png"],
        ["--api-base=http://x", "user", "get", "ahbei"], ["upload", "a", "b", "--parallel", "2"], ["download", "http://x/a", "-o", "f"],
        ["shuo"], [], ["profile", "list", "--format", "text"], ["sandbox", "--port", "0"], ["completion", "zsh"],
        ["--arg", "shuo", "get", "api", "/x", "--jq", "$shuo"], ["--argjson", "n", "1", "user", "me", "--jq", ".id + $n"],
    ]

    static let mistakes: [[String]] = [
        ["user", "me", "--bogus"], ["apy"], ["shuo", "get"], ["shuo", "timeline", "--count", "500"], ["version", "--cacert", "x"],
        ["--profile"], ["api", "/x", "--slurp"], ["user", "search", "x", "--count", "101"],
    ]

    @Test(arguments: lines + mistakes)
    func theOutcomeIsTheWholeTreesOutcome(argv: [String]) {
        let whole = Result { () throws(UsageError) in try ArgumentParser(root: Douctl.rootSpec).parse(argv) }
        let lazy = Result { () throws(UsageError) in try Douctl.parse(argv).0 }
        #expect(lazy == whole, "\(argv)")
    }

    @Test func onlyThePathsOptionsAreBuilt() {
        let spec = Douctl.tree.spec(along: ["shuo", "get"])
        #expect(spec.descendant(["shuo", "get"])?.options.isEmpty == false)
        #expect(spec.descendant(["shuo", "post"])?.options.isEmpty == true)
        #expect(spec.descendant(["api"])?.options.isEmpty == true)
        #expect(spec.options == Douctl.rootSpec.options, "the global options are always there")
        #expect(ArgumentParser(root: Douctl.tree.spec).commandPath(["--profile", "user", "shuo", "get", "1"]) == ["shuo", "get"])
        #expect(ArgumentParser(root: Douctl.tree.spec).commandPath(["help", "api"]) == ["api"])
        // --arg takes two words: "shuo get" is its NAME and VALUE, not the command.
        #expect(ArgumentParser(root: Douctl.tree.spec).commandPath(["--arg", "shuo", "get", "api", "/x"]) == ["api"])
    }

    /// A leaf's options and arguments are its bindings': none is declared in its spec too.
    @Test func everyLeafDeclaresItsOptionsInItsBindingsOnly() {
        func visit(_ node: Command, _ path: [String]) {
            if node.prepare != nil {
                #expect(node.spec.options.isEmpty && node.spec.arguments.isEmpty, "\(path)")
            }
            for child in node.children { visit(child, path + [child.spec.name]) }
        }
        visit(Douctl.tree, [])
    }
}
