import DouctlJSON
import DouctlServer
import DouctlSystem

/// `douctl sandbox --replay DIR` (or `--mock DIR`): answers from the exchanges `--record DIR`
/// wrote, so a real session becomes a fake server. A request matches a recording with the
/// same method and path, the same query in any order, the same body compared by its kind
/// (`ReplayBody`: JSON as JSON, forms as forms, multipart by parts) and the same values of the
/// headers the recording marks significant (`"significant_headers": ["Accept"]` in its
/// request); secrets and per-request values (tokens, codes, signatures, timestamps) are not
/// compared. Several matches are served in recorded order, the last one again when they run
/// out. Anything else is a 501 naming the closest recording and how it differs, except a
/// login step no recording answers: the sandbox serves that itself (`SandboxCore`), so a
/// login works against any recording. A recorded login is replayed for a new client with
/// fresh tokens, and then only those tokens are accepted (`ReplayLogin`).
final class ReplayStore: Sendable {
    struct Recording: Sendable {
        /// The file (and entry) it came from, for the 501 reply.
        var name: String
        var method: String
        var path: String
        var query: [(name: String, value: String)]
        var headers: [(name: String, value: String)]
        /// Request headers whose values must match (lowercased names).
        var significant: [String]
        var body: ReplayBody
        /// The request body as sent, where the recording kept it (nil: left out).
        var rawBody: [UInt8]? = nil
        var status: Int
        var responseHeaders: [(String, String)]
        var responseBody: [UInt8]

        var label: String {
            let query = query.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
            return "\(method) \(path)\(query.isEmpty ? "" : "?" + query)"
        }
    }

    /// What a replay answers a request with.
    enum Outcome {
        case recorded(HTTPServerResponse)
        /// No recording matches: the 501 reply, and the line for the sandbox log.
        case unmatched(HTTPServerResponse, line: String)
    }

    let recordings: [Recording]
    /// Recorded replies that granted a token (a login, or a refresh).
    let grants: Int
    /// The recorded login, replayed with fresh tokens (`ReplayLogin`).
    let login: ReplayLogin
    private let served = LockedValue<[Int: Int]>([:])
    static let ignoredHeaders: Set<String> = ["content-length", "transfer-encoding", "connection", "date", "keep-alive", "content-encoding"]
    /// Request bodies up to this size are compared; larger ones match any recording's.
    static let comparedBodyLimit = 8 << 20

    init(recordings: [Recording]) {
        self.recordings = recordings
        login = ReplayLogin(recordings: recordings)
        grants = login.grants.count
    }

    /// Loads `--replay PATH`: a directory of douctl recordings, or a HAR file.
    convenience init(path: String) throws(SandboxError) {
        if path.hasSuffix(".har") || (try? FileIO.status(path))?.isDirectory == false {
            self.init(recordings: try HARFile.recordings(path: path))
        } else {
            self.init(recordings: try Self.load(directory: path))
        }
    }

    static func load(directory: String) throws(SandboxError) -> [Recording] {
        let names: [String]
        do { names = try FileIO.listDirectory(directory).filter { $0.hasSuffix(".json") }.sorted() } catch {
            throw SandboxError("cannot read the recordings in \(directory) (\(error))")
        }
        var recordings: [Recording] = []
        for name in names {
            guard let bytes = try? FileIO.readFile(directory + "/" + name), let file = try? JSONParser.parse(bytes),
                  let recording = recording(file, name: name) else {
                throw SandboxError("\(directory)/\(name) is not a douctl recording")
            }
            recordings.append(recording)
        }
        return recordings
    }

