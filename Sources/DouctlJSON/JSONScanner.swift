/// The syntactic events of one JSON value, in document order.
///
/// The tree parser and the streaming reformatter both consume these from the one `JSONScanner`,
/// so they accept and reject exactly the same inputs, with the same error messages.
protocol JSONEventHandler {
    mutating func emptyArray()
    mutating func emptyObject()
    /// A non-empty array opens; it is at nesting level `depth` (1 for the outermost container).
    mutating func beginArray(depth: Int)
    mutating func beginObject(depth: Int)
    /// The container at `depth` closes.
    mutating func endArray(depth: Int)
    mutating func endObject(depth: Int)
    /// The ',' between two elements or members of the container at `depth`.
    mutating func separator(depth: Int)
    /// An object key; its value is the next value event.
    mutating func key(_ token: StringToken)
    mutating func string(_ token: StringToken)
    /// Number text, already checked against the JSON grammar.
    mutating func number(_ text: UnsafeRawBufferPointer)
    mutating func literal(_ literal: JSONLiteral)
}

enum JSONLiteral {
    case null, `true`, `false`

    var text: StaticString {
        switch self {
        case .null: return "null"
        case .true: return "true"
        case .false: return "false"
        }
    }
}

/// A string token's raw content (between the quotes) and what it needs before it can be used.
struct StringToken {
    static let hasEscapes: UInt8 = 1
    static let hasInvalidUTF8: UInt8 = 2
    static let hasDelete: UInt8 = 4

    /// The bytes between the quotes, as in the input.
    let content: UnsafeRawBufferPointer
    let flags: UInt8

    var hasEscapes: Bool { flags & Self.hasEscapes != 0 }
    var hasInvalidUTF8: Bool { flags & Self.hasInvalidUTF8 != 0 }
    /// The raw content is already the text: no escapes to decode, no bytes to repair.
    var isPlainText: Bool { flags & (Self.hasEscapes | Self.hasInvalidUTF8) == 0 }
    /// The quoted token can be copied to output unchanged: it is already in jq's canonical form
    /// (U+007F is the one unescaped character jq escapes).
    var isCanonicalJSON: Bool { flags == 0 }
}

/// Validating, iterative JSON lexer and grammar driver.
///
/// Works on raw bytes with pointer arithmetic (no per-byte bounds checks), keeps container nesting
/// on a small explicit stack instead of recursing, and caps depth at `maximumDepth`.
struct JSONScanner {
    /// The deepest nesting accepted. Swift releases a parsed tree recursively (about 170 bytes of
    /// stack per level optimized, ~250 in debug builds), so this is what keeps a parse safe on a
    /// 512 KiB thread stack: 1,000 levels need under 256 KiB even in a debug build (ParserTests
    /// checks it on a 512 KiB thread). jq 1.6 stops at 256.
    static let maximumDepth = 1000

    private let start: UnsafeRawPointer
    private let end: UnsafeRawPointer
    private var cursor: UnsafeRawPointer
    /// Bytes of the UTF-8 BOM skipped at the start (0 or 3), so columns on line 1 ignore it.
    private var bomLength = 0

    /// Runs `handler` over `input`, which must hold exactly one JSON value and optional whitespace.
    static func scan<Handler: JSONEventHandler>(
        _ input: UnsafeRawBufferPointer, into handler: inout Handler
    ) throws(JSONParseError) {
        guard let start = input.baseAddress, input.count > 0 else {
            throw JSONParseError(message: "empty input", offset: 0, line: 1, column: 1)
        }
        var scanner = JSONScanner(start: start, end: start + input.count)
        try scanner.run(&handler)
    }

    private init(start: UnsafeRawPointer, end: UnsafeRawPointer) {
        self.start = start
        self.end = end
        self.cursor = start
    }

    /// One complete string token, quotes included, for the incremental reformatter's
    /// strings that cross a chunk boundary or are malformed: checked by the one-shot
    /// scanner's own code, and reported as a key when `isKey`. Errors carry document
    /// offsets, and lines and columns counted from the token's start.
    static func scanStringToken<Handler: JSONEventHandler>(
        _ input: UnsafeRawBufferPointer, isKey: Bool, offset: Int, into handler: inout Handler
    ) throws(JSONParseError) {
        guard let start = input.baseAddress, input.count > 0 else {
            throw JSONParseError(message: "unexpected end of input", offset: offset, line: 1, column: 1, isTruncated: true)
        }
        var scanner = JSONScanner(start: start, end: start + input.count)
        do throws(JSONParseError) {
            let token = try scanner.scanString()
            guard scanner.cursor == scanner.end else { throw scanner.unexpected("expected the end of the string") }
            if isKey { handler.key(token) } else { handler.string(token) }
        } catch {
            throw JSONParseError(message: error.message, offset: offset + error.offset, line: error.line,
                                 column: error.column, isTruncated: error.isTruncated)
        }
    }

