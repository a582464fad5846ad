import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// A token endpoint's successful answer, in Douban's and RFC 6749's field names.
public struct TokenGrant: Sendable, Equatable {
    public var accessToken: String
    public var refreshToken: String?
    /// Lifetime in seconds (Douban sends a number; Coding a string).
    public var expiresIn: Double?
    public var scopes: [String]?
    /// Douban's `douban_user_id` (a string) and `douban_user_name`.
    public var userID: String?
    public var userName: String?
    /// RFC 6749 §5.1 `token_type` as sent (nil when absent: Douban sends none).
    public var tokenType: String?
    /// The `sub` of the OpenID Connect ID token that came with the grant: who the provider
    /// says logged in (OIDC Core §2). Read, not verified: TLS to the token endpoint vouches.
    public var subject: String?
    /// The ID token's claims (its payload), when the grant carried one.
    public var idTokenClaims: JSON?

    public init(accessToken: String, refreshToken: String? = nil, expiresIn: Double? = nil, scopes: [String]? = nil, userID: String? = nil, userName: String? = nil) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresIn = expiresIn
        self.scopes = scopes
        self.userID = userID
        self.userName = userName
    }

    init?(json: JSON) {
        guard let token = json["access_token"]?.stringValue, !token.isEmpty else { return nil }
        accessToken = token
        refreshToken = json["refresh_token"]?.stringValue
        // Douban sends a number, Coding a string; anything not a sane lifetime (≤ 10 years)
        // is treated as "no expiry given" rather than trusted.
        expiresIn = json["expires_in"].flatMap { $0.doubleValue ?? $0.stringValue.flatMap(Double.init) }
            .flatMap { $0.isFinite && $0 >= 0 && $0 <= 10 * 365 * 86400 ? $0 : nil }
        scopes = json["scope"]?.stringValue.map { $0.split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init) }
        userID = json["douban_user_id"]?.scalarText ?? json["user_id"]?.scalarText
        userName = json["douban_user_name"]?.stringValue ?? json["user_name"]?.stringValue
        tokenType = json["token_type"]?.stringValue
        idTokenClaims = json["id_token"]?.stringValue.flatMap(Self.idTokenClaims)
        subject = idTokenClaims?["sub"]?.scalarText
    }

    /// The `sub` claim of a JWT's payload (the second dot-separated part, base64url JSON).
    static func idTokenSubject(_ token: String) -> String? {
        idTokenClaims(token)?["sub"]?.scalarText
    }

    /// A JWT's payload: the second dot-separated part, base64url JSON, an object.
    static func idTokenClaims(_ token: String) -> JSON? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64.decode(String(parts[1])),
              let claims = try? JSONParser.parse(payload), claims.objectValue != nil else { return nil }
        return claims
    }

    /// Why the ID token of a login that asked for the `openid` scope must be refused, or nil
    /// (OpenID Connect Core §3.1.3.7): it must be there (unless the scopes granted leave
    /// openid out), name the issuer the profile's endpoints came from (`iss`, where known),
    /// be meant for this client (`aud`), not have expired (`exp`, a minute of clock skew
    /// allowed) and carry the nonce the authorization request sent. TLS to the token
    /// endpoint stands in for the signature (§3.1.3.7 point 6).
    public func idTokenProblem(issuer: String?, clientID: String?, nonce: String?, now: Double) -> String? {
        guard let claims = idTokenClaims else {
            if let scopes, !scopes.contains("openid") { return nil }
            return "the openid scope was asked for, but the token endpoint sent no readable ID token"
        }
        let iss = claims["iss"]?.stringValue
        if let issuer, iss != issuer {
            return "the ID token's issuer is '\(TerminalText.escaped(iss ?? "(none)"))', not the profile's issuer '\(TerminalText.escaped(issuer))'"
        }
        if let clientID {
            let audiences = claims["aud"]?.arrayValue?.compactMap(\.stringValue) ?? claims["aud"]?.stringValue.map { [$0] } ?? []
            if !audiences.contains(clientID) {
                return "the ID token is meant for '\(TerminalText.escaped(audiences.joined(separator: ", ")))', not this client '\(TerminalText.escaped(clientID))'"
            }
            // §3.1.3.7 points 4 and 5: a token for several audiences must say which one it
            // was issued to (azp), and that must be this client; an azp naming another
            // client is that client's token, whatever its aud lists.
            let azp = claims["azp"]?.stringValue
            if let azp, azp != clientID {
                return "the ID token was issued to client '\(TerminalText.escaped(azp))' (azp), not this client '\(TerminalText.escaped(clientID))'"
            }
            if audiences.count > 1, azp == nil {
                return "the ID token names several audiences (\(TerminalText.escaped(audiences.joined(separator: ", ")))) and no azp saying it was issued to this client"
            }
        }
        guard let exp = claims["exp"]?.doubleValue else { return "the ID token has no exp" }
        if exp + 60 <= now { return "the ID token expired at \(Timestamp.rfc3339(exp))" }
        if claims["sub"]?.scalarText == nil { return "the ID token names no subject (sub, OIDC Core §2)" }
        if let nonce, claims["nonce"]?.stringValue != nonce {
            return "the ID token's nonce is not the one this login sent (a replayed or injected token)"
        }
        return nil
    }

    /// Why the ID token a refresh answered with must be refused, or nil (OpenID Connect
    /// Core §12.2): none need come, but one that does is checked as a login's is (`iss`,
    /// `aud` and `azp`, `exp`, `sub`), its issuer the one the login's ID token named, its
    /// subject the login's (`identityChange`). No nonce: a refresh sends none.
    public func refreshedIDTokenProblem(issuer: String?, clientID: String?, previous: Credential, now: Double) -> String? {
        guard idTokenClaims != nil else { return nil }
        let knownIssuer = issuer ?? previous.extra[Self.issuerKey]?.stringValue
        return idTokenProblem(issuer: knownIssuer, clientID: clientID, nonce: nil, now: now)
    }

    /// Why this grant must not be stored, or nil. A client must not use a token type it does
    /// not understand (RFC 6749 §7.1): douctl sends Bearer tokens (RFC 6750), so a `mac` or
    /// `DPoP` token would be sent as what it is not. Tokens are VSCHARs (RFC 6749 A.12, A.17):
    /// a CR, LF or any other control byte would break every later request's header.
    public var problem: String? {
        if let tokenType, HTTPSyntax.lowercased(Substring(tokenType)) != "bearer" {
            return "token_type '\(TerminalText.escaped(tokenType))' is not one douctl can send (only Bearer, RFC 6749 §7.1)"
        }
        if !Self.isVisibleASCII(accessToken) { return "the access_token holds bytes no header can carry (RFC 6749 A.12)" }
        if let refreshToken, !Self.isVisibleASCII(refreshToken) { return "the refresh_token holds bytes outside RFC 6749's VSCHAR" }
        return nil
    }

    private static func isVisibleASCII(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 >= 0x20 && $0 <= 0x7E }
    }

    /// The credential to store, keeping what the grant does not say from `previous`. A
    /// refresh keeps the login's user name: the login asked the API whose the token is (the
    /// handle, ahbei), where a token endpoint may give a display name (Douban's
    /// douban_user_name, 阿北), and a pinned profile (`expect_user`) compares names.
    public func credential(now: Double, requestedScopes: [String], previous: Credential? = nil) -> Credential {
        Credential(
            accessToken: accessToken,
            refreshToken: refreshToken ?? previous?.refreshToken,
            expiresAt: expiresIn.map { now + $0 },
            scopes: scopes ?? previous?.scopes ?? requestedScopes,
            userID: userID ?? previous?.userID,
            userName: previous?.userName ?? userName,
            extra: extra(previous: previous))
    }

    /// The previous login's extra keys, with the ID token's `sub` when this grant has one.
    private func extra(previous: Credential?) -> JSONObject {
        var extra = previous?.extra ?? JSONObject()
        if let subject { extra[Self.subjectKey] = .string(subject) }
        if let issuer = idTokenClaims?["iss"]?.stringValue { extra[Self.issuerKey] = .string(issuer) }
        return extra
    }

    /// Where a login's ID-token issuer is kept among a credential's extra keys: a refresh's
    /// ID token must name the same one (OIDC Core §12.2).
    public static let issuerKey = "iss"

    /// Where a login's ID-token subject is kept among a credential's extra keys.
    public static let subjectKey = "sub"

    /// Why a refresh's answer cannot belong to the login `previous`, or nil: a provider that
    /// names the user (Douban's `douban_user_id`, an ID token's `sub`) must name the same one
    /// (OpenID Connect Core §12.2), or the profile would silently become another account.
    public func identityChange(from previous: Credential) -> String? {
        if let userID, let known = previous.userID, userID != known {
            return "user '\(TerminalText.escaped(userID))', where this login is '\(TerminalText.escaped(known))'"
        }
        if let subject, let known = previous.extra[Self.subjectKey]?.scalarText, subject != known {
            return "subject '\(TerminalText.escaped(subject))', where this login is '\(TerminalText.escaped(known))'"
        }
        return nil
    }
}

