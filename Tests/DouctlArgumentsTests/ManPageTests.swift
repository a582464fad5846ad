import DouctlArguments
import Foundation
import Testing

@Suite("Man page")
struct ManPageTests {
    static let source = RenderFixture.manPage().render()

    /// Writes the page to a temporary file and runs `body` with its path.
    private func withPage<T>(_ body: (String) throws -> T) throws -> T {
        let directory = try RenderTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("douctl.1")
        try RenderTestSupport.write(Self.source, to: url)
        return try body(url.path)
    }

    /// The page as groff formats it for a terminal, without overstriking, on wide lines.
    private func groffText() throws -> String {
        let groff = try RenderTestSupport.tool("groff")
        return try withPage { path in
            let output = try RenderTestSupport.run(groff, ["-man", "-Tutf8", "-P-cbou", "-rLL=200n", path])
            #expect(output.status == 0, "\(output.stderr)")
            return output.stdout
        }
    }

    private func mandocText() throws -> String {
        let mandoc = try RenderTestSupport.tool("mandoc")
        return try withPage { path in
            let output = try RenderTestSupport.run(mandoc, ["-Tutf8", "-Owidth=200", path])
            #expect(output.status == 0, "\(output.stderr)")
            return RenderTestSupport.plain(output.stdout)
        }
    }

    /// Whitespace runs as single spaces, so filled text can be searched across line breaks.
    private func flattened(_ text: String) -> String {
        text.split(whereSeparator: { $0 == " " || $0 == "\n" }).joined(separator: " ")
    }

    // MARK: - the formatters accept it

    @Test func groffGivesNoWarnings() throws {
        let groff = try RenderTestSupport.tool("groff")
        let output = try withPage { try RenderTestSupport.run(groff, ["-man", "-Tutf8", "-ww", "-z", $0]) }
        #expect(output.status == 0)
        #expect(output.stderr.isEmpty, "\(output.stderr)")
    }

    @Test func mandocLintIsClean() throws {
        let mandoc = try RenderTestSupport.tool("mandoc")
        let output = try withPage { try RenderTestSupport.run(mandoc, ["-Tlint", "-W", "warning", $0]) }
        #expect(output.stdout.isEmpty && output.stderr.isEmpty, "\(output.stdout)\(output.stderr)")
        #expect(output.status == 0)
        // Style notes too: none for this page.
        let style = try withPage { try RenderTestSupport.run(mandoc, ["-Tlint", $0]) }
        #expect(style.stdout.isEmpty && style.stderr.isEmpty, "\(style.stdout)\(style.stderr)")
    }

    @Test func manDisplaysIt() throws {
        let man = try RenderTestSupport.tool("man")
        let output = try withPage {
            try RenderTestSupport.run(man, ["-l", $0], environment: ["MANPAGER": "cat", "PAGER": "cat", "MANWIDTH": "120"])
        }
        #expect(output.status == 0, "\(output.stderr)")
        let text = RenderTestSupport.plain(output.stdout)
        #expect(text.contains("douctl - a command-line client for Douban- and Coding-style REST APIs"))
        #expect(text.contains("你好，豆瓣"))
    }

    // MARK: - source

    /// Which global options a command takes is said the shorter way: the few it takes, or
    /// all but the few it does not (`--dry-run` for the commands that do not call the API).
    @Test func theGlobalOptionsACommandTakesAreNamedTheShorterWay() throws {
        var root = RenderFixture.root
        root.options = [
            OptionSpec("profile", value: ValueSpec("NAME"), help: "profile").inGroup("profile"),
            OptionSpec("cacert", value: ValueSpec("FILE"), help: "CA file").inGroup("network"),
            OptionSpec.flag("dry-run", help: "print requests").inGroup("api"),
            .flag("help", short: "h", help: "help"),
        ]
        root.inheritedGroups = ["profile", "network"]
        let sandbox = try #require(root.subcommands.firstIndex { $0.name == "sandbox" })
        root.subcommands[sandbox].inheritedGroups = ["profile"]
        let api = try #require(root.subcommands.firstIndex { $0.name == "api" })
        root.subcommands[api].inheritedGroups = ["profile", "network", "api"]
        let source = RenderFixture.manPage(root: root).render()
        #expect(source.contains("Of the global options, this command takes \\-\\-profile, \\-\\-help."), "sandbox")
        #expect(source.contains("Of the global options, this command takes all but \\-\\-dry\\-run."), "the other commands")
        let apiSection = try #require(source.components(separatedBy: "\n.SS ").first { $0.hasPrefix("api\n") || $0.hasPrefix("\"api\"") })
        #expect(!apiSection.contains("Of the global options"), "api takes them all")
    }

