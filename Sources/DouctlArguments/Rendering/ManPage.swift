/// The man page, in roff with the man(7) macros, rendered from the command tree plus the
/// prose only a person can write (description, files, environment, exit status…).
///
/// Layout: NAME, SYNOPSIS, DESCRIPTION (`description`; the root's discussion when that is
/// empty), COMMANDS (every visible leaf command by full path: synopsis, abstract,
/// discussion, arguments, options with value names, allowed values and defaults, examples),
/// GLOBAL OPTIONS (the root's), then `extraSections` in order. Hidden commands and options
/// are left out. Output is plain ASCII (see `Roff`), clean under `groff -ww` and
/// `mandoc -Tlint`.
public struct ManPage: Sendable, Equatable {
    /// A top-level section the caller writes: FILES, ENVIRONMENT, EXIT STATUS, SEE ALSO…
    public struct Section: Sendable, Equatable {
        public var title: String
        public var blocks: [Block]

        public init(title: String, blocks: [Block]) {
            self.title = title
            self.blocks = blocks
        }
    }

    public enum Block: Sendable, Equatable {
        /// Filled text; line breaks in the string are spaces.
        case paragraph(String)
        /// Tagged paragraphs (`.TP`): a bold term, then its indented text.
        case definitions([(term: String, text: String)])
        /// An explanation, then the command indented and kept verbatim.
        case example(command: String, explanation: String)
        /// Indented, kept line for line.
        case preformatted(String)

        // Hand-written: an array of tuples cannot synthesize Equatable.
        public static func == (lhs: Block, rhs: Block) -> Bool {
            switch (lhs, rhs) {
            case (.paragraph(let a), .paragraph(let b)):
                return a == b
            case (.definitions(let a), .definitions(let b)):
                return a.count == b.count && zip(a, b).allSatisfy { $0.term == $1.term && $0.text == $1.text }
            case (.example(let a, let x), .example(let b, let y)):
                return a == b && x == y
            case (.preformatted(let a), .preformatted(let b)):
                return a == b
            default:
                return false
            }
        }
    }

    public var root: CommandSpec
    public var section: Int
    public var date: String
    public var version: String
    public var description: [Block]
    public var extraSections: [Section]

    public init(root: CommandSpec, section: Int = 1, date: String, version: String, description: [Block], extraSections: [Section]) {
        self.root = root
        self.section = section
        self.date = date
        self.version = version
        self.description = description
        self.extraSections = extraSections
    }

    public func render() -> String {
        var roff = Roff()
        roff.raw(".\\\" Generated from \(Roff.escape(root.name, literal: true))'s command tree; do not edit by hand.")
        roff.macro("TH", root.name.uppercased(), String(section), date, "\(root.name) \(version)", ManPage.volume(section))

        roff.macro("SH", "NAME")
        roff.roffText(Roff.escape(root.name, literal: true) + " \\- " + Roff.escape(ShellText.oneLine(root.abstract), literal: false))

        roff.macro("SH", "SYNOPSIS")
        renderRootSynopsis(&roff)

        roff.macro("SH", "DESCRIPTION")
        if description.isEmpty {
            ManPage.renderBlocks(ManPage.discussionBlocks(root.discussion), into: &roff)
        } else {
            ManPage.renderBlocks(description, into: &roff)
        }

        let leaves = root.visibleTree.filter { !$0.path.isEmpty && !$0.spec.isGroup }
        if !leaves.isEmpty {
            roff.macro("SH", "COMMANDS")
            for leaf in leaves { renderCommand(leaf, into: &roff) }
        }

        let globals = root.visibleOptions
        if !globals.isEmpty {
            roff.macro("SH", root.isGroup ? "GLOBAL OPTIONS" : "OPTIONS")
            if root.isGroup {
                roff.macro("PP")
                roff.prose("These options are accepted before or after any command word.")
            }
            for option in globals { renderOption(option, into: &roff) }
        }

        for extra in extraSections {
            roff.macro("SH", extra.title)
            ManPage.renderBlocks(extra.blocks, into: &roff)
        }
        return roff.source
    }

    // MARK: - parts

    private static func volume(_ section: Int) -> String {
        switch section {
        case 1: return "User Commands"
        case 5: return "File Formats Manual"
        case 7: return "Miscellaneous Information Manual"
        case 8: return "System Manager's Manual"
        default: return "User Commands"
        }
    }

