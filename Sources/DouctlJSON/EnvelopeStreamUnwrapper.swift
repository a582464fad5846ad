/// Unwraps a Coding-style envelope (`{"code":0, …, "data": V, …}`) as it arrives: fed the
/// reply in chunks split anywhere, it passes V through (reformatted, or as received) while
/// V is still arriving, so memory stays flat in the size of V.
///
/// It streams only where the envelope allows: a status member (one of `Rule.codeKeys`)
/// that says success must come BEFORE the data member (one of `Rule.dataKeys`), and the
/// data must not be `null`. The other top-level members are read, checked as JSON and kept
/// (compacted, up to `Rule.memberLimit` bytes in all, V replaced by `null`) as `remainder`,
/// so the caller can decide after the end whether a later status member turned the reply
/// into an error. Anything else is a `decision` the caller acts on, holding the reply as
/// it did before:
/// - `.holding`: data came before any status member (or the members before V outgrew the
///   limit, or a member name could not be read): the reply must be read whole, within the
///   caller's bound, to be unwrapped.
/// - `.failing`: a status member said "error" before any data: the caller reads the reply
///   only up to its small error bound, and `remainder` holds what came whole before it.
///
/// A member repeated after V that the whole-reply reader would take instead of V (the same
/// data name again, or a preferred data name with a non-null value) is an error
/// (`.ambiguous`), since V has already been printed.
public final class EnvelopeStreamUnwrapper {
    /// What makes an envelope: its status and data member names (data names by preference,
    /// as the whole-reply reader takes them) and which status values mean success.
    public struct Rule: Sendable {
        public var codeKeys: [String]
        public var dataKeys: [String]
        /// Whether a status value (the text of a non-null scalar) means success.
        public var isSuccess: @Sendable (String) -> Bool
        /// Whether an object whose first member has this name may be an envelope; one that
        /// may not is `.holding` from its first member on (the caller treats it as before).
        public var mayBeginEnvelope: @Sendable (String) -> Bool
        /// The most bytes of members other than V kept in `remainder` (64 KiB).
        public var memberLimit: Int

        public init(
            codeKeys: [String], dataKeys: [String], memberLimit: Int = 64 << 10,
            mayBeginEnvelope: @escaping @Sendable (String) -> Bool = { _ in true }, isSuccess: @escaping @Sendable (String) -> Bool
        ) {
            self.codeKeys = codeKeys
            self.dataKeys = dataKeys
            self.memberLimit = memberLimit
            self.mayBeginEnvelope = mayBeginEnvelope
            self.isSuccess = isSuccess
        }
    }

    /// How V leaves: reformatted (as `JSONStreamReformatter` prints it) or as received.
    public enum Output {
        case reformat(JSONFormat)
        case raw
    }

    public enum Decision: Equatable, Sendable {
        /// No status or data member seen yet.
        case undecided
        /// V (the member of this name) is passing through, or has passed.
        case streaming(key: String)
        /// A status member said error before any data.
        case failing
        /// The reply cannot stream: the caller holds it whole.
        case holding
    }

    public enum Failure: Error, Equatable, Sendable {
        /// Not JSON (offsets are from the reply's start for the envelope's own syntax, from
        /// V's start for an error inside V).
        case malformed(JSONParseError)
        /// A member after V that would replace it (see the type's notes).
        case ambiguous(String)

        public var description: String {
            switch self {
            case .malformed(let error): return error.description
            case .ambiguous(let text): return text
            }
        }
    }

    public private(set) var decision = Decision.undecided
    /// Whether `.holding` was decided because the data came before any status member.
    public private(set) var dataBeforeCode = false

    private let rule: Rule
    private let output: Output
    private let emit: (UnsafeRawBufferPointer) -> Void

    private enum Top {
        case start, firstKey, key, colon, value, afterValue, done
        case inKey, inMember
    }

    private var top = Top.start
    private var span = ValueSpan()
    /// The member name being read (raw, quotes included), bounded.
    private var keyBytes: [UInt8] = []
    private var keyTooLong = false
    private var key: String?
    /// Where the member being read goes.
    private enum Sink {
        case value(JSONStreamReformatter?)
        case member(JSONStreamReformatter)
    }
    private var keepMember = false
    private var isFirstMember = false
    private var sink: Sink?
    private var memberBytes: [UInt8] = []
    private var members: [[UInt8]] = []
    private var keptBytes = 0
    /// The last value of each status member seen (null and non-scalars as nil).
    private var codes: [String: String?] = [:]
    private var offset = 0

    public init(rule: Rule, output: Output, emit: @escaping (UnsafeRawBufferPointer) -> Void) {
        self.rule = rule
        self.output = output
        self.emit = emit
    }

    /// The status as the whole-reply reader finds it: the first status name, in the rule's
    /// order, whose last value is a non-null scalar.
    public var code: String? {
        for name in rule.codeKeys {
            if let value = codes[name], let value { return value }
        }
        return nil
    }

