/// The incremental form of `JSONReformatter`: feed a reply in chunks as they arrive and get
/// pretty or compact JSON out as soon as it is known. What it keeps between chunks is the
/// nesting stack (at most `JSONScanner.maximumDepth` entries) and the one token being read
/// (a string, number or literal, at most `maximumTokenBytes`), so memory does not grow with
/// the size of the document. Chunk boundaries may fall anywhere, even inside a UTF-8
/// sequence or an escape: the output is what the one-shot reformatter prints, and it
/// accepts and rejects what the one-shot reformatter does, with the same error (message,
/// offset, line, column), except a single string or number longer than
/// `maximumTokenBytes`, which it rejects. Output already emitted before an error stays
/// emitted, and is what the one-shot reformatter emits before it.
///
/// This is the seam a printer calls to write a JSON stream: `feed` bytes, then `finish`.
public final class JSONStreamReformatter {
    /// The longest single string or number accepted (64 MiB).
    public static let maximumTokenBytes = 64 << 20

    private var engine: StreamReformatEngine

    /// `expectedSize`: about how much a feed brings, which sizes the output buffer (a reply's
    /// chunks by default; an envelope's status member is a few bytes).
    public init(format: JSONFormat, expectedSize: Int = JSONReformatter.chunkSize, emit: @escaping (UnsafeRawBufferPointer) -> Void) {
        engine = StreamReformatEngine(format: format, expectedSize: expectedSize, emit: emit)
    }

    deinit { engine.free() }

    /// Takes the next bytes of the document.
    public func feed(_ chunk: UnsafeRawBufferPointer) throws(JSONParseError) {
        try engine.feed(chunk)
    }

    /// Ends the document: flushes the last output, or throws when the document is incomplete.
    public func finish() throws(JSONParseError) {
        try engine.finish()
    }

    /// Reformats a whole document at once through the incremental path (for tests and for
    /// callers that happen to hold everything).
    public static func reformat(_ input: [UInt8], format: JSONFormat, chunkSize: Int = 64 * 1024) throws(JSONParseError) -> [UInt8] {
        var output: [UInt8] = []
        let reformatter = JSONStreamReformatter(format: format) { output.append(contentsOf: $0) }
        try reformatter.feedAll(input, chunkSize: chunkSize)
        return output
    }

    /// Feeds the whole of `input` in chunks of `chunkSize` bytes (as a transport delivers a
    /// reply), then finishes.
    public func feedAll(_ input: [UInt8], chunkSize: Int) throws(JSONParseError) {
        let step = max(1, chunkSize)
        let result = input.withUnsafeBytes { raw in
            Result { () throws(JSONParseError) in
                var start = 0
                while start < raw.count {
                    let end = min(raw.count, start + step)
                    try feed(UnsafeRawBufferPointer(rebasing: raw[start..<end]))
                    start = end
                }
                try finish()
            }
        }
        try result.get()
    }

}

/// The reformatter's state and grammar. A struct, so the per-byte work touches its fields
/// without the dynamic exclusivity checks a class's stored properties cost.
struct StreamReformatEngine {

    private enum State {
        /// Before anything; `matched` bytes of a UTF-8 BOM seen.
        case start(matched: Int)
        case value
        /// Just after '[' or '{': empty or not is decided by the next significant byte.
        case openArray, openObject
        case key
        case colon
        case afterValue
        case done
        case string(isKey: Bool, escaped: Bool)
        case number
        case literal
    }

    private var writer: ReformatWriter
    private var token = ByteBuffer(capacity: 256)
    private var tokenOffset = 0
    /// Whether each open container is an object, at its depth (1 for the outermost); a
    /// fixed block of `JSONScanner.maximumDepth + 1`, so nesting costs no array growth.
    private let isObject = UnsafeMutablePointer<Bool>.allocate(capacity: JSONScanner.maximumDepth + 1)
    private var depth = 0
    /// See `makePlainStringBytes`: one table for every engine (an envelope makes one per
    /// member), held here so the hot loop reads it without a lazy-global check.
    private let plainStringBytes = Self.sharedPlainStringBytes
    private var state = State.start(matched: 0)
    /// Bytes consumed so far, and where the current line began (for error positions).
    private var offset = 0
    private var line = 1
    private var lineStart = 0
    /// UTF-8 continuation bytes on the current line before `offset`: error columns count
    /// characters, as the one-shot scanner's do.
    private var continuations = 0
    /// The chunk being fed and its offset in the document, so an error can describe the
    /// character at its position as the one-shot scanner does (nil between feeds).
    private var currentChunk: UnsafeRawBufferPointer?
    private var currentChunkOffset = 0

    init(format: JSONFormat, expectedSize: Int, emit: @escaping (UnsafeRawBufferPointer) -> Void) {
        writer = ReformatWriter(indent: format.effectiveIndent, inputSize: expectedSize, emit: emit)
    }

    func free() {
        writer.free()
        token.free()
        isObject.deallocate()
    }

    /// Takes the next bytes of the document.
    mutating func feed(_ chunk: UnsafeRawBufferPointer) throws(JSONParseError) {
        if pending != nil {
            try awaitCharacter(chunk)
            return
        }
        currentChunk = chunk
        currentChunkOffset = offset
        defer { currentChunk = nil }
        do throws(JSONParseError) {
            try read(chunk)
        } catch {
            // An error at a character this chunk holds only the start of waits for the rest.
            if let cut = cutCharacter(at: error.offset) {
                pending = (error, cut.bytes, cut.needed)
                return
            }
            throw error
        }
    }

    /// An error that describes a character the input so far holds only the start of
    /// (`feed` found it): its bytes so far, and how many it has.
    private var pending: (error: JSONParseError, bytes: [UInt8], needed: Int)?

    /// The bytes held of the character at document offset `position` when it is cut by the
    /// end of the current chunk, with its length; nil when it is whole (or not a character's
    /// start).
    private func cutCharacter(at position: Int) -> (bytes: [UInt8], needed: Int)? {
        guard let chunk = currentChunk else { return nil }
        let received = currentChunkOffset + chunk.count
        var held: [UInt8] = []
        if position >= currentChunkOffset && position < received {
            held = Array(chunk[(position - currentChunkOffset)...])
        } else if position >= tokenOffset && position - tokenOffset < token.count {
            // In a number or literal kept across chunks, with the bytes after it.
            held = Array(UnsafeRawBufferPointer(start: token.base + (position - tokenOffset), count: token.count - (position - tokenOffset)))
        }
        guard let lead = held.first else { return nil }
        let needed = Self.sequenceLength(lead: lead)
        guard held.count < needed, position + needed > received else { return nil }
        return (held, needed)
    }

