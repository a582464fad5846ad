/// Renders `--help` text and usage lines from the spec (pure functions to strings).
public struct HelpRenderer: Sendable {
    public let root: CommandSpec
    /// Extra text at the end of the root help (e.g. exit codes).
    public var rootEpilogue: String

    public init(root: CommandSpec, rootEpilogue: String = "") {
        self.root = root
        self.rootEpilogue = rootEpilogue
    }

    /// "douctl shuo post [TEXT] [--image FILE] …": every visible option of the command.
    public func synopsis(_ path: [String]) -> String {
        guard let node = root.descendant(path) else { return root.name }
        let name = ([root.name] + path).joined(separator: " ")
        if node.isGroup { return "\(name) <command> [options]" }
        var parts = [name]
        parts += node.arguments.map(\.usage)
        for option in node.options where !option.isHidden {
            var text = option.short.map { "-\($0)" } ?? "--\(option.long)"
            if !option.isFlag { text += " \(option.valueNames)" }
            parts.append(option.isRepeatable ? "[\(text)]..." : "[\(text)]")
        }
        return parts.joined(separator: " ")
    }

    /// The one line printed under a usage error.
    public func usageLine(_ path: [String]) -> String {
        "usage: " + synopsis(path)
    }

    public func help(_ path: [String]) -> String {
        guard let node = root.descendant(path) else { return help([]) }
        var out = ""
        let fullName = ([root.name] + path).joined(separator: " ")
        out += "\(fullName) — \(node.abstract)\n\n"
        out += "USAGE\n  \(synopsis(path))\n"
        if node.isGroup {
            let visible = node.subcommands.filter { !$0.isHidden }
            out += "\nCOMMANDS\n"
            out += table(visible.map { ($0.name, $0.abstract) })
        }
        if !node.arguments.isEmpty {
            out += "\nARGUMENTS\n"
            out += table(node.arguments.map { ($0.usage, $0.help) })
        }
        let own = node.options.filter { !$0.isHidden }
        if !own.isEmpty {
            out += path.isEmpty ? "\nGLOBAL OPTIONS\n" : "\nOPTIONS\n"
            out += table(own.map { ($0.label, describe($0)) })
        }
        if !path.isEmpty {
            let globals = root.inheritedOptions(at: path).filter { !$0.isHidden }
            if !globals.isEmpty {
                // Like gh's INHERITED FLAGS, but short: which apply, and where they are described.
                out += "\nINHERITED OPTIONS\n"
                out += commaList(globals.map { option in
                    (option.short.map { "-\($0)/" } ?? "") + "--\(option.long)" + (option.isFlag ? "" : " \(option.valueNames)")
                }, indent: 2, width: 80)
                out += "  Run '\(root.name) --help' for what they do.\n"
            }
        }
        if !node.discussion.isEmpty {
            out += "\n" + node.discussion.split(separator: "\n", omittingEmptySubsequences: false)
                .map { $0.isEmpty ? "" : "  " + $0 }.joined(separator: "\n") + "\n"
        }
        if !node.examples.isEmpty {
            out += "\nEXAMPLES\n"
            for example in node.examples {
                out += "  # \(example.explanation)\n  $ \(example.command)\n"
            }
        }
        if path.isEmpty && !rootEpilogue.isEmpty {
            out += "\n" + rootEpilogue
        }
        if node.isGroup {
            out += "\nRun '\(fullName) <command> --help' for a command's options.\n"
        }
        return out
    }

    /// An option's help plus its allowed values and default.
    public func describe(_ option: OptionSpec) -> String {
        var text = option.help
        if let value = option.value {
            if case .choice(let choices) = value.kind, !text.containsBytes(choices.joined(separator: "|")) {
                text += " (\(choices.joined(separator: "|")))"
            }
            if let defaultValue = value.defaultValue { text += " [default: \(defaultValue)]" }
        }
        if option.isRepeatable { text += " (repeatable)" }
        return text
    }

    /// `items` joined by ", " into lines of at most `width` columns (an item is never split).
    private func commaList(_ items: [String], indent: Int, width: Int) -> String {
        let pad = String(repeating: " ", count: indent)
        var out = ""
        var line = ""
        for (index, item) in items.enumerated() {
            let word = index == items.count - 1 ? item : item + ","
            if !line.isEmpty, pad.count + line.count + 1 + word.count > width {
                out += pad + line + "\n"
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty { out += pad + line + "\n" }
        return out
    }

    /// Two aligned columns; a long left side pushes its text to the next line.
    private func table(_ rows: [(String, String)]) -> String {
        let width = min(28, (rows.map { $0.0.count }.max() ?? 0) + 2)
        var out = ""
        for (left, right) in rows {
            if left.count + 2 > width {
                out += "  \(left)\n" + String(repeating: " ", count: width + 2) + "\(right)\n"
            } else {
                out += "  \(left)" + String(repeating: " ", count: width - left.count) + "\(right)\n"
            }
        }
        return out
    }
}
