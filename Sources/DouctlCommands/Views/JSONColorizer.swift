import DouctlSystem

/// JSON for a terminal. Colours it the way jq 1.7.1 does by default (JQ_COLORS
/// `0;90:0;39:0;39:0;39:0;32:1;39:1;39:34;1`): null grey, false/true/numbers plain,
/// strings green, brackets and braces bold, object keys blue and bold — or not at all
/// with `colors: false` (NO_COLOR). It works on the serialized bytes, chunk by chunk (a
/// reply streamed in pieces comes out the same as one written whole). In strings, a
/// character a terminal would act on (`TerminalText`: DEL, C1 controls such as U+009B
/// CSI, bidi overrides) is written as its JSON escape `\uXXXX`, as gh does: the same
/// value to any JSON reader, nothing for the terminal to obey. Nothing else changes:
/// removing the colour sequences gives back the input, byte for byte, when it holds none.
struct JSONColorizer: Sendable {
    static let nullColor = "0;90"
    static let literalColor = "0;39"
    static let stringColor = "0;32"
    static let bracketColor = "1;39"
    static let keyColor = "34;1"

    private enum Token { case none, string, key, literal }

    /// Containers open: true for an object.
    private var stack: [Bool] = []
    /// In an object, whether the next string is a key.
    private var expectingKey = false
    private var token = Token.none
    private var escaped = false
    /// The start of a multi-byte character the last chunk ended inside of.
    private var pending: [UInt8] = []
    private let reset: [UInt8]
    private let startNull: [UInt8]
    private let startLiteral: [UInt8]
    private let startString: [UInt8]
    private let startKey: [UInt8]
    private let startBracket: [UInt8]

    init(colors: Bool = true) {
        func start(_ code: String) -> [UInt8] { colors ? Array("\u{1B}[\(code)m".utf8) : [] }
        reset = colors ? Array("\u{1B}[0m".utf8) : []
        startNull = start(Self.nullColor)
        startLiteral = start(Self.literalColor)
        startString = start(Self.stringColor)
        startKey = start(Self.keyColor)
        startBracket = start(Self.bracketColor)
    }

    /// One document (or NDJSON line) for a terminal at once.
    static func colorize(_ bytes: [UInt8], colors: Bool = true) -> [UInt8] {
        var colorizer = JSONColorizer(colors: colors)
        return colorizer.feed(bytes) + colorizer.finish()
    }

    /// The terminal form of the next chunk.
    mutating func feed(_ chunk: [UInt8]) -> [UInt8] {
        if !pending.isEmpty {
            let joined = pending + chunk
            pending = []
            return feed(joined)
        }
        var out: [UInt8] = []
        out.reserveCapacity(chunk.count + chunk.count / 2)
        var index = 0
        let end = chunk.count
        while index < end {
            switch token {
            case .string, .key:
                if escaped {
                    out.append(chunk[index])
                    escaped = false
                    index += 1
                    continue
                }
                // Copy the run up to the next quote, backslash or possible terminal control at once.
                var stop = index
                while stop < end, chunk[stop] != 0x22, chunk[stop] != 0x5C, !Self.mayStartControl(chunk[stop]) { stop += 1 }
                out.append(contentsOf: chunk[index..<stop])
                index = stop
                guard index < end else { continue }
                if Self.mayStartControl(chunk[index]) {
                    let found = chunk.withUnsafeBytes { TerminalText.scalar(in: $0, at: index) }
                    switch found {
                    case .safe:
                        out.append(chunk[index])
                        index += 1
                    case .unsafe(let value, let length):
                        out.append(contentsOf: TerminalText.jsonEscape(value))
                        index += length
                    case .incomplete:
                        pending = Array(chunk[index...])
                        index = end
                    }
                    continue
                }
                out.append(chunk[index])
                if chunk[index] == 0x5C {
                    escaped = true
                } else {
                    out.append(contentsOf: reset)
                    token = .none
                }
                index += 1
                continue
            case .literal:
                if Self.isLiteralByte(chunk[index]) {
                    out.append(chunk[index])
                    index += 1
                    continue
                }
                out.append(contentsOf: reset)
                token = .none
            case .none:
                break
            }
            let byte = chunk[index]
            index += 1
            switch byte {
            case 0x22: // "
                let isKey = stack.last == true && expectingKey
                out.append(contentsOf: isKey ? startKey : startString)
                out.append(byte)
                token = isKey ? .key : .string
                if isKey { expectingKey = false }
            case 0x7B, 0x5B: // { [
                out.append(contentsOf: startBracket)
                out.append(byte)
                out.append(contentsOf: reset)
                stack.append(byte == 0x7B)
                expectingKey = byte == 0x7B
            case 0x7D, 0x5D: // } ]
                if !stack.isEmpty { stack.removeLast() }
                out.append(contentsOf: startBracket)
                out.append(byte)
                out.append(contentsOf: reset)
                expectingKey = false
            case 0x2C: // ,
                out.append(byte)
                expectingKey = stack.last == true
            case 0x6E: // n(ull)
                out.append(contentsOf: startNull)
                out.append(byte)
                token = .literal
            case _ where Self.isLiteralByte(byte):
                out.append(contentsOf: startLiteral)
                out.append(byte)
                token = .literal
            default:
                out.append(byte)
            }
        }
        return out
    }

    /// Closes a colour left open at the end of the input (and lets out bytes held back
    /// for a character the input never finished).
    mutating func finish() -> [UInt8] {
        defer { token = .none; pending = [] }
        return pending + (token == .none ? [] : reset)
    }

    /// A byte that may begin what `TerminalText` keeps from a terminal: DEL, or the lead
    /// byte of a C1 control (0xC2), U+061C (0xD8) or a bidi control (0xE2). Raw C0 bytes
    /// cannot stand in a JSON string; DEL can.
    private static func mayStartControl(_ byte: UInt8) -> Bool {
        byte == 0x7F || byte == 0xC2 || byte == 0xD8 || byte == 0xE2
    }

    private static func isLiteralByte(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2D || byte == 0x2B
            || byte == 0x2E || (byte >= 0x41 && byte <= 0x5A)
    }
}
