import DouctlArguments
import Foundation
import Testing

/// One completion request: the words typed (the last one is under the cursor) and the
/// candidates the shell must offer, in any order.
struct CompletionCase: CustomTestStringConvertible, Sendable {
    var words: [String]
    var expected: [String]

    init(_ words: [String], _ expected: [String]) {
        self.words = words
        self.expected = expected
    }

    /// The command line as typed: words joined by spaces, the cursor at the end.
    var line: String { words.joined(separator: " ") }
    var testDescription: String { "'\(line)' → \(expected.joined(separator: " "))" }
}

/// Visible options of `shuo post` plus the global ones (no hidden --secret-mode or --debug-dump).
private let shuoPostOptions = [
    "--image", "--rec-url",
    "--profile", "--config-dir", "-v", "--verbose", "--timeout", "--error-format", "--pair", "-h", "--help", "--version",
]
private let globalLongOptions = ["--profile", "--config-dir", "--verbose", "--timeout", "--error-format", "--pair", "--help", "--version"]
/// An option taking two words (`--pair NAME WHEN`, as `--arg NAME VALUE`): each word completes
/// as its own value says, and both are skipped when finding the command path and positionals.
private let twoWordCases: [CompletionCase] = [
    CompletionCase(["douctl", "--pair", ""], []),
    CompletionCase(["douctl", "--pair", "x", ""], ["soon", "late"]),
    CompletionCase(["douctl", "--pair", "x", "l"], ["late"]),
    CompletionCase(["douctl", "--pair", "x", "soon", "sh"], ["shuo"]),
    CompletionCase(["douctl", "shuo", "post", "--pair", "x", "late", "--im"], ["--image"]),
    CompletionCase(["douctl", "upload", "--pair", "x", "late", "re"], ["readme.md", "report.txt"]),
]
private let topLevel = ["auth", "shuo", "user", "upload", "api", "profile", "sandbox", "completion", "help"]
/// Issue 40: `help <TAB>` completes command names (help is the parser's word, offered beside
/// them), and `--attach KEY=<TAB>` file names after the `=` (nothing before it).
private let helpAndKeyedFileCases: [CompletionCase] = [
    CompletionCase(["douctl", "help", ""], ["auth", "shuo", "user", "upload", "api", "profile", "sandbox", "completion"]),
    CompletionCase(["douctl", "help", "sh"], ["shuo"]),
    CompletionCase(["douctl", "api", "--attach", "ima"], []),
]

// MARK: - bash

@Suite("Bash completion")
struct BashCompletionTests {
    static let script = BashCompletion.render(RenderFixture.root)

