/// One JSON value as the server sent it.
///
/// Numbers keep their original text so ids like `12345678901234567890123` and amounts like `1.0`
/// survive a round trip unchanged; use `int64Value` or `doubleValue` to read them as numbers.
/// Objects keep their keys in server order, duplicates included (see `JSONObject`).
public enum JSON: Equatable, Sendable {
    case null
    case bool(Bool)
    /// The number's text exactly as written (JSON number grammar, validated by the parser).
    case number(String)
    case string(String)
    case array([JSON])
    case object(JSONObject)
}

// MARK: - Literals (so tests and fakes can write `["id": 1, "tags": ["a"]]`)

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(String(value)) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    /// Keeps the pairs in the order written, duplicates included, like the parser does.
    public init(dictionaryLiteral elements: (String, JSON)...) { self = .object(JSONObject(elements)) }
    public init(nilLiteral: ()) { self = .null }
}

// MARK: - Accessors

extension JSON {
    /// A number from an integer, written in decimal (`.number("42")`).
    public static func int(_ value: some BinaryInteger) -> JSON { .number(String(value)) }

    /// The member named `key` (the last one if the server repeated it); nil unless this is an object.
    public subscript(key: String) -> JSON? {
        guard case .object(let object) = self else { return nil }
        return object[key]
    }

    /// The element at `index`; nil unless this is an array and the index is in range.
    public subscript(index: Int) -> JSON? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    public var stringValue: String? {
        guard case .string(let text) = self else { return nil }
        return text
    }

    public var boolValue: Bool? {
        guard case .bool(let value) = self else { return nil }
        return value
    }

    public var arrayValue: [JSON]? {
        guard case .array(let elements) = self else { return nil }
        return elements
    }

    public var objectValue: JSONObject? {
        guard case .object(let object) = self else { return nil }
        return object
    }

    /// The value as an Int64 when it is an exact integer that fits: a number such as `42`, `-7`, `1.0`
    /// or `4e2`, or a string holding a decimal integer (Douban sometimes sends ids as strings).
    /// Nil for fractions, out-of-range values and everything else.
    public var int64Value: Int64? {
        switch self {
        case .number(let text): return NumberText.exactInt64(text)
        case .string(let text): return Int64(text, radix: 10)
        default: return nil
        }
    }

    /// `int64Value` as an `Int`, for indexing and counts.
    public var intValue: Int? {
        guard let value = int64Value else { return nil }
        return Int(exactly: value)
    }

    /// The number as the nearest Double (±infinity when its magnitude is beyond Double's range).
    /// Nil when the text is not JSON number grammar (Swift's own parser would also take "nan" or hex).
    public var doubleValue: Double? {
        guard case .number(var text) = self else { return nil }
        let isValid = text.withUTF8 { JSONNumberGrammar.isValid(UnsafeRawBufferPointer($0)) }
        return isValid ? Double(text) : nil
    }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// A short human text for a scalar: string as is, number text, true/false, "null"; nil for containers.
    public var scalarText: String? {
        switch self {
        case .null: return "null"
        case .bool(let value): return value ? "true" : "false"
        case .number(let text): return text
        case .string(let text): return text
        case .array, .object: return nil
        }
    }
}

// MARK: - Equality

extension JSON {
    /// Structural equality: numbers compare by text (`1.0` ≠ `1`), objects by their ordered pairs.
    /// Iterative, because synthesized equality recurses once per nesting level and could overflow
    /// a small thread stack on deep values.
    public static func == (lhs: JSON, rhs: JSON) -> Bool {
        var pending: [(JSON, JSON)] = []
        var left = lhs
        var right = rhs
        while true {
            switch (left, right) {
            case (.null, .null):
                break
            case (.bool(let a), .bool(let b)):
                if a != b { return false }
            case (.number(let a), .number(let b)):
                if a != b { return false }
            case (.string(let a), .string(let b)):
                if a != b { return false }
            case (.array(let a), .array(let b)):
                if a.count != b.count { return false }
                for index in a.indices { pending.append((a[index], b[index])) }
            case (.object(let a), .object(let b)):
                if a.count != b.count { return false }
                for (x, y) in zip(a.members, b.members) {
                    if x.key != y.key { return false }
                    pending.append((x.value, y.value))
                }
            default:
                return false
            }
            guard let next = pending.popLast() else { return true }
            (left, right) = next
        }
    }
}

