/// A command's options as one typed value (SwiftFormat's option descriptors, or
/// swift-argument-parser's property wrappers, without the package): each field is declared
/// once, in `bindings`, beside the spec that the parser, `--help`, the completions and the
/// man page are rendered from. Command code reads fields, never option names.
public protocol CommandOptions: Sendable {
    init()
    /// Every option and argument of the command, each bound to the field it fills.
    static var bindings: [OptionBinding<Self>] { get }
    /// Refuses combinations that make no sense (exit 2, with the usage line), at parse time:
    /// before stdin is read or anything is sent; and decides, once, what several options
    /// decide together (`download`'s target, `api`'s method), for the run to read.
    mutating func validate() throws(OptionError)
}

extension CommandOptions {
    public mutating func validate() throws(OptionError) {}

    /// The option specs, in declaration order, for the command's `CommandSpec`.
    /// (Loops, not `flatMap`, and inlinable: unspecialized, `flatMap` over bindings looked up
    /// its associated types at run time, ~0.3 M instructions of every start.)
    @inlinable
    public static var optionSpecs: [OptionSpec] { OptionBinding.allOptions(of: bindings) }
    /// The positional argument specs, in order.
    @inlinable
    public static var argumentSpecs: [ArgumentSpec] { OptionBinding.allArguments(of: bindings) }