/// An error answer from a token endpoint: RFC 6749 `error` or Douban's `msg`/`code`.
public struct TokenEndpointError: Sendable, Equatable {
    public var status: Int
    /// "invalid_grant", "authorization_pending", or Douban's "invalid_refresh_token".
    public var error: String
    public var code: String?
    public var description: String?

    var summary: String {
        var parts = [error]
        if let code { parts.append("code \(code)") }
        if let description, !description.isEmpty { parts.append(description) }
        return parts.joined(separator: ", ")
    }
}

/// Talks to the profile's OAuth2 token endpoint (RFC 6749 §4.1.3, §6; RFC 8628 §3.4),
/// authenticating the client per `token_auth`.
public struct TokenEndpoint {
    public let profile: ResolvedProfile
    public let http: any HTTPTransport
    /// `--record DIR`: the login's exchanges are recorded like any other (tokens, codes and
    /// the client secret scrubbed), so `douctl sandbox --replay DIR` can replay the login too.
    public var recorder: ExchangeRecorder?

    public init(profile: ResolvedProfile, http: any HTTPTransport, recorder: ExchangeRecorder? = nil) {
        self.profile = profile
        self.http = http
        self.recorder = recorder?.scrubbing(profile.recordScrub)
    }

    public enum Answer: Equatable {
        case granted(TokenGrant)
        case refused(TokenEndpointError)
    }

