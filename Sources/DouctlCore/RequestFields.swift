import DouctlJSON

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
    public static func jsonObject(_ fields: [RequestField]) throws(DouctlError) -> JSON {
        var root: JSON = .object(JSONObject())
        for field in fields {
            let path = try keyPath(field.key)
            root = try insert(field.value, at: path[...], into: root, key: field.key)
        }
        return root
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

    private static func insert(_ value: JSON, at path: ArraySlice<String>, into container: JSON, key: String) throws(DouctlError) -> JSON {
        guard let head = path.first else { return value }
        let rest = path.dropFirst()
        if head.isEmpty {
            guard case .array(var items) = container else {
                throw .usage("field '\(key)' appends to something that is not an array")
            }
            // `a[][b]=1` then `a[][c]=2` builds one object per `[]` except when the key is new
            // to the last element (gh's rule), so objects can be filled field by field.
            if let next = rest.first, !next.isEmpty, case .object(let last)? = items.last, last[next] == nil {
                items[items.count - 1] = try insert(value, at: rest, into: .object(last), key: key)
            } else {
                items.append(try insert(value, at: rest, into: emptyContainer(for: rest), key: key))
            }
            return .array(items)
        }
        guard case .object(var object) = container else {
            throw .usage("field '\(key)' nests into something that is not an object")
        }
        let existing = object[head] ?? emptyContainer(for: rest)
        object[head] = try insert(value, at: rest, into: rest.isEmpty ? .null : existing, key: key)
        return .object(object)
    }

    private static func emptyContainer(for rest: ArraySlice<String>) -> JSON {
        guard let next = rest.first else { return .null }
        return next.isEmpty ? .array([]) : .object(JSONObject())
    }
}