    /// One douctl recording document (`ExchangeRecorder`'s format).
    static func recording(_ file: JSON, name: String) -> Recording? {
        guard let request = file["request"], let response = file["response"],
              let method = request["method"]?.stringValue, let path = request["path"]?.stringValue,
              let status = response["status"]?.intValue else { return nil }
        let requestHeaders = pairs(request["headers"])
        let responseHeaders: [(String, String)] = pairs(response["headers"]).compactMap { pair in
            guard pair.value != ReplayDifference.redacted, !ignoredHeaders.contains(HTTPSyntax.asciiLowercased(pair.name)) else { return nil }
            return (pair.name, pair.value)
        }
        let contentType = requestHeaders.first { HTTPSyntax.asciiLowercased($0.name) == "content-type" }?.value
        return Recording(name: name, method: method.uppercased(), path: path, query: pairs(request["query"]),
                         headers: requestHeaders,
                         significant: (request["significant_headers"]?.arrayValue ?? []).compactMap { $0.stringValue.map(HTTPSyntax.asciiLowercased) },
                         body: requestBody(request["body"], contentType: contentType), rawBody: rawRequestBody(request["body"]), status: status,
                         responseHeaders: responseHeaders, responseBody: body(response["body"]))
    }

    private static func pairs(_ json: JSON?) -> [(name: String, value: String)] {
        (json?.arrayValue ?? []).compactMap { pair in
            guard let key = pair[0]?.stringValue else { return nil }
            return (key, pair[1]?.stringValue ?? "")
        }
    }

    var count: Int { recordings.count }

    /// The answer to `request` (its body already read: `body`). A HEAD is answered by a
    /// recorded HEAD, else by a recorded GET (the server sends its head only).
    func answer(_ request: HTTPServerRequest, body: ReplayBody, base: String = "", now: Double = 0) -> Outcome {
        if let refusal = login.refusal(request, body: body) { return .recorded(refusal) }
        if request.method == "GET", let path = login.jwksPath, request.path == path { return .recorded(Reply.json(200, login.jwks)) }
        if let approved = login.authorize(request) { return .recorded(approved) }
        switch login.checkGrant(request, body: body) {
        case .refuse(let reply): return .recorded(reply)
        case .answer(let index, let client, let nonce):
            let recording = recordings[index]
            let fresh = login.fresh(recording.responseBody, client: client, base: base, now: now, nonce: nonce)
            return .recorded(HTTPServerResponse(status: recording.status, headers: recording.responseHeaders, body: .bytes(fresh)))
        case .pass: break
        }
        let requestBody = body
        var differences = recordings.map { compare($0, request, body, method: request.sentMethod) }
        if request.sentMethod != request.method, !differences.contains(where: { $0.isEmpty }) {
            differences = recordings.map { compare($0, request, body, method: request.method) }
        }
        var matches = differences.indices.filter { differences[$0].isEmpty }
        // A token the replay issued is never answered with a recorded refusal of a bad one.
        if login.carriesIssuedToken(request), matches.contains(where: { ![401, 403].contains(recordings[$0].status) }) {
            matches.removeAll { [401, 403].contains(recordings[$0].status) }
        }
        guard let first = matches.first else { return Self.unmatched(request, closest: closest(differences)) }
        let turn = served.withLock { counts -> Int in
            let next = counts[first, default: 0]
            counts[first] = next + 1
            return next
        }
        let index = matches[min(turn, matches.count - 1)]
        let recording = recordings[index]
        var body = Self.isDiscovery(recording.path) && !base.isEmpty ? Self.rebased(recording.responseBody, to: base, algorithms: login.algorithms) : recording.responseBody
        if login.grants.contains(index) {
            body = login.fresh(body, client: ReplayLogin.client(request, body: requestBody), base: base, now: now)
        } else if login.deviceAuthorizations.contains(index) {
            body = login.freshDeviceAuthorization(body)
        }
        return .recorded(HTTPServerResponse(status: recording.status, headers: recording.responseHeaders, body: .bytes(body)))
    }