    private func renderRootSynopsis(_ roff: inout Roff) {
        roff.macro("SY", root.name)
        if root.isGroup {
            roff.roffText("[\\fIglobal\\ options\\fR]")
            roff.roffText("\\fIcommand\\fR")
            roff.roffText("[\\fIoptions\\fR]")
            roff.roffText("[\\fIarguments\\fR]")
        } else {
            for word in synopsisWords(root) { roff.roffText(word) }
        }
        roff.macro("YS")
    }

    /// `[\fITEXT\fR]`, `[\fB\-\-image\fR\ \fIFILE\fR]`, … for a synopsis.
    private func synopsisWords(_ command: CommandSpec) -> [String] {
        var words: [String] = []
        for argument in command.arguments {
            let name = Roff.italic(argument.name)
            switch argument.arity {
            case .required: words.append(name)
            case .optional: words.append("[\(name)]")
            case .variadic(let minimum): words.append(minimum > 0 ? "\(name)..." : "[\(name)...]")
            }
        }
        for option in command.visibleOptions {
            var text = Roff.bold(option.short.map { "-\($0)" } ?? "--\(option.long)")
            for value in option.values { text += "\\ " + Roff.italic(value.name) }
            words.append(option.isRepeatable ? "[\(text)]..." : "[\(text)]")
        }
        return words.map(Roff.notSentenceEnd)
    }

    private func renderCommand(_ command: RenderedCommand, into roff: inout Roff) {
        let spec = command.spec
        roff.macro("SS", command.key)
        roff.macro("SY", ([root.name] + command.path).joined(separator: " "))
        for word in synopsisWords(spec) { roff.roffText(word) }
        roff.macro("YS")

        if !spec.abstract.isEmpty {
            roff.macro("PP")
            roff.prose(ManPage.sentence(spec.abstract))
        }
        ManPage.renderBlocks(ManPage.discussionBlocks(spec.discussion), into: &roff)

        if !spec.arguments.isEmpty {
            roff.macro("PP")
            roff.prose("Arguments:")
            for argument in spec.arguments { renderArgument(argument, into: &roff) }
        }
        let options = spec.visibleOptions
        if !options.isEmpty {
            roff.macro("PP")
            roff.prose("Options:")
            for option in options { renderOption(option, into: &roff) }
        }
        let inherited = root.inheritedOptions(at: command.path).filter { !$0.isHidden }
        if root.isGroup, !inherited.isEmpty, inherited.count < root.visibleOptions.count {
            // Named the shorter way: the ones it takes, or the few it does not.
            let refused = root.visibleOptions.filter { !inherited.contains($0) }
            roff.macro("PP")
            if refused.count < inherited.count {
                roff.prose("Of the global options, this command takes all but " + refused.map { "--" + $0.long }.joined(separator: ", ") + ".")
            } else {
                roff.prose("Of the global options, this command takes " + inherited.map { "--" + $0.long }.joined(separator: ", ") + ".")
            }
        }
        if !spec.examples.isEmpty {
            roff.macro("PP")
            roff.prose(spec.examples.count == 1 ? "Example:" : "Examples:")
            ManPage.renderBlocks(spec.examples.map { .example(command: $0.command, explanation: $0.explanation) }, into: &roff)
        }
    }

    private func renderArgument(_ argument: ArgumentSpec, into roff: inout Roff) {
        roff.macro("TP")
        var term = Roff.italic(argument.name)
        switch argument.arity {
        case .required: break
        case .optional: term += " (optional)"
        case .variadic(let minimum): term += minimum > 0 ? "... (one or more)" : "... (any number)"
        }
        roff.tag(term)
        var text = Roff.escape(ShellText.oneLine(argument.help), literal: false)
        let notes = ManPage.valueNotes(kind: argument.kind, defaultValue: nil, help: argument.help)
        if !notes.isEmpty { text += " (" + notes.joined(separator: "; ") + ")" }
        roff.roffText(text.isEmpty ? "\\&" : text)
    }

