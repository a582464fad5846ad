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

    /// The coloured form of the next chunk.
    mutating func feed(_ chunk: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(chunk.count + chunk.count / 4)
        for byte in chunk {
            switch token {
            case .string, .key:
                out.append(byte)
                if escaped {
                    escaped = false
                } else if byte == 0x5C {
                    escaped = true
                } else if byte == 0x22 {
                    out += Self.reset
                    token = .none
                }
                continue
            case .literal:
                if Self.isLiteralByte(byte) {
                    out.append(byte)
                    continue
                }
                out += Self.reset
                token = .none
            case .none:
                break
            }
            switch byte {
            case 0x22: // "
                let isKey = stack.last == true && expectingKey
                out += Self.start(isKey ? Self.keyColor : Self.stringColor)
                out.append(byte)
                token = isKey ? .key : .string
                if isKey { expectingKey = false }
            case 0x7B, 0x5B: // { [
                out += Self.start(Self.bracketColor) + [byte] + Self.reset
                stack.append(byte == 0x7B)
                expectingKey = byte == 0x7B
            case 0x7D, 0x5D: // } ]
                if !stack.isEmpty { stack.removeLast() }
                out += Self.start(Self.bracketColor) + [byte] + Self.reset
                expectingKey = false
            case 0x2C: // ,
                out.append(byte)
                expectingKey = stack.last == true
            case 0x6E: // n(ull)
                out += Self.start(Self.nullColor) + [byte]
                token = .literal
            case _ where Self.isLiteralByte(byte):
                out += Self.start(Self.literalColor) + [byte]
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
