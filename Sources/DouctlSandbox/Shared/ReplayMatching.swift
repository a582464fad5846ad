import DouctlJSON
import DouctlServer
import DouctlSystem

/// What a replay compares a request on, beyond method and path: the query as a multiset
/// (order-free), the body by its kind (JSON as JSON, forms as forms, multipart by parts,
/// anything else byte for byte) and the headers the recording marks significant. A value a
/// recording holds as `REDACTED` (a scrubbed secret) matches whatever is sent.
enum ReplayBody: Sendable {
    /// Not compared: the recording left the body out (streamed from a file), or it was too
    /// large to buffer.
    case any
    case empty
    case json(JSON)
    case form([(name: String, value: String)])
    case multipart([ReplayPart])
    case bytes([UInt8])

    /// Reads a body of `contentType` as the kind it is.
    static func parse(_ bytes: [UInt8], contentType: String?) -> ReplayBody {
        guard !bytes.isEmpty else { return .empty }
        let type = HTTPSyntax.asciiLowercased(contentType ?? "")
        if type.hasPrefix("multipart/"), let parts = ReplayPart.parse(bytes, contentType: contentType ?? "") {
            return .multipart(parts)
        }
        if type.hasPrefix("application/x-www-form-urlencoded") {
            return .form(FormURLEncoded.parse(String(decoding: bytes, as: UTF8.self)))
        }
        if !type.hasPrefix("text/"), let json = try? JSONParser.parse(bytes) { return .json(json) }
        return .bytes(bytes)
    }

    var summary: String {
        switch self {
        case .any: return "any body"
        case .empty: return "no body"
        case .json: return "a JSON body"
        case .form(let fields): return "a form of \(fields.count) field\(fields.count == 1 ? "" : "s")"
        case .multipart(let parts): return "a multipart body of \(parts.count) part\(parts.count == 1 ? "" : "s")"
        case .bytes(let bytes): return "a body of \(bytes.count) bytes"
        }
    }
}

/// One part of a multipart body, as compared: its name, file name and content.
struct ReplayPart: Sendable {
    var name: String
    var filename: String?
    var bytes: [UInt8]

    static func parse(_ bytes: [UInt8], contentType: String) -> [ReplayPart]? {
        guard let reader = MultipartReader(body: HTTPRequestBody(bytes: bytes), contentType: contentType) else { return nil }
        var parts: [ReplayPart] = []
        do {
            while let part = try reader.nextPart() {
                parts.append(ReplayPart(name: part.name ?? "", filename: part.filename, bytes: try part.readAll(limit: bytes.count)))
            }
        } catch {
            return nil
        }
        return parts
    }
}

/// How a recorded request differs from a sent one, as short phrases for the 501 reply and
/// the log ("query page: recorded 2, sent 3"). No phrases: a match.
enum ReplayDifference {
    static let redacted = "REDACTED"
    /// Names whose values are never compared: secrets, and what changes on every request.
    static let ignoredNames: Set<String> = ["access_token", "refresh_token", "id_token", "id_token_hint", "client_secret",
                                             "password", "code", "code_verifier", "state", "nonce", "_sig", "_ts", "sign",
                                             "apikey", "api_key", "timestamp"]
    /// At most this many phrases are listed.
    static let listed = 5

    static func pairs(_ pairs: [(name: String, value: String)], label: String,
                      recorded: [(name: String, value: String)]) -> [String] {
        let sent = pairs.filter { !ignoredNames.contains($0.name) }
        let wanted = recorded.filter { !ignoredNames.contains($0.name) }
        var differences: [String] = []
        var unmatched = sent
        var missing: [(name: String, value: String)] = []
        for pair in wanted {
            if let index = unmatched.firstIndex(where: { $0.name == pair.name && ($0.value == pair.value || pair.value == redacted) }) {
                unmatched.remove(at: index)
            } else {
                missing.append(pair)
            }
        }
        for pair in missing {
            if let index = unmatched.firstIndex(where: { $0.name == pair.name }) {
                differences.append("\(label) \(pair.name): recorded \(quoted(pair.value)), sent \(quoted(unmatched[index].value))")
                unmatched.remove(at: index)
            } else {
                differences.append("\(label) \(pair.name)=\(quoted(pair.value)) not sent")
            }
        }
        for pair in unmatched { differences.append("\(label) \(pair.name)=\(quoted(pair.value)) not recorded") }
        return differences
    }