extension JSON: CustomStringConvertible {
    /// The compact serialization, so a value reads as JSON in logs and test failures.
    public var description: String { text(.compact) }
}

/// Reading number text exactly, without going through Double (which would lose big ids).
enum NumberText {
    /// The exact integer value of valid JSON number text, if integral and within Int64.
    static func exactInt64(_ text: String) -> Int64? {
        var text = text
        return text.withUTF8 { bytes -> Int64? in
            guard JSONNumberGrammar.isValid(UnsafeRawBufferPointer(bytes)) else { return nil }
            return exactInt64(validNumber: bytes)
        }
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte &- 0x30 < 10 }

    private static func exactInt64(validNumber bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        var index = 0
        let negative = bytes.first == UInt8(ascii: "-")
        if negative { index += 1 }
        let integerStart = index
        while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        let integerCount = index - integerStart
        var fractionStart = index
        var fractionCount = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            fractionStart = index
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            fractionCount = index - fractionStart
        }
        // The exponent saturates: anything beyond ±10^7 is far outside Int64 either way.
        var exponent = 0
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            var exponentNegative = false
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") {
                exponentNegative = true
                index += 1
            } else if index < bytes.count, bytes[index] == UInt8(ascii: "+") {
                index += 1
            }
            while index < bytes.count, isDigit(bytes[index]) {
                if exponent < 10_000_000 { exponent = exponent * 10 + Int(bytes[index] &- 0x30) }
                index += 1
            }
            if exponentNegative { exponent = -exponent }
        }
        // Value = (integer digits ++ fraction digits) × 10^scale.
        let digitCount = integerCount + fractionCount
        func digit(_ position: Int) -> UInt8 {
            position < integerCount
                ? bytes[integerStart + position] &- 0x30
                : bytes[fractionStart + position - integerCount] &- 0x30
        }
        var first = 0
        while first < digitCount, digit(first) == 0 { first += 1 }
        if first == digitCount { return 0 }
        var last = digitCount  // exclusive end of the significant digits
        var scale = exponent - fractionCount
        if scale < 0 {
            // Dropping -scale digits from the right must drop only zeros, else the value has a fraction.
            guard -scale < last - first else { return nil }
            let newLast = last + scale
            for position in newLast..<last where digit(position) != 0 { return nil }
            last = newLast
            scale = 0
        }
        guard last - first + scale <= 19 else { return nil }
        var magnitude: UInt64 = 0
        for position in first..<last {
            let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(digit(position)))
            if overflow1 || overflow2 { return nil }
            magnitude = sum
        }
        for _ in 0..<scale {
            let (times10, overflow) = magnitude.multipliedReportingOverflow(by: 10)
            if overflow { return nil }
            magnitude = times10
        }
        if negative {
            if magnitude == UInt64(Int64.max) + 1 { return Int64.min }
            return magnitude <= UInt64(Int64.max) ? -Int64(magnitude) : nil
        }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }
}

/// The JSON number grammar, for checking text that did not come through the parser.
enum JSONNumberGrammar {
    /// True when `bytes` is exactly one JSON number: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        let count = bytes.count
        func isDigit(_ i: Int) -> Bool { i < count && bytes[i] &- 0x30 < 10 }
        if index < count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard isDigit(index) else { return false }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while isDigit(index) { index += 1 }
        }
        if index < count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard isDigit(index) else { return false }
            while isDigit(index) { index += 1 }
        }
        if index < count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard isDigit(index) else { return false }
            while isDigit(index) { index += 1 }
        }
        return index == count
    }
}