    /// Collects the rest of a cut character from the next chunk, and raises the error once
    /// it is whole.
    private mutating func awaitCharacter(_ chunk: UnsafeRawBufferPointer) throws(JSONParseError) {
        guard var waiting = pending else { return }
        waiting.bytes += chunk.prefix(waiting.needed - waiting.bytes.count)
        pending = waiting
        if waiting.bytes.count >= waiting.needed { throw Self.resolved(waiting) }
    }

    /// The pending error with its character described from all the bytes it has: the
    /// description from its lead byte alone ("byte 0xE4") becomes the character's.
    private static func resolved(_ waiting: (error: JSONParseError, bytes: [UInt8], needed: Int)) -> JSONParseError {
        let error = waiting.error
        let partial = "unexpected " + describe(Array(waiting.bytes.prefix(1)))
        guard error.message.hasPrefix(partial) else { return error }
        let message = "unexpected " + describe(waiting.bytes) + error.message.dropFirst(partial.count)
        return JSONParseError(message: message, offset: error.offset, line: error.line, column: error.column, isTruncated: error.isTruncated)
    }

    /// The length of the UTF-8 sequence a byte leads (1 for ASCII and bytes that lead none).
    private static func sequenceLength(lead: UInt8) -> Int {
        switch lead {
        case 0xC2...0xDF: return 2
        case 0xE0...0xEF: return 3
        case 0xF0...0xF4: return 4
        default: return 1
        }
    }

    private mutating func read(_ chunk: UnsafeRawBufferPointer) throws(JSONParseError) {
        guard let base = chunk.baseAddress else { return }
        let bytes = base.assumingMemoryBound(to: UInt8.self)
        let count = chunk.count
        var index = 0
        // Where this chunk starts in the document: a token that began in it and ends in it
        // is validated in place, not copied.
        let chunkStart = offset
        while index < count {
            index = try readWholeTokens(bytes, from: index, count: count)
            guard index < count else { break }
            let byte = bytes[index]
            switch state {
            case .string(let isKey, var escaped):
                // A string that begins and ends in this chunk was read whole by
                // `readWholeTokens`; this one crosses the chunk's end, is malformed, or is a
                // whole document (which `readWholeTokens` leaves to `structural`). Find
                // the closing quote, stepping over escapes, and leave the checking to the
                // one-shot scanner's code once the token is whole.
                var end = index
                var closes = false
                if escaped {
                    end += 1
                    escaped = false
                }
                while end < count {
                    let next = bytes[end]
                    if next == UInt8(ascii: "\"") {
                        closes = true
                        break
                    }
                    if next == UInt8(ascii: "\\") {
                        if end + 1 < count {
                            end += 2
                        } else {
                            escaped = true
                            end += 1
                        }
                        continue
                    }
                    end += 1
                }
                if closes && tokenOffset >= chunkStart {
                    let start = tokenOffset - chunkStart
                    advance(to: end + 1, from: &index)
                    try completeToken(UnsafeRawBufferPointer(start: bytes + start, count: end + 1 - start), isKey: isKey)
                    state = isKey ? .colon : .afterValue
                    continue
                }
                if tokenOffset < chunkStart {
                    try appendToken(bytes + index, count: (closes ? end + 1 : end) - index)
                }
                if closes {
                    advance(to: end + 1, from: &index)
                    try completeToken(isKey: isKey)
                    state = isKey ? .colon : .afterValue
                } else {
                    state = .string(isKey: isKey, escaped: escaped)
                    advance(to: end, from: &index)
                }
                continue
            case .number, .literal:
                let isNumber: Bool
                if case .number = state { isNumber = true } else { isNumber = false }
                let end = Self.scalarEnd(bytes, from: index, count: count, isNumber: isNumber)
                if end < count && tokenOffset >= chunkStart {
                    // What follows the token goes to the scanner too, to be judged as the
                    // one-shot scanner judges it; anything of the token past the value is
                    // left for the grammar.
                    let start = tokenOffset - chunkStart
                    let length = try completeScalar(UnsafeRawBufferPointer(start: bytes + start, count: min(count, end + 4) - start))
                    advance(to: start + length, from: &index)
                    state = .afterValue
                    continue
                }
                if end > index {
                    if tokenOffset < chunkStart { try appendToken(bytes + index, count: end - index) }
                    advance(to: end, from: &index)
                }
                if end == count { continue }
                try completeScalarFromToken(following: UnsafeRawBufferPointer(start: bytes + end, count: min(count - end, 4)))
                continue
            case .start(let matched):
                let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
                if byte == bom[matched] {
                    state = matched == 2 ? .value : .start(matched: matched + 1)
                    advance(to: index + 1, from: &index)
                    // Columns on the first line count from after the mark.
                    if matched == 2 { lineStart = 3 }
                    continue
                }
                if matched > 0 {
                    // Not a byte order mark: its first bytes are the value, which cannot begin so.
                    let held = Array(bom[0..<matched]) + Array(UnsafeBufferPointer(start: bytes + index, count: min(count - index, 4)))
                    if held.count < 3 {
                        // EF then a byte: a character of three bytes, which may go on in the next chunk.
                        pending = (Self.notAByteOrderMark(held), held, 3)
                        return
                    }
                    throw Self.notAByteOrderMark(held)
                }
                state = .value
                continue
            default:
                break
            }
            if byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 {
                if byte == 0x0A {
                    line += 1
                    lineStart = offset + 1
                    continuations = 0
                }
                advance(to: index + 1, from: &index)
                continue
            }
            try structural(byte)
            advance(to: index + 1, from: &index)
        }
        // A token that began in this chunk and goes on past it is kept until it is whole.
        switch state {
        case .string, .number, .literal:
            if tokenOffset >= chunkStart {
                let start = tokenOffset - chunkStart
                try appendToken(bytes + start, count: count - start)
            }
        default:
            break
        }
    }

