import CYAML
import DouctlJSON

/// YAML read into the JSON value douctl uses everywhere: through the system's libyaml,
/// loaded at run time (CYAML), so a machine without it still reads JSON and says, in one
/// line, why YAML cannot be read. The YAML 1.2 core schema decides what a plain scalar is
/// (null, ~ and nothing are null; true and false booleans; decimal, 0x and 0o integers and
/// decimal floats numbers; the rest strings); quoted scalars and `!!str` are strings.
/// Keys are always strings (`200:` is "200"). Anchors and aliases are expanded (an alias
/// to a node still open is refused, and the expansion is bounded), `<<` merges. Only the
/// first document of a stream is read.
public enum YAML {
    /// Why the text is not YAML, and where (1-based line).
    public struct Failure: Error, Equatable, Sendable, CustomStringConvertible {
        public let message: String
        /// 0 when no line applies (libyaml missing).
        public let line: Int
        public var description: String { line > 0 ? "\(message) at line \(line)" : message }
    }

    /// Nodes an expansion of aliases may create, beyond which a document is refused (a
    /// "billion laughs" document stops here instead of filling memory).
    public static let maximumNodes = 4_000_000

    public static func parse(_ bytes: [UInt8]) throws(Failure) -> JSON {
        let builder = Builder()
        var message = [CChar](repeating: 0, count: 512)
        var line = 0
        let status = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                withExtendedLifetime(builder) {
                    cyaml_parse(chars.baseAddress, chars.count, { context, kind, anchor, tag, value, length, plain, line in
                        guard let context else { return 0 }
                        let builder = Unmanaged<Builder>.fromOpaque(context).takeUnretainedValue()
                        return builder.take(kind: kind, anchor: anchor, tag: tag, value: value, length: length, plain: plain != 0, line: Int(line)) ? 1 : 0
                    }, Unmanaged.passUnretained(builder).toOpaque(), &message, message.count, &line)
                }
            }
        }
        switch status {
        case CYAML_OK:
            return builder.result ?? .null
        case CYAML_STOPPED:
            // Stopped at a second document: the first is the value.
            if builder.failure == nil, let result = builder.result { return result }
            throw builder.failure ?? Failure(message: "not valid YAML", line: 0)
        case CYAML_NOT_LOADED:
            throw Failure(message: String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), line: 0)
        default:
            throw Failure(message: String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), line: line)
        }
    }

    /// Whether libyaml can be loaded here (tests that need it skip naming it otherwise).
    public static var isAvailable: Bool { cyaml_load() == 0 }

    /// Builds the value from the parser's events.
    private final class Builder {
        enum Open {
            case sequence([JSON], anchor: String?, nodes: Int)
            case mapping(JSONObject, pendingKey: String?, anchor: String?, merged: [JSONObject], nodes: Int)
        }
        var stack: [Open] = []
        /// Each anchor's value and how many nodes it holds (counted once).
        var anchors: [String: (value: JSON, nodes: Int)] = [:]
        var result: JSON?
        var failure: Failure?
        var documents = 0
        var nodes = 0

        func take(kind: Int32, anchor: UnsafePointer<CChar>?, tag: UnsafePointer<CChar>?, value: UnsafePointer<CChar>?, length: Int, plain: Bool, line: Int) -> Bool {
            let anchorName = anchor.map { String(cString: $0) }
            switch kind {
            case CYAML_DOCUMENT_START:
                documents += 1
                // The first document only: a stream's later ones are not the description.
                return documents == 1
            case CYAML_SCALAR:
                let text: String
                if let value {
                    text = value.withMemoryRebound(to: UInt8.self, capacity: length) { String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self) }
                } else {
                    text = ""
                }
                let tagName = tag.map { String(cString: $0) }
                let scalar = YAML.scalar(text, plain: plain, tag: tagName)
                if let anchorName { anchors[anchorName] = (scalar, 1) }
                return add(scalar, keyText: text, line: line)
            case CYAML_ALIAS:
                guard let anchorName, let (value, size) = anchors[anchorName] else {
                    return fail("alias *\(anchorName ?? "") names no anchor before it (or its own node)", line: line)
                }
                nodes += size - 1
                guard nodes <= YAML.maximumNodes else { return fail("aliases expand beyond \(YAML.maximumNodes) nodes", line: line) }
                return add(value, keyText: value.stringValue ?? value.description, line: line)
            case CYAML_SEQUENCE_START:
                stack.append(.sequence([], anchor: anchorName, nodes: nodes))
                return true
            case CYAML_MAPPING_START:
                stack.append(.mapping(JSONObject(), pendingKey: nil, anchor: anchorName, merged: [], nodes: nodes))
                return true
            case CYAML_SEQUENCE_END, CYAML_MAPPING_END:
                guard let top = stack.popLast() else { return fail("unbalanced collection", line: line) }
                let value: JSON
                let anchor: String?
                let startNodes: Int
                switch top {
                case .sequence(let items, let name, let started):
                    value = .array(items)
                    anchor = name
                    startNodes = started
                case .mapping(var object, _, let name, let merged, let started):
                    startNodes = started
                    // `<<: *base`: the base's keys, unless the mapping sets them itself.
                    for base in merged {
                        for (key, member) in base where object[key] == nil { object.append(key, member) }
                    }
                    value = .object(object)
                    anchor = name
                }
                if let anchor { anchors[anchor] = (value, nodes - startNodes + 1) }
                return add(value, keyText: nil, line: line)
            default:
                return true
            }
        }

        private func fail(_ message: String, line: Int) -> Bool {
            failure = Failure(message: message, line: line)
            return false
        }

        private func add(_ value: JSON, keyText: String?, line: Int) -> Bool {
            nodes += 1
            guard nodes <= YAML.maximumNodes else { return fail("more than \(YAML.maximumNodes) nodes", line: line) }
            guard let top = stack.popLast() else {
                result = value
                return true
            }
            switch top {
            case .sequence(var items, let anchor, let started):
                items.append(value)
                stack.append(.sequence(items, anchor: anchor, nodes: started))
            case .mapping(var object, let pendingKey, let anchor, var merged, let started):
                if let pendingKey {
                    if pendingKey == "<<" {
                        switch value {
                        case .object(let base): merged.append(base)
                        case .array(let bases): merged += bases.compactMap(\.objectValue)
                        default: return fail("<< merges a mapping or a list of mappings", line: line)
                        }
                    } else {
                        object.append(pendingKey, value)
                    }
                    stack.append(.mapping(object, pendingKey: nil, anchor: anchor, merged: merged, nodes: started))
                } else {
                    // A key: a scalar's text ("200" for 200:, "null" for null:); a
                    // collection as a key is refused (JSON has no such key).
                    guard let keyText, !value.isYAMLCollection else {
                        return fail("a mapping key must be a scalar", line: line)
                    }
                    stack.append(.mapping(object, pendingKey: keyText, anchor: anchor, merged: merged, nodes: started))
                }
            }
            return true
        }
    }

    /// A scalar's value by the core schema (see the type's comment).
    static func scalar(_ text: String, plain: Bool, tag: String?) -> JSON {
        if let tag {
            switch tag {
            case "tag:yaml.org,2002:str", "!": return .string(text)
            case "tag:yaml.org,2002:null": return .null
            case "tag:yaml.org,2002:bool": return .bool(["true", "True", "TRUE"].contains(text))
            case "tag:yaml.org,2002:int", "tag:yaml.org,2002:float": return number(text).map(JSON.number) ?? .string(text)
            default: break
            }
        }
        guard plain else { return .string(text) }
        switch text {
        case "", "~", "null", "Null", "NULL": return .null
        case "true", "True", "TRUE": return .bool(true)
        case "false", "False", "FALSE": return .bool(false)
        default: return number(text).map(JSON.number) ?? .string(text)
        }
    }

    /// The JSON number text of a YAML core-schema number, or nil. `.inf` and `.nan` have no
    /// JSON spelling and stay strings.
    static func number(_ text: String) -> String? {
        var body = Substring(text)
        var negative = false
        if body.hasPrefix("-") || body.hasPrefix("+") {
            negative = body.first == "-"
            body = body.dropFirst()
        }
        guard !body.isEmpty else { return nil }
        if body.hasPrefix("0x") || body.hasPrefix("0o") {
            let digits = body.dropFirst(2)
            guard !digits.isEmpty, let value = UInt64(digits, radix: body.hasPrefix("0x") ? 16 : 8) else { return nil }
            return (negative ? "-" : "") + String(value)
        }
        // [0-9]+(\.[0-9]*)?|\.[0-9]+, then ([eE][-+]?[0-9]+)?
        let bytes = Array(body.utf8)
        var index = 0
        func digits() -> Int {
            let start = index
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
            return index - start
        }
        let integer = digits()
        var fraction = -1
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            fraction = digits()
        }
        guard integer > 0 || fraction > 0 else { return nil }
        var exponent = ""
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            let start = index
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") { index += 1 }
            guard digits() > 0 else { return nil }
            exponent = String(decoding: bytes[start..<bytes.count], as: UTF8.self)
        }
        guard index == bytes.count else { return nil }
        let integerText = integer == 0 ? "0" : String(decoding: bytes[0..<integer], as: UTF8.self)
        // JSON allows no leading zeros: 007 is 7.
        let trimmed = integerText.count > 1 ? String(integerText.drop { $0 == "0" }).nonEmpty ?? "0" : integerText
        var result = (negative ? "-" : "") + trimmed
        if fraction >= 0 {
            let fractionText = fraction == 0 ? "0" : String(decoding: bytes[(integer + 1)..<(integer + 1 + fraction)], as: UTF8.self)
            result += "." + fractionText
        }
        return result + exponent
    }
}

extension JSON {
    fileprivate var isYAMLCollection: Bool {
        switch self {
        case .array, .object: return true
        default: return false
        }
    }
}

extension String {
    fileprivate var nonEmpty: String? { isEmpty ? nil : self }
}
