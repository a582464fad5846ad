import DouctlJSON
import DouctlServer
import DouctlSystem

/// The steps around a replayed grant: the authorization endpoint, checked codes and refresh
/// tokens, and a device authorization polled to its tokens.
extension ReplayLogin {
    /// The answer to a request at the recorded authorization endpoint: approved at once, a
    /// 302 to the client's redirect URI with a fresh code and its `state` (the recording's
    /// login page is not replayed). The redirect URI must be a loopback one (RFC 8252 §7.3)
    /// or one the recording used; another gets a 400 page, not a redirect. The request may
    /// be a GET or a form POST (OpenID Connect Core §3.1.2.1: both must be supported; a
    /// recorded consent form posts the same fields).
    func authorize(_ request: HTTPServerRequest) -> HTTPServerResponse? {
        guard let authorizePath, ["GET", "HEAD", "POST"].contains(request.method), request.path == authorizePath else { return nil }
        var given = request.query
        if request.method == "POST", request.mediaType == "application/x-www-form-urlencoded" {
            given += FormURLEncoded.parse((try? request.body.readAll(limit: 1 << 20)) ?? [])
        }
        func value(_ name: String) -> String? { given.first { $0.name == name }?.value }
        guard let redirect = value("redirect_uri") ?? recordedRedirects.first, let client = value("client_id"),
              recordedRedirects.contains(redirect) || Self.isLoopback(redirect) else {
            return Reply.json(400, ["error": "invalid_request",
                                    "error_description": "the replay redirects only to a loopback redirect_uri or one the recording used, with a client_id"])
        }
        var fields: [(String, String)] = []
        let responseType = value("response_type") ?? ""
        if responseType.split(separator: " ").contains("code") {
            let code = Secrets.hex(byteCount: 16)
            let authorization = Authorization(client: client, redirectURI: redirect, nonce: value("nonce"),
                                              challenge: value("code_challenge"), challengeMethod: value("code_challenge_method") ?? "plain")
            codes.withLock { $0[code] = authorization }
            fields.append(("code", code))
        } else {
            fields.append(("error", "unsupported_response_type"))
        }
        if let state = value("state") { fields.append(("state", state)) }
        return Reply.redirect(RedirectURIs.appending(fields, to: redirect))
    }

    /// `http://127.0.0.1[:port]/…`, `http://localhost…`, `http://[::1]…`.
    static func isLoopback(_ uri: String) -> Bool {
        guard uri.hasPrefix("http://"), !uri.contains("#") else { return false }
        let rest = uri.dropFirst(7)
        for host in ["127.0.0.1", "localhost", "[::1]"] where rest.hasPrefix(host) {
            let after = rest.dropFirst(host.count)
            return after.isEmpty || after.first == ":" || after.first == "/" || after.first == "?"
        }
        return false
    }

    /// What a grant request at a recorded token endpoint gets before matching: a refusal
    /// (400 `invalid_grant`, RFC 6749 §5.2, or the recorded refusal of a refresh), the index
    /// of the recorded grant to answer with (and the nonce for its ID token), a pending poll,
    /// or nothing (matched as any request).
    enum GrantCheck {
        case refuse(HTTPServerResponse)
        case answer(index: Int, client: String?, nonce: String?)
        case pass
    }

    func checkGrant(_ request: HTTPServerRequest, body: ReplayBody) -> GrantCheck {
        guard request.method == "POST", grantPaths.contains(request.path), let grantType = Self.field("grant_type", in: body) else { return .pass }
        let client = Self.client(request, body: body)
        switch grantType {
        case "refresh_token":
            let token = Self.field("refresh_token", in: body) ?? ""
            guard refreshTokens.withLock({ $0.contains(token) }) else {
                if let refreshRefusal {
                    return .refuse(HTTPServerResponse(status: refreshRefusal.status, headers: refreshRefusal.headers, body: .bytes(refreshRefusal.body)))
                }
                return .refuse(Self.invalidGrant("this refresh token was not issued by the replay"))
            }
            return grantRecording(path: request.path, grantType: grantType).map { .answer(index: $0, client: client, nonce: nil) } ?? .pass
        case "authorization_code":
            // Codes are checked only where the replay issues them (its authorization endpoint).
            guard authorizePath != nil else { return .pass }
            let code = Self.field("code", in: body) ?? ""
            guard let authorization = codes.withLock({ $0.removeValue(forKey: code) }) else {
                return .refuse(Self.invalidGrant("this code was not issued by the replay, or was used already"))
            }
            if let challenge = authorization.challenge {
                let verifier = Self.field("code_verifier", in: body) ?? ""
                let expected = authorization.challengeMethod == "S256" ? Base64.encode(Digest.sha256(Array(verifier.utf8)), urlSafe: true) : verifier
                guard !verifier.isEmpty, expected == challenge else { return .refuse(Self.invalidGrant("code_verifier does not match the code_challenge")) }
            }
            return grantRecording(path: request.path, grantType: grantType).map { .answer(index: $0, client: client ?? authorization.client, nonce: authorization.nonce) } ?? .pass
        case "urn:ietf:params:oauth:grant-type:device_code":
            guard !deviceAuthorizations.isEmpty else { return .pass }
            let code = Self.field("device_code", in: body) ?? ""
            let polls = deviceCodes.withLock { codes -> Int? in
                guard let polls = codes[code] else { return nil }
                codes[code] = polls + 1
                return polls
            }
            guard let polls else { return .refuse(Self.invalidGrant("this device_code was not issued by the replay")) }
            if polls == 0 {
                return .refuse(Reply.json(400, ["error": "authorization_pending"], headers: Reply.noStore))
            }
            deviceCodes.withLock { _ = $0.removeValue(forKey: code) }
            return grantRecording(path: request.path, grantType: grantType).map { .answer(index: $0, client: client, nonce: nil) } ?? .pass
        default:
            return .pass
        }
    }

    static func invalidGrant(_ description: String) -> HTTPServerResponse {
        Reply.json(400, ["error": "invalid_grant", "error_description": .string(description)], headers: Reply.noStore)
    }

    /// A recorded device authorization with a fresh `device_code` and `user_code` (the
    /// recorded user code replaced in `verification_uri_complete` too); the device code is
    /// then polled once to `authorization_pending`, then to tokens.
    func freshDeviceAuthorization(_ body: [UInt8]) -> [UInt8] {
        guard case .object(var object)? = try? JSONParser.parse(body) else { return body }
        let deviceCode = Secrets.hex(byteCount: 20)
        let userCode = Secrets.userCode()
        let recordedUserCode = object["user_code"]?.stringValue ?? ""
        object["device_code"] = .string(deviceCode)
        object["user_code"] = .string(userCode)
        if let complete = object["verification_uri_complete"]?.stringValue, !recordedUserCode.isEmpty {
            object["verification_uri_complete"] = .string(complete.replacingAll(recordedUserCode, with: userCode))
        }
        deviceCodes.withLock { $0[deviceCode] = 0 }
        return JSON.object(object).serialized(.compact)
    }
}
