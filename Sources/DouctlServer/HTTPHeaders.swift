/// Header fields in the order they were received (or added), names as spelled. Lookups ignore
/// ASCII case, as HTTP field names are case-insensitive; order and repeats are kept because they
/// matter to some fields (`Set-Cookie`, repeated `Content-Length`) and to tests that echo them.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    public typealias Element = (name: String, value: String)

    private var fields: [Element]

    public init() { fields = [] }

    public init(_ fields: [(String, String)]) {
        self.fields = fields.map { (name: $0.0, value: $0.1) }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    public var count: Int { fields.count }
    public var isEmpty: Bool { fields.isEmpty }

    /// The first value of the field `name`, or nil when it is absent.
    public subscript(name: String) -> String? {
        fields.first { asciiCaseInsensitiveEquals($0.name, name) }?.value
    }

    /// Every value of the field `name`, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { asciiCaseInsensitiveEquals($0.name, name) }.map(\.value)
    }

    public func contains(_ name: String) -> Bool {
        fields.contains { asciiCaseInsensitiveEquals($0.name, name) }
    }

    public mutating func add(_ name: String, _ value: String) {
        fields.append((name: name, value: value))
    }

    /// Replaces every field `name` with one field holding `value`.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        add(name, value)
    }

    public mutating func remove(_ name: String) {
        fields.removeAll { asciiCaseInsensitiveEquals($0.name, name) }
    }

    /// The comma-separated list elements of every field `name`, trimmed and lowercased: the shape
    /// of `Connection`, `Transfer-Encoding` and `Expect`, whose tokens are case-insensitive.
    public func tokens(_ name: String) -> [String] {
        values(name).flatMap { value in
            value.split(separator: ",").map { asciiLowercased(trimmingWhitespace(Substring($0))) }
        }.filter { !$0.isEmpty }
    }

    public func makeIterator() -> IndexingIterator<[Element]> {
        fields.makeIterator()
    }

    public var description: String {
        fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }
}

/// Compares two strings ignoring ASCII case only, without allocating (field names are ASCII tokens).
func asciiCaseInsensitiveEquals(_ lhs: String, _ rhs: String) -> Bool {
    let left = lhs.utf8
    let right = rhs.utf8
    guard left.count == right.count else { return false }
    for (a, b) in zip(left, right) where a != b {
        if asciiLowercase(a) != asciiLowercase(b) { return false }
    }
    return true
}

@inline(__always)
func asciiLowercase(_ byte: UInt8) -> UInt8 {
    byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
}

func asciiLowercased(_ text: some StringProtocol) -> String {
    String(decoding: text.utf8.map(asciiLowercase), as: UTF8.self)
}

/// Drops leading and trailing spaces and tabs (HTTP's "optional whitespace").
func trimmingWhitespace(_ text: Substring) -> Substring {
    var result = text
    while let first = result.first, first == " " || first == "\t" { result.removeFirst() }
    while let last = result.last, last == " " || last == "\t" { result.removeLast() }
    return result
}

/// RFC 9110 `tchar`: the bytes allowed in methods, field names and other tokens.
func isTokenByte(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
         UInt8(ascii: "0")...UInt8(ascii: "9"):
        return true
    case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
         UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
         UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
        return true
    default:
        return false
    }
}

func isToken(_ text: String) -> Bool {
    !text.isEmpty && text.utf8.allSatisfy(isTokenByte)
}
