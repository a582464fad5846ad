import DouctlArguments
import DouctlCore

/// A node of the command tree: its spec (data) and, for leaves, what runs it.
/// Specs feed the parser, help, completions and the man page; `prepare` stays out of them.
struct Command: Sendable {
    var spec: CommandSpec
    var children: [Command]
    /// For a leaf: binds what the parser understood to the command's typed options, refusing
    /// combinations that make no sense (exit 2) before anything is read or sent, and returns
    /// the run.
    var prepare: (@Sendable (ParsedCommand) throws(OptionError) -> PreparedRun)?

    /// A leaf whose options are `Options`: the spec's options and arguments come from its
    /// bindings, so a field and its spec are declared once, together.
    init<Options: CommandOptions>(
        _ spec: CommandSpec, options: Options.Type,
        run: @escaping @Sendable (Options, CommandContext) throws(DouctlError) -> ExitStatus
    ) {
        self.spec = spec
        self.spec.options = Options.optionSpecs + spec.options
        self.spec.arguments = Options.argumentSpecs + spec.arguments
        children = []
        prepare = { parsed throws(OptionError) in
            let options = try Options.bind(parsed)
            let presentation = (options as? PresentsOutput)?.presentation ?? OutputPresentation()
            return PreparedRun(presentation: presentation) { context throws(DouctlError) in try run(options, context) }
        }
    }

    /// A group: `spec.subcommands` is filled from the children.
    init(group spec: CommandSpec, _ children: [Command]) {
        self.spec = spec
        self.children = children
        self.prepare = nil
        self.spec.subcommands = children.map(\.spec)
    }

    /// This command, taking only these groups of global options (see `GlobalOptions.Group`).
    func inheriting(_ groups: [GlobalOptions.Group]) -> Command {
        var copy = self
        copy.spec.inheritedGroups = groups.map(\.rawValue)
        return copy
    }

    func find(_ path: [String]) -> Command? {
        var node = self
        for name in path {
            guard let next = node.children.first(where: { $0.spec.name == name }) else { return nil }
            node = next
        }
        return node
    }
}

/// A command bound to its options, ready to run in a context.
struct PreparedRun {
    /// How the command's output is shown, which the context's printer follows.
    var presentation: OutputPresentation
    var run: (CommandContext) throws(DouctlError) -> ExitStatus
}

/// What a command's own options say about its output: a view for people or JSON
/// (`--format`, `--json`), and whether an API error's reply body is shown (api) and how.
struct OutputPresentation: Sendable {
    /// `--format`/`--json` of a command with a human view; nil: the command has no view.
    var view: ViewOptions?
    /// `api` shows an error reply's body by default (like gh); other commands only when
    /// `--error-body` asks.
    var showsErrorBodies = false
    /// `api --raw`: error bodies as received, not reformatted.
    var rawErrorBodies = false

    init(view: ViewOptions? = nil, showsErrorBodies: Bool = false, rawErrorBodies: Bool = false) {
        self.view = view
        self.showsErrorBodies = showsErrorBodies
        self.rawErrorBodies = rawErrorBodies
    }
}

/// Options whose command says how its output is shown (see `OutputPresentation`).
protocol PresentsOutput {
    var presentation: OutputPresentation { get }
}

/// `--format text|json` and `--json`, for commands with a human view.
struct ViewOptions: CommandOptions {
    var format: OutputFormat?
    var json = false

    init() {}
    init(format: OutputFormat?, json: Bool) {
        self.format = format
        self.json = json
    }

    static let bindings: [OptionBinding<ViewOptions>] = [
        .choice(\.format, OutputOptions.format),
        .flag(\.json, OutputOptions.json),
    ]
}

enum OutputFormat: String, Sendable {
    case text
    case json
}