    /// A number or literal at the start of `input`, which may go on past it (the incremental
    /// reformatter passes the bytes after the token too, so that what follows is judged as
    /// the one-shot scanner judges it): checked, written, and its length returned. Errors
    /// carry document offsets, and lines and columns counted from the token's start.
    static func scanScalarPrefix<Handler: JSONEventHandler>(
        _ input: UnsafeRawBufferPointer, offset: Int, into handler: inout Handler
    ) throws(JSONParseError) -> Int {
        guard let start = input.baseAddress, input.count > 0 else {
            throw JSONParseError(message: "unexpected end of input", offset: offset, line: 1, column: 1, isTruncated: true)
        }
        var scanner = JSONScanner(start: start, end: start + input.count)
        do throws(JSONParseError) {
            switch start.load(as: UInt8.self) {
            case UInt8(ascii: "t"):
                try scanner.scanLiteral("true")
                handler.literal(.true)
            case UInt8(ascii: "f"):
                try scanner.scanLiteral("false")
                handler.literal(.false)
            case UInt8(ascii: "n"):
                try scanner.scanLiteral("null")
                handler.literal(.null)
            default:
                handler.number(try scanner.scanNumber())
            }
            return scanner.cursor - start
        } catch {
            throw JSONParseError(message: error.message, offset: offset + error.offset, line: error.line,
                                 column: error.column, isTruncated: error.isTruncated)
        }
    }

    // MARK: Grammar

    private mutating func run<Handler: JSONEventHandler>(_ handler: inout Handler) throws(JSONParseError) {
        if end - cursor >= 3, cursor.load(as: UInt8.self) == 0xEF,
            cursor.load(fromByteOffset: 1, as: UInt8.self) == 0xBB,
            cursor.load(fromByteOffset: 2, as: UInt8.self) == 0xBF
        {
            cursor += 3
            bomLength = 3
        }
        skipWhitespace()
        if cursor == end { throw error("empty input", at: cursor) }

        // isObject[d] tells whether the open container at depth d is an object.
        let isObject = UnsafeMutablePointer<Bool>.allocate(capacity: Self.maximumDepth + 1)
        defer { isObject.deallocate() }
        var depth = 0

        while true {
            // A value starts here; whitespace before it has been skipped.
            guard cursor < end else { throw truncated() }
            switch cursor.load(as: UInt8.self) {
            case UInt8(ascii: "\""):
                handler.string(try scanString())
            case UInt8(ascii: "{"):
                guard depth < Self.maximumDepth else { throw tooDeep() }
                cursor += 1
                skipWhitespace()
                if cursor < end, cursor.load(as: UInt8.self) == UInt8(ascii: "}") {
                    cursor += 1
                    handler.emptyObject()
                } else {
                    depth += 1
                    isObject[depth] = true
                    handler.beginObject(depth: depth)
                    try scanKey(&handler)
                    continue
                }
            case UInt8(ascii: "["):
                guard depth < Self.maximumDepth else { throw tooDeep() }
                cursor += 1
                skipWhitespace()
                if cursor < end, cursor.load(as: UInt8.self) == UInt8(ascii: "]") {
                    cursor += 1
                    handler.emptyArray()
                } else {
                    depth += 1
                    isObject[depth] = false
                    handler.beginArray(depth: depth)
                    continue
                }
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                handler.number(try scanNumber())
            case UInt8(ascii: "t"):
                try scanLiteral("true")
                handler.literal(.true)
            case UInt8(ascii: "f"):
                try scanLiteral("false")
                handler.literal(.false)
            case UInt8(ascii: "n"):
                try scanLiteral("null")
                handler.literal(.null)
            default:
                throw unexpected("expected a value")
            }

            // A value is complete: close containers until one continues with ','.
            while true {
                skipWhitespace()
                if depth == 0 {
                    if cursor < end { throw error("unexpected \(describeCharacter(at: cursor)) after the JSON value", at: cursor) }
                    return
                }
                guard cursor < end else { throw truncated() }
                let byte = cursor.load(as: UInt8.self)
                if isObject[depth] {
                    if byte == UInt8(ascii: ",") {
                        cursor += 1
                        handler.separator(depth: depth)
                        skipWhitespace()
                        try scanKey(&handler)
                        break
                    }
                    guard byte == UInt8(ascii: "}") else {
                        throw unexpected("expected ',' or '}' after object member")
                    }
                    cursor += 1
                    handler.endObject(depth: depth)
                } else {
                    if byte == UInt8(ascii: ",") {
                        cursor += 1
                        handler.separator(depth: depth)
                        skipWhitespace()
                        break
                    }
                    guard byte == UInt8(ascii: "]") else {
                        throw unexpected("expected ',' or ']' after array element")
                    }
                    cursor += 1
                    handler.endArray(depth: depth)
                }
                depth -= 1
            }
        }
    }

