import DouctlJSON

/// Columns a string takes on a terminal, per grapheme cluster (a `Character`): East Asian
/// Wide and Fullwidth characters (中文, ｆｕｌｌ) and emoji take two, combining marks and
/// controls none, the rest one (UAX #11, as wcwidth does). How an emoji *sequence* counts
/// depends on the terminal (`Model`). Views and the progress display lay text out by it.
enum DisplayWidth {
    /// How the terminal counts a cluster of several code points.
    enum Model: Sendable, Equatable {
        /// One cluster, one glyph, as Unicode's emoji data has it (UTS #51): an emoji with a
        /// skin-tone modifier (👍🏽), a ZWJ sequence (👨‍👩‍👧), a symbol made emoji by VS16 (❤️)
        /// and a flag of two regional indicators (🇨🇳) each take two columns. kitty, WezTerm,
        /// Ghostty, foot, iTerm2 and Windows Terminal lay text out so.
        case graphemes
        /// Each code point by its own width, as tmux before 3.4 does (measured with 3.3a):
        /// a skin-tone modifier is a wide character of its own (👍🏽 takes four), VS16 adds
        /// nothing (❤️ takes one, 🏳️‍🌈 one), and a pictograph after a ZWJ joins the one before
        /// (👨‍👩‍👧 takes two).
        case codePoints

        /// The terminal's model, from what it says of itself: tmux sets `TERM_PROGRAM` and
        /// `TERM_PROGRAM_VERSION` (3.2 and later; older ones only `TMUX`) in its panes.
        init(environment: [String: String]) {
            let program = environment["TERM_PROGRAM"] ?? ""
            if program == "tmux" {
                self = Self.version(environment["TERM_PROGRAM_VERSION"] ?? "", isAtLeast: (3, 4)) ? .graphemes : .codePoints
            } else if program.isEmpty, !(environment["TMUX"] ?? "").isEmpty {
                self = .codePoints
            } else {
                self = .graphemes
            }
        }

        /// "3.3a" or "next-3.5" against (major, minor); unreadable is old.
        static func version(_ text: String, isAtLeast minimum: (Int, Int)) -> Bool {
            let numbers = text.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
            guard let major = numbers.first else { return false }
            let minor = numbers.count > 1 ? numbers[1] : 0
            return (major, minor) >= minimum
        }
    }

    static func of(_ text: String, _ model: Model = .graphemes) -> Int {
        var total = 0
        for character in text { total += of(character, model) }
        return total
    }

    static func of(_ character: Character, _ model: Model = .graphemes) -> Int {
        if character.isASCII { return character.asciiValue.map { $0 < 0x20 || $0 == 0x7F ? 0 : 1 } ?? 1 }
        switch model {
        case .graphemes: return clusterWidth(character.unicodeScalars)
        case .codePoints: return codePointsWidth(character.unicodeScalars)
        }
    }

    /// A cluster as one glyph: its first code point's width, made two by VS16 after an emoji
    /// or by a second regional indicator (a flag); modifiers, ZWJ and what they join add none.
    static func clusterWidth(_ scalars: Character.UnicodeScalarView) -> Int {
        guard let first = scalars.first else { return 0 }
        var width = of(scalar: first)
        for scalar in scalars.dropFirst() {
            switch scalar.value {
            case 0xFE0F where first.properties.isEmoji:
                width = 2
            case 0x1F1E6...0x1F1FF where isRegionalIndicator(first.value):
                width = 2
            default:
                // A cluster that starts with a mark or a joiner shows what follows.
                if width == 0 { width = of(scalar: scalar) }
            }
        }
        return width
    }

    /// Code point by code point, what follows a ZWJ joining the cluster (tmux before 3.4).
    static func codePointsWidth(_ scalars: Character.UnicodeScalarView) -> Int {
        var total = 0
        var joined = false
        for scalar in scalars {
            if joined {
                joined = false
                continue
            }
            if scalar.value == 0x200D {
                joined = true
                continue
            }
            total += of(scalar: scalar)
        }
        return total
    }

