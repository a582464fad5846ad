import DouctlJSON
import DouctlSystem

/// The checks made before an operation is sent (issue 42): a value against its JSON Schema
/// (the subset descriptions use: type, enum, const, format, minimum/maximum and their
/// exclusive forms, minLength/maxLength, pattern's simplest forms are not tried, items,
/// minItems/maxItems, required, properties, additionalProperties: false, allOf, anyOf,
/// oneOf, nullable). The first violation, as "FIELD: RULE", or nil.
public enum SchemaCheck {
    public static func violation(_ value: JSON, _ given: JSON, field: String) -> String? {
        problem(value, given, field: field, pointer: "").map { "\($0.field): \($0.rule)" }
    }

    /// A rule a value breaks: the field as a name (`items[0].name`), where it is as a JSON
    /// pointer (RFC 6901: `/items/0/name`), and the rule.
    public struct Problem: Sendable, Equatable {
        public var field: String
        public var pointer: String
        public var rule: String

        public init(field: String, pointer: String, rule: String) {
            self.field = field
            self.pointer = pointer
            self.rule = rule
        }
    }

    /// The first violation, with where it is (see `Problem`).
    public static func problem(_ value: JSON, _ given: JSON, field: String, pointer: String) -> Problem? {
        if value.isNull, nullable(given) { return nil }
        let schema = effective(given)
        guard let object = schema.objectValue, !object.isEmpty else { return nil }
        // A recursive schema left as a reference: anything.
        if object["$ref"] != nil { return nil }
        if value.isNull, object["nullable"]?.boolValue == true { return nil }
        if let all = object["allOf"]?.arrayValue {
            for part in all { if let found = problem(value, part, field: field, pointer: pointer) { return found } }
        }
        for key in ["anyOf", "oneOf"] {
            if let choices = object[key]?.arrayValue, !choices.isEmpty,
               !choices.contains(where: { problem(value, $0, field: field, pointer: pointer) == nil }) {
                return Problem(field: field, pointer: pointer, rule: "matches none of the \(choices.count) schemas \(key) allows")
            }
        }
        if let types = typeNames(object["type"]), !types.isEmpty, !types.contains(where: { matches(value, type: $0) }) {
            return Problem(field: field, pointer: pointer, rule: "must be \(types.joined(separator: " or ")), not \(describe(value))")
        }
        if let choices = object["enum"]?.arrayValue, !choices.contains(where: { same($0, value) }) {
            return Problem(field: field, pointer: pointer, rule: "must be one of \(choices.map { $0.scalarText ?? $0.description }.joined(separator: ", ")), not \(value.scalarText ?? value.description)")
        }
        if let constant = object["const"], !same(constant, value) {
            return Problem(field: field, pointer: pointer, rule: "must be \(constant.scalarText ?? constant.description)")
        }
        switch value {
        case .number:
            guard let number = value.doubleValue else { return nil }
            if let minimum = object["minimum"]?.doubleValue {
                let exclusive = object["exclusiveMinimum"]?.boolValue == true
                if exclusive ? number <= minimum : number < minimum { return Problem(field: field, pointer: pointer, rule: "must be \(exclusive ? ">" : ">=") \(object["minimum"]?.scalarText ?? ""), not \(value.scalarText ?? "")") }
            }
            if let maximum = object["maximum"]?.doubleValue {
                let exclusive = object["exclusiveMaximum"]?.boolValue == true
                if exclusive ? number >= maximum : number > maximum { return Problem(field: field, pointer: pointer, rule: "must be \(exclusive ? "<" : "<=") \(object["maximum"]?.scalarText ?? ""), not \(value.scalarText ?? "")") }
            }
            // 3.1: exclusiveMinimum/exclusiveMaximum are numbers.
            if let bound = object["exclusiveMinimum"]?.doubleValue, number <= bound { return Problem(field: field, pointer: pointer, rule: "must be > \(object["exclusiveMinimum"]?.scalarText ?? "")") }
            if let bound = object["exclusiveMaximum"]?.doubleValue, number >= bound { return Problem(field: field, pointer: pointer, rule: "must be < \(object["exclusiveMaximum"]?.scalarText ?? "")") }
            if let step = object["multipleOf"]?.doubleValue, step > 0, (number / step).rounded() != number / step { return Problem(field: field, pointer: pointer, rule: "must be a multiple of \(object["multipleOf"]?.scalarText ?? "")") }
        case .string(let text):
            let length = text.unicodeScalars.count
            if let minimum = object["minLength"]?.intValue, length < minimum { return Problem(field: field, pointer: pointer, rule: "must be at least \(minimum) characters long") }
            if let maximum = object["maxLength"]?.intValue, length > maximum { return Problem(field: field, pointer: pointer, rule: "must be at most \(maximum) characters long") }
            if let format = object["format"]?.stringValue, let rule = formatProblem(text, format: format) { return Problem(field: field, pointer: pointer, rule: rule) }
        case .array(let items):
            if let minimum = object["minItems"]?.intValue, items.count < minimum { return Problem(field: field, pointer: pointer, rule: "must have at least \(minimum) items") }
            if let maximum = object["maxItems"]?.intValue, items.count > maximum { return Problem(field: field, pointer: pointer, rule: "must have at most \(maximum) items") }
            if let itemSchema = object["items"] {
                for (index, item) in items.enumerated() {
                    if let found = problem(item, itemSchema, field: "\(field)[\(index)]", pointer: pointer + "/\(index)") { return found }
                }
            }
        case .object(let members):
            let prefix = field.isEmpty ? "" : field + "."
            // A readOnly property is the server's (an id): required in replies, not in requests,
            // which are all this checks (drf-spectacular marks them both).
            let readOnly = Set((object["properties"]?.objectValue ?? JSONObject()).compactMap { $0.value["readOnly"]?.boolValue == true ? $0.key : nil })
            for name in object["required"]?.arrayValue?.compactMap(\.stringValue) ?? [] where members[name] == nil && !readOnly.contains(name) {
                return Problem(field: prefix + name, pointer: pointer + "/" + escaped(name), rule: "required")
            }
            let properties = object["properties"]?.objectValue ?? JSONObject()
            for (name, member) in members {
                if let property = properties[name] {
                    if let found = problem(member, property, field: prefix + name, pointer: pointer + "/" + escaped(name)) { return found }
                } else if object["additionalProperties"]?.boolValue == false {
                    return Problem(field: prefix + name, pointer: pointer + "/" + escaped(name), rule: "not a field of this body (additionalProperties is false)")
                } else if let additional = object["additionalProperties"], additional.objectValue != nil,
                          let found = problem(member, additional, field: prefix + name, pointer: pointer + "/" + escaped(name)) {
                    return found
                }
            }
        default:
            break
        }
        return nil
    }

