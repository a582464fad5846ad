import DouctlJSON
import DouctlServer
import DouctlSystem

/// `douctl sandbox --replay DIR` (or `--mock DIR`): answers from the exchanges `--record DIR`
/// wrote, so a real session becomes a fake server. A request matches a recording with the
/// same method, path and query (secret and per-request parameters — tokens, signatures,
/// timestamps — ignored); several matches are served in recorded order, the last one
/// again when they run out. Tokens are not checked. Anything else is a Douban-style 404
/// that names the request, except a login step no recording answers: the sandbox serves
/// that itself (`SandboxCore`), so a login works against any recording.
final class ReplayStore: Sendable {
    struct Recording: Sendable {
        var method: String
        var path: String
        var query: [String]
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]
    }

    private let recordings: [Recording]
    /// Recorded replies that granted a token (a login, or a refresh).
    let grants: Int
    private let served = LockedValue<[Int: Int]>([:])
    static let ignoredParameters: Set<String> = ["access_token", "refresh_token", "client_secret", "password", "code", "code_verifier", "_sig", "_ts", "sign", "apikey"]
    static let ignoredHeaders: Set<String> = ["content-length", "transfer-encoding", "connection", "date", "keep-alive", "content-encoding"]

    init(directory: String) throws(SandboxError) {
        let names: [String]
        do { names = try FileIO.listDirectory(directory).filter { $0.hasSuffix(".json") }.sorted() } catch {
            throw SandboxError("cannot read the recordings in \(directory) (\(error))")
        }
        var recordings: [Recording] = []
        for name in names {
            guard let bytes = try? FileIO.readFile(directory + "/" + name), let file = try? JSONParser.parse(bytes),
                  let request = file["request"], let response = file["response"],
                  let method = request["method"]?.stringValue, let path = request["path"]?.stringValue,
                  let status = response["status"]?.intValue else {
                throw SandboxError("\(directory)/\(name) is not a douctl recording")
            }
            let query = (request["query"]?.arrayValue ?? []).compactMap { pair -> String? in
                guard let key = pair[0]?.stringValue, !Self.ignoredParameters.contains(key) else { return nil }
                return key + "=" + (pair[1]?.stringValue ?? "")
            }.sorted()
            let headers: [(String, String)] = (response["headers"]?.arrayValue ?? []).compactMap { pair in
                guard let key = pair[0]?.stringValue, let value = pair[1]?.stringValue, value != "REDACTED",
                      !Self.ignoredHeaders.contains(key.lowercased()) else { return nil }
                return (key, value)
            }
            recordings.append(Recording(method: method, path: path, query: query, status: Int(status), headers: headers, body: Self.body(response["body"])))
        }
        self.recordings = recordings
        grants = recordings.filter { recording in
            guard (200..<300).contains(recording.status), let json = try? JSONParser.parse(recording.body) else { return false }
            return json["access_token"] != nil || json["data"]?["access_token"] != nil
        }.count
    }

    var count: Int { recordings.count }

    /// The recorded reply to `request`, or nil when there is none. A HEAD is answered by a
    /// recorded HEAD, else by a recorded GET (the server sends its head only).
    func answer(_ request: HTTPServerRequest) -> HTTPServerResponse? {
        let query = request.query.filter { !Self.ignoredParameters.contains($0.name) }.map { "\($0.name)=\($0.value)" }.sorted()
        func matching(_ method: String) -> [Int] {
            recordings.indices.filter {
                recordings[$0].method == method.uppercased() && recordings[$0].path == request.path && recordings[$0].query == query
            }
        }
        var matches = matching(request.sentMethod)
        if matches.isEmpty && request.sentMethod != request.method { matches = matching(request.method) }
        guard let first = matches.first else { return nil }
        let turn = served.withLock { counts -> Int in
            let next = counts[first, default: 0]
            counts[first] = next + 1
            return next
        }
        let recording = recordings[matches[min(turn, matches.count - 1)]]
        return HTTPServerResponse(status: recording.status, headers: recording.headers, body: .bytes(recording.body))
    }

    /// The answer to a request no recording matches: a 404 naming it.
    static func notRecorded(_ request: HTTPServerRequest) -> HTTPServerResponse {
        Reply.json(404, .object(JSONObject([
            ("msg", "no_recording"), ("code", 1001), ("request", .string("\(request.method) \(request.path)")),
        ])))
    }

    private static func body(_ json: JSON?) -> [UInt8] {
        guard let json, case .object = json else { return [] }
        if let value = json["json"] { return value.serialized(.compact) }
        if let text = json["text"]?.stringValue { return Array(text.utf8) }
        if let encoded = json["base64"]?.stringValue { return Base64.decode(encoded) ?? [] }
        return []
    }
}