    /// How `recording` differs from the request; weighted so that the closest recording is the
    /// one with the lowest sum (a path or method counts for several query or body phrases).
    private func compare(_ recording: Recording, _ request: HTTPServerRequest, _ body: ReplayBody, method: String) -> [(phrase: String, weight: Int)] {
        var result: [(phrase: String, weight: Int)] = []
        if recording.method != method.uppercased() { result.append(("method: recorded \(recording.method), sent \(method)", 20)) }
        if recording.path != request.path {
            result.append(("path: recorded \(ReplayDifference.quoted(recording.path)), sent \(ReplayDifference.quoted(request.path))", 40))
        }
        for phrase in ReplayDifference.pairs(request.query, label: "query", recorded: recording.query) { result.append((phrase, 1)) }
        for phrase in ReplayDifference.body(recorded: recording.body, sent: body) { result.append((phrase, 1)) }
        for name in recording.significant {
            let want = recording.headers.first { HTTPSyntax.asciiLowercased($0.name) == name }?.value
            let have = request.headers[name]
            if want != have, want != ReplayDifference.redacted {
                result.append(("header \(name): recorded \(ReplayDifference.quoted(want ?? "none")), sent \(ReplayDifference.quoted(have ?? "none"))", 2))
            }
        }
        return result
    }

    private func closest(_ differences: [[(phrase: String, weight: Int)]]) -> (Recording, [String])? {
        var best: (index: Int, weight: Int)?
        for (index, list) in differences.enumerated() {
            let weight = list.reduce(0) { $0 + $1.weight }
            if best.map({ weight < $0.weight }) ?? true { best = (index, weight) }
        }
        guard let best else { return nil }
        return (recordings[best.index], differences[best.index].map(\.phrase))
    }

    /// The 501 for a request no recording matches: it names the request, the closest
    /// recording and how that one differs, as the log line does.
    static func unmatched(_ request: HTTPServerRequest, closest: (Recording, [String])?) -> Outcome {
        let sent = "\(request.sentMethod) \(shownTarget(request))"
        var members: [(String, JSON)] = [("msg", "no_recording"), ("code", 1001), ("request", .string(sent))]
        var line = "replay: no recording matches \(sent)"
        if let (recording, phrases) = closest {
            let shown = Array(phrases.prefix(ReplayDifference.listed))
            let more = phrases.count > shown.count ? ["and \(phrases.count - shown.count) more"] : []
            members.append(("closest", .string("\(recording.label) (\(recording.name))")))
            members.append(("differences", .array((shown + more).map { .string($0) })))
            line += "; closest: \(recording.label) (\(recording.name)): " + (shown + more).joined(separator: "; ")
        } else {
            line += "; the recording is empty"
        }
        return .unmatched(Reply.json(501, .object(JSONObject(members))), line: line)
    }

    /// Query names whose values the 501 reply and the log never show (RFC 6750 §2.3's
    /// `access_token` among them: a token the replay issued is a credential too).
    static let maskedNames: Set<String> = ["access_token", "refresh_token", "id_token", "id_token_hint", "client_secret", "password",
                                           "code", "code_verifier", "apikey", "api_key", "token"]

    /// The request-target as shown: credential query values replaced by `REDACTED`.
    static func shownTarget(_ request: HTTPServerRequest) -> String {
        guard request.query.contains(where: { maskedNames.contains($0.name) }) else { return request.target }
        let query = request.query.map { ($0.name, maskedNames.contains($0.name) ? ReplayDifference.redacted : $0.value) }
        return request.path + "?" + FormURLEncoded.serialize(query)
    }

    /// A recorded request body, as compared.
    static func requestBody(_ json: JSON?, contentType: String?) -> ReplayBody {
        guard let json, case .object = json else { return .empty }
        if let value = json["json"] { return .json(value) }
        if let fields = json["form"] { return .form(pairs(fields)) }
        if json["omitted"] != nil { return .any }
        let bytes = body(json)
        return ReplayBody.parse(bytes, contentType: contentType)
    }