    /// One code point's columns, as wcwidth gives them with current Unicode data: 0 for
    /// controls, marks, format characters and Hangul medial and final jamo; 2 for East
    /// Asian Wide and Fullwidth and for emoji presentation (except a lone regional
    /// indicator, 1); else 1.
    static func of(scalar: Unicode.Scalar) -> Int {
        let value = scalar.value
        if value < 0x7F { return value < 0x20 ? 0 : 1 }
        if isZeroWidth(value) { return 0 }
        if isWide(value) { return 2 }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark: return 0
        case .format: return value == 0x00AD ? 1 : 0
        default: break
        }
        if scalar.properties.isEmojiPresentation && !isRegionalIndicator(value) { return 2 }
        return 1
    }

    static func isRegionalIndicator(_ value: UInt32) -> Bool { (0x1F1E6...0x1F1FF).contains(value) }

    static func isZeroWidth(_ value: UInt32) -> Bool {
        value < 0x20 || (0x7F..<0xA0).contains(value)
            || (0x0300...0x036F).contains(value) || (0x200B...0x200F).contains(value)
            || (0xFE00...0xFE0F).contains(value) || value == 0x2060 || value == 0xFEFF
            || (0x1160...0x11FF).contains(value) || (0xD7B0...0xD7FF).contains(value)
            || (0xE0000...0xE0FFF).contains(value)
    }

    static func isWide(_ value: UInt32) -> Bool {
        switch value {
        case 0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x23E9...0x23EC, 0x23F0, 0x23F3,
             0x25FD...0x25FE, 0x2614...0x2615, 0x2648...0x2653, 0x267F, 0x2693, 0x26A1, 0x26AA...0x26AB,
             0x26BD...0x26BE, 0x26C4...0x26C5, 0x26CE, 0x26D4, 0x26EA, 0x26F2...0x26F3, 0x26F5, 0x26FA,
             0x26FD, 0x2705, 0x270A...0x270B, 0x2728, 0x274C, 0x274E, 0x2753...0x2755, 0x2757,
             0x2795...0x2797, 0x27B0, 0x27BF, 0x2B1B...0x2B1C, 0x2B50, 0x2B55,
             0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
             0xA960...0xA97F, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F,
             0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x16FE0...0x16FE4, 0x17000...0x18CFF, 0x1B000...0x1B2FF,
             0x1F004, 0x1F0CF, 0x1F18E, 0x1F191...0x1F19A, 0x1F200...0x1F251, 0x1F300...0x1F320,
             0x1F32D...0x1F335, 0x1F337...0x1F37C, 0x1F37E...0x1F393, 0x1F3A0...0x1F3CA,
             0x1F3CF...0x1F3D3, 0x1F3E0...0x1F3F0, 0x1F3F4, 0x1F3F8...0x1F43E, 0x1F440,
             0x1F442...0x1F4FC, 0x1F4FF...0x1F53D, 0x1F54B...0x1F54E, 0x1F550...0x1F567, 0x1F57A,
             0x1F595...0x1F596, 0x1F5A4, 0x1F5FB...0x1F64F, 0x1F680...0x1F6C5, 0x1F6CC,
             0x1F6D0...0x1F6D2, 0x1F6D5...0x1F6D7, 0x1F6EB...0x1F6EC, 0x1F6F4...0x1F6FC,
             0x1F7E0...0x1F7EB, 0x1F90C...0x1F93A, 0x1F93C...0x1F945, 0x1F947...0x1F9FF,
             0x1FA70...0x1FAFF, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return true
        default:
            return false
        }
    }

    /// `text` cut to at most `width` columns, ending in "…" when cut.
    static func truncate(_ text: String, to width: Int, _ model: Model = .graphemes) -> String {
        guard of(text, model) > width else { return text }
        guard width > 0 else { return "" }
        var result = ""
        var used = 0
        for character in text {
            let columns = of(character, model)
            if used + columns > width - 1 { break }
            result.append(character)
            used += columns
        }
        return result + "…"
    }

    /// `text` keeping its last columns, starting with "…" when cut (file names: the end matters).
    static func truncateFront(_ text: String, to width: Int, _ model: Model = .graphemes) -> String {
        guard of(text, model) > width else { return text }
        guard width > 0 else { return "" }
        var kept: [Character] = []
        var used = 0
        for character in text.reversed() {
            let columns = of(character, model)
            if used + columns > width - 1 { break }
            kept.append(character)
            used += columns
        }
        return "…" + String(kept.reversed())
    }

    /// `text` padded with spaces to exactly `width` columns (cut from the front when longer).
    static func pad(_ text: String, to width: Int, _ model: Model = .graphemes) -> String {
        let fitted = truncateFront(text, to: width, model)
        return fitted + String(repeating: " ", count: max(0, width - of(fitted, model)))
    }

    /// Lines of at most `width` columns: breaks at spaces where it can, anywhere between
    /// wide characters (Chinese has no spaces), and inside a word only when it must.
    /// Newlines in `text` are kept; runs of spaces at a break are dropped.
    static func wrap(_ text: String, width: Int, _ model: Model = .graphemes) -> [String] {
        let width = max(width, 2)
        var lines: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line: [Character] = []
            var used = 0
            var lastSpace: Int? // index in `line` of the last breakable space
            for character in paragraph {
                let columns = of(character, model)
                if character == " " || character == "\t" {
                    if used + 1 > width {
                        lines.append(String(line))
                        line = []
                        used = 0
                        lastSpace = nil
                        continue
                    }
                    lastSpace = line.count
                    line.append(" ")
                    used += 1
                    continue
                }
                if used + columns > width {
                    if columns == 1, let space = lastSpace {
                        // Move the word being written to the next line.
                        let head = line[..<space]
                        let tail = Array(line[(space + 1)...])
                        lines.append(String(head))
                        line = tail
                        used = tail.reduce(0) { $0 + of($1, model) }
                        lastSpace = nil
                        if used + columns > width {
                            lines.append(String(line))
                            line = []
                            used = 0
                        }
                    } else {
                        lines.append(String(line))
                        line = []
                        used = 0
                        lastSpace = nil
                    }
                }
                line.append(character)
                used += columns
            }
            var finished = String(line)
            while finished.hasSuffix(" ") { finished.removeLast() }
            lines.append(finished)
        }
        return lines.map { line in
            var trimmed = line
            while trimmed.hasSuffix(" ") { trimmed.removeLast() }
            return trimmed
        }
    }
}
