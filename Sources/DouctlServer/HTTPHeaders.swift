import DouctlSystem
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
        fields.first { HTTPSyntax.caseInsensitiveEquals($0.name, name) }?.value
    }

    /// Every value of the field `name`, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { HTTPSyntax.caseInsensitiveEquals($0.name, name) }.map(\.value)
    }

    public func contains(_ name: String) -> Bool {
        fields.contains { HTTPSyntax.caseInsensitiveEquals($0.name, name) }
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
        fields.removeAll { HTTPSyntax.caseInsensitiveEquals($0.name, name) }
    }

    /// The comma-separated list elements of every field `name`, trimmed and lowercased: the shape
    /// of `Connection`, `Transfer-Encoding` and `Expect`, whose tokens are case-insensitive.
    public func tokens(_ name: String) -> [String] {
        values(name).flatMap { value in
            value.split(separator: ",").map { HTTPSyntax.asciiLowercased(HTTPSyntax.trimmingWhitespace(Substring($0))) }
        }.filter { !$0.isEmpty }
    }

    public func makeIterator() -> IndexingIterator<[Element]> {
        fields.makeIterator()
    }

    public var description: String {
        fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }
}