    static let cases: [CompletionCase] = [
        CompletionCase(["douctl", ""], topLevel),
        CompletionCase(["douctl", "sh"], ["shuo"]),
        CompletionCase(["douctl", "shuo", ""], ["post", "delete", "timeline"]),
        CompletionCase(["douctl", "user", "p"], ["post-count"]),
        CompletionCase(["douctl", "__"], []),
        CompletionCase(["douctl", "shuo", "post", "-"], shuoPostOptions),
        CompletionCase(["douctl", "shuo", "post", "--re"], ["--rec-url"]),
        CompletionCase(["douctl", "shuo", "post", "--se"], []),
        CompletionCase(["douctl", "--profile", "work", "shuo", "post", "--im"], ["--image"]),
        CompletionCase(["douctl", "shuo", "post", "--profile", "work", "--im"], ["--image"]),
        CompletionCase(["douctl", "upload", "--progress", ""], ["auto", "always", "never"]),
        CompletionCase(["douctl", "upload", "--progress", "a"], ["auto", "always"]),
        CompletionCase(["douctl", "--error-format", ""], ["text", "json"]),
        CompletionCase(["douctl", "api", "-iX", ""], ["GET", "POST", "PUT", "DELETE"]),
        CompletionCase(["douctl", "api", "-X", "GET", ""], []),
        CompletionCase(["douctl", "completion", ""], ["bash", "zsh", "fish"]),
        CompletionCase(["douctl", "completion", "bash", ""], []),
        CompletionCase(["douctl", "--profile", ""], ["work", "sandbox"]),
        CompletionCase(["douctl", "--profile", "s"], ["sandbox"]),
        CompletionCase(["douctl", "profile", "use", ""], ["work", "sandbox"]),
        CompletionCase(["douctl", "--profile", "work", "shuo", "p"], ["post"]),
        // --opt=value: split at "=" by COMP_WORDBREAKS, or kept whole
        CompletionCase(["douctl", "upload", "--progress", "="], ["auto", "always", "never"]),
        CompletionCase(["douctl", "upload", "--progress", "=", "al"], ["always"]),
        CompletionCase(["douctl", "upload", "--progress=al"], ["--progress=always"]),
        // files, directories; after -- only arguments
        CompletionCase(["douctl", "upload", "re"], ["readme.md", "report.txt"]),
        CompletionCase(["douctl", "upload", "--to", "x", "n"], ["notes.txt"]),
        CompletionCase(["douctl", "shuo", "post", "--image", ""], ["report.txt", "readme.md", "notes.txt", "-dash.txt", "pics"]),
        CompletionCase(["douctl", "--config-dir", ""], ["pics"]),
        CompletionCase(["douctl", "upload", "--", "-"], ["-dash.txt"]),
        CompletionCase(["douctl", "shuo", "post", "--", "-"], []),
        // a command's own --timeout shadows the global one: offered once
        CompletionCase(["douctl", "auth", "login", "--t"], ["--timeout"]),
        CompletionCase(["douctl", "help", "shuo", ""], ["post", "delete", "timeline"]),
        // KEY=FILE split at "=" by COMP_WORDBREAKS (bash's default), or kept whole
        CompletionCase(["douctl", "api", "--attach", "image", "=", "re"], ["readme.md", "report.txt"]),
        CompletionCase(["douctl", "api", "--attach", "image", "="], ["report.txt", "readme.md", "notes.txt", "-dash.txt", "pics"]),
        CompletionCase(["douctl", "api", "--attach", "image=re"], ["image=readme.md", "image=report.txt"]),
        CompletionCase(["douctl", "api", "--attach", "image", "=", "readme.md", "-"], ["-X", "--method", "-i", "--include", "--input", "--attach"] + shuoPostOptions.dropFirst(2)),
    ] + twoWordCases + helpAndKeyedFileCases

