import DouctlJSON
import DouctlServer
import DouctlSystem

/// A replayed login for a new client (issue 41, part 3). A recorded token grant (a POST
/// whose 2xx reply holds `access_token`, at the top or under `data`) is answered with fresh
/// tokens of the recorded shape: the same fields, `token_type`, `expires_in` and `scope`,
/// new random `access_token` and `refresh_token` values in place of the recorded (scrubbed)
/// ones. Once a recording has a grant, the replay checks access tokens (the `Authorization:
/// Bearer` header, an `access_token` query or form field): those it issued reach the
/// recorded routes, any other gets the recorded 401 (or a plain 401 JSON when the recording
/// has none). A request without a credential matches as before.
///
/// Around the grant (`ReplayLogin+Flows.swift`): the recorded authorization endpoint approves
/// at once with a code of the replay's own, which alone is exchanged (once, PKCE checked);
/// a refresh grant is answered only for a refresh token the replay issued; a recorded device
/// authorization is answered with fresh codes, polled `authorization_pending` once, then
/// tokens. A recorded `id_token` is replaced by one signed with the recorded provider's
/// algorithm (`algorithm`): RS256 with a per-run 2048-bit RSA key made when first needed, or
/// ES256 with a per-run P-256 key (`ReplayIDToken.swift`); the keys in use are served as JWKs
/// at the recorded `jwks_uri` path, told apart by `kid`.
final class ReplayLogin: Sendable {
    /// The indices of the recordings that grant a token.
    let grants: Set<Int>
    /// The recorded refusal of a bad token, if any.
    private let refusal: (status: Int, headers: [(String, String)], body: [UInt8])?
    /// The recorded refusal of a refresh grant, if any.
    let refreshRefusal: (status: Int, headers: [(String, String)], body: [UInt8])?
    private let issued = LockedValue<Set<String>>([])
    let refreshTokens = LockedValue<Set<String>>([])
    /// Codes the replay's authorization endpoint issued, by code.
    let codes = LockedValue<[String: Authorization]>([:])
    /// Device codes the replay issued, with how often each was polled.
    let deviceCodes = LockedValue<[String: Int]>([:])
    /// The replay's ID-token signing keys (random per run) and their key ids: P-256 for
    /// ES256, RSA for RS256 (made on first use: a 2048-bit key takes a moment).
    let signingKey: P256.PrivateKey
    let keyID: String
    private let rsaKey = LockedValue<RSA.PrivateKey?>(nil)
    var rsaKeyID: String { keyID + "-rs" }
    /// The algorithm a recorded ID token whose header was scrubbed is re-signed with, and
    /// every algorithm the replay signs with (what discovery advertises, whose keys the JWKS
    /// serves).
    let algorithm: String
    let algorithms: [String]
    static let supportedAlgorithms = ["RS256", "ES256"]
    /// The path of the recorded `jwks_uri`, where the replay serves its key.
    let jwksPath: String?
    /// The path of the recorded `authorization_endpoint` (else of a recorded request with a
    /// `response_type` query), which the replay answers itself.
    let authorizePath: String?
    /// The recorded issuer's path ("/o" for "https://login.example/o"): `iss` is the replay's
    /// origin followed by it, as its rebased discovery document says.
    let issuerPath: String
    /// The `sub` of a recorded userinfo reply: an ID token whose recorded claims were
    /// scrubbed names the same subject as the userinfo endpoint does.
    let subject: String?
    /// Redirect URIs the recording used (beside loopback ones, the only ones accepted).
    let recordedRedirects: Set<String>
    /// The indices of recorded 2xx replies holding a `device_code`.
    let deviceAuthorizations: Set<Int>
    /// Where the recorded grants were made (token endpoint paths).
    let grantPaths: Set<String>
    private let recordings: [ReplayStore.Recording]
    static let tokenFields = ["access_token", "refresh_token"]

    /// What the authorization endpoint was asked, kept until the code is exchanged.
    struct Authorization: Sendable {
        var client: String
        var redirectURI: String
        var nonce: String?
        var challenge: String?
        var challengeMethod: String
    }

