/// A JSON object as ordered (key, value) pairs.
///
/// Order and duplicate keys are kept exactly as parsed, because `douctl` prints replies the way the
/// server wrote them. Lookups return the last pair with a key, which is what jq does.
public struct JSONObject: Equatable, Sendable, Sequence, ExpressibleByDictionaryLiteral {
    /// The pairs in order.
    public private(set) var members: [(key: String, value: JSON)]

    public init() { members = [] }

    public init(_ pairs: [(String, JSON)]) {
        members = pairs.map { (key: $0.0, value: $0.1) }
    }

    /// Adopts pairs already in member form (the parser builds them this way).
    init(members: [(key: String, value: JSON)]) {
        self.members = members
    }

    public init(dictionaryLiteral elements: (String, JSON)...) {
        self.init(elements)
    }

    /// The keys in order, duplicates included.
    public var keys: [String] { members.map(\.key) }
    /// The values in order.
    public var values: [JSON] { members.map(\.value) }
    public var count: Int { members.count }
    public var isEmpty: Bool { members.isEmpty }

    /// Get: the value of the last pair named `key`.
    /// Set: nil removes every pair named `key`; a value replaces the first such pair in place and drops
    /// the later duplicates (so the object then reads like jq's view of it), or appends a new pair.
    public subscript(key: String) -> JSON? {
        get {
            for index in members.indices.reversed() where members[index].key == key {
                return members[index].value
            }
            return nil
        }
        set {
            guard let newValue else {
                members.removeAll { $0.key == key }
                return
            }
            guard let first = members.firstIndex(where: { $0.key == key }) else {
                members.append((key: key, value: newValue))
                return
            }
            members[first].value = newValue
            let afterFirst = members.index(after: first)
            if let duplicate = members[afterFirst...].firstIndex(where: { $0.key == key }) {
                var kept = Array(members[..<duplicate])
                kept.append(contentsOf: members[duplicate...].filter { $0.key != key })
                members = kept
            }
        }
    }

    /// Adds a pair at the end, even when the key already exists (the parser keeps duplicates too).
    public mutating func append(_ key: String, _ value: JSON) {
        members.append((key: key, value: value))
    }

    /// Reserves room for `count` pairs.
    public mutating func reserveCapacity(_ count: Int) {
        members.reserveCapacity(count)
    }

    public func makeIterator() -> IndexingIterator<[(key: String, value: JSON)]> {
        members.makeIterator()
    }

    /// Ordered comparison: same keys in the same order with equal values.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        JSON.object(lhs) == JSON.object(rhs)
    }
}

extension JSONObject: CustomStringConvertible {
    public var description: String { JSON.object(self).text(.compact) }
}
