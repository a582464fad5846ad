import DouctlSystem

/// Building roff source for man(7) pages: escaping, and lines that are always safe.
///
/// Text becomes ASCII roff: a backslash is `\e`; a `-` is `\-` (a minus, so options copy
/// and paste) in literal text and in words that start with one (`--image`, `-`), and stays a
/// hyphen inside words (`command-line`); characters outside ASCII become `\[uXXXX]`, which
/// groff and mandoc both read whatever the input encoding (no preconv needed); a line that
/// would start with `.` or `'` gets `\&` in front so it is not taken for a request.
struct Roff {
    private(set) var lines: [String] = []

    var source: String { lines.map { $0 + "\n" }.joined() }

    /// A request or macro: `.TH DOUCTL 1 "date"`. Arguments are escaped and quoted when needed.
    mutating func macro(_ name: String, _ arguments: String...) {
        macro(name, arguments: arguments)
    }

    mutating func macro(_ name: String, arguments: [String]) {
        // A paragraph break right after a heading is redundant (mandoc warns about it).
        if name == "PP", let last = lines.last, last.hasPrefix(".SH") || last.hasPrefix(".SS") || last == ".PP" {
            return
        }
        var line = "." + name
        for argument in arguments {
            line += " " + Roff.argument(argument)
        }
        lines.append(line)
    }

    /// A request whose arguments are already roff (numbers, escapes).
    mutating func raw(_ line: String) {
        lines.append(line)
    }

    /// A text line already in roff (font escapes built by the caller); guarded at the start.
    mutating func roffText(_ line: String) {
        let trimmed = Roff.trimmed(line)
        if trimmed.isEmpty { return }
        for piece in Roff.wrapped(trimmed) {
            lines.append(Roff.guarded(piece))
        }
    }

    /// The one line after `.TP`, which is the tag: never wrapped, since a second line
    /// would already be the indented text.
    mutating func tag(_ line: String) {
        let trimmed = Roff.trimmed(line)
        lines.append(trimmed.isEmpty ? "\\&" : Roff.guarded(trimmed))
    }

    /// Filled prose: each non-blank line, trimmed and escaped.
    mutating func prose(_ text: String) {
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            roffText(Roff.escape(Roff.trimmed(String(line)), literal: false))
        }
    }

    /// No-fill text, indented, kept line for line: `.RS 4`, `.nf` … `.fi`, `.RE`.
    mutating func literalBlock(_ text: String) {
        var body = text.split(separator: "\n", omittingEmptySubsequences: false).map { String($0) }
        while let last = body.last, Roff.trimmed(last).isEmpty { body.removeLast() }
        while let first = body.first, Roff.trimmed(first).isEmpty { body.removeFirst() }
        if body.isEmpty { return }
        raw(".RS 4")
        raw(".nf")
        for line in body {
            var line = Roff.expandingTabs(line)
            while line.hasSuffix(" ") || line.hasSuffix("\t") { line.removeLast() }
            // An empty input line would be a blank line in fill mode to some checkers; \& is
            // an empty line that no one questions.
            lines.append(line.isEmpty ? "\\&" : Roff.guarded(Roff.escape(line, literal: true)))
        }
        raw(".fi")
        raw(".RE")
    }

    /// A filled text line longer than 80 bytes split at spaces (roff fills it again).
    /// Never at an escaped space (`\ `), which would leave a line ending in a backslash.
    static func wrapped(_ line: String, width: Int = 80) -> [String] {
        var pieces: [String] = []
        var current = ""
        var word = ""
        var escaped = false
        func flushWord() {
            if word.isEmpty { return }
            if !current.isEmpty, current.utf8.count + 1 + word.utf8.count > width {
                pieces.append(current)
                current = word
            } else {
                current += current.isEmpty ? word : " " + word
            }
            word = ""
        }
        for character in line {
            if character == " " && !escaped {
                flushWord()
            } else {
                word.append(character)
            }
            escaped = character == "\\" && !escaped
        }
        flushWord()
        if !current.isEmpty { pieces.append(current) }
        return pieces
    }

    // MARK: - escaping

    /// Roff for `text`. `literal`: every `-` is a minus (commands, option names, code).
    static func escape(_ text: String, literal: Bool) -> String {
        var out = ""
        var minusWord = false
        var atWordStart = true
        for scalar in text.unicodeScalars {
            switch scalar {
            case " ", "\t":
                out.append(" ")
                minusWord = false
                atWordStart = true
                continue
            case "-":
                if atWordStart { minusWord = true }
                out += literal || minusWord ? "\\-" : "-"
            case "\\":
                out += "\\e"
            default:
                if scalar.isASCII {
                    if scalar.value < 0x20 || scalar.value == 0x7F {
                        out.append(" ")
                    } else {
                        out.unicodeScalars.append(scalar)
                    }
                } else {
                    out += unicodeEscape(scalar)
                }
            }
            // Opening punctuation keeps us at the start of the word: "(--all", "'-'".
            atWordStart = "([{\"'`".unicodeScalars.contains(scalar) && atWordStart
        }
        return out
    }

    /// `\[u4F60]`: at least four upper-case hex digits.
    static func unicodeEscape(_ scalar: Unicode.Scalar) -> String {
        var hex = String(scalar.value, radix: 16, uppercase: true)
        while hex.count < 4 { hex = "0" + hex }
        return "\\[u\(hex)]"
    }

    /// A macro argument: escaped, double quotes as `\(dq`, quoted when it has spaces.
    static func argument(_ text: String) -> String {
        let escaped = escape(text, literal: false).replacingAll("\"", with: "\\(dq")
        if escaped.isEmpty || escaped.contains(" ") { return "\"\(escaped)\"" }
        return escaped
    }

    /// `\&` before a line that starts with a control character.
    static func guarded(_ line: String) -> String {
        if line.hasPrefix(".") || line.hasPrefix("'") { return "\\&" + line }
        return line
    }

    /// Tabs as spaces to the next multiple of 8, so no-fill text keeps its columns.
    static func expandingTabs(_ line: String) -> String {
        var out = ""
        var column = 0
        for character in line {
            if character == "\t" {
                let spaces = 8 - column % 8
                out += String(repeating: " ", count: spaces)
                column += spaces
            } else {
                out.append(character)
                column += 1
            }
        }
        return out
    }

    /// `\&` after a line that roff would take for the end of a sentence (and so follow
    /// with two spaces): one ending in `.`, `!` or `?`, maybe inside `]`, `)`, quotes or
    /// a font change (`[\fIS,...\fR]`).
    static func notSentenceEnd(_ line: String) -> String {
        var rest = Substring(line)
        while true {
            if rest.hasSuffix("\\fR") || rest.hasSuffix("\\fP") {
                rest = rest.dropLast(3)
            } else if let last = rest.last, "])\"'*".contains(last) {
                rest = rest.dropLast()
            } else {
                break
            }
        }
        if let last = rest.last, ".!?".contains(last) { return line + "\\&" }
        return line
    }

    static func trimmed(_ text: String) -> String {
        var scalars = Substring(text).unicodeScalars[...]
        while let first = scalars.first, first == " " || first == "\t" || first == "\r" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" || last == "\r" { scalars.removeLast() }
        return String(String.UnicodeScalarView(scalars))
    }

    // MARK: - inline fonts

    static func bold(_ text: String) -> String { "\\fB" + escape(text, literal: true) + "\\fR" }
    static func italic(_ text: String) -> String { "\\fI" + escape(text, literal: true) + "\\fR" }
}
