import DouctlSystem

/// What the completion and man-page renderers share: the visible part of the command tree,
/// how each value completes, and quoting for the shells. Everything here is a pure function
/// of the spec, walked in declaration order, so the output is byte-for-byte deterministic.

/// One visible command and where it sits in the tree.
struct RenderedCommand: Sendable {
    /// Subcommand names from the root; empty for the root itself.
    var path: [String]
    var spec: CommandSpec

    /// "shuo post", or "" for the root.
    var key: String { path.joined(separator: " ") }
}

extension CommandSpec {
    var visibleSubcommands: [CommandSpec] { subcommands.filter { !$0.isHidden } }
    var visibleOptions: [OptionSpec] { options.filter { !$0.isHidden } }

    /// This command (the root: the program itself) and every visible command below it,
    /// parents before children, siblings in declaration order. A hidden command's
    /// subtree is left out whole.
    var visibleTree: [RenderedCommand] {
        var out: [RenderedCommand] = []
        func walk(_ node: CommandSpec, _ path: [String]) {
            out.append(RenderedCommand(path: path, spec: node))
            for child in node.visibleSubcommands {
                walk(child, path + [child.name])
            }
        }
        walk(self, [])
        return out
    }
}

extension OptionSpec {
    /// "-v", "--verbose": how the option may be written.
    var spellings: [String] {
        (short.map { ["-\($0)"] } ?? []) + ["--\(long)"]
    }
}

extension ValueSpec {
    /// How a shell completes the value: the declared completion, else the choices of a
    /// `.choice` kind.
    var shellCompletion: Completion {
        if case .none = completion, case .choice(let choices) = kind { return .choices(choices) }
        return completion
    }
}

extension ArgumentSpec {
    var shellCompletion: Completion {
        if case .none = completion, case .choice(let choices) = kind { return .choices(choices) }
        return completion
    }

    var isVariadic: Bool {
        if case .variadic = arity { return true }
        return false
    }
}

/// Which argument spec completes the positional word at each index: the ones before the
/// first variadic argument by position, then the variadic one for every later word (an
/// argument after a variadic one, like `copy SOURCE... TARGET`, completes as the variadic).
struct PositionalPlan: Sendable {
    var fixed: [ArgumentSpec]
    var rest: ArgumentSpec?

    init(_ arguments: [ArgumentSpec]) {
        var fixed: [ArgumentSpec] = []
        var rest: ArgumentSpec?
        for argument in arguments {
            if argument.isVariadic {
                rest = argument
                break
            }
            fixed.append(argument)
        }
        self.fixed = fixed
        self.rest = rest
    }
}

enum ShellText {
    /// A word for bash or zsh source: bare when it is plainly safe, else single-quoted.
    static func posixWord(_ text: String) -> String {
        if !text.isEmpty, text.unicodeScalars.allSatisfy(isPlain) { return text }
        return posixQuoted(text)
    }

    /// Always single-quoted ('it'\''s').
    static func posixQuoted(_ text: String) -> String {
        "'" + text.replacingAll("'", with: "'\\''") + "'"
    }

    /// A fish single-quoted string: only backslash and quote are special inside.
    static func fishQuoted(_ text: String) -> String {
        "'" + text.replacingAll("\\", with: "\\\\").replacingAll("'", with: "\\'") + "'"
    }

    /// A word for fish source: bare when plainly safe, else single-quoted.
    static func fishWord(_ text: String) -> String {
        if !text.isEmpty, text.unicodeScalars.allSatisfy(isPlain) { return text }
        return fishQuoted(text)
    }

    /// A shell function name made from a command path: `_douctl_shuo_post`. Characters a
    /// function name should not hold become `_`.
    static func identifier(_ parts: [String]) -> String {
        let joined = parts.joined(separator: "_")
        return String(String.UnicodeScalarView(joined.unicodeScalars.map { scalar in
            isIdentifierScalar(scalar) ? scalar : "_"
        }))
    }

    /// Unique function names for `paths`, in order: a name that a different path already
    /// took (`a-b` and `a_b`) gets a numeric suffix.
    static func identifiers(prefix: String, paths: [[String]]) -> [String] {
        var taken: [String] = []
        var out: [String] = []
        for path in paths {
            let base = identifier([prefix] + path)
            var name = base
            var counter = 2
            while taken.contains(name) {
                name = base + "_\(counter)"
                counter += 1
            }
            taken.append(name)
            out.append(name)
        }
        return out
    }

    /// One line: newlines and tabs in help text become spaces; runs of spaces collapse.
    static func oneLine(_ text: String) -> String {
        var out = ""
        var lastWasSpace = false
        for character in text {
            let isSpace = character == " " || character == "\n" || character == "\t" || character == "\r\n" || character == "\r"
            if isSpace {
                if !lastWasSpace && !out.isEmpty { out.append(" ") }
                lastWasSpace = true
            } else {
                out.append(character)
                lastWasSpace = false
            }
        }
        while out.hasSuffix(" ") { out.removeLast() }
        return out
    }

    private static func isPlain(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9": return true
        case "-", "_", ".", "/", ",", "+", "@", "%", "=", ":": return true
        default: return false
        }
    }

    private static func isIdentifierScalar(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9", "_": return true
        default: return false
        }
    }
}