    /// The envelope without V (`null` in its place): the members seen whole, compacted, in
    /// order, within `Rule.memberLimit`. For the whole-reply reader to find the error in.
    public var remainder: [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "{")]
        for (index, member) in members.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out += member
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// Takes the next bytes of the reply. After `.holding` it reads nothing more.
    public func feed(_ chunk: UnsafeRawBufferPointer) throws(Failure) {
        guard let base = chunk.baseAddress, decision != .holding else { return }
        let bytes = base.assumingMemoryBound(to: UInt8.self)
        let count = chunk.count
        var index = 0
        defer { offset += count }
        while index < count, decision != .holding {
            switch top {
            case .inKey:
                guard let end = try span.scan(bytes, from: index, count: count, offset: offset) else {
                    appendKey(bytes + index, count - index)
                    index = count
                    continue
                }
                appendKey(bytes + index, end - index)
                index = end
                try endKey()
                continue
            case .inMember:
                guard let end = try span.scan(bytes, from: index, count: count, offset: offset) else {
                    try pass(bytes + index, count - index)
                    index = count
                    continue
                }
                try pass(bytes + index, end - index)
                index = end
                try endMember()
                top = .afterValue
                continue
            default:
                break
            }
            let byte = bytes[index]
            if byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 {
                index += 1
                continue
            }
            switch top {
            case .start:
                guard byte == UInt8(ascii: "{") else { throw malformed("expected an object", at: offset + index) }
                top = .firstKey
                index += 1
            case .firstKey, .key:
                if top == .firstKey && byte == UInt8(ascii: "}") {
                    top = .done
                    index += 1
                    continue
                }
                guard byte == UInt8(ascii: "\"") else { throw malformed("expected an object key", at: offset + index) }
                keyBytes.removeAll(keepingCapacity: true)
                keyTooLong = false
                isFirstMember = top == .firstKey
                span = ValueSpan()
                top = .inKey
            case .colon:
                guard byte == UInt8(ascii: ":") else { throw malformed("expected ':' after object key", at: offset + index) }
                top = .value
                index += 1
            case .value:
                try beginMember(first: byte, at: offset + index)
                span = ValueSpan()
                top = .inMember
            case .afterValue:
                if byte == UInt8(ascii: ",") {
                    top = .key
                } else if byte == UInt8(ascii: "}") {
                    top = .done
                } else {
                    throw malformed("expected ',' or '}' after object member", at: offset + index)
                }
                index += 1
            case .done:
                throw malformed("unexpected \(Self.describe(byte)) after the JSON value", at: offset + index)
            case .inKey, .inMember:
                break
            }
        }
    }

    /// Ends the reply: throws when it is incomplete, or when V is.
    public func finish() throws(Failure) {
        guard decision != .holding else { return }
        guard top == .done else {
            throw .malformed(JSONParseError(message: "unexpected end of input", offset: offset, line: 1, column: offset + 1, isTruncated: true))
        }
    }

    // MARK: - members

    private func appendKey(_ bytes: UnsafePointer<UInt8>, _ count: Int) {
        guard !keyTooLong else { return }
        if keyBytes.count + count > 1024 {
            keyTooLong = true
            return
        }
        keyBytes.append(contentsOf: UnsafeBufferPointer(start: bytes, count: count))
    }

    private func endKey() throws(Failure) {
        top = .colon
        if keyTooLong {
            // No envelope name is this long; the member is kept out of the remainder.
            key = nil
            if decision == .undecided { decision = .holding }
            return
        }
        guard case .string(let name)? = try? JSONParser.parse(keyBytes) else {
            // Not a valid name: the whole-reply reader says why.
            key = nil
            if decision == .undecided { decision = .holding }
            if case .streaming = decision { throw malformed("invalid object key", at: offset) }
            return
        }
        key = name
        if isFirstMember && !rule.mayBeginEnvelope(name) { decision = .holding }
    }

    private func beginMember(first byte: UInt8, at position: Int) throws(Failure) {
        let name = key ?? ""
        let isNull = byte == UInt8(ascii: "n")
        if let rank = rule.dataKeys.firstIndex(of: name) {
            switch decision {
            case .undecided:
                guard let code else {
                    decision = .holding
                    dataBeforeCode = true
                    return
                }
                if !isNull && rule.isSuccess(code) {
                    decision = .streaming(key: name)
                    keep(keyBytes + Array(":null".utf8))
                    sink = .value(output.reformatter(emit))
                    return
                }
            case .streaming(let streamed):
                let streamedRank = rule.dataKeys.firstIndex(of: streamed) ?? 0
                if name == streamed || (rank < streamedRank && !isNull) {
                    throw .ambiguous("the envelope has a second \"\(name)\" member after the \"\(streamed)\" already printed")
                }
            default:
                break
            }
        }
        memberBytes = keyBytes
        memberBytes.append(UInt8(ascii: ":"))
        keepMember = key != nil && keptBytes + memberBytes.count < rule.memberLimit
        // A status member is a few bytes: no 128 KiB output buffer for it.
        let checker = JSONStreamReformatter(format: .compact, expectedSize: 512) { [unowned self] out in self.collect(out) }
        sink = .member(checker)
    }

    /// A member's compact text, while it fits in the remainder.
    private func collect(_ out: UnsafeRawBufferPointer) {
        guard keepMember else { return }
        guard keptBytes + memberBytes.count + out.count <= rule.memberLimit else {
            keepMember = false
            memberBytes = []
            return
        }
        memberBytes.append(contentsOf: out)
    }

    private func pass(_ bytes: UnsafePointer<UInt8>, _ count: Int) throws(Failure) {
        guard count > 0 else { return }
        let buffer = UnsafeRawBufferPointer(start: bytes, count: count)
        switch sink {
        case .value(let reformatter)?:
            if let reformatter {
                do { try reformatter.feed(buffer) } catch { throw .malformed(error) }
            } else {
                emit(buffer)
            }
        case .member(let checker)?:
            do { try checker.feed(buffer) } catch { throw .malformed(error) }
        case nil:
            break
        }
    }

    private func endMember() throws(Failure) {
        defer { sink = nil }
        switch sink {
        case .value(let reformatter)?:
            if let reformatter {
                do { try reformatter.finish() } catch { throw .malformed(error) }
            }
        case .member(let checker)?:
            do { try checker.finish() } catch { throw .malformed(error) }
            let fits = keepMember
            let name = key ?? ""
            if rule.codeKeys.contains(name) {
                let textStart = min(keyBytes.count + 1, memberBytes.count)
                codes[name] = fits ? Self.scalarText(Array(memberBytes[textStart...])) : nil
                if !fits, case .streaming = decision {
                    throw .ambiguous("a status member after the data is too large to read")
                }
            }
            if fits {
                keep(memberBytes)
            } else {
                if decision == .undecided { decision = .holding }
            }
            if decision == .undecided, let code, !rule.isSuccess(code) { decision = .failing }
        case nil:
            break
        }
        memberBytes = []
    }

    private func keep(_ member: [UInt8]) {
        keptBytes += member.count + 1
        members.append(member)
    }

    /// A compact JSON value's text as `JSON.scalarText` gives it; nil for null, arrays and objects.
    private static func scalarText(_ compact: [UInt8]) -> String? {
        guard let json = try? JSONParser.parse(compact) else { return nil }
        switch json {
        case .null, .array, .object: return nil
        default: return json.scalarText
        }
    }

    private func malformed(_ message: String, at position: Int) -> Failure {
        .malformed(JSONParseError(message: message, offset: position, line: 1, column: position + 1))
    }

    private static func describe(_ byte: UInt8) -> String {
        byte >= 0x21 && byte < 0x7F ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
    }
}

