import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSandbox
import DouctlSystem

/// `douctl sandbox --verify DIR|FILE.har --profile live`: the contract check that keeps a
/// fake honest. Each recorded request goes again to the profile's live API (its own
/// credential in force, the recorded secrets left out) and the reply is compared with the
/// recorded one by shape, not by value: a status that changed, fields added or gone, types
/// that changed (arrays by their first items). One line per drift on stdout; exit 11 when
/// any drifted.
enum SandboxVerify {
    static func run(_ path: String, context: CommandContext) throws(DouctlError) -> ExitStatus {
        let exchanges: [RecordedExchange]
        do { exchanges = try Sandbox.recordedExchanges(at: path) } catch { throw .localInput(error.message) }
        let client = try context.session.api(allowsAnonymous: true)
        let origin = Self.origin(of: client.profile.apiBase)
        var drifted = 0
        var checked = 0
        for exchange in exchanges {
            guard let body = exchange.body else {
                context.output.note("douctl: \(exchange.name): skipped, the recording left its body out")
                continue
            }
            let headers = exchange.headers.filter { keeps($0.name) && $0.value != ExchangeRecorder.redacted }.map { HTTPHeader($0.name, $0.value) }
            let contentType = exchange.headers.first { HTTPSyntax.asciiLowercased($0.name) == "content-type" }?.value
            let query = exchange.query.filter { $0.value != ExchangeRecorder.redacted }.map { ($0.name, $0.value) }
            let request = APIRequest(method: exchange.method, path: origin + exchange.path, query: query, headers: headers,
                                     body: body.isEmpty ? .none : .raw(.bytes(body), contentType: contentType))
            let live = try client.exchange(request)
            checked += 1
            let changes = differences(recordedStatus: exchange.status, recorded: exchange.responseBody,
                                      liveStatus: live.status, live: live.body)
            if !changes.isEmpty { drifted += 1 }
            for change in changes {
                context.output.line("\(exchange.method) \(exchange.path) (\(exchange.name)): \(change)")
            }
        }
        context.output.note("douctl: verified \(checked) recorded exchange\(checked == 1 ? "" : "s") against \(Redaction.redactURL(client.profile.apiBase)): \(drifted == 0 ? "no drift" : "\(drifted) drifted")")
        return drifted == 0 ? .success : .drift
    }

    /// Headers the live request gets from the recording: not framing, not credentials (the
    /// profile's own go instead), not what the transport sets itself.
    static func keeps(_ name: String) -> Bool {
        !["host", "content-length", "transfer-encoding", "connection", "authorization", "cookie", "user-agent", "accept-encoding"]
            .contains(HTTPSyntax.asciiLowercased(name)) && !RecordingScrubber().isSecret(name: name)
    }

    static func origin(of base: String) -> String {
        guard let parts = URLParts(base) else { return base }
        return parts.scheme + "://" + (parts.host.containsASCII(":") ? "[\(parts.host)]" : parts.host) + (parts.port.map { ":\($0)" } ?? "")
    }

    /// How a live reply differs from the recorded one, by status and JSON shape.
    static func differences(recordedStatus: Int, recorded: [UInt8], liveStatus: Int, live: [UInt8]) -> [String] {
        var changes: [String] = []
        if recordedStatus != liveStatus { changes.append("status \(recordedStatus) → \(liveStatus)") }
        guard let want = try? JSONParser.parse(recorded), let have = try? JSONParser.parse(live) else { return changes }
        shape(want, have, at: "", into: &changes)
        return changes
    }

    static func kind(_ json: JSON) -> String {
        switch json {
        case .null: return "null"
        case .bool: return "boolean"
        case .number: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    static func shape(_ want: JSON, _ have: JSON, at path: String, into changes: inout [String]) {
        guard changes.count < 50 else { return }
        let place = path.isEmpty ? "." : path
        switch (want, have) {
        case (.object(let a), .object(let b)):
            let haveKeys = Set(b.keys)
            let wantKeys = Set(a.keys)
            for key in a.keys where !haveKeys.contains(key) { changes.append("field \(path).\(key) gone") }
            for key in b.keys where !wantKeys.contains(key) { changes.append("field \(path).\(key) added") }
            for key in a.keys where haveKeys.contains(key) {
                shape(a[key] ?? .null, b[key] ?? .null, at: path + "." + key, into: &changes)
            }
        case (.array(let a), .array(let b)):
            if let first = a.first, let other = b.first { shape(first, other, at: path + "[]", into: &changes) }
        case (.null, _), (_, .null):
            return  // a value that may be absent says nothing of its type
        default:
            if kind(want) != kind(have) { changes.append("field \(place): \(kind(want)) → \(kind(have))") }
        }
    }
}
