import DouctlJSON
import DouctlSystem
import Glibc

/// Deterministic pseudo-random numbers, so every run tests the same inputs.
typealias SeededGenerator = SplitMix64

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

func parseResult(_ input: [UInt8]) -> Result<JSON, JSONParseError> {
    Result { () throws(JSONParseError) -> JSON in try JSONParser.parse(input) }
}

func reformatResult(_ input: [UInt8], _ format: JSONFormat) -> Result<[UInt8], JSONParseError> {
    Result { () throws(JSONParseError) -> [UInt8] in try JSONReformatter.reformat(input, format: format) }
}

/// The error `parse` throws, or nil when it succeeds.
func parseError(_ input: String) -> JSONParseError? {
    if case .failure(let error) = parseResult(bytes(input)) { return error }
    return nil
}

func parseError(_ input: [UInt8]) -> JSONParseError? {
    if case .failure(let error) = parseResult(input) { return error }
    return nil
}

/// Writes random valid JSON documents as text, with control over what jq can compare.
struct DocumentGenerator {
    var random: SeededGenerator
    /// Only integers of modest size (jq 1.6 reprints other numbers differently).
    var integerNumbersOnly = false
    /// Raw invalid UTF-8 and lone low surrogates inside strings (both become U+FFFD).
    var invalidUTF8 = false
    /// Repeated keys inside one object (jq keeps only the last).
    var duplicateKeys = false
    /// Random JSON whitespace between tokens.
    var whitespace = true
    var maximumDepth = 6

