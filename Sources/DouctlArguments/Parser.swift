import DouctlSystem
/// Turns argv into a `ParseOutcome` by walking a `CommandSpec` tree.
///
/// Rules (getopt_long-like): `--opt value`, `--opt=value`, `-o value`, `-ovalue`, clustered
/// short flags (`-vf KEY=V`), `--` ends options, a lone `-` is a value. An option that takes
/// several words (`--arg NAME VALUE`, as jq's) takes them as separate words, never `=`.
/// Options of the root command are global: accepted before or after the command word.
/// `-h`/`--help` anywhere asks for help; `help CMD...` too.
public struct ArgumentParser: Sendable {
    public let root: CommandSpec

    public init(root: CommandSpec) {
        self.root = root
    }

    public func parse(_ argv: [String]) throws(UsageError) -> ParseOutcome {
        if argv.first == "help" {
            return try helpOutcome(for: Array(argv.dropFirst()))
        }
        let state = try walk(argv, lenient: false)
        if state.wantsVersion && !state.wantsHelp { return .version }
        if state.wantsHelp { return .help(path: state.path) }
        if state.node.isGroup { return .help(path: state.path) }
        // A global option given before the command word is checked once the command is known.
        let inherited = root.inheritedOptions(at: state.path)
        if let stray = state.globalsGiven.first(where: { !inherited.contains($0) }) {
            throw UsageError("option '--\(stray.long)' does not apply to '\(state.displayName)'", path: state.path)
        }
        return .run(try finish(state))
    }

    /// The command words of `argv` (`douctl --profile p shuo get 1` → ["shuo", "get"]), read
    /// by the same walk as `parse`, so an option's values are skipped by the one rule that
    /// knows how many words it takes (`OptionSpec.valueCount`: `--arg NAME VALUE` skips
    /// two). It never fails: an unknown option is passed over, a bad value is not checked,
    /// and the first word that names no subcommand ends the path. `help WORDS` is the path
    /// of the WORDS. For finding which commands' specs a parse needs before building them:
    /// the root's options and the subcommand names are all it looks at until a leaf.
    public func commandPath(_ argv: [String]) -> [String] {
        if argv.first == "help" {
            var node = root
            var path: [String] = []
            for word in argv.dropFirst() where !word.hasPrefix("-") {
                guard let next = node.subcommand(named: word) else { break }
                node = next
                path.append(word)
            }
            return path
        }
        return (try? walk(argv, lenient: true))?.path ?? []
    }

    /// Reads argv left to right: the command words, options (with their values) and
    /// positionals. `lenient`: never throws (see `commandPath`).
    private func walk(_ argv: [String], lenient: Bool) throws(UsageError) -> State {
        var state = State(root: root, lenient: lenient)
        var index = 0
        var endOfOptions = false
        while index < argv.count {
            let token = argv[index]
            index += 1
            if endOfOptions {
                state.positionals.append(token)
            } else if token == "--" {
                endOfOptions = true
            } else if token.hasPrefix(bytes: "--") {
                try parseLongOption(token, argv: argv, index: &index, state: &state)
                if let flag = state.lookup(long: String(token.droppingASCII(2))), flag.hidesNextArgument, index < argv.count {
                    state.hiddenPositionals[state.positionals.count] = flag.long
                }
            } else if token.hasPrefix("-") && token.count > 1 && !looksNumeric(token) {
                try parseShortCluster(token, argv: argv, index: &index, state: &state)
            } else if state.positionals.isEmpty, state.node.isGroup {
                guard let next = state.node.subcommand(named: token) else {
                    if lenient { return state }
                    if state.wantsHelp { continue }
                    let names = state.node.subcommands.filter { !$0.isHidden }.map(\.name)
                    var message = "unknown command '\(token)' for '\(state.displayName)'"
                    if let guess = Suggestions.closest(to: token, in: names) { message += " (did you mean '\(guess)'?)" }
                    throw UsageError(message, path: state.path)
                }
                state.node = next
                state.path.append(token)
            } else {
                state.positionals.append(token)
            }
        }
        return state
    }

    private func helpOutcome(for words: [String]) throws(UsageError) -> ParseOutcome {
        var node = root
        var path: [String] = []
        for word in words where !word.hasPrefix("-") {
            guard let next = node.subcommand(named: word) else {
                var message = "unknown command '\(word)' for 'help'"
                if let guess = Suggestions.closest(to: word, in: node.subcommands.filter { !$0.isHidden }.map(\.name)) {
                    message += " (did you mean '\(guess)'?)"
                }
                throw UsageError(message, path: path)
            }
            node = next
            path.append(word)
        }
        return .help(path: path)
    }

    // MARK: - options

