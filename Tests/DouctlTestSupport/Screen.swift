/// A tiny terminal for tests: replays bytes written to a terminal (text, CR, LF, and the
/// few CSI sequences douctl writes: `ESC[nF`, `ESC[nA`, `ESC[2K`, `ESC[J`, colours) and
/// returns the rows left on the screen, so a test sees what a person would see.
public struct Screen {
    public private(set) var rows: [String] = [""]
    private var row = 0
    private var column = 0

    public init(_ text: String) {
        feed(text)
    }

    /// The rows with trailing spaces removed, trailing empty rows dropped.
    public var lines: [String] {
        var result = rows.map { line -> String in
            var line = line
            while line.hasSuffix(" ") { line.removeLast() }
            return line
        }
        while result.last == "" { result.removeLast() }
        return result
    }

    public mutating func feed(_ text: String) {
        var characters = Array(text)[...]
        while let character = characters.popFirst() {
            switch character {
            case "\r\n", "\n":
                // A pseudo-terminal turns LF into CR LF (onlcr): both start the next row.
                row += 1
                column = 0
                while rows.count <= row { rows.append("") }
            case "\r":
                column = 0
            case "\u{1B}":
                guard characters.first == "[" else { continue }
                characters.removeFirst()
                var parameter = ""
                while let next = characters.first, next.isNumber || next == ";" || next == "?" {
                    parameter.append(next)
                    characters.removeFirst()
                }
                guard let command = characters.popFirst() else { return }
                let count = Int(parameter) ?? 1
                switch command {
                case "F": row = max(0, row - count); column = 0
                case "A": row = max(0, row - count)
                case "K": rows[row] = parameter == "2" ? "" : String(rows[row].prefix(column))
                case "J": rows[row] = String(rows[row].prefix(column)); rows.removeSubrange((row + 1)...)
                default: break // colours and the rest leave the text alone
                }
            default:
                var line = Array(rows[row])
                while line.count < column { line.append(" ") }
                if column < line.count { line[column] = character } else { line.append(character) }
                rows[row] = String(line)
                column += 1
            }
        }
    }
}