    /// The typed value of what the parser understood, validated.
    public static func bind(_ parsed: ParsedCommand) throws(OptionError) -> Self {
        var options = Self()
        for binding in bindings { try binding.apply(&options, parsed) }
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
/// The field is named by a setter closure, `{ $0.verbose = $1 }`, not a key path: a key path
/// on these types is instantiated by the runtime from its mangled name (demangling, generic
/// metadata, conformance lookups) — ~20,000 instructions each, ~1 M for the ~45 fields bound
/// at every start, where a closure costs a call.
public struct OptionBinding<Options>: Sendable {
    public typealias Setter<Value> = @Sendable (inout Options, Value) -> Void

    public let options: [OptionSpec]
    public let arguments: [ArgumentSpec]
    /// Fills the field from what the parser understood; a nested group also runs its own
    /// `validate()` here.
    public let apply: @Sendable (inout Options, ParsedCommand) throws(OptionError) -> Void

    init(options: [OptionSpec] = [], arguments: [ArgumentSpec] = [],
         apply: @escaping @Sendable (inout Options, ParsedCommand) throws(OptionError) -> Void) {
        self.options = options
        self.arguments = arguments
        self.apply = apply
    }

    // MARK: - options

    /// A flag: true when given.
    public static func flag(_ set: @escaping Setter<Bool>, _ spec: OptionSpec) -> Self {
        Self(options: [spec]) { options, parsed in set(&options, parsed.has(spec.key)) }
    }

    /// A flag counted (`-vv` → 2).
    public static func count(_ set: @escaping Setter<Int>, _ spec: OptionSpec) -> Self {
        Self(options: [spec]) { options, parsed in set(&options, parsed.count(spec.key)) }
    }

    /// The last value given, else the spec's default, else nil.
    public static func value(_ set: @escaping Setter<String?>, _ spec: OptionSpec) -> Self {
        Self(options: [spec]) { options, parsed in set(&options, parsed.value(spec.key)) }
    }

    /// The last value given, else the spec's default; the field's initial value when neither.
    public static func value(_ set: @escaping Setter<String>, _ spec: OptionSpec) -> Self {
        Self(options: [spec]) { options, parsed in
            if let value = parsed.value(spec.key) { set(&options, value) }
        }
    }

    /// The last value given (else the spec's default), read into its type as it is bound
    /// (a duration, a URL): one that does not read is refused at parse time (exit 2, with
    /// the usage line), so no later step, and no `--dry-run`, decides whether it is an error.
    public static func value<Value>(_ set: @escaping Setter<Value?>, _ spec: OptionSpec,
                                    parse: @escaping @Sendable (String) throws(OptionError) -> Value) -> Self {
        Self(options: [spec]) { options, parsed throws(OptionError) in
            set(&options, try parsed.value(spec.key).map { raw throws(OptionError) in try parse(raw) })
        }
    }

    /// Every value of a repeatable option, in order.
    public static func values(_ set: @escaping Setter<[String]>, _ spec: OptionSpec) -> Self {
        Self(options: [spec]) { options, parsed in set(&options, parsed.values(spec.key)) }
    }

    /// Every value of a repeatable option, in order, each read into its type as it is bound
    /// (`KEY=VALUE`, `'Name: value'`): one that does not read is refused at parse time (exit
    /// 2, with the usage line), and the command's `validate()` and run see typed values only.
    public static func values<Value>(_ set: @escaping Setter<[Value]>, _ spec: OptionSpec,
                                     parse: @escaping @Sendable (String) throws(OptionError) -> Value) -> Self {
        Self(options: [spec]) { options, parsed throws(OptionError) in
            var values: [Value] = []
            for raw in parsed.values(spec.key) { values.append(try parse(raw)) }
            set(&options, values)
        }
    }

    /// Every use of an option taking two words (`--arg NAME VALUE`), as pairs, in order.
    public static func pairs(_ set: @escaping Setter<[(String, String)]>, _ spec: OptionSpec) -> Self {
        Self(options: [spec]) { options, parsed in
            set(&options, parsed.valueGroups(spec.key, size: 2).map { ($0[0], $0[1]) })
        }
    }

    /// An integer (the parser has checked its form and range).
    public static func integer(_ set: @escaping Setter<Int?>, _ spec: OptionSpec) -> Self {
        Self(options: [spec]) { options, parsed in set(&options, parsed.integer(spec.key)) }
    }

    /// An integer with a default (the spec's, else the field's initial value).
    public static func integer(_ set: @escaping Setter<Int>, _ spec: OptionSpec) -> Self {
        Self(options: [spec]) { options, parsed in
            if let value = parsed.integer(spec.key) { set(&options, value) }
        }
    }

    /// A non-negative number (seconds, ratios).
    public static func number(_ set: @escaping Setter<Double?>, _ spec: OptionSpec) -> Self {
        Self(options: [spec]) { options, parsed in set(&options, parsed.number(spec.key)) }
    }

    /// A number with a default (the spec's, else the field's initial value).
    public static func number(_ set: @escaping Setter<Double>, _ spec: OptionSpec) -> Self {
        Self(options: [spec]) { options, parsed in
            if let value = parsed.number(spec.key) { set(&options, value) }
        }
    }

    /// One of the spec's choices, as an enum.
    public static func choice<Choice: RawRepresentable & Sendable>(_ set: @escaping Setter<Choice?>, _ spec: OptionSpec) -> Self where Choice.RawValue == String {
        Self(options: [spec]) { options, parsed in set(&options, parsed.value(spec.key).flatMap(Choice.init(rawValue:))) }
    }

    /// One of the spec's choices, as an enum, with a default.
    public static func choice<Choice: RawRepresentable & Sendable>(_ set: @escaping Setter<Choice>, _ spec: OptionSpec) -> Self where Choice.RawValue == String {
        Self(options: [spec]) { options, parsed in
            if let value = parsed.value(spec.key).flatMap(Choice.init(rawValue:)) { set(&options, value) }
        }
    }

    // MARK: - arguments

    /// A positional argument (required or optional).
    public static func argument(_ set: @escaping Setter<String?>, _ spec: ArgumentSpec) -> Self {
        Self(arguments: [spec]) { options, parsed in set(&options, parsed.argument(spec.name)) }
    }

    /// A required positional argument (the parser refuses a command line without it).
    public static func argument(_ set: @escaping Setter<String>, _ spec: ArgumentSpec) -> Self {
        Self(arguments: [spec]) { options, parsed in set(&options, parsed.argument(spec.name) ?? "") }
    }

    /// A variadic positional argument.
    public static func arguments(_ set: @escaping Setter<[String]>, _ spec: ArgumentSpec) -> Self {
        Self(arguments: [spec]) { options, parsed in set(&options, parsed.argumentValues(spec.name)) }
    }

    // MARK: - groups

    /// A group of options shared by several commands (paging, output views), kept in a field
    /// of its own type; its `validate()` runs with the command's.
    public static func group<Group: CommandOptions>(_ set: @escaping Setter<Group>, _: Group.Type = Group.self) -> Self {
        let children = Group.bindings
        return Self(options: Group.optionSpecs, arguments: Group.argumentSpecs) { options, parsed throws(OptionError) in
            var group = Group()
            for child in children { try child.apply(&group, parsed) }
            try group.validate()
            set(&options, group)
        }
    }

    /// Every option spec of `bindings`, in order.
    @inlinable
    public static func allOptions(of bindings: [Self]) -> [OptionSpec] {
        var specs: [OptionSpec] = []
        for binding in bindings { specs.append(contentsOf: binding.options) }
        return specs
    }

    /// Every argument spec of `bindings`, in order.
    @inlinable
    public static func allArguments(of bindings: [Self]) -> [ArgumentSpec] {
        var specs: [ArgumentSpec] = []
        for binding in bindings { specs.append(contentsOf: binding.arguments) }
        return specs
    }

    /// The same binding, with its option's spec changed (a shared option with a
    /// command-specific help line).
    public func mapOptions(_ change: (OptionSpec) -> OptionSpec) -> Self {
        Self(options: options.map(change), arguments: arguments, apply: apply)
    }
}