    /// A name as a JSON pointer's token (RFC 6901: ~ and / escaped).
    static func escaped(_ name: String) -> String {
        name.replacingAll("~", with: "~0").replacingAll("/", with: "~1")
    }

    /// `anyOf`/`oneOf` of one schema and `{"type": "null"}` (3.1's Optional, as FastAPI
    /// writes it): that one schema, so its rules are named, not "none of 2".
    public static func effective(_ schema: JSON) -> JSON {
        for key in ["anyOf", "oneOf"] {
            guard let choices = schema[key]?.arrayValue else { continue }
            let real = choices.filter { typeNames($0["type"]) != ["null"] }
            guard real.count == 1, choices.count == 2, case .object(var merged) = real[0], let outer = schema.objectValue else { continue }
            for (name, value) in outer where name != key && merged[name] == nil { merged.append(name, value) }
            return .object(merged)
        }
        return schema
    }

    static func nullable(_ schema: JSON) -> Bool {
        for key in ["anyOf", "oneOf"] {
            if schema[key]?.arrayValue?.contains(where: { typeNames($0["type"]) == ["null"] }) == true { return true }
        }
        return schema["nullable"]?.boolValue == true || typeNames(schema["type"])?.contains("null") == true
    }

    public static func typeNames(_ type: JSON?) -> [String]? {
        switch type {
        case .string(let name): return [name]
        case .array(let names): return names.compactMap(\.stringValue)
        default: return nil
        }
    }

    static func matches(_ value: JSON, type: String) -> Bool {
        switch (type, value) {
        case ("null", .null), ("boolean", .bool), ("string", .string), ("array", .array), ("object", .object), ("number", .number): return true
        case ("integer", .number): return value.int64Value != nil || value.doubleValue.map { $0 == $0.rounded() } == true
        default: return false
        }
    }

    static func same(_ a: JSON, _ b: JSON) -> Bool {
        if case .number = a, case .number = b, let x = a.doubleValue, let y = b.doubleValue { return x == y }
        return a == b
    }

    static func describe(_ value: JSON) -> String {
        switch value {
        case .null: return "null"
        case .bool(let flag): return "the boolean \(flag)"
        case .number(let text): return "the number \(text)"
        case .string(let text): return "the string '\(text)'"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    /// The formats worth checking locally: what a server would refuse outright.
    static func formatProblem(_ text: String, format: String) -> String? {
        let digits = { (part: Substring) in !part.isEmpty && part.allSatisfy { $0.isASCII && $0.isNumber } }
        switch format {
        case "date":
            let parts = text.split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2, parts.allSatisfy(digits),
                  let month = Int(parts[1]), let day = Int(parts[2]), (1...12).contains(month), (1...31).contains(day) else {
                return "must be a date (format date: YYYY-MM-DD), not '\(text)'"
            }
        case "date-time":
            guard text.count >= 20, formatProblem(String(text.prefix(10)), format: "date") == nil,
                  text.dropFirst(10).first.map({ $0 == "T" || $0 == "t" || $0 == " " }) == true else {
                return "must be a date and time (format date-time: RFC 3339, e.g. 2024-05-01T12:00:00Z), not '\(text)'"
            }
        case "email":
            let parts = text.split(separator: "@", omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !parts[1].hasPrefix("."), !parts[1].hasSuffix(".") else {
                return "must be an email address (format email), not '\(text)'"
            }
        case "uuid":
            let groups = text.split(separator: "-", omittingEmptySubsequences: false)
            guard groups.map(\.count) == [8, 4, 4, 4, 12], groups.allSatisfy({ $0.allSatisfy(\.isHexDigit) }) else {
                return "must be a UUID (format uuid), not '\(text)'"
            }
        case "uri", "url":
            guard text.contains(":"), !text.contains(" ") else { return "must be a URI (format \(format)), not '\(text)'" }
        case "int32", "int64":
            break
        default:
            break
        }
        return nil
    }

    /// A parameter's text as the JSON its schema's type reads it: "5" is 5 for an integer,
    /// "true" true for a boolean; text that is not one stays a string (then fails the check).
    public static func typed(_ text: String, schema given: JSON) -> JSON {
        let schema = effective(given)
        let types = typeNames(schema["type"]) ?? []
        if types.contains("integer") || types.contains("number"), let number = YAML.number(text) { return .number(number) }
        if types.contains("boolean"), text == "true" || text == "false" { return .bool(text == "true") }
        return .string(text)
    }
}
