import DouctlJSON
import DouctlServer
import DouctlSystem

/// A replayed login for a new client (issue 41, part 3). A recorded token grant (a POST
/// whose 2xx reply holds `access_token`, at the top or under `data`) is answered with fresh
/// tokens of the recorded shape: the same fields, `token_type`, `expires_in` and `scope`,
/// new random `access_token` and `refresh_token` values in place of the recorded (scrubbed)
/// ones. Once a recording has a grant, the replay checks bearer tokens: those it issued
/// reach the recorded routes, any other gets the recorded 401 (or a plain 401 JSON when the
/// recording has none). A request without a credential matches as before.
final class ReplayLogin: Sendable {
    /// The indices of the recordings that grant a token.
    let grants: Set<Int>
    /// The recorded refusal of a bad token, if any.
    private let refusal: (status: Int, headers: [(String, String)], body: [UInt8])?
    private let issued = LockedValue<Set<String>>([])
    static let tokenFields = ["access_token", "refresh_token"]

    init(recordings: [ReplayStore.Recording]) {
        var grants: Set<Int> = []
        for (index, recording) in recordings.enumerated() where Self.isGrant(recording) { grants.insert(index) }
        self.grants = grants
        refusal = recordings.first { $0.status == 401 }.map { ($0.status, $0.responseHeaders, $0.responseBody) }
    }

    static func isGrant(_ recording: ReplayStore.Recording) -> Bool {
        guard (200..<300).contains(recording.status), let json = try? JSONParser.parse(recording.responseBody) else { return false }
        return json["access_token"] != nil || json["data"]?["access_token"] != nil
    }

    /// The recorded grant `body` with fresh token values, which the replay then accepts.
    func fresh(_ body: [UInt8]) -> [UInt8] {
        guard case .object(let object)? = try? JSONParser.parse(body) else { return body }
        var issuedHere: [String] = []
        func renew(_ object: JSONObject) -> JSONObject {
            var result = JSONObject()
            for (key, member) in object {
                if Self.tokenFields.contains(key), member.stringValue != nil {
                    let token = Secrets.hex(byteCount: 20)
                    if key == "access_token" { issuedHere.append(token) }
                    result[key] = .string(token)
                } else if key == "data", case .object(let inner) = member, inner["access_token"] != nil {
                    result[key] = .object(renew(inner))
                } else {
                    result[key] = member
                }
            }
            return result
        }
        let renewed = renew(object)
        issued.withLock { $0.formUnion(issuedHere) }
        return JSON.object(renewed).serialized(.compact)
    }

    /// The 401 for a bearer token the replay did not issue; nil when the request carries
    /// none, carries one it issued, or the recording has no login to issue one.
    func refusal(_ request: HTTPServerRequest) -> HTTPServerResponse? {
        guard !grants.isEmpty, let token = Self.bearer(request.headers["Authorization"]) else { return nil }
        if issued.withLock({ $0.contains(token) }) { return nil }
        if let refusal { return HTTPServerResponse(status: refusal.status, headers: refusal.headers, body: .bytes(refusal.body)) }
        return Reply.json(401, ["error": "invalid_token", "error_description": "this token was not issued by the replay"],
                          headers: [("WWW-Authenticate", #"Bearer error="invalid_token""#)])
    }

    /// "Bearer abc" → "abc" (the scheme in any case).
    static func bearer(_ header: String?) -> String? {
        guard let header, header.utf8.count > 7, HTTPSyntax.asciiLowercased(String(header.prefix(7))) == "bearer " else { return nil }
        let token = String(HTTPSyntax.trimmingWhitespace(header.dropFirst(7)))
        return token.isEmpty ? nil : token
    }
}