    @Test(arguments: cases)
    func completes(_ request: CompletionCase) throws {
        let bash = try RenderTestSupport.tool("bash")
        let scratch = try RenderTestSupport.ShellScratch()
        defer { scratch.remove() }
        let (directory, scripts) = (scratch.files, scratch.scripts)
        let scriptURL = scripts.appendingPathComponent("douctl.bash")
        try RenderTestSupport.write(Self.script, to: scriptURL)
        let words = request.words.map(RenderTestSupport.quoted).joined(separator: " ")
        let driver = """
            source \(RenderTestSupport.quoted(scriptURL.path)) || exit 9
            douctl() {
                if [[ $1 == __complete && $2 == profiles ]]; then printf '%s\\n' work sandbox; fi
            }
            COMP_WORDS=(\(words))
            COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
            COMP_LINE=\(RenderTestSupport.quoted(request.line))
            COMP_POINT=${#COMP_LINE}
            _douctl
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        let output = try RenderTestSupport.run(bash, ["--norc", "--noprofile", "-c", driver], directory: directory)
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stderr.isEmpty, "\(output.stderr)")
        let got = output.stdout.split(separator: "\n").map(String.init)
        #expect(got.sorted() == request.expected.sorted())
        #expect(Set(got).count == got.count, "duplicates in \(got)")
    }

    @Test func scriptRegistersTheFunctionAndSaysItIsGenerated() {
        #expect(Self.script.hasPrefix("# bash completion for douctl\n"))
        #expect(Self.script.contains("Generated by `douctl completion bash`"))
        #expect(Self.script.contains("Do not edit by hand"))
        #expect(Self.script.hasSuffix("\ncomplete -F _douctl douctl\n"))
        #expect(Self.script.contains("compopt -o filenames"))
        for hidden in ["secret-mode", "debug-dump", "what to list"] {
            #expect(!Self.script.contains(hidden), "hidden \(hidden) leaked")
        }
    }
}

// MARK: - zsh

@Suite("Zsh completion")
struct ZshCompletionTests {
    static let script = ZshCompletion.render(RenderFixture.root)

    @Test func scriptParses() throws {
        let zsh = try RenderTestSupport.tool("zsh")
        let directory = try RenderTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("_douctl")
        try RenderTestSupport.write(Self.script, to: url)
        let output = try RenderTestSupport.run(zsh, ["-n", url.path])
        #expect(output.status == 0 && output.stderr.isEmpty, "\(output.stderr)")
    }

    @Test func scriptShape() {
        #expect(Self.script.hasPrefix("#compdef douctl\n"))
        #expect(Self.script.contains("Generated by `douctl completion zsh`"))
        for function in ["_douctl()", "_douctl_shuo()", "_douctl_shuo_post()", "_douctl_user_post_count()", "_douctl_auth_login()"] {
            #expect(Self.script.contains("\n\(function) {"), "missing \(function)")
        }
        #expect(Self.script.contains("'(-X --method)'{-X+,--method=}'[HTTP method]:METHOD:(GET POST PUT DELETE)'"))
        #expect(Self.script.contains("'*'{-v,--verbose}'[log requests and replies on stderr]'"))
        #expect(Self.script.contains("'[print the status line and headers \\[on stderr\\]]'"))
        #expect(Self.script.contains("compdef _douctl douctl"))
        for hidden in ["secret-mode", "debug-dump", "what to list", "__complete)"] {
            #expect(!Self.script.contains(hidden), "hidden \(hidden) leaked")
        }
    }

    static let cases: [CompletionCase] = [
        CompletionCase(["douctl", ""], topLevel),
        CompletionCase(["douctl", "sh"], ["shuo"]),
        CompletionCase(["douctl", "shuo", ""], ["post", "delete", "timeline"]),
        CompletionCase(["douctl", "user", "p"], ["post-count"]),
        CompletionCase(["douctl", "shuo", "post", "-"], shuoPostOptions),
        CompletionCase(["douctl", "shuo", "post", "--re"], ["--rec-url"]),
        CompletionCase(["douctl", "upload", "--progress", ""], ["auto", "always", "never"]),
        CompletionCase(["douctl", "api", "-iX", ""], ["GET", "POST", "PUT", "DELETE"]),
        CompletionCase(["douctl", "--profile", ""], ["work", "sandbox"]),
        CompletionCase(["douctl", "--profile=s"], ["sandbox"]),
        CompletionCase(["douctl", "profile", "use", ""], ["work", "sandbox"]),
        CompletionCase(["douctl", "--profile", "work", "shuo", "p"], ["post"]),
        CompletionCase(["douctl", "completion", ""], ["bash", "zsh", "fish"]),
        CompletionCase(["douctl", "upload", "re"], ["readme.md", "report.txt"]),
        CompletionCase(["douctl", "--config-dir", ""], ["pics"]),
        CompletionCase(["douctl", "upload", "--", "-"], ["-dash.txt"]),
        CompletionCase(["douctl", "auth", "login", "--t"], ["--timeout"]),
        CompletionCase(["douctl", "api", "--attach", "image=re"], ["readme.md", "report.txt"]),
    ] + twoWordCases + helpAndKeyedFileCases

    @Test(arguments: cases)
    func completesWhenSourced(_ request: CompletionCase) throws {
        #expect(try Self.complete(request.line, autoload: false).sorted() == request.expected.sorted())
    }

    @Test func completesWhenAutoloadedFromFpath() throws {
        #expect(try Self.complete("douctl shuo post --re", autoload: true) == ["--rec-url"])
        #expect(try Self.complete("douctl --profile ", autoload: true).sorted() == ["sandbox", "work"])
    }

    /// Types `line` and a TAB into an interactive zsh on a pseudo-terminal (zsh/zpty) and
    /// collects what the completion system adds, by wrapping compadd.
    static func complete(_ line: String, autoload: Bool, douctl stub: String = "douctl() { [[ $1 == __complete && $2 == profiles ]] && print -l work sandbox }") throws -> [String] {
        let zsh = try RenderTestSupport.tool("zsh")
        let scratch = try RenderTestSupport.ShellScratch()
        defer { scratch.remove() }
        let (directory, scripts) = (scratch.files, scratch.scripts)
        let functions = scripts.appendingPathComponent("functions", isDirectory: true)
        try FileManager.default.createDirectory(at: functions, withIntermediateDirectories: false)
        let scriptURL = functions.appendingPathComponent("_douctl")
        try RenderTestSupport.write(script, to: scriptURL)
        let load = autoload
            ? "fpath=(\(RenderTestSupport.quoted(functions.path)) $fpath)\nautoload -U compinit && compinit -u -D"
            : "autoload -U compinit && compinit -u -D\nsource \(RenderTestSupport.quoted(scriptURL.path))"
        let setup = #"""
            PROMPT='' RPROMPT=''
            \#(load)
            \#(stub)
            bindkey '^I' complete-word
            zstyle ':completion:*' insert-tab false
            __zt_mark() { print -r -- '<<<zt>>>' }
            compprefuncs=( __zt_mark )
            comppostfuncs=( __zt_mark exit )
            compadd() {
                if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then
                    builtin compadd "$@"
                    return $?
                fi
                local -a __zt_hits
                builtin compadd -A __zt_hits "$@"
                (( $#__zt_hits )) || return 1
                print -rl -- "${__zt_hits[@]}"
                builtin compadd "$@"
            }
            print -r -- '<<<ready>>>'
            """#
        let setupURL = scripts.appendingPathComponent("setup.zsh")
        try RenderTestSupport.write(setup, to: setupURL)
        let harness = #"""
            zmodload zsh/zpty || exit 3
            zpty z zsh -f -i
            zpty -w z "source ${(q)1}"
            local out
            integer n=0
            while zpty -r z out; do
                [[ $out == *'<<<ready>>>'* && $out != *source* ]] && break
                (( ++n > 500 )) && { print -u2 'setup never finished'; exit 2 }
            done
            zpty -w -n z "$2"$'\t'
            integer marks=0
            while zpty -r z out; do
                if [[ $out == *'<<<zt>>>'* ]]; then
                    (( ++marks == 2 )) && break
                    continue
                fi
                (( marks == 1 )) && print -r -- "${${out//$'\r'}//$'\n'}"
            done
            zpty -d z
            (( marks == 2 )) || { print -u2 "completion did not finish ($marks marks)"; exit 4 }
            """#
        let harnessURL = scripts.appendingPathComponent("harness.zsh")
        try RenderTestSupport.write(harness, to: harnessURL)
        let output = try RenderTestSupport.run(zsh, ["-f", harnessURL.path, setupURL.path, line], directory: directory, timeout: 30)
        guard output.status == 0 else {
            throw RenderTestSupport.Failure(description: "zsh harness failed (\(output.status)): \(output.stderr)\(output.stdout)")
        }
        var seen: [String] = []
        for candidate in output.stdout.split(separator: "\n").map(String.init) where !candidate.isEmpty {
            // _files adds directories once per tag it tries; count each candidate once.
            let word = candidate.hasSuffix("/") ? String(candidate.dropLast()) : candidate
            if !seen.contains(word) { seen.append(word) }
        }
        return seen
    }
}

// MARK: - fish

@Suite("Fish completion")
struct FishCompletionTests {
    static let script = FishCompletion.render(RenderFixture.root)

    @Test func scriptParses() throws {
        let fish = try RenderTestSupport.tool("fish")
        let directory = try RenderTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("douctl.fish")
        try RenderTestSupport.write(Self.script, to: url)
        let output = try RenderTestSupport.run(fish, ["--no-execute", url.path])
        #expect(output.status == 0 && output.stderr.isEmpty, "\(output.stderr)")
    }

    @Test func scriptShape() {
        #expect(Self.script.hasPrefix("# fish completion for douctl\n"))
        #expect(Self.script.contains("Generated by `douctl completion fish`"))
        #expect(Self.script.contains("\ncomplete -c douctl -f\n"))
        #expect(Self.script.contains("complete -c douctl -n '__douctl_path_is shuo post' -l image -r -F -d 'attach a picture'"))
        #expect(Self.script.contains("-l profile -r -f -a '(douctl __complete profiles 2>/dev/null)'"))
        for hidden in ["secret-mode", "debug-dump", "what to list"] {
            #expect(!Self.script.contains(hidden), "hidden \(hidden) leaked")
        }
    }

    static let cases: [CompletionCase] = [
        CompletionCase(["douctl", ""], topLevel),
        CompletionCase(["douctl", "sh"], ["shuo"]),
        CompletionCase(["douctl", "shuo", ""], ["post", "delete", "timeline"]),
        // `post` under `user` is post-count; `shuo post` options do not leak into `user`
        CompletionCase(["douctl", "user", "p"], ["post-count"]),
        CompletionCase(["douctl", "user", "post-count", "--im"], []),
        CompletionCase(["douctl", "shuo", "timeline", "--"], ["--count", "--all"] + globalLongOptions),
        CompletionCase(["douctl", "shuo", "post", "-"], shuoPostOptions),
        CompletionCase(["douctl", "shuo", "post", "--re"], ["--rec-url"]),
        CompletionCase(["douctl", "upload", "--progress", ""], ["auto", "always", "never"]),
        CompletionCase(["douctl", "upload", "--progress=a"], ["--progress=auto", "--progress=always"]),
        CompletionCase(["douctl", "api", "-iX", ""], ["GET", "POST", "PUT", "DELETE"]),
        CompletionCase(["douctl", "--profile", ""], ["work", "sandbox"]),
        CompletionCase(["douctl", "profile", "use", ""], ["work", "sandbox"]),
        CompletionCase(["douctl", "profile", "use", "work", ""], []),
        CompletionCase(["douctl", "--profile", "work", "shuo", "p"], ["post"]),
        CompletionCase(["douctl", "-v", "shuo", "post", "--rec-url", "x", "--im"], ["--image"]),
        CompletionCase(["douctl", "completion", ""], ["bash", "zsh", "fish"]),
        CompletionCase(["douctl", "upload", "re"], ["readme.md", "report.txt"]),
        CompletionCase(["douctl", "--config-dir", ""], ["pics/"]),
        CompletionCase(["douctl", "upload", "--", "-"], ["-dash.txt"]),
        CompletionCase(["douctl", "shuo", "post", "--", "-"], []),
        CompletionCase(["douctl", "auth", "login", "--t"], ["--timeout"]),
        CompletionCase(["douctl", "help", "shuo", ""], ["post", "delete", "timeline"]),
        CompletionCase(["douctl", "api", "--attach", "image=re"], ["image=readme.md", "image=report.txt"]),
    ] + twoWordCases + helpAndKeyedFileCases

    @Test(arguments: cases)
    func completes(_ request: CompletionCase) throws {
        let fish = try RenderTestSupport.tool("fish")
        let scratch = try RenderTestSupport.ShellScratch()
        defer { scratch.remove() }
        let (directory, scripts) = (scratch.files, scratch.scripts)
        let scriptURL = scripts.appendingPathComponent("douctl.fish")
        try RenderTestSupport.write(Self.script, to: scriptURL)
        let driver = """
            source $argv[1]; or exit 9
            function douctl
                if test "$argv[1]" = __complete -a "$argv[2]" = profiles
                    printf '%s\\n' work sandbox
                end
            end
            complete -C $argv[2]
            """
        let output = try RenderTestSupport.run(
            fish, ["--no-config", "-c", driver, scriptURL.path, request.line], directory: directory,
            environment: ["XDG_DATA_HOME": scripts.path, "XDG_CONFIG_HOME": scripts.path])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stderr.isEmpty, "\(output.stderr)")
        let got = output.stdout.split(separator: "\n").map { String($0.split(separator: "\t", maxSplits: 1).first ?? "") }
        #expect(got.sorted() == request.expected.sorted())
    }
}

// MARK: - all renderers

@Suite("Rendering is deterministic")
struct DeterminismTests {
    @Test func sameTreeSameBytes() {
        let one = RenderFixture.make()
        let two = RenderFixture.make()
        #expect(BashCompletion.render(one) == BashCompletion.render(two))
        #expect(ZshCompletion.render(one) == ZshCompletion.render(two))
        #expect(FishCompletion.render(one) == FishCompletion.render(two))
        #expect(RenderFixture.manPage(root: one).render() == RenderFixture.manPage(root: two).render())
        #expect(BashCompletion.render(one) == BashCompletion.render(one))
    }

    @Test func aChangeInTheTreeChangesTheOutput() {
        var changed = RenderFixture.make()
        changed.subcommands[0].abstract = "log in"
        changed.subcommands[0].subcommands[0].options[0].help = "web login"
        #expect(ZshCompletion.render(changed) != ZshCompletion.render(RenderFixture.root))
        #expect(FishCompletion.render(changed) != FishCompletion.render(RenderFixture.root))
        #expect(RenderFixture.manPage(root: changed).render() != RenderFixture.manPage().render())
    }
}
