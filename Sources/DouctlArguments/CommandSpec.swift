/// The command tree as plain data. The parser, `--help`, the shell completions and the
/// man page are all rendered from this one description, so they cannot disagree.

/// A command: a group (with subcommands) or a leaf (with options and arguments).
public struct CommandSpec: Sendable, Equatable {
    public var name: String
    /// One line, lowercase start, no final period: shown in lists and as the help title.
    public var abstract: String
    /// Longer explanation for `--help` and the man page; paragraphs separated by blank lines.
    public var discussion: String {
        get { discussionText.text }
        set { discussionText = LazyText { newValue } }
    }
    private var discussionText: LazyText
    public var options: [OptionSpec]
    public var arguments: [ArgumentSpec]
    public var subcommands: [CommandSpec]
    public var examples: [Example]
    /// Hidden commands parse normally but stay out of help, completions and the man page.
    public var isHidden: Bool
    /// Which groups of the root's (global) options apply to this command and those below
    /// it (see `OptionSpec.group`); nil: the parent's choice (at the root: all of them).
    public var inheritedGroups: [String]?

    public init(
        _ name: String,
        abstract: String,
        discussion: @autoclosure @escaping @Sendable () -> String = "",
        options: [OptionSpec] = [],
        arguments: [ArgumentSpec] = [],
        subcommands: [CommandSpec] = [],
        examples: [Example] = [],
        isHidden: Bool = false,
        inheritedGroups: [String]? = nil
    ) {
        self.name = name
        self.abstract = abstract
        self.discussionText = LazyText(discussion)
        self.options = options
        self.arguments = arguments
        self.subcommands = subcommands
        self.examples = examples
        self.isHidden = isHidden
        self.inheritedGroups = inheritedGroups
    }

    public var isGroup: Bool { !subcommands.isEmpty }

    public func subcommand(named name: String) -> CommandSpec? {
        subcommands.first { $0.name == name }
    }

    /// The node at `path` below this one.
    public func descendant(_ path: [String]) -> CommandSpec? {
        var node = self
        for name in path {
            guard let next = node.subcommand(named: name) else { return nil }
            node = next
        }
        return node
    }

    public func option(long: String) -> OptionSpec? { options.first { $0.long == long } }

    /// The root's (global) options that apply to the command at `path`: those without a
    /// group, and those whose group the command (or its nearest ancestor that says) inherits.
    public func inheritedOptions(at path: [String]) -> [OptionSpec] {
        var groups = inheritedGroups
        var node = self
        for name in path {
            guard let next = node.subcommand(named: name) else { break }
            node = next
            if let chosen = next.inheritedGroups { groups = chosen }
        }
        guard let groups else { return options }
        return options.filter { option in option.group.map(groups.contains) ?? true }
    }
    public func option(short: Character) -> OptionSpec? { options.first { $0.short == short } }
}

/// `--long VALUE` / `-s VALUE`, a flag when it takes no value, or an option followed by
/// several words (`--arg NAME VALUE`, as jq takes it).
public struct OptionSpec: Sendable, Equatable {
    public var long: String
    /// Where the parsed value is stored. Usually `long`; differs when a command's option
    /// shares its name with a global one (`auth login --timeout` vs the global `--timeout`).
    public var key: String
    public var short: Character?
    /// The words that follow the option, in order: none for a flag, one for most options,
    /// several for `--arg NAME VALUE`. The parser takes exactly this many (`valueCount`);
    /// help, the completions and the man page show each name.
    public var values: [ValueSpec]
    /// The first (usually the only) value.
    public var value: ValueSpec? {
        get { values.first }
        set { values = newValue.map { [$0] } ?? [] }
    }
    public var help: String
    /// May be given more than once, collecting every value (e.g. `-f KEY=VALUE`).
    public var isRepeatable: Bool
    public var isHidden: Bool
    /// A flag that is never followed by a secret on purpose (`--with-token` reads stdin), so
    /// a stray argument after it is likely one: usage errors never print it.
    public var hidesNextArgument = false
    /// For a root (global) option: the group it belongs to ("network", "output", …), which a
    /// command inherits or not (`CommandSpec.inheritedGroups`); nil: every command has it.
    public var group: String?

    public init(_ long: String, short: Character? = nil, value: ValueSpec? = nil, help: String, repeatable: Bool = false, hidden: Bool = false, key: String? = nil) {
        self.init(long, short: short, values: value.map { [$0] } ?? [], help: help, repeatable: repeatable, hidden: hidden, key: key)
    }