    /// The common case, between tokens, taken straight through: whitespace, punctuation and
    /// tokens that lie whole in the chunk, with no per-byte trip round `feed`'s loop. It
    /// stops, with the state as `feed` would have left it, at the first byte it does not
    /// handle: a token that goes on past the chunk, anything malformed (so errors are what
    /// `feed` reports), a byte order mark, the end of the top-level value. Returns where it
    /// stopped.
    /// `State` between tokens, without the payloads, for `readWholeTokens`.
    private enum Phase { case value, key, colon, afterValue, openArray, openObject, done }

    private mutating func readWholeTokens(_ bytes: UnsafePointer<UInt8>, from start: Int, count: Int) throws(JSONParseError) -> Int {
        // The state in a local, which stays in a register across the calls below (the
        // stored property was stored and reloaded round each), stored back on the way out.
        var phase: Phase
        switch state {
        case .value: phase = .value
        case .key: phase = .key
        case .colon: phase = .colon
        case .afterValue: phase = .afterValue
        case .openArray: phase = .openArray
        case .openObject: phase = .openObject
        case .done: phase = .done
        default: return start
        }
        let chunkStart = offset - start
        var index = start
        defer {
            offset = chunkStart + index
            switch phase {
            case .value: state = .value
            case .key: state = .key
            case .colon: state = .colon
            case .afterValue: state = .afterValue
            case .openArray: state = .openArray
            case .openObject: state = .openObject
            case .done: state = .done
            }
        }
        while index < count {
            let byte = bytes[index]
            // A string, key or value: the commonest token, first, and through one call site
            // of `copyString` (which two sites kept from being inlined). Checked and written
            // in one pass; what that leaves, the check then the writer's copy.
            if byte == UInt8(ascii: "\""), phase == .value || phase == .key {
                let isKey = phase == .key
                if let close = Self.copyShortString(from: bytes + index + 1, end: bytes + count, into: &writer.output)
                    ?? copyString(from: bytes + index + 1, end: bytes + count) {
                    index = close + 1 - bytes
                    if isKey {
                        // Both copies leave room for the ": " after a key.
                        writer.keyCopiedWithRoom()
                        phase = .colon
                        // The ':' that most often follows at once.
                        if index < count && bytes[index] == UInt8(ascii: ":") {
                            phase = .value
                            index += 1
                        }
                    } else {
                        writer.stringCopied()
                        phase = .afterValue
                        // The ',' that most often follows, taken here rather than a round later.
                        if index < count && bytes[index] == UInt8(ascii: ","), depth > 0 {
                            writer.separatorWithRoom(depth: depth)
                            phase = isObject[depth] ? .key : .value
                            index += 1
                        }
                    }
                    continue
                }
                guard let close = Self.scanString(from: bytes + index + 1, end: bytes + count, plain: plainStringBytes) else { return index }
                let token = StringToken(content: UnsafeRawBufferPointer(start: bytes + index + 1, count: close.position - (bytes + index + 1)), flags: close.flags)
                if isKey { writer.key(token) } else { writer.string(token) }
                continuations += close.continuations
                index = close.position + 1 - bytes
                phase = isKey ? .colon : .afterValue
                continue
            }
            if byte <= 0x20 && (byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09) {
                if byte == 0x0A {
                    line += 1
                    lineStart = chunkStart + index + 1
                    continuations = 0
                }
                index += 1
                continue
            }
            switch phase {
            case .value:
                switch byte {
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
                    let isNumber = byte < UInt8(ascii: "a")
                    if isNumber {
                        // The commonest numbers, a plain integer or one with a fraction, in one
                        // pass: its digits (eight at a time), then a byte that cannot go on a number.
                        let first = byte == UInt8(ascii: "-") ? index + 1 : index
                        let digitsEnd = Self.digitsEnd(bytes, from: first, count: count)
                        var numberEnd = digitsEnd
                        if digitsEnd < count && bytes[digitsEnd] == UInt8(ascii: ".") {
                            let fractionEnd = Self.digitsEnd(bytes, from: digitsEnd + 1, count: count)
                            // No digit after the point: left to the checks below.
                            numberEnd = fractionEnd > digitsEnd + 1 ? fractionEnd : count
                        }
                        if numberEnd < count && !Self.isNumberByte(bytes[numberEnd]) && digitsEnd > first
                            && (bytes[first] != UInt8(ascii: "0") || digitsEnd == first + 1) {
                            writer.number(UnsafeRawBufferPointer(start: bytes + index, count: numberEnd - index))
                            index = numberEnd
                            phase = .afterValue
                            continue
                        }
                    } else if count - index > 5 {
                        // A literal, known from its first four bytes and the one after it.
                        let word = UnsafeRawPointer(bytes + index).loadUnaligned(as: UInt32.self)
                        var literal: JSONLiteral?
                        var length = 4
                        if word == UInt32(littleEndian: 0x6C6C_756E) {  // "null"
                            literal = .null
                        } else if word == UInt32(littleEndian: 0x6575_7274) {  // "true"
                            literal = .true
                        } else if word == UInt32(littleEndian: 0x736C_6166) && bytes[index + 4] == UInt8(ascii: "e") {  // "false"
                            literal = .false
                            length = 5
                        }
                        if let literal, !Self.isLetter(bytes[index + length]) {
                            writer.literal(literal)
                            index += length
                            phase = .afterValue
                            continue
                        }
                    }
                    let end = Self.scalarEnd(bytes, from: index + 1, count: count, isNumber: isNumber)
                    guard end < count else { return index }
                    // A well-formed number or literal that the next byte ends, written as it
                    // is; anything else is judged by the scanner's code (`completeScalar`).
                    if isNumber {
                        if Self.isWholeNumber(bytes + index, end: bytes + end) {
                            writer.number(UnsafeRawBufferPointer(start: bytes + index, count: end - index))
                            index = end
                            phase = .afterValue
                            continue
                        }
                    } else if let literal = Self.literal(bytes + index, count: end - index) {
                        writer.literal(literal)
                        index = end
                        phase = .afterValue
                        continue
                    }
                    tokenOffset = chunkStart + index
                    index += try completeScalar(UnsafeRawBufferPointer(start: bytes + index, count: min(count, end + 4) - index))
                    phase = .afterValue
                case UInt8(ascii: "["), UInt8(ascii: "{"):
                    guard depth < JSONScanner.maximumDepth else { return index }
                    phase = byte == UInt8(ascii: "[") ? .openArray : .openObject
                    index += 1
                default:
                    return index
                }
            case .key:
                // A key's quote was taken above.
                return index
            case .colon:
                guard byte == UInt8(ascii: ":") else { return index }
                phase = .value
                index += 1
            case .afterValue:
                // What `continueAfterValue` does, on the local state.
                guard depth > 0 else { return index }
                let inObject = isObject[depth]
                if byte == UInt8(ascii: ",") {
                    writer.separator(depth: depth)
                    phase = inObject ? .key : .value
                } else if inObject && byte == UInt8(ascii: "}") {
                    writer.endObject(depth: depth)
                    depth -= 1
                } else if !inObject && byte == UInt8(ascii: "]") {
                    writer.endArray(depth: depth)
                    depth -= 1
                } else {
                    return index
                }
                if depth == 0 { phase = .done }
                index += 1
            case .openArray:
                if byte == UInt8(ascii: "]") {
                    writer.emptyArray()
                    phase = depth == 0 ? .done : .afterValue
                    index += 1
                } else {
                    // The first element: read on from this byte (as `enterContainer`).
                    depth += 1
                    isObject[depth] = false
                    writer.beginArray(depth: depth)
                    phase = .value
                }
            case .openObject:
                if byte == UInt8(ascii: "}") {
                    writer.emptyObject()
                    phase = depth == 0 ? .done : .afterValue
                    index += 1
                } else if byte == UInt8(ascii: "\"") {
                    depth += 1
                    isObject[depth] = true
                    writer.beginObject(depth: depth)
                    phase = .key
                } else {
                    return index
                }
            case .done:
                return index
            }
        }
        return index
    }