    init(seed: UInt64) { random = SeededGenerator(seed: seed) }

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }
    mutating func chance(_ percent: Int) -> Bool { int(0...99) < percent }
    mutating func pick<T>(_ items: [T]) -> T { items[int(0...(items.count - 1))] }

    mutating func document() -> [UInt8] {
        var out: [UInt8] = []
        space(&out)
        value(&out, depth: 0)
        space(&out)
        return out
    }

    mutating func space(_ out: inout [UInt8]) {
        guard whitespace, chance(30) else { return }
        out += bytes(pick([" ", "\n", "\t", "\r\n", "  \n    ", "\n\t "]))
    }

    mutating func value(_ out: inout [UInt8], depth: Int) {
        let container = depth < maximumDepth && chance(depth == 0 ? 90 : 35)
        if container {
            if chance(50) { array(&out, depth: depth) } else { object(&out, depth: depth) }
            return
        }
        switch int(0...9) {
        case 0: out += bytes("null")
        case 1: out += bytes("true")
        case 2: out += bytes("false")
        case 3, 4, 5: number(&out)
        default: string(&out)
        }
    }

    mutating func array(_ out: inout [UInt8], depth: Int) {
        out.append(UInt8(ascii: "["))
        let count = chance(15) ? 0 : int(1...5)
        for index in 0..<count {
            space(&out)
            if index > 0 {
                out.append(UInt8(ascii: ","))
                space(&out)
            }
            value(&out, depth: depth + 1)
        }
        space(&out)
        out.append(UInt8(ascii: "]"))
    }

    mutating func object(_ out: inout [UInt8], depth: Int) {
        out.append(UInt8(ascii: "{"))
        let count = chance(15) ? 0 : int(1...5)
        var keys: [[UInt8]] = []
        for index in 0..<count {
            space(&out)
            if index > 0 {
                out.append(UInt8(ascii: ","))
                space(&out)
            }
            var key: [UInt8]
            if duplicateKeys, !keys.isEmpty, chance(30) {
                key = pick(keys)
            } else {
                // Unique by construction: the index is part of the key.
                key = []
                string(&key)
                key.removeLast()
                key += bytes("_\(index)\"")
            }
            keys.append(key)
            out += key
            space(&out)
            out.append(UInt8(ascii: ":"))
            space(&out)
            value(&out, depth: depth + 1)
        }
        space(&out)
        out.append(UInt8(ascii: "}"))
    }

    mutating func number(_ out: inout [UInt8]) {
        if integerNumbersOnly {
            out += bytes(String(int(-1_000_000...1_000_000)))
            return
        }
        out += bytes(pick([
            "0", "-0", "1", "-1", "42", "1.0", "-0.5", "1e400", "1E+2", "2.5e-3", "12345678901234567890123",
            "-9223372036854775808", "9223372036854775807", "0.000001", "100e-2", String(int(-99999...99999)),
        ]))
    }

    mutating func string(_ out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for _ in 0..<int(0...8) {
            out += stringPiece()
        }
        out.append(UInt8(ascii: "\""))
    }

    mutating func stringPiece() -> [UInt8] {
        switch int(0...(invalidUTF8 ? 13 : 11)) {
        case 0, 1: return bytes(pick(["a", "douban", "Hello World", "x y", "123", "!#$%&'()*+,-./:;<=>?@[]^_`{|}~"]))
        case 2: return bytes(pick(["\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"]))
        case 3:
            let code = int(0...0x1F)
            let hex = String(code, radix: 16)
            return bytes("\\u" + String(repeating: "0", count: 4 - hex.count) + (chance(50) ? hex : hex.uppercased()))
        case 4: return bytes(pick(["\\u007f", "\\u007F", "\\u0041", "\\u00e9", "\\u4e2d\\u6587", "\\u4E2D", "\\u2028", "\\uFEFF", "\\u0080"]))
        case 5: return bytes(pick(["\\ud83d\\ude00", "\\uD83D\\uDE00", "\\ud834\\udd1e"]))
        case 6, 7: return bytes(pick(["中文", "豆瓣", "广播", "《三体》", "，。！", "日本語", "한국어"]))
        case 8: return bytes(pick(["😀", "🎬📚", "❤️", "👍🏽", "🇨🇳"]))
        case 9: return bytes(pick(["é", "ß", "\u{7F}", "\u{80}", "\u{2028}", "\u{FEFF}", "\u{10FFFF}"]))
        case 10: return [0x7F]
        case 11: return bytes(pick([" ", "  ", "/", "//", "http://x/y"]))
        case 12:
            return pick([[0x80], [0xC0], [0xC1, 0x80], [0xFF], [0xF5, 0x80, 0x80, 0x80], [0xE4, 0xB8], [0xE4, 0x41, 0x42],
                         [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE0, 0x80, 0x80], [0xF0, 0x9F, 0x98], [0xF0, 0x9F, 0x41]])
        default:
            return bytes(pick(["\\udc00", "\\uDFFF", "\\ude00x"]))
        }
    }
}

/// Runs `body` on a new thread whose stack is exactly `stackSize` bytes and returns its result,
/// so tests can prove that work fits a small thread stack (an overflow would crash the test run).
/// Returns nil if the thread could not be created with that stack size.
func runOnThread(stackSize: Int, _ body: @escaping @Sendable () -> Bool) -> Bool? {
    final class Work: @unchecked Sendable {
        let body: @Sendable () -> Bool
        var result = false
        init(_ body: @escaping @Sendable () -> Bool) { self.body = body }
    }
    let work = Work(body)
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    var configured = 0
    guard pthread_attr_setstacksize(&attributes, stackSize) == 0,
        pthread_attr_getstacksize(&attributes, &configured) == 0, configured == stackSize
    else { return nil }
    var thread = pthread_t()
    let context = Unmanaged.passRetained(work).toOpaque()
    let created = pthread_create(&thread, &attributes, { context in
        guard let context else { return nil }
        let work = Unmanaged<Work>.fromOpaque(context).takeRetainedValue()
        work.result = work.body()
        return nil
    }, context)
    guard created == 0 else {
        Unmanaged<Work>.fromOpaque(context).release()
        return nil
    }
    pthread_join(thread, nil)
    return work.result
}