    init(recordings: [ReplayStore.Recording]) {
        self.recordings = recordings
        var grants: Set<Int> = []
        for (index, recording) in recordings.enumerated() where Self.isGrant(recording) { grants.insert(index) }
        self.grants = grants
        grantPaths = Set(grants.map { recordings[$0].path })
        deviceAuthorizations = Set(recordings.indices.filter { Self.isDeviceAuthorization(recordings[$0]) })
        refusal = recordings.first { $0.status == 401 }.map { ($0.status, $0.responseHeaders, $0.responseBody) }
        refreshRefusal = recordings.first { recording in
            (400..<500).contains(recording.status) && Self.field("grant_type", in: recording.body) == "refresh_token"
        }.map { ($0.status, $0.responseHeaders, $0.responseBody) }
        signingKey = P256.PrivateKey.generate()
        keyID = "replay-" + Secrets.hex(byteCount: 4)
        let discovery = recordings.lazy.compactMap { recording -> JSON? in
            guard ReplayStore.isDiscovery(recording.path), let json = try? JSONParser.parse(recording.responseBody) else { return nil }
            return json
        }
        func path(_ uri: String?) -> String? {
            guard let uri else { return nil }
            let origin = ReplayStore.origin(of: uri)
            guard !origin.isEmpty else { return nil }
            let rest = uri.dropFirst(origin.count)
            return String(rest.prefix { $0 != "?" && $0 != "#" })
        }
        jwksPath = discovery.compactMap { path($0["jwks_uri"]?.stringValue) }.first
        issuerPath = discovery.compactMap { path($0["issuer"]?.stringValue) }.first ?? ""
        authorizePath = discovery.compactMap { path($0["authorization_endpoint"]?.stringValue) }.first
            ?? recordings.first { recording in recording.method == "GET" && recording.query.contains { $0.name == "response_type" } }?.path
        let userinfoPath = discovery.compactMap { path($0["userinfo_endpoint"]?.stringValue) }.first
        subject = recordings.lazy.compactMap { recording -> String? in
            guard recording.path == userinfoPath, (200..<300).contains(recording.status),
                  let json = try? JSONParser.parse(recording.responseBody) else { return nil }
            return json["sub"]?.stringValue ?? json["sub"]?.intValue.map(String.init)
        }.first
        var redirects: Set<String> = []
        for recording in recordings {
            if let uri = recording.query.first(where: { $0.name == "redirect_uri" })?.value { redirects.insert(uri) }
            if let uri = Self.field("redirect_uri", in: recording.body) { redirects.insert(uri) }
        }
        recordedRedirects = redirects
        let jwksPath = self.jwksPath
        let recordedJWKS = recordings.lazy.compactMap { recording -> JSON? in
            guard recording.path == jwksPath, (200..<300).contains(recording.status) else { return nil }
            return try? JSONParser.parse(recording.responseBody)
        }.first
        let headers = grants.sorted().compactMap { index -> String? in
            guard let json = try? JSONParser.parse(recordings[index].responseBody),
                  let token = json["id_token"]?.stringValue ?? json["data"]?["id_token"]?.stringValue else { return nil }
            return Self.headerAlgorithm(token)
        }
        let chosen = Self.algorithm(headers: headers, jwks: recordedJWKS, discovery: discovery.first)
        algorithm = chosen
        algorithms = Self.supportedAlgorithms.filter { $0 == chosen || headers.contains($0) }
    }

    /// The algorithm the recorded provider signed ID tokens with: a recorded token's header
    /// (when the recording kept one), else the recorded JWKS's keys (their `alg`, else RSA →
    /// RS256, EC P-256 → ES256), else the first of discovery's
    /// `id_token_signing_alg_values_supported` the replay can sign with; ES256 otherwise.
    static func algorithm(headers: [String], jwks: JSON?, discovery: JSON?) -> String {
        if let recorded = headers.first { return recorded }
        for key in jwks?["keys"]?.arrayValue ?? [] where key["use"]?.stringValue ?? "sig" == "sig" {
            if let alg = key["alg"]?.stringValue, supportedAlgorithms.contains(alg) { return alg }
            if key["alg"] == nil, key["kty"] == "RSA" { return "RS256" }
            if key["alg"] == nil, key["kty"] == "EC", key["crv"] == "P-256" { return "ES256" }
        }
        let advertised = discovery?["id_token_signing_alg_values_supported"]?.arrayValue?.compactMap(\.stringValue) ?? []
        return advertised.first { supportedAlgorithms.contains($0) } ?? "ES256"
    }