    /// Ends the document: flushes the last output, or throws when the document is incomplete.
    mutating func finish() throws(JSONParseError) {
        if let pending { throw Self.resolved(pending) }
        switch state {
        case .number, .literal:
            try completeScalarFromToken(following: UnsafeRawBufferPointer(start: nil, count: 0))
        case .start(let matched) where matched > 0:
            throw Self.notAByteOrderMark(Array([0xEF, 0xBB][0..<matched]))
        case .string(let isKey, _):
            // What the one-shot scanner says of a string the input ends in: a control
            // character or bad escape in it, else "unterminated string" at its quote.
            try completeToken(isKey: isKey)
            throw failure("unexpected end of input", isTruncated: true)
        default:
            break
        }
        switch state {
        case .done:
            break
        case .afterValue where depth == 0:
            state = .done
        case .start:
            throw failure("empty input")
        case .value where depth == 0:
            throw failure("empty input")
        default:
            throw failure("unexpected end of input", isTruncated: true)
        }
        writer.finish()
    }

    // MARK: - grammar

    @inline(__always)
    private mutating func advance(to end: Int, from index: inout Int) {
        offset += end - index
        index = end
    }

    private mutating func structural(_ byte: UInt8) throws(JSONParseError) {
        switch state {
        case .value:
            try startValue(byte)
        case .openArray:
            if byte == UInt8(ascii: "]") {
                writer.emptyArray()
                state = .afterValue
            } else {
                enterContainer(isObject: false)
                try startValue(byte)
            }
        case .openObject:
            if byte == UInt8(ascii: "}") {
                writer.emptyObject()
                state = .afterValue
            } else {
                enterContainer(isObject: true)
                try startKey(byte)
            }
        case .key:
            try startKey(byte)
        case .colon:
            guard byte == UInt8(ascii: ":") else { throw unexpected(byte, "expected ':' after object key") }
            state = .value
        case .afterValue:
            guard depth > 0 else {
                state = .done
                throw failure("unexpected \(describe(byte)) after the JSON value")
            }
            guard continueAfterValue(byte) else {
                throw unexpected(byte, isObject[depth] ? "expected ',' or '}' after object member" : "expected ',' or ']' after array element")
            }
        case .done:
            throw failure("unexpected \(describe(byte)) after the JSON value")
        default:
            throw unexpected(byte, "expected a value")
        }
        if case .afterValue = state, depth == 0 { state = .done }
    }

    /// After a value (depth > 0): ',' moves on to the next member or element, '}' or ']'
    /// closes the container the value was in. False, changing nothing, for any other byte.
    @inline(__always)
    private mutating func continueAfterValue(_ byte: UInt8) -> Bool {
        let inObject = isObject[depth]
        if byte == UInt8(ascii: ",") {
            writer.separator(depth: depth)
            state = inObject ? .key : .value
        } else if inObject && byte == UInt8(ascii: "}") {
            writer.endObject(depth: depth)
            depth -= 1
        } else if !inObject && byte == UInt8(ascii: "]") {
            writer.endArray(depth: depth)
            depth -= 1
        } else {
            return false
        }
        return true
    }

    /// Opens a non-empty array or object: one level deeper, and its first element or key next.
    @inline(__always)
    private mutating func enterContainer(isObject object: Bool) {
        depth += 1
        isObject[depth] = object
        if object {
            writer.beginObject(depth: depth)
            state = .key
        } else {
            writer.beginArray(depth: depth)
            state = .value
        }
    }

    private mutating func startValue(_ byte: UInt8) throws(JSONParseError) {
        switch byte {
        case UInt8(ascii: "\""):
            beginToken()
            state = .string(isKey: false, escaped: false)
        case UInt8(ascii: "["), UInt8(ascii: "{"):
            guard depth < JSONScanner.maximumDepth else {
                throw failure("nesting deeper than \(JSONScanner.maximumDepth) levels")
            }
            state = byte == UInt8(ascii: "[") ? .openArray : .openObject
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            beginToken()
            state = .number
        case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
            beginToken()
            state = .literal
        default:
            throw unexpected(byte, "expected a value")
        }
    }

    private mutating func startKey(_ byte: UInt8) throws(JSONParseError) {
        guard byte == UInt8(ascii: "\"") else { throw unexpected(byte, "expected an object key") }
        beginToken()
        state = .string(isKey: true, escaped: false)
    }

    // MARK: - tokens

    private mutating func beginToken() {
        token.count = 0
        tokenOffset = offset
    }

    private mutating func appendToken(_ source: UnsafePointer<UInt8>, count: Int) throws(JSONParseError) {
        guard token.count + count <= JSONStreamReformatter.maximumTokenBytes else {
            throw failure("a single string or number is longer than \(JSONStreamReformatter.maximumTokenBytes >> 20) MiB")
        }
        token.append(UnsafeRawPointer(source), count: count)
    }

    /// Validates the string just read with the one-shot scanner's own code and writes it.
    private mutating func completeToken(isKey: Bool) throws(JSONParseError) {
        try completeToken(token.bytes, isKey: isKey)
    }