    /// Reads `"key" :` and the whitespace after it, leaving the cursor on the member's value.
    @inline(__always)
    private mutating func scanKey<Handler: JSONEventHandler>(_ handler: inout Handler) throws(JSONParseError) {
        guard cursor < end else { throw truncated() }
        guard cursor.load(as: UInt8.self) == UInt8(ascii: "\"") else { throw unexpected("expected an object key") }
        handler.key(try scanString())
        skipWhitespace()
        guard cursor < end else { throw truncated() }
        guard cursor.load(as: UInt8.self) == UInt8(ascii: ":") else {
            throw unexpected("expected ':' after object key")
        }
        cursor += 1
        skipWhitespace()
    }

    /// JSON whitespace only (space, tab, LF, CR), as RFC 8259 says.
    @inline(__always)
    private mutating func skipWhitespace() {
        while cursor < end {
            let byte = cursor.load(as: UInt8.self)
            guard byte <= 0x20, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return }
            cursor += 1
        }
    }

    // MARK: Tokens

    private mutating func scanLiteral(_ literal: StaticString) throws(JSONParseError) {
        let literalStart = cursor
        let expected = UnsafeRawPointer(literal.utf8Start)
        for index in 0..<literal.utf8CodeUnitCount {
            let position = literalStart + index
            guard position < end else { throw truncated() }
            guard position.load(as: UInt8.self) == expected.load(fromByteOffset: index, as: UInt8.self) else {
                throw error("invalid literal (expected '\(literal)')", at: literalStart)
            }
        }
        cursor = literalStart + literal.utf8CodeUnitCount
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`; what follows is checked by the grammar.
    @inline(__always)
    private mutating func scanNumber() throws(JSONParseError) -> UnsafeRawBufferPointer {
        let numberStart = cursor
        if cursor.load(as: UInt8.self) == UInt8(ascii: "-") {
            cursor += 1
            guard cursor < end else { throw truncated() }
            guard isDigit(cursor.load(as: UInt8.self)) else { throw unexpected("expected a digit after '-'") }
        }
        if cursor.load(as: UInt8.self) == UInt8(ascii: "0") {
            cursor += 1
            if cursor < end, isDigit(cursor.load(as: UInt8.self)) {
                throw error("leading zeros are not allowed in numbers", at: cursor - 1)
            }
        } else {
            skipDigits()
        }
        if cursor < end, cursor.load(as: UInt8.self) == UInt8(ascii: ".") {
            cursor += 1
            guard cursor < end else { throw truncated() }
            guard isDigit(cursor.load(as: UInt8.self)) else { throw unexpected("expected a digit after '.'") }
            skipDigits()
        }
        if cursor < end, cursor.load(as: UInt8.self) | 0x20 == UInt8(ascii: "e") {
            cursor += 1
            guard cursor < end else { throw truncated() }
            let sign = cursor.load(as: UInt8.self)
            if sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                cursor += 1
                guard cursor < end else { throw truncated() }
            }
            guard isDigit(cursor.load(as: UInt8.self)) else { throw unexpected("expected a digit in the exponent") }
            skipDigits()
        }
        return UnsafeRawBufferPointer(start: numberStart, count: cursor - numberStart)
    }

    @inline(__always)
    private func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

    @inline(__always)
    private mutating func skipDigits() {
        while cursor < end, isDigit(cursor.load(as: UInt8.self)) { cursor += 1 }
    }

    /// Finds the end of the string starting at the cursor's '"', checking escapes, control characters
    /// and UTF-8 on the way, eight bytes at a time where nothing interesting happens.
    @inline(__always)
    private mutating func scanString() throws(JSONParseError) -> StringToken {
        let openingQuote = cursor
        var position = cursor + 1
        var flags: UInt8 = 0
        while true {
            while end - position >= 8 {
                let word = UInt64(littleEndian: position.loadUnaligned(as: UInt64.self))
                let special = SWAR.specialInStringToken(word)
                if special == 0 {
                    position += 8
                } else {
                    position += special.trailingZeroBitCount >> 3
                    break
                }
            }
            guard position < end else { throw unterminated(openingQuote) }
            let byte = position.load(as: UInt8.self)
            if byte == UInt8(ascii: "\"") {
                cursor = position + 1
                let content = UnsafeRawBufferPointer(start: openingQuote + 1, count: position - openingQuote - 1)
                return StringToken(content: content, flags: flags)
            }
            if byte == UInt8(ascii: "\\") {
                flags |= StringToken.hasEscapes
                position = try scanEscape(at: position, openingQuote: openingQuote)
            } else if byte < 0x20 {
                let code = String(byte, radix: 16, uppercase: true)
                throw error("control character U+\(code.count < 2 ? "000" : "00")\(code) must be escaped in a string", at: position)
            } else if byte < 0x80 {
                if byte == 0x7F { flags |= StringToken.hasDelete }
                position += 1
            } else {
                let length = UTF8Check.validSequenceLength(at: position, end: end)
                if length == 0 {
                    flags |= StringToken.hasInvalidUTF8
                    position += 1
                } else {
                    position += length
                }
            }
        }
    }

    /// Checks the escape at `backslash` and returns the position after it.
    private func scanEscape(at backslash: UnsafeRawPointer, openingQuote: UnsafeRawPointer) throws(JSONParseError) -> UnsafeRawPointer {
        guard end - backslash >= 2 else { throw unterminated(openingQuote) }
        switch backslash.load(fromByteOffset: 1, as: UInt8.self) {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
            UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return backslash + 2
        case UInt8(ascii: "u"):
            for index in 2..<6 {
                guard backslash + index < end else { throw unterminated(openingQuote) }
                guard Hex.value(of: backslash.load(fromByteOffset: index, as: UInt8.self)) != nil else {
                    throw error("invalid \\u escape (expected 4 hex digits)", at: backslash)
                }
            }
            return backslash + 6
        default:
            throw error("invalid escape \(describeCharacter(at: backslash + 1, escaped: true)) in string", at: backslash)
        }
    }

    // MARK: Errors

    private func truncated() -> JSONParseError {
        error("unexpected end of input", at: end, truncated: true)
    }

    private func unterminated(_ openingQuote: UnsafeRawPointer) -> JSONParseError {
        error("unterminated string", at: openingQuote, truncated: true)
    }

    private func tooDeep() -> JSONParseError {
        error("nesting deeper than \(Self.maximumDepth) levels", at: cursor)
    }

    /// "unexpected 'x', <expectation>" at the cursor.
    private func unexpected(_ expectation: String) -> JSONParseError {
        error("unexpected \(describeCharacter(at: cursor)), \(expectation)", at: cursor)
    }

    private func error(_ message: String, at position: UnsafeRawPointer, truncated: Bool = false) -> JSONParseError {
        let offset = position - start
        var line = 1
        var column = 1
        var index = offset >= bomLength ? bomLength : 0
        while index < offset {
            let byte = start.load(fromByteOffset: index, as: UInt8.self)
            if byte == 0x0A {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
            index += 1
        }
        return JSONParseError(message: message, offset: offset, line: line, column: column, isTruncated: truncated)
    }

    /// `'x'` for printable ASCII, `'中' (U+4E2D)` for other valid UTF-8, else `byte 0xNN`.
    /// With `escaped`, a printable character is shown after a backslash, as in `'\q'`.
    private func describeCharacter(at position: UnsafeRawPointer, escaped: Bool = false) -> String {
        Self.describeCharacter(at: position, end: end, escaped: escaped)
    }

    /// The same, for the incremental reformatter, which passes what it holds of the input.
    static func describeCharacter(at position: UnsafeRawPointer, end: UnsafeRawPointer, escaped: Bool = false) -> String {
        let byte = position.load(as: UInt8.self)
        let prefix = escaped ? "\\" : ""
        if byte >= 0x20, byte < 0x7F {
            return "'\(prefix)\(Character(Unicode.Scalar(byte)))'"
        }
        let length = byte >= 0x80 ? UTF8Check.validSequenceLength(at: position, end: end) : 0
        if length > 0 {
            let bytes = UnsafeRawBufferPointer(start: position, count: length)
            let text = String(decoding: bytes, as: UTF8.self)
            let code = text.unicodeScalars.first.map { String($0.value, radix: 16, uppercase: true) } ?? ""
            return "'\(prefix)\(text)' (U+\(String(repeating: "0", count: max(0, 4 - code.count)))\(code))"
        }
        let hex = String(byte, radix: 16, uppercase: true)
        return "byte 0x\(hex.count < 2 ? "0" : "")\(hex)"
    }
}

/// Eight-bytes-at-a-time tests ("SIMD within a register"). Each returns a word whose high bit is set
/// in the lane of every interesting byte; the lowest set lane is always a true match (borrows only
/// create false positives above a true one), so `trailingZeroBitCount / 8` finds the first.
enum SWAR {
    static let ones: UInt64 = 0x0101_0101_0101_0101
    static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// High bit set in every zero lane (callers keep only the high bits with `& highBits`).
    @inline(__always)
    static func zeroLanes(_ word: UInt64) -> UInt64 { (word &- ones) & ~word }

    /// Bytes the string scanner must look at: '"', '\\', controls, U+007F and all non-ASCII bytes.
    /// Only the lowest marked lane is exact (callers take `trailingZeroBitCount`): lanes above
    /// a marked one may be marked too, by a borrow or carry out of it. The tests of the
    /// zero-lane idiom drop their `& ~x`, which only a non-ASCII byte fails, and every
    /// non-ASCII byte is marked anyway (`| word`).
    @inline(__always)
    static func specialInStringToken(_ word: UInt64) -> UInt64 {
        let quote = (word ^ (ones &* 0x22)) &- ones
        let backslash = (word ^ (ones &* 0x5C)) &- ones
        // 0x7F carries into its own high bit; only 0xFF carries further.
        let delete = word &+ ones
        let control = word &- (ones &* 0x20)
        return (quote | backslash | delete | control | word) & highBits
    }

    /// Bytes of valid UTF-8 text that JSON output must escape: '"', '\\', controls and U+007F.
    @inline(__always)
    static func needsEscape(_ word: UInt64) -> UInt64 {
        let quote = zeroLanes(word ^ (ones &* 0x22))
        let backslash = zeroLanes(word ^ (ones &* 0x5C))
        let delete = zeroLanes(word ^ (ones &* 0x7F))
        let control = (word &- (ones &* 0x20)) & ~word
        return (quote | backslash | delete | control) & highBits
    }
}

enum Hex {
    /// `value(of:) != nil`, without the switch.
    @inline(__always)
    static func isDigit(_ byte: UInt8) -> Bool {
        byte &- UInt8(ascii: "0") < 10 || (byte | 0x20) &- UInt8(ascii: "a") < 6
    }

    @inline(__always)
    static func value(of byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte &- UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(byte &- UInt8(ascii: "a") &+ 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(byte &- UInt8(ascii: "A") &+ 10)
        default: return nil
        }
    }
}

enum UTF8Check {
    /// The length (2...4) of the well-formed UTF-8 sequence at `position`, or 0 if it is not one
    /// (overlong forms, surrogates and values past U+10FFFF are not well-formed).
    @inline(__always)
    static func validSequenceLength(at position: UnsafeRawPointer, end: UnsafeRawPointer) -> Int {
        let available = end - position
        let lead = position.load(as: UInt8.self)
        @inline(__always) func byte(_ index: Int) -> UInt8 { position.load(fromByteOffset: index, as: UInt8.self) }
        @inline(__always) func isContinuation(_ value: UInt8) -> Bool { value & 0xC0 == 0x80 }
        switch lead {
        case 0xC2...0xDF:
            return available >= 2 && isContinuation(byte(1)) ? 2 : 0
        case 0xE0...0xEF:
            guard available >= 3 else { return 0 }
            let second = byte(1)
            let secondOK: Bool
            switch lead {
            case 0xE0: secondOK = second >= 0xA0 && second <= 0xBF
            case 0xED: secondOK = second >= 0x80 && second <= 0x9F
            default: secondOK = isContinuation(second)
            }
            return secondOK && isContinuation(byte(2)) ? 3 : 0
        case 0xF0...0xF4:
            guard available >= 4 else { return 0 }
            let second = byte(1)
            let secondOK: Bool
            switch lead {
            case 0xF0: secondOK = second >= 0x90 && second <= 0xBF
            case 0xF4: secondOK = second >= 0x80 && second <= 0x8F
            default: secondOK = isContinuation(second)
            }
            return secondOK && isContinuation(byte(2)) && isContinuation(byte(3)) ? 4 : 0
        default:
            return 0
        }
    }
}