    /// A recorded JWT's header `alg`, when the recording kept the token and the replay can
    /// sign with that algorithm.
    static func headerAlgorithm(_ token: String) -> String? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Base64.decode(String(parts[0])), let json = try? JSONParser.parse(header),
              let alg = json["alg"]?.stringValue, supportedAlgorithms.contains(alg) else { return nil }
        return alg
    }

    /// The RSA key, made on first use (`RSA.PrivateKey.generate`), or the one `testRSAKey`
    /// holds.
    var rsa: RSA.PrivateKey {
        rsaKey.withLock { key in
            if let key { return key }
            let made = Self.testRSAKey.withLock { $0 } ?? RSA.PrivateKey.generate()
            key = made
            return made
        }
    }

    /// A fixed key tests may set, so a debug build need not make 2048-bit primes per test.
    static let testRSAKey = LockedValue<RSA.PrivateKey?>(nil)

    /// The JWKS document holding the replay's public keys (RFC 7517; RFC 7518 §6.2, §6.3),
    /// one per algorithm it signs with.
    var jwks: JSON {
        var keys: [JSON] = []
        if algorithms.contains("RS256") {
            let key = rsa
            keys.append(["kty": "RSA", "n": .string(Base64.encode(key.modulus, urlSafe: true)), "e": .string(Base64.encode(key.publicExponent, urlSafe: true)),
                         "kid": .string(rsaKeyID), "alg": "RS256", "use": "sig"])
        }
        if algorithms.contains("ES256") {
            keys.append(["kty": "EC", "crv": "P-256", "x": .string(Base64.encode(signingKey.x, urlSafe: true)),
                         "y": .string(Base64.encode(signingKey.y, urlSafe: true)), "kid": .string(keyID), "alg": "ES256", "use": "sig"])
        }
        return ["keys": .array(keys)]
    }

    /// `input` signed with the recorded token's algorithm (else the recording's): the
    /// header's `alg` and `kid`, and the signature.
    func signer(for recorded: String) -> ReplayIDToken.Signer {
        if (Self.headerAlgorithm(recorded) ?? algorithm) == "RS256" {
            let key = rsa
            return ReplayIDToken.Signer(algorithm: "RS256", keyID: rsaKeyID) { key.sign($0) }
        }
        let key = signingKey
        return ReplayIDToken.Signer(algorithm: "ES256", keyID: keyID) { key.sign($0) }
    }

    /// A JWT's payload, when the recording kept one (a scrubbed recording holds `REDACTED`).
    static func claims(_ token: String) -> JSON? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64.decode(String(parts[1])), let json = try? JSONParser.parse(payload),
              case .object = json else { return nil }
        return json
    }

    /// The client a token request names: its `client_id` field, else its Basic user.
    static func client(_ request: HTTPServerRequest, body: ReplayBody) -> String? {
        if let id = field("client_id", in: body) { return id }
        guard let header = request.headers["Authorization"], HTTPSyntax.asciiLowercased(String(header.prefix(6))) == "basic ",
              let decoded = Base64.decode(String(HTTPSyntax.trimmingWhitespace(header.dropFirst(6)))) else { return nil }
        let pair = String(decoding: decoded, as: UTF8.self)
        let user = pair.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return FormURLEncoded.parse("u=" + user).first?.value ?? user
    }

    /// A field of a form or JSON body.
    static func field(_ name: String, in body: ReplayBody) -> String? {
        switch body {
        case .form(let fields): return fields.first { $0.name == name }?.value
        case .json(let json): return json[name]?.stringValue
        default: return nil
        }
    }

    static func isGrant(_ recording: ReplayStore.Recording) -> Bool {
        guard (200..<300).contains(recording.status), let json = try? JSONParser.parse(recording.responseBody) else { return false }
        return json["access_token"] != nil || json["data"]?["access_token"] != nil
    }

    static func isDeviceAuthorization(_ recording: ReplayStore.Recording) -> Bool {
        guard recording.method == "POST", (200..<300).contains(recording.status),
              let json = try? JSONParser.parse(recording.responseBody) else { return false }
        return json["device_code"] != nil && json["user_code"] != nil
    }

    /// The recorded grant `body` with fresh token values, which the replay then accepts.
    /// `nonce` is the authorization request's, carried into the ID token.
    func fresh(_ body: [UInt8], client: String? = nil, base: String = "", now: Double = 0, nonce: String? = nil) -> [UInt8] {
        guard case .object(let object)? = try? JSONParser.parse(body) else { return body }
        let lifetime = object["expires_in"]?.intValue ?? Int(object["expires_in"]?.stringValue ?? "") ?? 3600
        var issuedHere: [String] = []
        var refreshedHere: [String] = []
        func renew(_ object: JSONObject) -> JSONObject {
            var result = JSONObject()
            let access = Secrets.hex(byteCount: 20)
            for (key, member) in object {
                if key == "access_token", member.stringValue != nil {
                    issuedHere.append(access)
                    result[key] = .string(access)
                } else if key == "refresh_token", member.stringValue != nil {
                    let token = Secrets.hex(byteCount: 20)
                    refreshedHere.append(token)
                    result[key] = .string(token)
                } else if key == "id_token", let recorded = member.stringValue {
                    let token = ReplayIDToken(recorded: recorded, subject: subject, issuer: base + issuerPath, audience: client, now: Int(now),
                                              lifetime: lifetime, nonce: nonce, accessToken: object["access_token"] != nil ? access : nil)
                    result[key] = .string(token.signed(with: signer(for: recorded)))
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
        refreshTokens.withLock { $0.formUnion(refreshedHere) }
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

    /// The 401 for an access token the replay did not issue; nil when the request carries
    /// none, carries one it issued, or the recording has no login to issue one. The token is
    /// taken where RFC 6750 §2 lets a client send it: the `Authorization: Bearer` header, an
    /// `access_token` form field, an `access_token` query parameter.
    func refusal(_ request: HTTPServerRequest, body: ReplayBody = .empty) -> HTTPServerResponse? {
        guard !grants.isEmpty else { return nil }
        var token = Self.bearer(request.headers["Authorization"])
        if token == nil, !grantPaths.contains(request.path) {
            token = request.query.first { $0.name == "access_token" }?.value ?? Self.field("access_token", in: body)
        }
        guard let token, !token.isEmpty else { return nil }
        if issued.withLock({ $0.contains(token) }) { return nil }
        if let refusal { return HTTPServerResponse(status: refusal.status, headers: refusal.headers, body: .bytes(refusal.body)) }
        return Reply.json(401, ["error": "invalid_token", "error_description": "this token was not issued by the replay"],
                          headers: [("WWW-Authenticate", #"Bearer error="invalid_token""#)])
    }

    /// Whether the request's bearer token is one the replay issued.
    func carriesIssuedToken(_ request: HTTPServerRequest) -> Bool {
        guard !grants.isEmpty, let token = Self.bearer(request.headers["Authorization"]) ?? request.query.first(where: { $0.name == "access_token" })?.value
        else { return false }
        return issued.withLock { $0.contains(token) }
    }

    /// "Bearer abc" → "abc" (the scheme in any case).
    static func bearer(_ header: String?) -> String? {
        guard let header, header.utf8.count > 7, HTTPSyntax.asciiLowercased(String(header.prefix(7))) == "bearer " else { return nil }
        let token = String(HTTPSyntax.trimmingWhitespace(header.dropFirst(7)))
        return token.isEmpty ? nil : token
    }

    /// The recorded 2xx grant at `path` to answer a `grantType` grant with: one recorded for
    /// that grant type, else the last one at that path.
    func grantRecording(path: String, grantType: String) -> Int? {
        let here = grants.sorted().filter { recordings[$0].path == path }
        return here.first { Self.field("grant_type", in: recordings[$0].body) == grantType } ?? here.last
    }
}
