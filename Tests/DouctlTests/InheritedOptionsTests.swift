import DouctlTestSupport
import Testing

/// Each command takes only the global options that apply to it, and its --help names them
/// in a short INHERITED OPTIONS pointer instead of repeating their descriptions.
@Suite("Inherited options")
struct InheritedOptionsTests {
    @Test func aGlobalOptionThatDoesNotApplyIsAUsageError() throws {
        // Before: parsed and silently ignored (exit 0).
        let version = try Douctl().run("version", "--cacert", "/nonexistent.pem")
        #expect(version.status == 2, "\(version)")
        #expect(version.errorLine == "douctl: option '--cacert' does not apply to 'douctl version'")
        #expect(version.stdout.isEmpty)
        let before = try Douctl().run("--proxy", "http://127.0.0.1:9", "sandbox", "--port", "0")
        #expect(before.status == 2, "\(before)")
        #expect(before.errorLine == "douctl: option '--proxy' does not apply to 'douctl sandbox'")
        // Where it applies it still works, before or after the command word.
        let api = try Douctl().run("--cacert", "/nonexistent.pem", "api", "https://127.0.0.1:9/x")
        #expect(api.status == 3, "the CA file is checked (exit 3), so the option was taken: \(api)")
    }

    @Test func helpListsOnlyTheInheritedOptionsInAShortPointer() throws {
        let sandbox = try Douctl().run("sandbox", "--help")
        #expect(sandbox.status == 0)
        // Before: a GLOBAL OPTIONS table of every global option, --cacert included.
        #expect(!sandbox.stdoutText.contains("--cacert"))
        #expect(!sandbox.stdoutText.contains("GLOBAL OPTIONS"))
        #expect(sandbox.stdoutText.contains("INHERITED OPTIONS\n  --profile NAME, --config-dir DIR, --error-format FORMAT, --color WHEN,\n  -h/--help, --version\n  Run 'douctl --help' for what they do.\n"), "\(sandbox.stdoutText)")
        let api = try Douctl().run("api", "--help")
        #expect(api.stdoutText.contains("INHERITED OPTIONS\n"))
        #expect(api.stdoutText.contains("--cacert FILE"))
        let root = try Douctl().run("--help")
        #expect(root.stdoutText.contains("GLOBAL OPTIONS\n"), "the root's help describes every global option")
    }
}