    /// OIDC and OAuth metadata documents (RFC 8414, OpenID Connect Discovery 1.0).
    static func isDiscovery(_ path: String) -> Bool {
        let path = path.hasSuffix("/") ? String(path.dropLast()) : path
        return path.hasSuffix("/.well-known/openid-configuration") || path.hasSuffix("/.well-known/oauth-authorization-server")
            || path.hasSuffix("/.well-known/oauth-protected-resource")
    }

    /// A discovery document pointing at the replay: every string that begins with the
    /// recorded issuer's origin (the authorization, token, device, JWKS and userinfo
    /// endpoints) begins with `base` instead, so a client that discovers its endpoints
    /// talks to the replay, not the real server. An OpenID document (one naming a
    /// `jwks_uri`) lists the algorithms the replay signs ID tokens with (`algorithms`).
    static func rebased(_ document: [UInt8], to base: String, algorithms: [String] = ["ES256"]) -> [UInt8] {
        guard let json = try? JSONParser.parse(document),
              let issuer = json["issuer"]?.stringValue ?? json["resource"]?.stringValue else { return document }
        let origin = Self.origin(of: issuer)
        guard !origin.isEmpty else { return document }
        func rebase(_ value: JSON) -> JSON {
            switch value {
            case .string(let text) where text == origin || text.hasPrefix(origin + "/"):
                return .string(base + text.dropFirst(origin.count))
            case .array(let items): return .array(items.map(rebase))
            case .object(let object):
                var result = JSONObject()
                for (key, member) in object { result[key] = rebase(member) }
                return .object(result)
            default: return value
            }
        }
        var rebased = rebase(json)
        if case .object(var object) = rebased, object["jwks_uri"] != nil {
            object["id_token_signing_alg_values_supported"] = .array(algorithms.map(JSON.string))
            rebased = .object(object)
        }
        return rebased.serialized(.compact)
    }

    /// "https://login.example.com/realms/x" → "https://login.example.com".
    static func origin(of url: String) -> String {
        guard let scheme = url.firstRange(ofBytes: "://") else { return "" }
        let rest = url[scheme.upperBound...]
        let end = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        return String(url[..<end])
    }

    /// A recorded request body as bytes to send again: nil when it was left out.
    static func rawRequestBody(_ json: JSON?) -> [UInt8]? {
        guard let json, case .object = json else { return [] }
        if json["omitted"] != nil { return nil }
        if let fields = json["form"] { return FormURLEncoded.serialize(pairs(fields)).utf8.map { $0 } }
        return body(json)
    }

    /// A recorded response body (or request body bytes).
    static func body(_ json: JSON?) -> [UInt8] {
        guard let json, case .object = json else { return [] }
        if let text = json["text"]?.stringValue { return Array(text.utf8) }
        if let value = json["json"] { return value.serialized(.compact) }
        if let encoded = json["base64"]?.stringValue { return Base64.decode(encoded) ?? [] }
        return []
    }
}

/// One recorded exchange as `douctl sandbox --verify` sends it again to the live API.
public struct RecordedExchange: Sendable {
    /// Where it came from: "0002-GET-items.json", "session.har entry 3".
    public var name: String
    public var method: String
    public var path: String
    public var query: [(name: String, value: String)]
    public var headers: [(name: String, value: String)]
    /// The request body (nil: the recording left it out, so it cannot be sent again).
    public var body: [UInt8]?
    public var status: Int
    public var responseHeaders: [(String, String)]
    public var responseBody: [UInt8]
}

extension Sandbox {
    /// The exchanges of a recording directory or HAR file, in recorded order.
    public static func recordedExchanges(at path: String) throws(SandboxError) -> [RecordedExchange] {
        try ReplayStore(path: path).recordings.map { recording in
            RecordedExchange(name: recording.name, method: recording.method, path: recording.path, query: recording.query,
                             headers: recording.headers, body: recording.rawBody, status: recording.status,
                             responseHeaders: recording.responseHeaders, responseBody: recording.responseBody)
        }
    }
}
