import DouctlJSON

/// Columns a string takes on a terminal: East Asian Wide and Fullwidth characters (中文,
/// ｆｕｌｌ, most emoji) take two, combining marks and controls none, the rest one
/// (UAX #11, as wcwidth does). Views and the progress display lay text out by it.
enum DisplayWidth {
    static func of(_ text: String) -> Int {
        var total = 0
        for character in text { total += of(character) }
        return total
    }

    static func of(_ character: Character) -> Int {
        guard let first = character.unicodeScalars.first else { return 0 }
        if isZeroWidth(first.value) { return 0 }
        if isWide(first.value) { return 2 }
        // An emoji presentation selector makes a text-style symbol wide.
        if character.unicodeScalars.contains(where: { $0.value == 0xFE0F }) { return 2 }
        return 1
    }

    static func isZeroWidth(_ value: UInt32) -> Bool {
        value < 0x20 || (0x7F..<0xA0).contains(value)
            || (0x0300...0x036F).contains(value) || (0x200B...0x200F).contains(value)
            || (0xFE00...0xFE0F).contains(value) || value == 0x2060 || value == 0xFEFF
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
    static func truncate(_ text: String, to width: Int) -> String {
        guard of(text) > width else { return text }
        guard width > 0 else { return "" }
        var result = ""
        var used = 0
        for character in text {
            let columns = of(character)
            if used + columns > width - 1 { break }
            result.append(character)
            used += columns
        }
        return result + "…"
    }

    /// `text` keeping its last columns, starting with "…" when cut (file names: the end matters).
    static func truncateFront(_ text: String, to width: Int) -> String {
        guard of(text) > width else { return text }
        guard width > 0 else { return "" }
        var kept: [Character] = []
        var used = 0
        for character in text.reversed() {
            let columns = of(character)
            if used + columns > width - 1 { break }
            kept.append(character)
            used += columns
        }
        return "…" + String(kept.reversed())
    }

    /// `text` padded with spaces to exactly `width` columns (cut from the front when longer).
    static func pad(_ text: String, to width: Int) -> String {
        let fitted = truncateFront(text, to: width)
        return fitted + String(repeating: " ", count: max(0, width - of(fitted)))
    }

    /// Lines of at most `width` columns: breaks at spaces where it can, anywhere between
    /// wide characters (Chinese has no spaces), and inside a word only when it must.
    /// Newlines in `text` are kept; runs of spaces at a break are dropped.
    static func wrap(_ text: String, width: Int) -> [String] {
        let width = max(width, 2)
        var lines: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line: [Character] = []
            var used = 0
            var lastSpace: Int? // index in `line` of the last breakable space
            for character in paragraph {
                let columns = of(character)
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
                        used = tail.reduce(0) { $0 + of($1) }
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