    /// Authorization code → tokens. Douban wants `redirect_uri` again here.
    public func exchange(code: String, redirectURI: String?, codeVerifier: String?) throws(DouctlError) -> Answer {
        var fields = [("grant_type", "authorization_code"), ("code", code)]
        if let redirectURI { fields.append(("redirect_uri", redirectURI)) }
        if let codeVerifier { fields.append(("code_verifier", codeVerifier)) }
        return try post(fields)
    }

    /// Refresh token → new tokens (Douban rotates the refresh token; the old one is spent).
    public func refresh(refreshToken: String) throws(DouctlError) -> Answer {
        var fields = [("grant_type", "refresh_token"), ("refresh_token", refreshToken)]
        if let redirectURI = profile.redirectURI { fields.append(("redirect_uri", redirectURI)) }
        return try post(fields)
    }

    /// The client's own token (RFC 6749 §4.4): client id and secret per `token_auth`, no user.
    public func clientCredentials(scopes: [String]) throws(DouctlError) -> Answer {
        var fields = [("grant_type", "client_credentials")]
        if !scopes.isEmpty { fields.append(("scope", scopes.joined(separator: profile.rules.scopeSeparator))) }
        return try post(fields)
    }

    /// One device-flow poll (RFC 8628 §3.4).
    public func pollDevice(deviceCode: String) throws(DouctlError) -> Answer {
        try post([("grant_type", "urn:ietf:params:oauth:grant-type:device_code"), ("device_code", deviceCode)])
    }

    /// POSTs a form to `url` with client authentication; returns the status and parsed JSON.
    public func postForm(_ url: String, _ fields: [(String, String)]) throws(DouctlError) -> (status: Int, json: JSON?) {
        var fields = fields
        var headers = [HTTPHeader("Accept", "application/json"), HTTPHeader("Content-Type", "application/x-www-form-urlencoded")]
        let clientID = profile.clientID ?? ""
        switch profile.tokenAuth {
        case .post:
            fields.append(("client_id", clientID))
            if let secret = profile.clientSecret { fields.append(("client_secret", secret)) }
        case .basic:
            let pair = FormEncoding.escape(clientID, spaceAsPlus: true) + ":" + FormEncoding.escape(profile.clientSecret ?? "", spaceAsPlus: true)
            headers.append(HTTPHeader("Authorization", "Basic \(Base64.encode(Array(pair.utf8)))"))
        case .none:
            fields.append(("client_id", clientID))
        }
        var request = HTTPRequest(method: "POST", url: url, headers: headers, body: .bytes(Array(FormEncoding.encode(fields).utf8)))
        // What the form carries as a secret (the client secret, a refresh token, a code and
        // its verifier, a device code, a token to revoke): masked in -v and, once sent, in
        // every line douctl prints (`SentSecrets`), wherever the server repeats it.
        let secretFields: Set<String> = ["client_secret", "refresh_token", "code", "code_verifier", "device_code", "token", "password"]
        request.secrets = fields.filter { secretFields.contains($0.0) }.map(\.1) + [profile.clientSecret].compactMap { $0 }
        // `--record DIR`: through the recording layer, every token in the form or the reply
        // scrubbed wherever it appears, not only by name.
        let response = try LoginRequestPath(http: http, recorder: recorder).fetch(request)
        let json = try? JSONParser.parse(response.body)
        return (response.status, json)
    }

    private func post(_ fields: [(String, String)]) throws(DouctlError) -> Answer {
        guard let url = profile.tokenURL else {
            throw .usage("profile '\(profile.name)' has no token_url; set one with: douctl config set token_url URL --profile \(profile.name)")
        }
        let (status, json) = try postForm(url, fields)
        guard let json else {
            throw .badReply("the token endpoint answered HTTP \(status) without JSON (\(url))", httpStatus: status)
        }
        // Coding wraps even token replies: {"code":0,"data":{...}}.
        let body = (json["code"] != nil && json["data"]?.objectValue != nil) ? (json["data"] ?? json) : json
        if (200..<300).contains(status), let grant = TokenGrant(json: body) {
            // Checked whole before anything is stored: a refused grant leaves the login as it was.
            if let problem = grant.problem {
                throw .badReply("the token endpoint's reply was refused: \(problem); nothing was stored (\(url))", httpStatus: status)
            }
            return .granted(grant)
        }
        let error = json["error"]?.stringValue
            ?? json["msg"]?.stringValue.map { String($0.prefix { $0 != ":" }).trimmingCharacters(in: " ") }
            ?? "HTTP \(status)"
        return .refused(TokenEndpointError(
            status: status, error: error, code: json["code"]?.scalarText,
            description: json["error_description"]?.stringValue))
    }
}
