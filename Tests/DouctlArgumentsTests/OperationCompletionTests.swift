import DouctlArguments
import Foundation
import Testing

/// Issue 42: a first word that is no command may be a profile with an API description; the
/// scripts then ask `douctl __complete operations -- NAME WORDS… CURRENT` (which reads the
/// profile's operations index) and offer what it prints. A stub douctl echoes the words it
/// was given, so each test sees exactly what the shell asked.
@Suite("Completion of API operations")
struct OperationCompletionTests {
    @Test func bashAsksDouctlForAnUnknownFirstWordOnly() throws {
        let bash = try RenderTestSupport.tool("bash")
        let scratch = try RenderTestSupport.ShellScratch()
        defer { scratch.remove() }
        let (directory, scripts) = (scratch.files, scratch.scripts)
        let scriptURL = scripts.appendingPathComponent("douctl.bash")
        try RenderTestSupport.write(BashCompletion.render(RenderFixture.root), to: scriptURL)
        func complete(_ words: [String]) throws -> [String] {
            let driver = """
                source \(RenderTestSupport.quoted(scriptURL.path)) || exit 9
                douctl() {
                    if [[ $1 == __complete && $2 == operations && $3 == -- ]]; then shift 3; printf 'w:%s\\n' "$@"; fi
                }
                COMP_WORDS=(\(words.map(RenderTestSupport.quoted).joined(separator: " ")))
                COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
                _douctl
                printf '%s\\n' "${COMPREPLY[@]}"
                """
            let output = try RenderTestSupport.run(bash, ["--norc", "--noprofile", "-c", driver], directory: directory)
            #expect(output.stderr.isEmpty, "\(output.stderr)")
            return output.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        }
        #expect(try complete(["douctl", "pets", "list-pets", "--kind", ""]) == ["w:pets", "w:list-pets", "w:--kind", "w:"])
        #expect(try complete(["douctl", "pets", "cr"]) == ["w:pets", "w:cr"])
        // A command of douctl's own is completed from the script's tables, never asked.
        #expect(try complete(["douctl", "shuo", ""]).sorted() == ["delete", "post", "timeline"])
    }

    @Test func fishAsksDouctlForAnUnknownFirstWordOnly() throws {
        let fish = try RenderTestSupport.tool("fish")
        let scratch = try RenderTestSupport.ShellScratch()
        defer { scratch.remove() }
        let (directory, scripts) = (scratch.files, scratch.scripts)
        let scriptURL = scripts.appendingPathComponent("douctl.fish")
        try RenderTestSupport.write(FishCompletion.render(RenderFixture.root), to: scriptURL)
        func complete(_ line: String) throws -> [String] {
            let driver = """
                source $argv[1]; or exit 9
                function douctl
                    if test "$argv[1]" = __complete -a "$argv[2]" = operations -a "$argv[3]" = --
                        # What fish offers must start with the word under the cursor.
                        printf '%s\\n' "$argv[-1]:"(string join -- + $argv[4..-2])
                    end
                end
                complete -C $argv[2]
                """
            let output = try RenderTestSupport.run(
                fish, ["--no-config", "-c", driver, scriptURL.path, line], directory: directory,
                environment: ["XDG_DATA_HOME": scripts.path, "XDG_CONFIG_HOME": scripts.path])
            #expect(output.stderr.isEmpty, "\(output.stderr)")
            return output.stdout.split(separator: "\n").map { String($0.split(separator: "\t", maxSplits: 1).first ?? "") }
        }
        #expect(try complete("douctl pets list-pets --kind c").contains("c:pets+list-pets+--kind"))
        #expect(try complete("douctl shuo ").filter { $0.contains(":") }.isEmpty)
    }

    /// In a real interactive zsh (zpty, as ZshCompletionTests), TAB after a first word that
    /// is no command asks douctl with the words from the profile's name on, and offers what
    /// it prints (filtered by the word under the cursor, as zsh does).
    @Test func zshAsksDouctlForAnUnknownFirstWordOnly() throws {
        let stub = #"douctl() { if [[ $1 == __complete && $2 == operations && $3 == -- ]]; then shift 3; print -r -- "${@[-1]}w:${(j:+:)@[1,-2]}"; print -l list-pets create-pet; fi }"#
        #expect(try ZshCompletionTests.complete("douctl pets cr", autoload: false, douctl: stub).sorted() == ["create-pet", "crw:pets"])
        #expect(try ZshCompletionTests.complete("douctl pets list-pets --kind ", autoload: false, douctl: stub).sorted() == ["create-pet", "list-pets", "w:pets+list-pets+--kind"])
        // A command of douctl's own is completed from the script's tables, never asked.
        #expect(try ZshCompletionTests.complete("douctl shuo ", autoload: false, douctl: stub).sorted() == ["delete", "post", "timeline"])
    }

    @Test func zshHasTheSameHookForAnyOtherFirstWord() {
        let script = ZshCompletion.render(RenderFixture.root)
        #expect(script.contains("(*) local -a candidates; candidates=(${(f)\"$(_call_program operations douctl __complete operations -- ${(q)words[1,CURRENT]} 2>/dev/null)\"}); compadd -a candidates && ret=0 ;;"))
    }
}