    private func renderOption(_ option: OptionSpec, into roff: inout Roff) {
        roff.macro("TP")
        var term = option.spellings.map(Roff.bold).joined(separator: ", ")
        for value in option.values { term += " " + Roff.italic(value.name) }
        roff.tag(term)
        var text = Roff.escape(ShellText.oneLine(option.help), literal: false)
        var notes: [String] = []
        if let value = option.value {
            notes += ManPage.valueNotes(kind: value.kind, defaultValue: value.defaultValue, help: option.help)
        }
        if option.isRepeatable { notes.append("may be given more than once") }
        if !notes.isEmpty { text += " (" + notes.joined(separator: "; ") + ")" }
        roff.roffText(text.isEmpty ? "\\&" : text)
    }

    /// "one of \fBauto\fR, \fBnever\fR", "from 1 to 200", "default \fB30\fR".
    private static func valueNotes(kind: ValueKind, defaultValue: String?, help: String) -> [String] {
        var notes: [String] = []
        switch kind {
        case .choice(let choices) where !help.containsBytes(choices.joined(separator: "|")):
            notes.append("one of " + choices.map(Roff.bold).joined(separator: ", "))
        case .integer(let range?):
            notes.append(range.upperBound == Int.max ? "at least \(range.lowerBound)" : "from \(range.lowerBound) to \(range.upperBound)")
        default:
            break
        }
        if let defaultValue { notes.append("default " + Roff.bold(defaultValue)) }
        return notes
    }

    /// "post a status" → "Post a status."
    private static func sentence(_ text: String) -> String {
        var text = ShellText.oneLine(text)
        if let first = text.first, first.isASCII, first.isLowercase {
            text = first.uppercased() + text.dropFirst()
        }
        if let last = text.last, !".!?:。！？".contains(last) { text += "." }
        return text
    }

    /// "a status with a picture" → "A status with a picture:"
    private static func lead(_ text: String) -> String {
        var text = sentence(text)
        if let last = text.last, ".:".contains(last) { text.removeLast() }
        return text + ":"
    }

    // MARK: - blocks

    static func renderBlocks(_ blocks: [Block], into roff: inout Roff) {
        for block in blocks {
            switch block {
            case .paragraph(let text):
                roff.macro("PP")
                roff.prose(text)
            case .definitions(let items):
                for item in items {
                    roff.macro("TP")
                    roff.tag("\\fB" + Roff.escape(ShellText.oneLine(item.term), literal: true) + "\\fR")
                    let text = Roff.trimmed(item.text)
                    if text.isEmpty { roff.raw("\\&") } else { roff.prose(text) }
                }
            case .example(let command, let explanation):
                roff.macro("PP")
                if !Roff.trimmed(explanation).isEmpty {
                    roff.prose(lead(explanation))
                }
                roff.literalBlock(command)
            case .preformatted(let text):
                roff.macro("PP")
                roff.literalBlock(text)
            }
        }
    }

    /// A spec's discussion as blocks: blank lines separate paragraphs; runs of lines
    /// indented by two or more spaces are preformatted (common indentation removed).
    static func discussionBlocks(_ text: String) -> [Block] {
        var blocks: [Block] = []
        var paragraph: [String] = []
        var literal: [String] = []
        var pendingBlanks = 0

        func flushParagraph() {
            if !paragraph.isEmpty { blocks.append(.paragraph(paragraph.joined(separator: "\n"))) }
            paragraph = []
        }
        func flushLiteral() {
            if !literal.isEmpty {
                let indent = literal.filter { !Roff.trimmed($0).isEmpty }.map(leadingSpaces).min() ?? 0
                blocks.append(.preformatted(literal.map { String($0.dropFirst(min(indent, leadingSpaces($0)))) }.joined(separator: "\n")))
            }
            literal = []
        }

        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if Roff.trimmed(line).isEmpty {
                flushParagraph()
                if !literal.isEmpty { pendingBlanks += 1 }
            } else if leadingSpaces(line) >= 2 {
                flushParagraph()
                literal += Array(repeating: "", count: pendingBlanks)
                pendingBlanks = 0
                literal.append(line)
            } else {
                flushLiteral()
                pendingBlanks = 0
                paragraph.append(line)
            }
        }
        flushParagraph()
        flushLiteral()
        return blocks
    }

    private static func leadingSpaces(_ line: String) -> Int {
        line.prefix { $0 == " " }.count
    }
}
