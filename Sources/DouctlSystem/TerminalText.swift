/// The one place that decides what text may reach a person's terminal.
///
/// Text a server, another process or a file name controls can carry sequences a terminal
/// acts on: C0 controls (ESC starts CSI and OSC: cursor moves, window titles, clipboard
/// writes with OSC 52, hidden OSC 8 links), DEL, the C1 controls U+0080–U+009F (xterm and
/// VTE take U+009B as CSI and U+009D as OSC), and the bidirectional formatting controls
/// that reorder what is shown (`invoice_\u{202E}txt.exe` reads as "…exe.txt"; Trojan
/// Source, CVE-2021-42574). None of them reaches a terminal from douctl as it is: lines for a
/// person are escaped (`escaped`), views show them in caret notation or as U+FFFD (`shown`),
/// JSON on a terminal spells them as `\uXXXX` (same value, `JSONColorizer`). Tabs stay;
/// newlines stay only where a caller keeps lines. Data on stdout to a pipe is never touched.
public enum TerminalText {
    /// Whether a scalar must not reach a terminal as it is (tab and newline are judged by
    /// the caller: see `escaped(_:keepingNewlines:)`).
    @inline(__always)
    public static func isUnsafe(_ value: UInt32) -> Bool {
        switch value {
        case 0..<0x20, 0x7F...0x9F: return value != 0x09
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    /// Whether `text` holds anything `isUnsafe` (newline included unless `keepingNewlines`).
    /// Byte-wise: only the lead bytes of unsafe scalars are looked at further.
    public static func needsEscaping(_ text: String, keepingNewlines: Bool = false) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                if byte < 0x20 || byte == 0x7F || byte == 0xC2 || byte == 0xD8 || byte == 0xE2 {
                    if byte == 0x0A && keepingNewlines { index += 1; continue }
                    if case .unsafe = scalar(in: UnsafeRawBufferPointer(bytes), at: index) { return true }
                }
                index += 1
            }
            return false
        }
    }

    /// One line for a person: every unsafe scalar written as an escape — `\n`, `\r`, `\xHH`
    /// for other C0 controls, `\uXXXX` for DEL, C1 and bidi controls (so a JSON line stays
    /// JSON with the same value). With `keepingNewlines`, `\n` separates lines as it is.
    public static func escaped(_ text: String, keepingNewlines: Bool = false) -> String {
        guard needsEscaping(text, keepingNewlines: keepingNewlines) else { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            let value = scalar.value
            guard isUnsafe(value), !(value == 0x0A && keepingNewlines) else {
                result.append(scalar)
                continue
            }
            let text: String
            switch value {
            case 0x0A: text = "\\n"
            case 0x0D: text = "\\r"
            case 0..<0x20: text = "\\x" + hex(value, digits: 2)
            default: text = "\\u" + hex(value, digits: 4)
            }
            result.append(contentsOf: text.unicodeScalars)
        }
        return String(result)
    }

    /// For views that lay text out: C0 controls in caret notation (`^[`, as less and gh
    /// show them), newlines and tabs kept, C1 and bidi controls as U+FFFD.
    public static func shown(_ text: String) -> String {
        guard needsEscaping(text, keepingNewlines: true) else { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            let value = scalar.value
            if value == 0x0A || !isUnsafe(value) {
                result.append(scalar)
            } else if value < 0x20 || value == 0x7F {
                result.append("^")
                result.append(Unicode.Scalar(UInt8(value == 0x7F ? 0x3F : value + 0x40)))
            } else {
                result.append("\u{FFFD}")
            }
        }
        return String(result)
    }

    /// What the UTF-8 at `index` (a byte `< 0x20`, 0x7F, or a lead byte 0xC2, 0xD8, 0xE2)
    /// starts, for byte-wise filters such as `JSONColorizer`.
    public enum ScalarAt: Equatable {
        /// Not an unsafe scalar: copy the byte.
        case safe
        /// An unsafe scalar of `length` bytes.
        case unsafe(value: UInt32, length: Int)
        /// The buffer ends inside what may be one: wait for more bytes.
        case incomplete
    }

    public static func scalar(in bytes: UnsafeRawBufferPointer, at index: Int) -> ScalarAt {
        let lead = bytes[index]
        if lead < 0x20 || lead == 0x7F { return lead == 0x09 ? .safe : .unsafe(value: UInt32(lead), length: 1) }
        let length = lead == 0xE2 ? 3 : 2
        guard lead == 0xC2 || lead == 0xD8 || lead == 0xE2 else { return .safe }
        guard index + length <= bytes.count else {
            // Only wait when the bytes so far could still begin an unsafe scalar.
            if index + 1 < bytes.count, lead == 0xE2, bytes[index + 1] != 0x80, bytes[index + 1] != 0x81 { return .safe }
            return .incomplete
        }
        var value = UInt32(lead & (length == 3 ? 0x0F : 0x1F))
        for offset in 1..<length {
            let next = bytes[index + offset]
            guard next & 0xC0 == 0x80 else { return .safe }
            value = value << 6 | UInt32(next & 0x3F)
        }
        return isUnsafe(value) ? .unsafe(value: value, length: length) : .safe
    }

    /// `\uXXXX` for `value`, as JSON spells it.
    public static func jsonEscape(_ value: UInt32) -> [UInt8] {
        Array(("\\u" + hex(value, digits: 4)).utf8)
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.utf8.count)) + text
    }
}