    @Test func sourceIsAsciiRoffWithTheTitleLine() {
        let lines = Self.source.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.first?.hasPrefix(".\\\" Generated") == true)
        #expect(lines.contains(#".TH DOUCTL 1 2025-01-15 "douctl 1.2.3" "User Commands""#))
        #expect(Self.source.utf8.allSatisfy { $0 < 0x80 })
        #expect(Self.source.contains("\\[u4F60]\\[u597D]\\[uFF0C]\\[u8C46]\\[u74E3]"))
        #expect(Self.source.contains("douctl \\- a command-line client for Douban- and Coding-style REST APIs"))
        #expect(Self.source.contains("\\fB\\-\\-rec\\-url\\fR \\fIURL\\fR"))
        #expect(Self.source.contains("C:\\eUsers\\edouctl"))
        #expect(Self.source.contains("\n\\&.This line starts with a dot"))
        #expect(Self.source.contains("\n\\&'So does this line"))
        #expect(Self.source.contains("\n\\&.hidden\\-dot\\-line \\en not an escape\n"))
        // no blank lines and no trailing spaces: both upset roff checkers
        #expect(!Self.source.contains("\n\n"))
        #expect(!lines.contains { $0.hasSuffix(" ") })
    }

    @Test func sectionsComeInOrder() throws {
        let text = try mandocText()
        let titles = ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "GLOBAL OPTIONS", "FILES", "ENVIRONMENT", "EXIT STATUS", "EXAMPLES", "SEE ALSO"]
        let lines = text.split(separator: "\n").map(String.init)
        let positions = titles.map { title in lines.firstIndex(of: title) }
        #expect(!positions.contains(nil), "missing a section: \(zip(titles, positions).filter { $0.1 == nil }.map(\.0))")
        let found = positions.compactMap { $0 }
        #expect(found == found.sorted())
    }

    @Test func everyVisibleLeafCommandWithItsSynopsis() throws {
        // Not flattened: a synopsis must not get sentence spacing ("S,...]  [--timeout").
        let text = try groffText()
        for synopsis in [
            "douctl auth login [--web] [--device] [--scopes S,...] [--timeout SECONDS]",
            "douctl auth status",
            "douctl shuo post [TEXT] [--image FILE] [--rec-url URL]",
            "douctl shuo delete ID...",
            "douctl shuo timeline [--count N] [--all]",
            "douctl user get ID",
            "douctl user post-count ID",
            "douctl upload FILE... [--to PATH] [-f KEY=VALUE]... [--progress WHEN] [--parallel N]",
            "douctl api PATH [-X METHOD] [-i] [--input FILE]",
            "douctl profile use NAME",
            "douctl profile add NAME [--preset P]",
            "douctl sandbox [--data DIR]",
            "douctl completion SHELL",
        ] {
            #expect(text.contains(synopsis), "missing: \(synopsis)")
        }
        #expect(text.contains("Post a 广播: text, a picture, or a recommended link."))
    }

    @Test func optionsWithValuesAllowedValuesAndDefaults() throws {
        let text = try groffText()
        for line in [
            "-X, --method METHOD",
            "HTTP method (one of GET, POST, PUT, DELETE; default GET)",
            "--progress WHEN",
            "progress bars on stderr (one of auto, always, never; default auto)",
            "statuses per page (from 1 to 200)",
            "files at once (at least 1; default 1)",
            "-f, --raw-field KEY=VALUE",
            "add a form field (may be given more than once)",
            "wait this long for approval (default 300)",
            "the shell (one of bash, zsh, fish)",
            // global options
            "--profile NAME",
            "--error-format FORMAT",
            "-v, --verbose",
            "give up after this long (default 30)",
        ] {
            #expect(text.contains(line), "missing: \(line)")
        }
    }

    @Test func discussionParagraphsPreformattedLinesAndExamples() throws {
        let page = try mandocText()
        let text = flattened(page)
        // escaped backslashes and control characters come out as typed
        #expect(text.contains("A Windows path looks like C:\\Users\\douctl and stays intact."))
        #expect(text.contains(".This line starts with a dot and 'this one' is quoted."))
        #expect(text.contains("'So does this line start with a quote."))
        // the indented discussion lines stay lines, with their relative indentation
        let lines = page.split(separator: "\n").map(String.init)
        let command = try #require(lines.firstIndex { $0.hasSuffix("douctl shuo post \"你好，豆瓣\" --image cat.jpg") })
        #expect(lines[command + 1].trimmingCharacters(in: .whitespaces) == ".hidden-dot-line \\n not an escape")
        // examples: explanation, then the command
        #expect(text.contains("A status with a picture:"))
        #expect(text.contains("fortune | douctl shuo post - | jq -r .id"))
        #expect(text.contains("douctl shuo timeline --all | jq -r '.text'"))
        #expect(text.contains("Call an endpoint \\ directly:"))
        // caller-written sections
        #expect(text.contains("DOUCTL_TOKEN"))
        #expect(text.contains("~/.config/douctl/config.json"))
        #expect(text.contains("douctl --profile sandbox auth login"))
    }

    @Test func hiddenCommandsAndOptionsAreLeftOut() throws {
        let text = try mandocText()
        for hidden in ["__complete", "secret-mode", "debug-dump", "not for you", "what to list"] {
            #expect(!Self.source.contains(hidden.replacingOccurrences(of: "-", with: "\\-")), "\(hidden) in the source")
            #expect(!Self.source.contains(hidden), "\(hidden) in the source")
            #expect(!text.contains(hidden), "\(hidden) in the page")
        }
    }

    // MARK: - model

    @Test func blocksCompareByValue() {
        typealias Block = ManPage.Block
        #expect(Block.definitions([(term: "0", text: "ok")]) == Block.definitions([(term: "0", text: "ok")]))
        #expect(Block.definitions([(term: "0", text: "ok")]) != Block.definitions([(term: "0", text: "fine")]))
        #expect(Block.definitions([(term: "0", text: "ok")]) != Block.definitions([(term: "0", text: "ok"), (term: "1", text: "no")]))
        #expect(Block.paragraph("a") != Block.preformatted("a"))
        #expect(Block.example(command: "c", explanation: "e") == Block.example(command: "c", explanation: "e"))
        #expect(ManPage.Section(title: "FILES", blocks: [.paragraph("x")]) != ManPage.Section(title: "FILES", blocks: [.paragraph("y")]))
    }

    @Test func rootDiscussionIsTheDescriptionWhenNoneIsGiven() throws {
        let page = ManPage(root: RenderFixture.root, date: "2025-01-15", version: "1", description: [], extraSections: [])
        let source = page.render()
        #expect(source.contains(".SH DESCRIPTION\nData goes to stdout; everything else to stderr.\n"))
    }
}
