/// What the parser understood: which command, and the values given to it.
public struct ParsedCommand: Sendable, Equatable {
    /// Subcommand names from the root, e.g. ["shuo", "post"].
    public var path: [String]
    /// Values by option key (its long name unless the spec says otherwise), in the order
    /// given; a flag records "" once per use; an option taking several words records each
    /// of them, in order (`--arg a 1 --arg b 2` → a, 1, b, 2: see `valueGroups`).
    public var options: [String: [String]]
    /// Values by argument name.
    public var arguments: [String: [String]]
    /// Defaults from the spec, used when an option was not given.
    var defaults: [String: String]

    public init(path: [String], options: [String: [String]] = [:], arguments: [String: [String]] = [:], defaults: [String: String] = [:]) {
        self.path = path
        self.options = options
        self.arguments = arguments
        self.defaults = defaults
    }

    /// True when the flag or option was given at least once.
    public func has(_ long: String) -> Bool { !(options[long] ?? []).isEmpty }

    /// How many times a flag was given (`-vv` → 2).
    public func count(_ long: String) -> Int { options[long]?.count ?? 0 }

    /// The last value given, else the default.
    public func value(_ long: String) -> String? { options[long]?.last ?? defaults[long] }

    /// Every value given to a repeatable option, in order.
    public func values(_ long: String) -> [String] { options[long] ?? [] }

    /// Every use of an option taking `size` words, each use's words together
    /// (`--arg a 1 --arg b 2` → [[a, 1], [b, 2]]). The parser records whole uses only.
    public func valueGroups(_ long: String, size: Int) -> [[String]] {
        let words = values(long)
        guard size > 0 else { return [] }
        return stride(from: 0, to: words.count - words.count % size, by: size).map { Array(words[$0..<$0 + size]) }
    }

    /// The option's value as an integer (the parser has already validated it).
    public func integer(_ long: String) -> Int? { value(long).flatMap { Int($0) } }

    public func number(_ long: String) -> Double? { value(long).flatMap { Double($0) } }

    public func argument(_ name: String) -> String? { arguments[name]?.first }

    public func argumentValues(_ name: String) -> [String] { arguments[name] ?? [] }
}

/// The parser's answer: run a command, show help, or show the version.
public enum ParseOutcome: Sendable, Equatable {
    case run(ParsedCommand)
    /// Help for the command at this path (empty: the root).
    case help(path: [String])
    case version
}

/// A command-line mistake: one line of explanation; the usage line of `path` follows it.
public struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    /// The command whose usage line explains the mistake.
    public var path: [String]

    public init(_ message: String, path: [String]) {
        self.message = message
        self.path = path
    }

    public var description: String { message }
}
