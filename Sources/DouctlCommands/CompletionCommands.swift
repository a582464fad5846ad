import DouctlArguments
import DouctlCore

/// `douctl completion bash|zsh|fish`, and the hidden commands the generated files come
/// from: `__complete KIND` (candidates at completion time) and `__man` (the man page).
enum CompletionCommands {
    static let shells = ["bash", "zsh", "fish"]

    static let completion = Command(CommandSpec(
        "completion",
        abstract: "print a shell completion script",
        discussion: """
        bash:  douctl completion bash > ~/.local/share/bash-completion/completions/douctl
        zsh:   douctl completion zsh > "${fpath[1]}/_douctl"   (then restart zsh)
        fish:  douctl completion fish > ~/.config/fish/completions/douctl.fish
        Profile names are completed by asking douctl at completion time.
        """), options: Shell.self, run: printCompletion)

    static let complete = Command(CommandSpec(
        "__complete", abstract: "print completion candidates (used by the completion scripts)",
        isHidden: true), options: Candidates.self, run: printCandidates)

    static let manual = Command(CommandSpec("__man", abstract: "print the man page (roff)", isHidden: true), options: NoOptions.self, run: printManual)

    // MARK: - options

    /// `completion SHELL`.
    struct Shell: CommandOptions {
        var shell = ""
        static let bindings: [OptionBinding<Self>] = [
            .argument({ $0.shell = $1 }, ArgumentSpec("SHELL", help: "bash, zsh or fish", kind: .choice(shells), completion: .choices(shells))),
        ]
    }

    /// `__complete KIND`: any word; an unknown kind lists nothing.
    struct Candidates: CommandOptions {
        var kind = ""
        /// `operations`: the words from the profile's name to the one being completed.
        var words: [String] = []
        static let bindings: [OptionBinding<Self>] = [
            .argument({ $0.kind = $1 }, ArgumentSpec("KIND", help: "what to list: profiles, keys, presets, operations")),
            .arguments({ $0.words = $1 }, ArgumentSpec("WORDS", help: "for operations: NAME, the words after it, the word being completed", arity: .variadic(minimum: 0))),
        ]
    }

    // MARK: - runs

    static func script(for shell: String) -> String? {
        switch shell {
        case "bash": return BashCompletion.render(Douctl.rootSpec)
        case "zsh": return ZshCompletion.render(Douctl.rootSpec)
        case "fish": return FishCompletion.render(Douctl.rootSpec)
        default: return nil
        }
    }

    static func printCompletion(_ options: Shell, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        guard let script = script(for: options.shell) else {
            throw .usage("missing argument SHELL")
        }
        context.output.write(script)
        return .success
    }

    /// One candidate per line; never fails loudly (a completion must not print errors).
    static func printCandidates(_ options: Candidates, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        var candidates: [String] = []
        switch options.kind {
        case "profiles":
            let configured = (try? context.session.config().profiles.map(\.name)) ?? []
            candidates = configured + Preset.names.filter { !configured.contains($0) }
        case "keys":
            candidates = ProfileKey.allCases.map(\.rawValue)
        case "presets":
            candidates = Preset.names
        case "operations":
            candidates = OpenAPICommands.candidates(options.words, environment: context.environment)
        default:
            break
        }
        for candidate in candidates { context.output.line(candidate) }
        return .success
    }

    static func printManual(_ options: NoOptions, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        context.output.write(ManPageText.page.render())
        return .success
    }
}