    /// The same, for a string that lies whole in the current chunk.
    private mutating func completeToken(_ bytes: UnsafeRawBufferPointer, isKey: Bool) throws(JSONParseError) {
        do throws(JSONParseError) {
            try JSONScanner.scanStringToken(bytes, isKey: isKey, offset: tokenOffset, into: &writer)
        } catch {
            throw located(error)
        }
        for byte in bytes where byte & 0xC0 == 0x80 { continuations += 1 }
    }

    /// Checks and writes the number or literal at the start of `window` (the token and up to
    /// four bytes after it) and returns its length.
    private mutating func completeScalar(_ window: UnsafeRawBufferPointer) throws(JSONParseError) -> Int {
        do throws(JSONParseError) {
            return try JSONScanner.scanScalarPrefix(window, offset: tokenOffset, into: &writer)
        } catch {
            throw located(error)
        }
    }

    /// The same for a number or literal kept in `token` across chunks, `following` being
    /// the bytes after it (none at the end of the input). Whatever of the token lies past
    /// the value is judged by the grammar, which rejects it, as the one-shot scanner does.
    private mutating func completeScalarFromToken(following: UnsafeRawBufferPointer) throws(JSONParseError) {
        let length = token.count
        // Past the token's limit by at most four bytes.
        token.append(following)
        let consumed = try completeScalar(token.bytes)
        state = .afterValue
        if consumed < length {
            offset = tokenOffset + consumed
            try structural(token.base[consumed])
        }
    }

    /// A token's error, whose line and column count from the token's start, placed in the
    /// document. (A token holds no line break: one in a string is an error before it.)
    private func located(_ error: JSONParseError) -> JSONParseError {
        JSONParseError(message: error.message, offset: error.offset, line: line + error.line - 1,
                       column: error.line == 1 ? tokenOffset - lineStart - continuations + error.column : error.column,
                       isTruncated: error.isTruncated)
    }

    /// Where the run of ASCII digits at `start` ends (`count` at the latest): eight bytes a
    /// word while eight are there.
    @inline(__always)
    private static func digitsEnd(_ bytes: UnsafePointer<UInt8>, from start: Int, count: Int) -> Int {
        var end = start
        let high: UInt64 = 0xF0F0_F0F0_F0F0_F0F0, threes: UInt64 = 0x3030_3030_3030_3030
        while count - end >= 8 {
            let word = UInt64(littleEndian: UnsafeRawPointer(bytes + end).loadUnaligned(as: UInt64.self))
            // A digit is 0x30–0x39: its high half is 3, and still 3 once 6 is added. A sum
            // that carries into the next byte comes from a byte that is no digit, so the
            // first such byte is found right.
            let other = ((word & high) ^ threes) | (((word &+ 0x0606_0606_0606_0606) & high) ^ threes)
            if other != 0 { return end + other.trailingZeroBitCount &>> 3 }
            end += 8
        }
        while end < count && bytes[end] &- UInt8(ascii: "0") < 10 { end += 1 }
        return end
    }

