/// Colours JSON text the way jq 1.7.1 does by default (JQ_COLORS
/// `0;90:0;39:0;39:0;39:0;32:1;39:1;39:34;1`): null grey, false/true/numbers plain,
/// strings green, brackets and braces bold, object keys blue and bold. It works on the
/// serialized bytes, chunk by chunk (a reply streamed in pieces colours the same as one
/// written whole), and never changes a byte of the document itself: removing the escape
/// sequences gives back the input.
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

    init() {}

    /// One document (or NDJSON line) coloured at once.
    static func colorize(_ bytes: [UInt8]) -> [UInt8] {
        var colorizer = JSONColorizer()
        return colorizer.feed(bytes) + colorizer.finish()
    }

    private static func start(_ code: String) -> [UInt8] { Array("\u{1B}[\(code)m".utf8) }
    private static let reset: [UInt8] = Array("\u{1B}[0m".utf8)
    private static let startNull = start(nullColor)
    private static let startLiteral = start(literalColor)
    private static let startString = start(stringColor)
    private static let startKey = start(keyColor)
    private static let startBracket = start(bracketColor)

    /// The coloured form of the next chunk.
    mutating func feed(_ chunk: [UInt8]) -> [UInt8] {
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
                // Copy the run up to the next quote or backslash at once.
                var stop = index
                while stop < end, chunk[stop] != 0x22, chunk[stop] != 0x5C { stop += 1 }
                out.append(contentsOf: chunk[index..<stop])
                index = stop
                guard index < end else { continue }
                out.append(chunk[index])
                if chunk[index] == 0x5C {
                    escaped = true
                } else {
                    out.append(contentsOf: Self.reset)
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
                out.append(contentsOf: Self.reset)
                token = .none
            case .none:
                break
            }
            let byte = chunk[index]
            index += 1
            switch byte {
            case 0x22: // "
                let isKey = stack.last == true && expectingKey
                out.append(contentsOf: isKey ? Self.startKey : Self.startString)
                out.append(byte)
                token = isKey ? .key : .string
                if isKey { expectingKey = false }
            case 0x7B, 0x5B: // { [
                out.append(contentsOf: Self.startBracket)
                out.append(byte)
                out.append(contentsOf: Self.reset)
                stack.append(byte == 0x7B)
                expectingKey = byte == 0x7B
            case 0x7D, 0x5D: // } ]
                if !stack.isEmpty { stack.removeLast() }
                out.append(contentsOf: Self.startBracket)
                out.append(byte)
                out.append(contentsOf: Self.reset)
                expectingKey = false
            case 0x2C: // ,
                out.append(byte)
                expectingKey = stack.last == true
            case 0x6E: // n(ull)
                out.append(contentsOf: Self.startNull)
                out.append(byte)
                token = .literal
            case _ where Self.isLiteralByte(byte):
                out.append(contentsOf: Self.startLiteral)
                out.append(byte)
                token = .literal
            default:
                out.append(byte)
            }
        }
        return out
    }

    /// Closes a colour left open at the end of the input.
    mutating func finish() -> [UInt8] {
        defer { token = .none }
        return token == .none ? [] : Self.reset
    }

    private static func isLiteralByte(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2D || byte == 0x2B
            || byte == 0x2E || (byte >= 0x41 && byte <= 0x5A)
    }
}