    /// An option followed by `values.count` words (`--arg NAME VALUE`); each use records
    /// them all, in order (see `OptionBinding.groups`).
    public init(_ long: String, short: Character? = nil, values: [ValueSpec], help: String, repeatable: Bool = false, hidden: Bool = false, key: String? = nil) {
        self.long = long
        self.key = key ?? long
        self.short = short
        self.values = values
        self.help = help
        self.isRepeatable = repeatable
        self.isHidden = hidden
    }

    /// A flag: no value.
    public static func flag(_ long: String, short: Character? = nil, help: String, repeatable: Bool = false, hidden: Bool = false) -> OptionSpec {
        OptionSpec(long, short: short, value: nil, help: help, repeatable: repeatable, hidden: hidden)
    }

    public var isFlag: Bool { values.isEmpty }

    /// How many words follow the option: 0 for a flag, 1, or more (`--arg NAME VALUE`: 2).
    /// The parser's one rule for skipping an option's values (`ArgumentParser.commandPath`).
    public var valueCount: Int { values.count }

    /// "NAME VALUE": the value names as shown after the option; "" for a flag.
    public var valueNames: String { values.map(\.name).joined(separator: " ") }

    /// This flag, marked so a stray argument after it is never echoed (see `hidesNextArgument`).
    public func hidingNextArgument() -> OptionSpec {
        var copy = self
        copy.hidesNextArgument = true
        return copy
    }

    /// This option, in a group of global options (see `group`).
    public func inGroup(_ name: String) -> OptionSpec {
        var copy = self
        copy.group = name
        return copy
    }

    /// "-p, --profile NAME" as shown in help.
    public var label: String {
        var text = short.map { "-\($0), " } ?? ""
        text += "--\(long)"
        if !isFlag { text += " \(valueNames)" }
        return text
    }
}

/// What an option or argument's value looks like, and how a shell can complete it.
public struct ValueSpec: Sendable, Equatable {
    /// Placeholder in help: FILE, ID, SECONDS.
    public var name: String
    public var kind: ValueKind
    public var defaultValue: String?
    public var completion: Completion

    public init(_ name: String, kind: ValueKind = .string, default defaultValue: String? = nil, completion: Completion? = nil) {
        self.name = name
        self.kind = kind
        self.defaultValue = defaultValue
        if let completion {
            self.completion = completion
        } else if case .choice(let choices) = kind {
            self.completion = .choices(choices)
        } else {
            self.completion = .none
        }
    }
}

public enum ValueKind: Sendable, Equatable {
    case string
    /// An integer, optionally within bounds.
    case integer(ClosedRange<Int>?)
    /// A non-negative decimal number (seconds, ratios).
    case number
    case choice([String])
}

/// How shells complete a value.
public enum Completion: Sendable, Equatable {
    case none
    case file
    case directory
    case choices([String])
    /// Candidates printed at completion time by `douctl __complete KIND` (e.g. "profiles").
    case dynamic(String)
    /// `KEY=FILE` (`--attach image=pic.jpg`): file names after the `=`, nothing before it.
    case keyedFile
}

/// A positional argument.
public struct ArgumentSpec: Sendable, Equatable {
    public enum Arity: Sendable, Equatable {
        case required
        case optional
        /// One or more (`minimum` 1) or any number (`minimum` 0).
        case variadic(minimum: Int)
    }

    public var name: String
    public var help: String
    public var arity: Arity
    public var kind: ValueKind
    public var completion: Completion

    public init(_ name: String, help: String, arity: Arity = .required, kind: ValueKind = .string, completion: Completion = .none) {
        self.name = name
        self.help = help
        self.arity = arity
        self.kind = kind
        self.completion = completion
    }

    /// "ID", "[TEXT]", "FILE..." as shown in usage lines.
    public var usage: String {
        switch arity {
        case .required: return name
        case .optional: return "[\(name)]"
        case .variadic(let minimum): return minimum > 0 ? "\(name)..." : "[\(name)...]"
        }
    }

    var minimumCount: Int {
        switch arity {
        case .required: return 1
        case .optional: return 0
        case .variadic(let minimum): return minimum
        }
    }
}

/// A worked example for help and the man page.
public struct Example: Sendable, Equatable {
    public var command: String
    public var explanation: String

    public init(_ command: String, _ explanation: String) {
        self.command = command
        self.explanation = explanation
    }
}

/// Text made when it is read (`--help`, the man page), not when the command tree is built at
/// every start: some discussions list every profile key or preset, which cost a small
/// request ~0.25 M instructions to format and never show (issue 23).
public struct LazyText: Sendable, Equatable {
    private let make: @Sendable () -> String

    public init(_ make: @escaping @Sendable () -> String) { self.make = make }

    public var text: String { make() }

    public static func == (lhs: LazyText, rhs: LazyText) -> Bool { lhs.text == rhs.text }
}
