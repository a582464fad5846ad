@testable import DouctlCore
import DouctlJSON
import DouctlTestSupport
import Testing

/// YAML through the system's libyaml (issue 42): the core schema's scalars, keys as
/// strings, anchors, aliases and merges, the first document only, and a line for a mistake.
@Suite("YAML into JSON")
struct YAMLTests {
    /// libyaml is a library, not a tool on PATH: skipped naming it when it cannot be loaded
    /// (a failure under DOUCTL_REQUIRE_TOOLS=1).
    static func needLibYAML() throws {
        guard !YAML.isAvailable else { return }
        if Tools.areRequired { Issue.record("libyaml is not installed, and DOUCTL_REQUIRE_TOOLS=1 makes a missing tool a failure"); return }
        try Test.cancel("skipped: needs libyaml (libyaml-0-2), which is not installed")
    }

    static func parse(_ text: String) throws -> JSON {
        try YAML.parse(Array(text.utf8))
    }

    @Test func scalarsFollowTheCoreSchema() throws {
        try Self.needLibYAML()
        let value = try Self.parse("""
        a: 1
        b: -2.50
        c: 0x1F
        d: true
        e: ~
        f: '1'
        g: hello world
        h: 1e3
        i: .inf
        j: 007
        200: ok
        k: !!str 12
        l:
        """)
        #expect(value == ["a": .number("1"), "b": .number("-2.50"), "c": .number("31"), "d": true, "e": nil, "f": "1",
                          "g": "hello world", "h": .number("1e3"), "i": ".inf", "j": .number("7"), "200": "ok", "k": "12", "l": nil])
    }

    @Test func anchorsAliasesAndMergesExpand() throws {
        try Self.needLibYAML()
        let value = try Self.parse("""
        base: &b {x: 1, y: [a, b]}
        copy: *b
        merged:
          <<: *b
          x: 2
        """)
        #expect(value["copy"] == ["x": 1, "y": ["a", "b"]])
        #expect(value["merged"] == ["x": 2, "y": ["a", "b"]])
    }

    @Test func anAliasToItsOwnNodeIsRefused() throws {
        try Self.needLibYAML()
        #expect(throws: YAML.Failure.self) { try Self.parse("a: &x [1, *x]\n") }
    }

    @Test func aMistakeNamesItsLine() throws {
        try Self.needLibYAML()
        do {
            _ = try Self.parse("a: 1\nb: [1, 2\nc: 3\n")
            Issue.record("parsed")
        } catch let failure as YAML.Failure {
            #expect(failure.line >= 2)
            #expect(failure.description.contains("line"))
        }
    }

    @Test func billionLaughsStopsAtTheBound() throws {
        try Self.needLibYAML()
        var text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
        for level in 1...9 {
            text += "a\(level): &a\(level) [" + Array(repeating: "*a\(level - 1)", count: 10).joined(separator: ", ") + "]\n"
        }
        #expect(throws: YAML.Failure.self) { try Self.parse(text) }
    }

    @Test func onlyTheFirstDocumentIsRead() throws {
        try Self.needLibYAML()
        #expect(try Self.parse("---\na: 1\n---\nb: 2\n") == ["a": 1])
    }

    @Test func numbersTakeTheirJSONSpelling() throws {
        #expect(YAML.number("12") == "12")
        #expect(YAML.number("1.") == "1.0")
        #expect(YAML.number(".5") == "0.5")
        #expect(YAML.number("abc") == nil)
        #expect(YAML.number("+") == nil)
    }
}
