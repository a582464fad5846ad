import DouctlArguments
import DouctlCore
import DouctlSystem

/// A node of the command tree: its spec (data) and, for leaves, what runs it.
/// Specs feed the parser, help, completions and the man page; `prepare` stays out of them.
struct Command: Sendable {
    /// Name, abstract, discussion, examples and subcommands; a typed leaf's options and
    /// arguments only once `declared` has been applied (see `fullSpec`, `spec(along:)`).
    var spec: CommandSpec
    var children: [Command]
    /// A typed leaf's option and argument specs, built on demand: building every command's
    /// bindings at every start cost more than the rest of a small request's own work (key
    /// paths and generic metadata), and parsing one command line needs only its path's.
    var declared: (@Sendable () -> (options: [OptionSpec], arguments: [ArgumentSpec]))?
    /// For a leaf: binds what the parser understood to the command's typed options, refusing
    /// combinations that make no sense (exit 2) before anything is read or sent, and returns
    /// the run.
    var prepare: (@Sendable (ParsedCommand) throws(OptionError) -> PreparedRun)?

    /// A leaf whose options are `Options`: the spec's options and arguments come from its
    /// bindings only (the spec passed names, abstract, discussion and examples), so a field
    /// and its spec are declared once, together.
    init<Options: CommandOptions>(
        _ spec: CommandSpec, options: Options.Type,
        run: @escaping @Sendable (Options, CommandContext) throws(DouctlError) -> ExitStatus
    ) {
        self.spec = spec
        declared = { (Options.optionSpecs, Options.argumentSpecs) }
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
        self.spec.subcommands = children.map { $0.spec }
    }

    /// This command, taking only these groups of global options (see `GlobalOptions.Group`).
    func inheriting(_ groups: [GlobalOptions.Group]) -> Command {
        var copy = self
        copy.spec.inheritedGroups = groups.map { $0.rawValue }
        return copy
    }

    /// This command, calling the API: it takes every group of global options, the `api`
    /// group (printing requests instead of sending them) with them. The parser, help,
    /// completions and the man page read this one declaration (`callsAPI`).
    func callingAPI() -> Command {
        inheriting(GlobalOptions.Group.allCases)
    }

    /// Whether the command at `path` below this node calls the API (takes the `api` group).
    func callsAPI(_ path: [String]) -> Bool {
        spec.inheritedOptions(at: path).contains { $0.group == GlobalOptions.Group.api.rawValue }
    }

    /// This node's spec with its own options and arguments built (its children's not).
    private var ownSpec: CommandSpec {
        var result = spec
        if let declared { (result.options, result.arguments) = declared() }
        return result
    }

    /// The whole spec tree, every command's options built: for help of the whole tree, the
    /// man page, the completions and tests.
    var fullSpec: CommandSpec {
        var result = ownSpec
        if !children.isEmpty { result.subcommands = children.map { $0.fullSpec } }
        return result
    }

    /// The spec tree with options built only for the commands on `path` (and the root's,
    /// which are global): everything the parser and the help of that path look at.
    /// Only the path's nodes are copied and rebuilt: a node off the path keeps the spec its
    /// group was built with (copying the whole tree cost every start ~0.2 M instructions).
    func spec(along path: [String]) -> CommandSpec {
        var result = ownSpec
        guard let name = path.first, let index = children.firstIndex(where: { $0.spec.name == name }) else { return result }
        result.subcommands[index] = children[index].spec(along: Array(path.dropFirst()))
        return result
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
    /// The option given that prints what `--jq` cannot filter (`api --raw`, `-i`, `-I`,
    /// `-o FILE`), as the refusal names it; nil: --jq may filter the command's documents.
    var unfilterable: String?

    init(view: ViewOptions? = nil, showsErrorBodies: Bool = false, rawErrorBodies: Bool = false, unfilterable: String? = nil) {
        self.view = view
        self.showsErrorBodies = showsErrorBodies
        self.rawErrorBodies = rawErrorBodies
        self.unfilterable = unfilterable
    }
}

/// Options whose command says how its output is shown (see `OutputPresentation`).
protocol PresentsOutput {
    var presentation: OutputPresentation { get }
}

/// Options of a command with a human view (`--format`, `--json`): that is all they say
/// about how its output is shown.
protocol ShowsView: PresentsOutput {
    var view: ViewOptions { get }
}

extension ShowsView {
    var presentation: OutputPresentation { OutputPresentation(view: view) }
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
        .choice({ $0.format = $1 }, OutputOptions.format),
        .flag({ $0.json = $1 }, OutputOptions.json),
    ]

    /// --json is --format json: beside --format text it contradicts it, refused as other
    /// conflicts are (exit 2, with the usage line).
    func validate() throws(OptionError) {
        if json, format == .text { throw OptionError("--json and --format text contradict each other; give one") }
    }
}

enum OutputFormat: String, Sendable {
    case text
    case json
}