extension EnvelopeStreamUnwrapper.Output {
    fileprivate func reformatter(_ emit: @escaping (UnsafeRawBufferPointer) -> Void) -> JSONStreamReformatter? {
        switch self {
        case .reformat(let format): return JSONStreamReformatter(format: format, emit: emit)
        case .raw: return nil
        }
    }
}

/// Finds where one JSON value ends without reading it: strings (with their escapes) and
/// nesting are followed, nothing else is checked (the reformatter that V or a member goes
/// through checks it). A chunk may end anywhere.
struct ValueSpan {
    private var depth = 0
    private var inString = false
    private var escaped = false
    private var inScalar = false

    /// The index just past the value's end in `bytes[from..<count]`, or nil when it goes on.
    mutating func scan(_ bytes: UnsafePointer<UInt8>, from start: Int, count: Int, offset: Int) throws(EnvelopeStreamUnwrapper.Failure) -> Int? {
        var index = start
        while index < count {
            if inString {
                if escaped {
                    escaped = false
                    index += 1
                    continue
                }
                while index < count {
                    let byte = bytes[index]
                    if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { break }
                    index += 1
                }
                guard index < count else { return nil }
                index += 1
                if bytes[index - 1] == UInt8(ascii: "\\") {
                    escaped = true
                    continue
                }
                inString = false
                if depth == 0 { return index }
                continue
            }
            if depth > 0 {
                // Inside a container only quotes and brackets matter: '[' | 0x20 is '{',
                // ']' | 0x20 is '}'.
                while index < count {
                    let folded = bytes[index] | 0x20
                    if folded == UInt8(ascii: "{") || folded == UInt8(ascii: "}") || bytes[index] == UInt8(ascii: "\"") { break }
                    index += 1
                }
                guard index < count else { return nil }
            }
            let byte = bytes[index]
            if inScalar {
                if Self.isScalarByte(byte) {
                    index += 1
                    continue
                }
                return index
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth -= 1
                if depth <= 0 { return index + 1 }
            default:
                if depth == 0 {
                    guard Self.isScalarByte(byte) else {
                        throw .malformed(JSONParseError(message: "expected a value", offset: offset + index, line: 1, column: offset + index + 1))
                    }
                    inScalar = true
                }
            }
            index += 1
        }
        return nil
    }

    private static func isScalarByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "E")
    }
}
