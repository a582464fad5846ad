/// A command's options as one typed value (SwiftFormat's option descriptors, or
/// swift-argument-parser's property wrappers, without the package): each field is declared
/// once, in `bindings`, beside the spec that the parser, `--help`, the completions and the
/// man page are rendered from. Command code reads fields, never option names.
public protocol CommandOptions: Sendable {
    init()
    /// Every option and argument of the command, each bound to the field it fills.
    static var bindings: [OptionBinding<Self>] { get }
    /// Refuses combinations that make no sense (exit 2, with the usage line), at parse time:
    /// before stdin is read or anything is sent.
    func validate() throws(OptionError)
}

extension CommandOptions {
    public func validate() throws(OptionError) {}

    /// The option specs, in declaration order, for the command's `CommandSpec`.
    /// (Closures, not key paths, here and below: a key path on a generic type is built at run
    /// time, at every start, for every command.)
    public static var optionSpecs: [OptionSpec] { bindings.flatMap { $0.options } }
    /// The positional argument specs, in order.
    public static var argumentSpecs: [ArgumentSpec] { bindings.flatMap { $0.arguments } }

    /// The typed value of what the parser understood, validated.
    public static func bind(_ parsed: ParsedCommand) throws(OptionError) -> Self {
        var options = Self()
        for binding in bindings { binding.apply(&options, parsed) }
        for binding in bindings { try binding.check(options) }
        try options.validate()
        return options
    }
}

/// Options a command takes none of (`douctl version`).
public struct NoOptions: CommandOptions {
    public init() {}
    public static let bindings: [OptionBinding<NoOptions>] = []
}

/// A combination of options refused by `validate()`: one line; the usage line follows it.
public struct OptionError: Error, Sendable, Equatable {
    public var message: String
    public init(_ message: String) { self.message = message }
}

/// One option or argument (or a nested group of them) bound to a field of `Options`.
///
/// The field's key path is taken as an autoclosure: a key path costs tens of thousands of
/// instructions to instantiate, and every start builds the specs of the whole tree (the
/// parser needs them), while only the chosen command's options are ever bound.
public struct OptionBinding<Options>: Sendable {
    public let options: [OptionSpec]
    public let arguments: [ArgumentSpec]
    public let apply: @Sendable (inout Options, ParsedCommand) -> Void
    /// A nested group's own `validate()`.
    let check: @Sendable (Options) throws(OptionError) -> Void

    init(options: [OptionSpec] = [], arguments: [ArgumentSpec] = [],
         check: @escaping @Sendable (Options) throws(OptionError) -> Void = { _ in },
         apply: @escaping @Sendable (inout Options, ParsedCommand) -> Void) {
        self.options = options
        self.arguments = arguments
        self.check = check
        self.apply = apply
    }

    // MARK: - options

    /// A flag: true when given.
    public static func flag(_ field: @autoclosure @escaping @Sendable () -> WritableKeyPath<Options, Bool>, _ spec: OptionSpec) -> Self {
        Self(options: [spec]) { options, parsed in options[keyPath: field()] = parsed.has(spec.key) }
    }

    /// A flag counted (`-vv` → 2).
    public static func count(_ field: @autoclosure @escaping @Sendable () -> WritableKeyPath<Options, Int>, _ spec: OptionSpec) -> Self {
        Self(options: [spec]) { options, parsed in options[keyPath: field()] = parsed.count(spec.key) }
    }

    /// The last value given, else the spec's default, else nil.
    public static func value(_ field: @autoclosure @escaping @Sendable () -> WritableKeyPath<Options, String?>, _ spec: OptionSpec) -> Self {
        Self(options: [spec]) { options, parsed in options[keyPath: field()] = parsed.value(spec.key) }
    }

    /// The last value given, else the spec's default; the field's initial value when neither.
    public static func value(_ field: @autoclosure @escaping @Sendable () -> WritableKeyPath<Options, String>, _ spec: OptionSpec) -> Self {
        Self(options: [spec]) { options, parsed in
            if let value = parsed.value(spec.key) { options[keyPath: field()] = value }
        }
    }

    /// Every value of a repeatable option, in order.
    public static func values(_ field: @autoclosure @escaping @Sendable () -> WritableKeyPath<Options, [String]>, _ spec: OptionSpec) -> Self {
        Self(options: [spec]) { options, parsed in options[keyPath: field()] = parsed.values(spec.key) }
    }

