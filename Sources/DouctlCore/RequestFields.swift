import DouctlJSON
import DouctlSystem

/// The fields of `douctl api` (`-f`, `-F`), kept as JSON values so one list becomes either
/// a form body (their text) or, with `--json`, a JSON object (their types, nested keys).
public struct RequestField: Sendable, Equatable {
    public var key: String
    public var value: JSON

    public init(key: String, value: JSON) {
        self.key = key
        self.value = value
    }

    /// `-f KEY=VALUE`: always a string.
    public static func string(_ key: String, _ value: String) -> RequestField {
        RequestField(key: key, value: .string(value))
    }

    /// `-F KEY=VALUE`: `true`, `false`, `null` and JSON numbers become those types; anything
    /// else stays a string. `KEY:=JSON` (HTTPie's syntax) takes any JSON value as it is.
    public static func typed(_ key: String, _ value: String) throws(DouctlError) -> RequestField {
        if key.hasSuffix(":") {
            guard let json = try? JSONParser.parse(Array(value.utf8)) else {
                throw .usage("invalid JSON for -F \(key)=: \(value)")
            }
            return RequestField(key: String(key.dropLast()), value: json)
        }
        if let scalar = try? JSONParser.parse(Array(value.utf8)) {
            switch scalar {
            case .null, .bool, .number: return RequestField(key: key, value: scalar)
            default: break
            }
        }
        return .string(key, value)
    }

    /// How the value travels in a query string or a form: numbers as their text, null as
    /// empty, arrays and objects as compact JSON.
    public var formText: String {
        switch value {
        case .string(let text): return text
        case .number(let text): return text
        case .bool(let flag): return flag ? "true" : "false"
        case .null: return ""
        case .array, .object: return value.text(.compact)
        }
    }

    public var formPair: (String, String) { (key, formText) }

    /// The JSON object of `--json`: `a[b]=1` nests ({"a": {"b": 1}}), `a[]=1` appends to an
    /// array ({"a": [1]}), as gh does; a later plain key replaces an earlier one.
    ///
    /// Built in a tree of references with a key index per object, then turned into `JSON`
    /// once: inserting into the value tree itself copied the whole object and searched its
    /// keys for every field, so 20,000 fields took 17.5 s (quadratic; issue 30).
    public static func jsonObject(_ fields: [RequestField]) throws(DouctlError) -> JSON {
        let root = FieldTree.ObjectNode()
        for field in fields {
            try checkUTF8(field)
            let path = try keyPath(field.key)
            try FieldTree.insert(field.value, at: path[...], into: .object(root), key: field.key)
        }
        return root.json
    }

    /// JSON text is UTF-8: a name or value with a command line's byte that is not
    /// (`EscapedBytes`) is refused rather than sent as something else.
    private static func checkUTF8(_ field: RequestField) throws(DouctlError) {
        guard let byte = EscapedBytes.firstEscapedByte(field.key) ?? EscapedBytes.firstEscapedByte(field.formText) else { return }
        let hex = String(byte, radix: 16, uppercase: true)
        throw .usage("field '\(EscapedBytes.shown(field.key))' is not UTF-8 (byte 0x\(hex)), which a JSON body cannot carry; send it in a form (without --json) or as a file part (--attach)")
    }

    /// "a[b][]" → ["a", "b", ""]; "" means "append".
    static func keyPath(_ key: String) throws(DouctlError) -> [String] {
        guard let open = key.firstIndex(of: "[") else { return [key] }
        var path = [String(key[..<open])]
        var rest = key[open...]
        while !rest.isEmpty {
            guard rest.first == "[", let close = rest.firstIndex(of: "]") else {
                throw .usage("invalid field name '\(key)': expected NAME, NAME[KEY] or NAME[]")
            }
            path.append(String(rest[rest.index(after: rest.startIndex)..<close]))
            rest = rest[rest.index(after: close)...]
        }
        if path[0].isEmpty { throw .usage("invalid field name '\(key)': it needs a name before '['") }
        return path
    }
}