    private func parseLongOption(_ token: String, argv: [String], index: inout Int, state: inout State) throws(UsageError) {
        let body = token.droppingASCII(2)
        let name: String
        var inline: String?
        if let equals = body.firstIndex(ofASCII: "=") {
            name = String(body[..<equals])
            inline = String(body[body.index(afterASCII: equals)...])
        } else {
            name = String(body)
        }
        if name == "help" { state.wantsHelp = true; return }
        if name == "version" && state.lookup(long: name).map({ $0.isFlag }) != false { state.wantsVersion = true; return }
        guard let option = state.lookup(long: name) else {
            if state.wantsHelp || state.lenient { return }
            var message = "unknown option '--\(name)'"
            if state.path.count > 0 { message += " for '\(state.displayName)'" }
            if let guess = Suggestions.closest(to: "--\(name)", in: state.visibleOptions.map { "--\($0.long)" }) {
                message += " (did you mean '\(guess)'?)"
            } else if !name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) {
                message += state.dashDashHint  // "--- 分割线" is text, not a misspelt option
            }
            throw UsageError(message, path: state.path)
        }
        if option.isFlag {
            if inline != nil { throw UsageError("option '--\(name)' takes no value", path: state.path) }
            state.record(option, "")
            return
        }
        if option.valueCount > 1 {
            if inline != nil {
                if state.lenient { return }
                throw UsageError("option '--\(name)' takes \(option.valueCount) words: --\(name) \(option.valueNames) (not --\(name)=…)", path: state.path)
            }
            try takeValues(of: option, label: "--\(name)", argv: argv, index: &index, state: &state)
            return
        }
        let value: String
        if let inline {
            value = inline
        } else if index < argv.count {
            value = argv[index]
            index += 1
        } else {
            if state.wantsHelp || state.lenient { return }
            throw UsageError("option '--\(name)' needs a value (\(option.valueNames))", path: state.path)
        }
        try state.record(option, validated: value, label: "--\(name)")
    }

    /// The `valueCount` words after an option that takes several (`--arg NAME VALUE`), each
    /// checked against its own `ValueSpec`; too few left is a usage error naming the option
    /// and the words it wants.
    private func takeValues(of option: OptionSpec, label: String, argv: [String], index: inout Int, state: inout State) throws(UsageError) {
        guard index + option.valueCount <= argv.count else {
            let left = argv.count - index
            index = argv.count
            if state.wantsHelp || state.lenient { return }
            let missing = option.values.dropFirst(left).map(\.name).joined(separator: " ")
            throw UsageError("option '\(label)' needs \(option.valueCount) values (\(option.valueNames)); \(missing) is missing", path: state.path)
        }
        let words = argv[index..<index + option.valueCount]
        index += option.valueCount
        for (word, spec) in zip(words, option.values) where !state.lenient {
            if let problem = ArgumentParser.problem(with: word, kind: spec.kind) {
                throw UsageError("invalid value '\(word)' for \(label) \(spec.name): \(problem)", path: state.path)
            }
        }
        for word in words { state.record(option, word) }
    }

    private func parseShortCluster(_ token: String, argv: [String], index: inout Int, state: inout State) throws(UsageError) {
        var rest = Substring(token.dropFirst())
        while let letter = rest.first {
            rest = rest.dropFirst()
            if letter == "h" && state.lookup(short: "h").map({ $0.long == "help" }) != false { state.wantsHelp = true; continue }
            guard let option = state.lookup(short: letter) else {
                if state.wantsHelp || state.lenient { return }
                var message = "unknown option '-\(letter)'"
                if state.path.count > 0 { message += " for '\(state.displayName)'" }
                message += state.dashDashHint
                throw UsageError(message, path: state.path)
            }
            if option.isFlag {
                state.record(option, "")
                continue
            }
            if option.valueCount > 1 {
                if !rest.isEmpty {
                    if state.lenient { return }
                    throw UsageError("option '-\(letter)' takes \(option.valueCount) words: -\(letter) \(option.valueNames)", path: state.path)
                }
                try takeValues(of: option, label: "-\(letter)", argv: argv, index: &index, state: &state)
                return
            }
            let value: String
            if !rest.isEmpty {
                value = String(rest)
            } else if index < argv.count {
                value = argv[index]
                index += 1
            } else {
                if state.wantsHelp || state.lenient { return }
                throw UsageError("option '-\(letter)' needs a value (\(option.valueNames))", path: state.path)
            }
            try state.record(option, validated: value, label: "-\(letter)")
            return
        }
    }

    /// "-5" or "-1.5" is a value (a negative number), not an option.
    private func looksNumeric(_ token: String) -> Bool {
        Double(token) != nil
    }

    // MARK: - positionals

    private func finish(_ state: State) throws(UsageError) -> ParsedCommand {
        // What follows a flag that reads a secret from stdin is never bound to an argument
        // (auth login's URL), nor echoed: it may be the secret, typed in the wrong place.
        if let flag = state.hiddenPositionals.filter({ $0.key < state.positionals.count }).min(by: { $0.key < $1.key })?.value {
            throw UsageError("unexpected argument after --\(flag) (not shown, in case it is a secret: --\(flag) reads from stdin)", path: state.path)
        }
        let specs = state.node.arguments
        var remaining = state.positionals[...]
        var arguments: [String: [String]] = [:]
        for (position, spec) in specs.enumerated() {
            let reservedForLater = specs[(position + 1)...].reduce(0) { $0 + $1.minimumCount }
            let available = max(0, remaining.count - reservedForLater)
            let take: Int
            switch spec.arity {
            case .required: take = min(1, remaining.count)
            case .optional: take = min(1, available)
            case .variadic: take = max(available, min(spec.minimumCount, remaining.count))
            }
            if take < spec.minimumCount {
                throw UsageError("missing argument \(spec.name)", path: state.path)
            }
            let values = Array(remaining.prefix(take))
            for value in values {
                if let problem = Self.problem(with: value, kind: spec.kind) {
                    throw UsageError("invalid value '\(value)' for \(spec.name): \(problem)", path: state.path)
                }
            }
            if !values.isEmpty { arguments[spec.name] = values }
            remaining = remaining.dropFirst(take)
        }
        if let extra = remaining.first {
            let position = state.positionals.count - remaining.count
            if let flag = state.hiddenPositionals[position] {
                throw UsageError("unexpected argument after --\(flag) (not shown, in case it is a secret: --\(flag) reads from stdin)", path: state.path)
            }
            throw UsageError("unexpected argument '\(extra)'", path: state.path)
        }
        // The command's own options, then the globals it inherits (hidden ones too), read in
        // place: building the visible and hidden lists copied every spec twice per start.
        var defaults: [String: String] = [:]
        for option in state.node.options { if let value = option.value?.defaultValue { defaults[option.key] = value } }
        if !state.path.isEmpty {
            for option in state.root.inheritedOptions(at: state.path) {
                if let value = option.value?.defaultValue { defaults[option.key] = value }
            }
        }
        return ParsedCommand(path: state.path, options: state.options, arguments: arguments, defaults: defaults)
    }

    /// Why `value` does not fit `kind`, or nil when it does.
    static func problem(with value: String, kind: ValueKind) -> String? {
        switch kind {
        case .string:
            return nil
        case .integer(let range):
            guard let number = Int(value) else { return "expected an integer" }
            if let range, !range.contains(number) {
                return range.upperBound == Int.max ? "must be at least \(range.lowerBound)" : "must be between \(range.lowerBound) and \(range.upperBound)"
            }
            return nil
        case .number:
            guard let number = Double(value), number.isFinite, number >= 0 else { return "expected a non-negative number" }
            return nil
        case .choice(let choices):
            if choices.contains(value) { return nil }
            var problem = "expected one of \(choices.joined(separator: ", "))"
            if let guess = Suggestions.closest(to: value, in: choices) { problem += " (did you mean '\(guess)'?)" }
            return problem
        }
    }

    /// Parsing state while walking argv.
    private struct State {
        let root: CommandSpec
        var node: CommandSpec
        var path: [String] = []
        var options: [String: [String]] = [:]
        var positionals: [String] = []
        /// Positions of positionals that came right after a `hidesNextArgument` flag.
        var hiddenPositionals: [Int: String] = [:]
        /// Root (global) options given, to check against what the command inherits.
        var globalsGiven: [OptionSpec] = []
        var wantsHelp = false
        var wantsVersion = false
        /// Reading for `commandPath`: nothing is refused.
        let lenient: Bool

        init(root: CommandSpec, lenient: Bool) {
            self.root = root
            self.lenient = lenient
            node = root
        }

        var displayName: String { ([root.name] + path).joined(separator: " ") }

        /// For a command that takes arguments, how to pass one that starts with '-' (getopt's
        /// and git's `--`): `shuo post "-1 分"` is otherwise an unknown option '-1'.
        var dashDashHint: String {
            guard !node.arguments.isEmpty, node.subcommands.isEmpty else { return "" }
            let name = node.arguments.first?.name ?? "an argument"
            return " (to pass \(name) that starts with '-', put -- before it)"
        }

        /// The command's own options, then the root's (global) ones.
        func lookup(long: String) -> OptionSpec? { node.option(long: long) ?? root.option(long: long) }
        func lookup(short: Character) -> OptionSpec? { node.option(short: short) ?? root.option(short: short) }

        var visibleOptions: [OptionSpec] {
            let own = node.options.filter { !$0.isHidden }
            return path.isEmpty ? own : own + root.inheritedOptions(at: path).filter { !$0.isHidden }
        }

        mutating func record(_ option: OptionSpec, _ value: String) {
            if path.isEmpty || !node.options.contains(option) { globalsGiven.append(option) }
            options[option.key, default: []].append(value)
        }

        mutating func record(_ option: OptionSpec, validated value: String, label: String) throws(UsageError) {
            if !lenient, let kind = option.value?.kind, let problem = ArgumentParser.problem(with: value, kind: kind) {
                throw UsageError("invalid value '\(value)' for \(label): \(problem)", path: path)
            }
            record(option, value)
        }
    }
}