    /// An integer (the parser has checked its form and range).
    public static func integer(_ field: @autoclosure @escaping @Sendable () -> WritableKeyPath<Options, Int?>, _ spec: OptionSpec) -> Self {
        Self(options: [spec]) { options, parsed in options[keyPath: field()] = parsed.integer(spec.key) }
    }

    /// An integer with a default (the spec's, else the field's initial value).
    public static func integer(_ field: @autoclosure @escaping @Sendable () -> WritableKeyPath<Options, Int>, _ spec: OptionSpec) -> Self {
        Self(options: [spec]) { options, parsed in
            if let value = parsed.integer(spec.key) { options[keyPath: field()] = value }
        }
    }

    /// A non-negative number (seconds, ratios).
    public static func number(_ field: @autoclosure @escaping @Sendable () -> WritableKeyPath<Options, Double?>, _ spec: OptionSpec) -> Self {
        Self(options: [spec]) { options, parsed in options[keyPath: field()] = parsed.number(spec.key) }
    }

    /// A number with a default (the spec's, else the field's initial value).
    public static func number(_ field: @autoclosure @escaping @Sendable () -> WritableKeyPath<Options, Double>, _ spec: OptionSpec) -> Self {
        Self(options: [spec]) { options, parsed in
            if let value = parsed.number(spec.key) { options[keyPath: field()] = value }
        }
    }

    /// One of the spec's choices, as an enum.
    public static func choice<Choice: RawRepresentable & Sendable>(_ field: @autoclosure @escaping @Sendable () -> WritableKeyPath<Options, Choice?>, _ spec: OptionSpec) -> Self where Choice.RawValue == String {
        Self(options: [spec]) { options, parsed in options[keyPath: field()] = parsed.value(spec.key).flatMap(Choice.init(rawValue:)) }
    }

    /// One of the spec's choices, as an enum, with a default.
    public static func choice<Choice: RawRepresentable & Sendable>(_ field: @autoclosure @escaping @Sendable () -> WritableKeyPath<Options, Choice>, _ spec: OptionSpec) -> Self where Choice.RawValue == String {
        Self(options: [spec]) { options, parsed in
            if let value = parsed.value(spec.key).flatMap(Choice.init(rawValue:)) { options[keyPath: field()] = value }
        }
    }

    // MARK: - arguments

    /// A positional argument (required or optional).
    public static func argument(_ field: @autoclosure @escaping @Sendable () -> WritableKeyPath<Options, String?>, _ spec: ArgumentSpec) -> Self {
        Self(arguments: [spec]) { options, parsed in options[keyPath: field()] = parsed.argument(spec.name) }
    }

    /// A required positional argument (the parser refuses a command line without it).
    public static func argument(_ field: @autoclosure @escaping @Sendable () -> WritableKeyPath<Options, String>, _ spec: ArgumentSpec) -> Self {
        Self(arguments: [spec]) { options, parsed in options[keyPath: field()] = parsed.argument(spec.name) ?? "" }
    }

    /// A variadic positional argument.
    public static func arguments(_ field: @autoclosure @escaping @Sendable () -> WritableKeyPath<Options, [String]>, _ spec: ArgumentSpec) -> Self {
        Self(arguments: [spec]) { options, parsed in options[keyPath: field()] = parsed.argumentValues(spec.name) }
    }

    // MARK: - groups

    /// A group of options shared by several commands (paging, output views), kept in a field
    /// of its own type; its `validate()` runs with the command's.
    public static func group<Group: CommandOptions>(_ field: @autoclosure @escaping @Sendable () -> WritableKeyPath<Options, Group>, _: Group.Type = Group.self) -> Self {
        let children = Group.bindings
        return Self(options: children.flatMap { $0.options }, arguments: children.flatMap { $0.arguments },
                    check: { options throws(OptionError) in try options[keyPath: field()].validate() }) { options, parsed in
            var group = Group()
            for child in children { child.apply(&group, parsed) }
            options[keyPath: field()] = group
        }
    }

    /// The same binding, with its option's spec changed (a shared option with a
    /// command-specific help line).
    public func mapOptions(_ change: (OptionSpec) -> OptionSpec) -> Self {
        Self(options: options.map(change), arguments: arguments, check: check, apply: apply)
    }
}