    static func body(recorded: ReplayBody, sent: ReplayBody) -> [String] {
        switch (recorded, sent) {
        case (.any, _), (.empty, .empty), (_, .any):
            return []
        case (.json(let want), .json(let have)):
            var differences: [String] = []
            json(want, have, at: "", into: &differences)
            return differences
        case (.form(let want), .form(let have)):
            return pairs(have, label: "form field", recorded: want)
        case (.multipart(let want), .multipart(let have)):
            return parts(want, have)
        case (.bytes(let want), .bytes(let have)):
            if want == have { return [] }
            return ["body: recorded \(want.count) bytes, sent \(have.count) bytes that differ"]
        default:
            return ["body: recorded \(recorded.summary), sent \(sent.summary)"]
        }
    }

    /// JSON compared as JSON: object keys in any order, numbers by value where they are
    /// plain (`1.0` is `1`), a recorded "REDACTED" string matching anything.
    static func json(_ want: JSON, _ have: JSON, at path: String, into differences: inout [String]) {
        guard differences.count < listed else { return }
        let place = path.isEmpty ? "body" : "body \(path)"
        switch (want, have) {
        case (.string(let recorded), _) where recorded == redacted:
            return
        case (.object(let a), .object(let b)):
            let wanted = Dictionary(a.members.map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last })
            let given = Dictionary(b.members.map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last })
            for key in a.keys where wanted[key] != nil {
                if let value = given[key] {
                    json(wanted[key] ?? .null, value, at: path + "." + key, into: &differences)
                } else if !ignoredNames.contains(key) {
                    differences.append("body \(path).\(key) not sent")
                }
            }
            for key in b.keys where wanted[key] == nil && !ignoredNames.contains(key) {
                differences.append("body \(path).\(key) not recorded")
            }
        case (.array(let a), .array(let b)):
            if a.count != b.count {
                differences.append("\(place): recorded \(a.count) items, sent \(b.count)")
                return
            }
            for index in a.indices { json(a[index], b[index], at: "\(path)[\(index)]", into: &differences) }
        case (.number(let a), .number(let b)):
            if a != b && Double(a) != Double(b) { differences.append("\(place): recorded \(a), sent \(b)") }
        default:
            if want != have {
                differences.append("\(place): recorded \(short(want)), sent \(short(have))")
            }
        }
    }

    private static func parts(_ want: [ReplayPart], _ have: [ReplayPart]) -> [String] {
        var differences: [String] = []
        var unmatched = have
        for part in want {
            guard let index = unmatched.firstIndex(where: { $0.name == part.name }) else {
                differences.append("part \(quoted(part.name)) not sent")
                continue
            }
            let sent = unmatched.remove(at: index)
            if sent.filename != part.filename {
                differences.append("part \(quoted(part.name)): recorded file name \(quoted(part.filename ?? "none")), sent \(quoted(sent.filename ?? "none"))")
            } else if sent.bytes != part.bytes && part.bytes != Array(redacted.utf8) && !ignoredNames.contains(part.name) {
                differences.append("part \(quoted(part.name)): recorded \(part.bytes.count) bytes, sent \(sent.bytes.count) that differ")
            }
        }
        for part in unmatched { differences.append("part \(quoted(part.name)) not recorded") }
        return differences
    }

    static func quoted(_ text: String) -> String {
        let shown = text.count > 40 ? String(text.prefix(40)) + "…" : text
        return "'" + shown + "'"
    }

    static func short(_ json: JSON) -> String {
        let text = json.serialized(.compact)
        let shown = String(decoding: text.prefix(40), as: UTF8.self)
        return text.count > 40 ? shown + "…" : shown
    }
}