/// The fields of `--json` as they are merged: objects and arrays are references, so a field
/// is inserted in place, and an object finds a key through an index, not a search.
fileprivate enum FieldTree {
    enum Node {
        case leaf(JSON)
        case object(ObjectNode)
        case array(ArrayNode)

        /// A value given whole (`-F a:={...}`) becomes a tree only when a later field
        /// nests into it.
        init(_ value: JSON) {
            switch value {
            case .object(let object): self = .object(ObjectNode(object))
            case .array(let items): self = .array(ArrayNode(items.map(Node.init)))
            default: self = .leaf(value)
            }
        }

        var json: JSON {
            switch self {
            case .leaf(let value): return value
            case .object(let object): return object.json
            case .array(let array): return .array(array.items.map(\.json))
            }
        }
    }

    final class ArrayNode {
        var items: [Node]
        init(_ items: [Node] = []) { self.items = items }
    }

    /// Ordered members, as `JSONObject` keeps them: a value given whole may repeat a key,
    /// and reads and writes follow `JSONObject`'s rules (read the last, replace the first
    /// and drop the later ones).
    final class ObjectNode {
        private var members: [(key: String, value: Node)] = []
        /// The first member of each key.
        private var first: [String: Int] = [:]
        /// Keys held more than once (only from a value given whole).
        private var repeated: Set<String> = []

        init() {}

        init(_ object: JSONObject) {
            members.reserveCapacity(object.count)
            for (key, value) in object {
                if first[key] == nil { first[key] = members.count } else { repeated.insert(key) }
                members.append((key, Node(value)))
            }
        }

        subscript(key: String) -> Node? {
            guard let index = first[key] else { return nil }
            if repeated.contains(key), let last = members.lastIndex(where: { $0.key == key }) { return members[last].value }
            return members[index].value
        }

        func set(_ key: String, _ value: Node) {
            guard let index = first[key] else {
                first[key] = members.count
                members.append((key, value))
                return
            }
            members[index].value = value
            if repeated.remove(key) != nil {
                members = members.enumerated().filter { $0.offset <= index || $0.element.key != key }.map(\.element)
                first = [:]
                for (offset, member) in members.enumerated() where first[member.key] == nil { first[member.key] = offset }
            }
        }

        var json: JSON {
            var object = JSONObject()
            object.reserveCapacity(members.count)
            for member in members { object.append(member.key, member.value.json) }
            return .object(object)
        }
    }

    /// Puts `value` at `path` inside `container`, returning what the container's slot
    /// holds afterwards (the same reference for an object or array, the value at a leaf).
    @discardableResult
    static func insert(_ value: JSON, at path: ArraySlice<String>, into container: Node, key: String) throws(DouctlError) -> Node {
        guard let head = path.first else { return Node.leaf(value) }
        let rest = path.dropFirst()
        if head.isEmpty {
            guard case .array(let array) = container.expanded else {
                throw .usage("field '\(key)' appends to something that is not an array")
            }
            // `a[][b]=1` then `a[][c]=2` builds one object per `[]` except when the key is new
            // to the last element (gh's rule), so objects can be filled field by field.
            if let next = rest.first, !next.isEmpty, let last = array.items.last, case .object(let object) = last.expanded, object[next] == nil {
                array.items[array.items.count - 1] = try insert(value, at: rest, into: .object(object), key: key)
            } else {
                array.items.append(try insert(value, at: rest, into: emptyContainer(for: rest), key: key))
            }
            return .array(array)
        }
        guard case .object(let object) = container.expanded else {
            throw .usage("field '\(key)' nests into something that is not an object")
        }
        let existing = rest.isEmpty ? Node.leaf(.null) : object[head] ?? emptyContainer(for: rest)
        object.set(head, try insert(value, at: rest, into: existing, key: key))
        return .object(object)
    }

    private static func emptyContainer(for rest: ArraySlice<String>) -> Node {
        guard let next = rest.first else { return .leaf(.null) }
        return next.isEmpty ? .array(ArrayNode()) : .object(ObjectNode())
    }
}

extension FieldTree.Node {
    /// An object or array held as a plain value, as a tree to insert into; others as they are.
    fileprivate var expanded: FieldTree.Node {
        if case .leaf(let value) = self { return FieldTree.Node(value) }
        return self
    }
}
