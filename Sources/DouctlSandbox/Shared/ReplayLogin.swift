import DouctlJSON
import DouctlServer
import DouctlSystem

/// A replayed login for a new client (issue 41, part 3). A recorded token grant (a POST
/// whose 2xx reply holds `access_token`, at the top or under `data`) is answered with fresh
/// tokens of the recorded shape: the same fields, `token_type`, `expires_in` and `scope`,
/// new random `access_token` and `refresh_token` values in place of the recorded (scrubbed)
/// ones. Once a recording has a grant, the replay checks bearer tokens: those it issued
/// reach the recorded routes, any other gets the recorded 401 (or a plain 401 JSON when the
/// recording has none). A request without a credential matches as before. A recorded
/// `id_token` is replaced by one the replay signs (HS256) with a key of its own: `iss` the
/// replay's origin, `aud` the client, the recorded claims kept where the recording kept them;
/// that key is served at the recorded `jwks_uri` path.
final class ReplayLogin: Sendable {
    /// The indices of the recordings that grant a token.
    let grants: Set<Int>
    /// The recorded refusal of a bad token, if any.
    private let refusal: (status: Int, headers: [(String, String)], body: [UInt8])?
    private let issued = LockedValue<Set<String>>([])
    /// The replay's ID-token signing key (random per run) and its key id.
    let signingKey: [UInt8]
    let keyID: String
    /// The path of the recorded `jwks_uri`, where the replay serves its key.
    let jwksPath: String?
    static let tokenFields = ["access_token", "refresh_token"]

    init(recordings: [ReplayStore.Recording]) {
        var grants: Set<Int> = []
        for (index, recording) in recordings.enumerated() where Self.isGrant(recording) { grants.insert(index) }
        self.grants = grants
        refusal = recordings.first { $0.status == 401 }.map { ($0.status, $0.responseHeaders, $0.responseBody) }
        signingKey = (0..<32).map { _ in UInt8.random(in: 0...255) }
        keyID = "replay-" + Secrets.hex(byteCount: 4)
        jwksPath = recordings.lazy.compactMap { recording -> String? in
            guard ReplayStore.isDiscovery(recording.path), let json = try? JSONParser.parse(recording.responseBody),
                  let uri = json["jwks_uri"]?.stringValue else { return nil }
            let origin = ReplayStore.origin(of: uri)
            return origin.isEmpty ? nil : String(uri.dropFirst(origin.count))
        }.first
    }

    /// The JWKS document holding the replay's signing key (a symmetric key: the replay is a
    /// fake, and its clients are the ones checking its signatures).
    var jwks: JSON {
        ["keys": [["kty": "oct", "use": "sig", "alg": "HS256", "kid": .string(keyID), "k": .string(Base64.encode(signingKey, urlSafe: true))]]]
    }

    /// A JWT whose signature the served key verifies: `iss` is `base`, `aud` the client.
    func idToken(recorded: String, client: String?, base: String, now: Double, lifetime: Int) -> String {
        var claims = JSONObject()
        if let recordedClaims = Self.claims(recorded)?.objectValue {
            for (key, value) in recordedClaims { claims[key] = value }
        }
        if claims["sub"] == nil { claims["sub"] = "replay-user" }
        claims["iss"] = .string(base)
        if let client { claims["aud"] = .string(client) }
        claims["iat"] = .int(Int(now))
        claims["exp"] = .int(Int(now) + lifetime)
        let header: JSON = ["alg": "HS256", "typ": "JWT", "kid": .string(keyID)]
        let signed = Base64.encode(header.serialized(.compact), urlSafe: true) + "." + Base64.encode(JSON.object(claims).serialized(.compact), urlSafe: true)
        return signed + "." + Base64.encode(Self.hmacSHA256(key: signingKey, message: Array(signed.utf8)), urlSafe: true)
    }

    /// A JWT's payload, when the recording kept one (a scrubbed recording holds `REDACTED`).
    static func claims(_ token: String) -> JSON? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64.decode(String(parts[1])), let json = try? JSONParser.parse(payload),
              case .object = json else { return nil }
        return json
    }

    /// HMAC-SHA256 (RFC 2104).
    static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var block = key.count > 64 ? Digest.sha256(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        let inner = Digest.sha256(block.map { $0 ^ 0x36 } + message)
        return Digest.sha256(block.map { $0 ^ 0x5c } + inner)
    }

    /// The client a token request names: its `client_id` field, else its Basic user.
    static func client(_ request: HTTPServerRequest, body: ReplayBody) -> String? {
        if case .form(let fields) = body, let id = fields.first(where: { $0.name == "client_id" })?.value { return id }
        if case .json(let json) = body, let id = json["client_id"]?.stringValue { return id }
        guard let header = request.headers["Authorization"], HTTPSyntax.asciiLowercased(String(header.prefix(6))) == "basic ",
              let decoded = Base64.decode(String(HTTPSyntax.trimmingWhitespace(header.dropFirst(6)))) else { return nil }
        let pair = String(decoding: decoded, as: UTF8.self)
        let user = pair.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return FormURLEncoded.parse("u=" + user).first?.value ?? user
    }

    static func isGrant(_ recording: ReplayStore.Recording) -> Bool {
        guard (200..<300).contains(recording.status), let json = try? JSONParser.parse(recording.responseBody) else { return false }
        return json["access_token"] != nil || json["data"]?["access_token"] != nil
    }

    /// The recorded grant `body` with fresh token values, which the replay then accepts.
    func fresh(_ body: [UInt8], client: String? = nil, base: String = "", now: Double = 0) -> [UInt8] {
        guard case .object(let object)? = try? JSONParser.parse(body) else { return body }
        let lifetime = object["expires_in"]?.intValue ?? Int(object["expires_in"]?.stringValue ?? "") ?? 3600
        var issuedHere: [String] = []
        func renew(_ object: JSONObject) -> JSONObject {
            var result = JSONObject()
            for (key, member) in object {
                if Self.tokenFields.contains(key), member.stringValue != nil {
                    let token = Secrets.hex(byteCount: 20)
                    if key == "access_token" { issuedHere.append(token) }
                    result[key] = .string(token)
                } else if key == "id_token", let recorded = member.stringValue {
                    result[key] = .string(idToken(recorded: recorded, client: client, base: base, now: now, lifetime: lifetime))
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

    /// A token the sandbox's own OAuth server issued for a login step the recording lacks:
    /// the replay accepts it as one of its own.
    func noteIssued(_ response: HTTPServerResponse) {
        guard (200..<300).contains(response.status), case .bytes(let bytes) = response.body,
              let json = try? JSONParser.parse(bytes),
              let token = json["access_token"]?.stringValue ?? json["data"]?["access_token"]?.stringValue else { return }
        issued.withLock { _ = $0.insert(token) }
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