    /// Whether the bytes from `start` to `end` are exactly one JSON number,
    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    @inline(__always)
    private static func isWholeNumber(_ start: UnsafePointer<UInt8>, end: UnsafePointer<UInt8>) -> Bool {
        @inline(__always) func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }
        var position = start
        if position.pointee == UInt8(ascii: "-") { position += 1 }
        guard position < end else { return false }
        if position.pointee == UInt8(ascii: "0") {
            position += 1
        } else {
            guard isDigit(position.pointee) else { return false }
            while position < end && isDigit(position.pointee) { position += 1 }
        }
        if position < end && position.pointee == UInt8(ascii: ".") {
            position += 1
            guard position < end && isDigit(position.pointee) else { return false }
            while position < end && isDigit(position.pointee) { position += 1 }
        }
        if position < end && position.pointee | 0x20 == UInt8(ascii: "e") {
            position += 1
            if position < end && (position.pointee == UInt8(ascii: "+") || position.pointee == UInt8(ascii: "-")) { position += 1 }
            guard position < end && isDigit(position.pointee) else { return false }
            while position < end && isDigit(position.pointee) { position += 1 }
        }
        return position == end
    }

    /// The literal the `count` bytes at `start` spell exactly, if any.
    @inline(__always)
    private static func literal(_ start: UnsafePointer<UInt8>, count: Int) -> JSONLiteral? {
        if count == 4 {
            let word = UnsafeRawPointer(start).loadUnaligned(as: UInt32.self)
            if word == UInt32(littleEndian: 0x6C6C_756E) { return .null }  // "null"
            if word == UInt32(littleEndian: 0x6575_7274) { return .true }  // "true"
        } else if count == 5 {
            if UnsafeRawPointer(start).loadUnaligned(as: UInt32.self) == UInt32(littleEndian: 0x736C_6166),  // "fals"
               start[4] == UInt8(ascii: "e") { return .false }
        }
        return nil
    }

    /// The value of the four hexadecimal digits in `word` (the first in its lowest byte), or
    /// nil when any byte is not one: a few word operations, with no branch per digit (which
    /// mispredicts as digits and letters mix).
    @inline(__always)
    static func hex4(_ word: UInt32) -> UInt32? {
        let ones: UInt32 = 0x0101_0101, high: UInt32 = 0x8080_8080
        // ASCII only, so the sums below carry into no neighbouring byte.
        guard word & high == 0 else { return nil }
        // Bit 7 of a byte set by the first sum when it is at least '0', by the second at least ':'.
        let digit = (word &+ ones &* (0x80 - 0x30)) & ~(word &+ ones &* (0x80 - 0x3A))
        let folded = word | 0x2020_2020
        let letter = (folded &+ ones &* (0x80 - 0x61)) & ~(folded &+ ones &* (0x80 - 0x67))
        guard (digit | letter) & high == high else { return nil }
        // A digit's value is its low four bits; a letter's (bit 6 set) those plus 9.
        let nibbles = (word & 0x0F0F_0F0F) &+ ((word &>> 6) & ones) &* 9
        let pairs = ((nibbles &<< 4) | (nibbles &>> 8)) & 0x00FF_00FF
        return (pairs & 0xFF) &<< 8 | pairs &>> 16
    }

    /// Most strings (keys above all) are short and plain: their closing quote is the first
    /// mark of the 16 or 32 bytes after the opening one. Such a string is copied here with
    /// its quotes, a window or two stored whole, before `copyString` is called (a call, and
    /// the setup of its loop, cost more than the copy of a key). Returns the closing quote's
    /// position; nil, with nothing written, for any other string, which `copyString` takes.
    @inline(__always)
    private static func copyShortString(
        from start: UnsafePointer<UInt8>, end: UnsafePointer<UInt8>, into output: inout ByteBuffer
    ) -> UnsafePointer<UInt8>? {
        #if arch(x86_64)
        // Both windows lie in the chunk, and the output has room for both and the quote.
        // (Room for 48: the writer's ": " or "," after it is stored with no check.)
        guard end - start >= 32, output.capacity - output.count >= 48 else { return nil }
        var marks = StringBlock.special(at: start)
        var window = start
        if marks == 0 {
            window = start + 16
            marks = StringBlock.special(at: window)
        }
        let close = window + marks.trailingZeroBitCount
        guard marks != 0, close.pointee == UInt8(ascii: "\"") else { return nil }
        let out = output.base + output.count
        out.pointee = UInt8(ascii: "\"")
        StringBlock.copy(from: start, to: out + 1)
        if window != start { StringBlock.copy(from: window, to: out + 17) }
        output.count &+= close - start + 2
        return close
        #else
        return nil
        #endif
    }

    /// The longest string content `copyString` takes; a longer one takes the general path.
    static let copyWindow = 64 * 1024

    /// The common string, read and written in one pass: checks the string whose content starts
    /// at `start` as `scanString` does and writes it to the writer's output as jq prints it
    /// (what `ReformatWriter.string` would write for it), eight bytes at a time where nothing
    /// needs a look. Returns the closing quote's position; nil, with nothing written, when the
    /// string does not close cleanly within `end` and `copyWindow`, or holds what the writer
    /// must rewrite at length (a raw U+007F, invalid UTF-8): `scanString` and the writer
    /// then take it, or the general path, as before.
    @inline(__always)
    private mutating func copyString(from start: UnsafePointer<UInt8>, end chunkEnd: UnsafePointer<UInt8>) -> UnsafePointer<UInt8>? {
        // As much as the output buffer has room for: the content and its quotes (a canonical
        // string is never longer than its token), and the last eight-byte store past the end
        // of what is written. The buffer is not grown for it (an envelope's status member has
        // a small one); a string longer than the room takes the general path.
        let room = writer.output.capacity - writer.output.count - 24
        guard room > 0 else { return nil }
        let end = start + min(chunkEnd - start, min(Self.copyWindow, room))
        let outStart = writer.output.base + writer.output.count
        outStart.pointee = UInt8(ascii: "\"")
        var out = outStart + 1
        var position = start
        var found = 0
        // The last address an eight-byte load may start at (below `start` when none may:
        // an integer, only compared).
        let lastWord = UInt(bitPattern: end) &- 8
        #if arch(x86_64)
        // The last address a window may start at: it reads up to 38 bytes past it.
        let lastWindow = UInt(bitPattern: end) &- 48
        #endif
        while true {
            #if arch(x86_64)
            // Sixteen bytes a window: copied as they are in one store, their marks (quotes,
            // backslashes, controls, non-ASCII bytes) found in one pass, then each mark taken
            // in turn from the bit mask. Where the next mark is does not wait on the work of
            // the last (the word loop below chains a load, its tests and a shift per stop).
            // `origin + (p - start)` is where the input's byte at p goes (a rewritten escape
            // moves it back).
            var origin = out - (position - start)
            // The continuation bytes the next window starts with, of a character whose lead
            // the last one ended with (bit 0 for its first byte): one (a lead at offset 14)
            // or two (at 15).
            var carry: UInt32 = 0
            windows: while UInt(bitPattern: position) <= lastWindow {
                let window = position
                StringBlock.copy(from: window, to: origin + (window - start))
                var (marks, high) = StringBlock.marks(at: window)
                var next = window + 16
                // The continuation bytes of this window counted in `found` already.
                var counted: UInt32 = 0
                var carryOut: UInt32 = 0
                if high | carry != 0 {
                    // Text in CJK scripts: when every non-ASCII byte of the window belongs to
                    // a 3-byte character whose lead allows any continuation second (what the
                    // mark-by-mark path below checks one at a time), they are all cleared
                    // from the marks at once. A character that goes on past the window is
                    // finished by the next, which must start right after this one.
                    let (continuation, lead, continuations) = StringBlock.threeByteCharacters(at: window)
                    let expected = lead &<< 1 | lead &<< 2 | carry
                    if continuation == expected & 0xFFFF && high == continuation | lead {
                        marks &= ~high
                        counted = continuation
                        found &+= continuations
                        carryOut = expected &>> 16
                    } else if carry != 0 {
                        // The rest of the last window's character, alone; the other
                        // non-ASCII bytes of this window are taken mark by mark.
                        guard continuation & carry == carry else { return nil }
                        marks &= ~carry
                        counted = carry
                        found &+= carry == 1 ? 1 : 2
                    }
                }
                while marks != 0 {
                    let index = marks.trailingZeroBitCount
                    let at = window + index
                    let stop = at.pointee
                    if stop == UInt8(ascii: "\"") {
                        // Copied already with the window. The continuation bytes past the
                        // quote are not the string's.
                        out = origin + (at - start)
                        writer.output.count &+= out + 1 - outStart
                        let past = counted &>> UInt32(index)
                        if past != 0 { found &-= past.nonzeroBitCount }
                        continuations &+= found
                        return at
                    }
                    let length: Int
                    var verbatim = true
                    if stop == UInt8(ascii: "\\") {
                        let kind = at[1]
                        if kind == UInt8(ascii: "/") {
                            // The commonest escape (every '/' of a URL in some APIs' replies),
                            // tested before the others.
                            (origin + (at - start)).pointee = kind
                            origin -= 1
                            StringBlock.copy(from: at + 2, to: origin + (at + 2 - start))
                            marks &= UInt32.max &<< UInt32(index + 2)
                            if index + 2 > 16 { next = at + 2 }
                            continue
                        }
                        switch kind {
                        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                            UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                            length = 2
                        case UInt8(ascii: "u"):
                            guard let unit = Self.hex4(UInt32(littleEndian: UnsafeRawPointer(at + 2).loadUnaligned(as: UInt32.self))),
                                  unit < 0xD800 || unit > 0xDFFF
                            else {
                                // A surrogate or a bad escape: the dispatch below takes it,
                                // and all after it (the continuation bytes counted past it
                                // are counted again there).
                                found &-= (counted &>> UInt32(index)).nonzeroBitCount
                                position = at
                                carry = 0
                                break windows
                            }
                            let target = origin + (at - start)
                            let after: UnsafeMutablePointer<UInt8>
                            if unit >= 0x800 {
                                // Three bytes of UTF-8 (the commonest: CJK), stored as a word
                                // whose fourth byte the copy below overwrites.
                                let word = (0xE0 | unit &>> 12) | (0x80 | unit &>> 6 & 0x3F) &<< 8 | (0x80 | unit & 0x3F) &<< 16
                                UnsafeMutableRawPointer(target).storeBytes(of: word.littleEndian, as: UInt32.self)
                                after = target + 3
                            } else {
                                after = StringCoding.storeQuoted(scalar: unit, at: UnsafeMutableRawPointer(target)).assumingMemoryBound(to: UInt8.self)
                            }
                            origin = after - (at + 6 - start)
                            StringBlock.copy(from: at + 6, to: after)
                            length = 6
                            verbatim = false
                        default:
                            return nil
                        }
                    } else if stop >= 0x80 {
                        let word = UInt32(littleEndian: UnsafeRawPointer(at).loadUnaligned(as: UInt32.self))
                        if stop &- 0xE1 <= 0xEF - 0xE1 && stop != 0xED && word & 0x00C0_C000 == 0x0080_8000 {
                            length = 3
                        } else {
                            length = UTF8Check.validSequenceLength(at: UnsafeRawPointer(at), end: UnsafeRawPointer(end))
                            guard length > 0 else { return nil }
                        }
                        found &+= length - 1
                    } else {
                        // A control character (an error) or U+007F (escaped by the writer).
                        return nil
                    }
                    // The marks below `index` are clear already: clear those up to its end.
                    marks &= UInt32.max &<< UInt32(index + length)
                    if index + length > 16 {
                        // Past the window: the next starts after it.
                        next = at + length
                        if verbatim { StringBlock.copy(from: at, to: origin + (at - start)) }
                    }
                }
                position = next
                carry = next == window + 16 ? carryOut : 0
            }
            if carry != 0 {
                // The windows stop with a character cut at the last one's end: its one or
                // two continuation bytes here (within `end`: a window ends 32 bytes before).
                let rest = carry == 1 ? 1 : 2
                for index in 0..<rest {
                    guard position[index] & 0xC0 == 0x80 else { return nil }
                    (origin + (position + index - start)).pointee = position[index]
                }
                position += rest
                found &+= rest
            }
            out = origin + (position - start)
            #endif
            while UInt(bitPattern: position) <= lastWord {
                let word = UnsafeRawPointer(position).loadUnaligned(as: UInt64.self)
                UnsafeMutableRawPointer(out).storeBytes(of: word, as: UInt64.self)
                let special = SWAR.specialInStringToken(UInt64(littleEndian: word))
                if special == 0 {
                    position += 8
                    out += 8
                    continue
                }
                let skip = special.trailingZeroBitCount &>> 3
                position += skip
                out += skip
                // The two commonest stops taken here, without a round of the dispatch below:
                // the closing quote, and `\/` (every '/' of a URL in some APIs' replies).
                let stop = position.pointee
                if stop == UInt8(ascii: "\"") {
                    out.pointee = stop
                    writer.output.count &+= out + 1 - outStart
                    continuations &+= found
                    return position
                }
                if stop == UInt8(ascii: "\\") && end - position >= 2 && position[1] == UInt8(ascii: "/") {
                    out.pointee = UInt8(ascii: "/")
                    out += 1
                    position += 2
                    continue
                }
                break
            }
            guard position < end else { return nil }
            let byte = position.pointee
            if byte == UInt8(ascii: "\"") {
                out.pointee = byte
                writer.output.count &+= out + 1 - outStart
                continuations &+= found
                return position
            }
            if byte >= 0x80 {
                // Copied as it is once known to be well formed; a 3-byte character (CJK)
                // whose lead allows any continuation byte second first, and the run of them.
                // Four bytes loaded and stored at a time (the fourth is overwritten next).
                while end - position >= 4 {
                    let word = UInt32(littleEndian: UnsafeRawPointer(position).loadUnaligned(as: UInt32.self))
                    let lead = UInt8(truncatingIfNeeded: word)
                    guard lead &- 0xE1 <= 0xEF - 0xE1 && lead != 0xED && word & 0x00C0_C000 == 0x0080_8000 else { break }
                    UnsafeMutableRawPointer(out).storeBytes(of: word.littleEndian, as: UInt32.self)
                    position += 3
                    out += 3
                    found &+= 2
                }
                guard position < end else { return nil }
                let next = position.pointee
                guard next >= 0x80 else { continue }
                let length = UTF8Check.validSequenceLength(at: UnsafeRawPointer(position), end: UnsafeRawPointer(end))
                guard length > 0 else { return nil }
                for index in 0..<length { out[index] = position[index] }
                position += length
                out += length
                found &+= length - 1
            } else if byte == UInt8(ascii: "\\") {
                guard end - position >= 2 else { return nil }
                let kind = position[1]
                switch kind {
                case UInt8(ascii: "/"):
                    out.pointee = kind
                    out += 1
                    position += 2
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                    UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    out[0] = byte
                    out[1] = kind
                    out += 2
                    position += 2
                case UInt8(ascii: "u"):
                    guard end - position >= 6,
                          let unit = Self.hex4(UInt32(littleEndian: UnsafeRawPointer(position + 2).loadUnaligned(as: UInt32.self)))
                    else { return nil }
                    if unit < 0xD800 || unit > 0xDFFF {
                        out = StringCoding.storeQuoted(scalar: unit, at: UnsafeMutableRawPointer(out)).assumingMemoryBound(to: UInt8.self)
                        position += 6
                        continue
                    }
                    // A surrogate's partner is read with it when it is there; when it is
                    // cut by `end`, the next round finds its escape short and gives up.
                    var digits = UnsafeRawPointer(position + 2)
                    guard let scalar = StringCoding.unicodeEscape(at: &digits, end: UnsafeRawPointer(end)) else { return nil }
                    out = StringCoding.storeQuoted(scalar: scalar, at: UnsafeMutableRawPointer(out)).assumingMemoryBound(to: UInt8.self)
                    position = digits.assumingMemoryBound(to: UInt8.self)
                default:
                    return nil
                }
            } else if byte >= 0x20 && byte != 0x7F {
                // Plain ASCII in the last few bytes, which the word loop leaves.
                out.pointee = byte
                out += 1
                position += 1
            } else {
                // A control character (an error) or U+007F (escaped by the writer).
                return nil
            }
        }
    }

    /// Finds the closing quote of a string whose content starts at `start`, checking it on the
    /// way as `JSONScanner.scanString` does (escapes, control characters, UTF-8) and noting
    /// what the writer needs to know. Nil when the string does not end cleanly before `end`:
    /// it goes on past the chunk, or it is malformed, and either way takes the general path,
    /// which reports what the one-shot scanner reports.
    @inline(__always)
    private static func scanString(
        from start: UnsafePointer<UInt8>, end: UnsafePointer<UInt8>, plain: UnsafePointer<Bool>
    ) -> (position: UnsafePointer<UInt8>, flags: UInt8, continuations: Int)? {
        var position = start
        var flags: UInt8 = 0
        var continuations = 0
        while position < end {
            // Printable ASCII other than '"' and '\\' (most bytes of most strings), eight at
            // a time: one load and a few word operations instead of a table load per byte.
            while end - position >= 8 {
                let special = SWAR.specialInStringToken(UInt64(littleEndian: UnsafeRawPointer(position).loadUnaligned(as: UInt64.self)))
                if special == 0 {
                    position += 8
                } else {
                    position += special.trailingZeroBitCount &>> 3
                    break
                }
            }
            guard position < end else { return nil }
            let byte = position.pointee
            if plain[Int(byte)] {
                position += 1
                continue
            }
            if byte == UInt8(ascii: "\"") { return (position, flags, continuations) }
            if byte >= 0x80 {
                // The common case first: a 3-byte character (CJK) whose lead allows any
                // continuation byte second.
                if byte >= 0xE1 && byte <= 0xEF && byte != 0xED && end - position >= 3
                    && position[1] & 0xC0 == 0x80 && position[2] & 0xC0 == 0x80
                {
                    position += 3
                    continuations += 2
                    // Text in such a script runs on in such characters: read them here,
                    // not one round of the ASCII loop each.
                    while end - position >= 3 {
                        let lead = position.pointee
                        guard lead >= 0xE1 && lead <= 0xEF && lead != 0xED
                            && position[1] & 0xC0 == 0x80 && position[2] & 0xC0 == 0x80 else { break }
                        position += 3
                        continuations += 2
                    }
                    continue
                }
                let length = UTF8Check.validSequenceLength(at: UnsafeRawPointer(position), end: UnsafeRawPointer(end))
                if length > 0 {
                    position += length
                    continuations += length - 1
                } else {
                    // A sequence cut by the chunk's end is not known to be invalid yet.
                    guard end - position >= 4 else { return nil }
                    flags |= StringToken.hasInvalidUTF8
                    if byte < 0xC0 { continuations += 1 }
                    position += 1
                }
            } else if byte == UInt8(ascii: "\\") {
                guard end - position >= 2 else { return nil }
                flags |= StringToken.hasEscapes
                switch position[1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                    UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    position += 2
                case UInt8(ascii: "u"):
                    guard end - position >= 6, Hex.isDigit(position[2]), Hex.isDigit(position[3]),
                        Hex.isDigit(position[4]), Hex.isDigit(position[5])
                    else { return nil }
                    position += 6
                default:
                    return nil
                }
            } else if byte == 0x7F {
                flags |= StringToken.hasDelete
                position += 1
            } else {
                // A control character: an error the general path reports.
                return nil
            }
        }
        return nil
    }

    /// A table of which bytes stand for themselves inside a string and need no check:
    /// printable ASCII other than '"' and '\\'. One load per byte instead of three compares.
    /// Filled once, then only read (hence safe to share between threads).
    nonisolated(unsafe) private static let sharedPlainStringBytes = makePlainStringBytes()

    private static func makePlainStringBytes() -> UnsafeMutablePointer<Bool> {
        let table = UnsafeMutablePointer<Bool>.allocate(capacity: 256)
        for byte in 0..<256 {
            table[byte] = byte >= 0x20 && byte < 0x7F && byte != 0x22 && byte != 0x5C
        }
        return table
    }

    /// Where a number (`isNumber`) or literal whose bytes go on at `index` stops: the first
    /// byte that cannot be part of one, or `count`.
    @inline(__always)
    private static func scalarEnd(_ bytes: UnsafePointer<UInt8>, from index: Int, count: Int, isNumber: Bool) -> Int {
        var end = index
        if isNumber {
            while end < count, isNumberByte(bytes[end]) { end += 1 }
        } else {
            while end < count, isLetter(bytes[end]) { end += 1 }
        }
        return end
    }

    private static func isNumberByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+")
            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")
    }

    /// The byte at `offset` as the one-shot scanner describes it: a character read from
    /// as much of the chunk as is there, or the byte alone.
    private func describe(_ byte: UInt8) -> String {
        if byte >= 0x80, let chunk = currentChunk, let base = chunk.baseAddress {
            let index = offset - currentChunkOffset
            if index >= 0 && index < chunk.count {
                return JSONScanner.describeCharacter(at: base + index, end: base + chunk.count)
            }
        }
        return Self.describe([byte])
    }

    private static func describe(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { raw in
            raw.baseAddress.map { JSONScanner.describeCharacter(at: $0, end: $0 + raw.count) } ?? ""
        }
    }

    /// The start of a byte order mark (0xEF, maybe 0xBB) that `bytes` turn out not to
    /// finish: the one-shot scanner reads it as the first character of the value.
    private static func notAByteOrderMark(_ bytes: [UInt8]) -> JSONParseError {
        JSONParseError(message: "unexpected \(describe(bytes)), expected a value", offset: 0, line: 1, column: 1)
    }

    /// "unexpected 'x', <expectation>" for `byte`, at `offset`.
    private func unexpected(_ byte: UInt8, _ expectation: String) -> JSONParseError {
        failure("unexpected \(describe(byte)), \(expectation)")
    }

    private func failure(_ message: String, isTruncated: Bool = false) -> JSONParseError {
        JSONParseError(message: message, offset: offset, line: line, column: offset - lineStart - continuations + 1,
                       isTruncated: isTruncated)
    }
}
