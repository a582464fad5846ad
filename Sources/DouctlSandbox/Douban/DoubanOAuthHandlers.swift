import DouctlJSON
import DouctlServer
import DouctlSystem

/// Douban's OAuth2 (`/service/auth2/…`): the authorization page, the token endpoint (codes with
/// optional PKCE, single-use refresh tokens usable only once the access token has expired,
/// the device grant), the device verification page and revocation (RFC 7009). Errors are
/// Douban's JSON (113, 104, 116, 117, 118, 119, 124, 125); the device grant's polls answer
/// RFC 8628 errors.
struct DoubanOAuthHandlers: Sendable {
    let state: LockedValue<SandboxState>
    let configuration: SandboxConfiguration
    let consent: ConsentFlow
    let deviceGrant: DeviceGrant

    // MARK: - /service/auth2/auth

    func authorize(_ exchange: Exchange) throws -> HTTPServerResponse {
        if exchange.request.method == "POST" { return try consent.decide(exchange) }
        func parameter(_ name: String) throws -> String {
            guard let value = exchange.query(name), !value.isEmpty else { throw DoubanError.missing(name) }
            return value
        }
        let clientID = try parameter("client_id")
        guard clientID == Sandbox.clientID else { throw DoubanError.invalidAPIKey }
        let redirectURI = try parameter("redirect_uri")
        guard RedirectURIs.isRegistered(redirectURI) else { throw DoubanError.redirectURIMismatch }
        let responseType = try parameter("response_type")
        guard responseType == "code" || responseType == "token" else { throw DoubanError.unsupportedResponseType }
        let scopes = try DoubanScopes.parse(exchange.query("scope"))
        let state = exchange.query("state")
        let challenge = exchange.query("code_challenge")?.nonEmpty
        let method = exchange.query("code_challenge_method")?.nonEmpty ?? "plain"
        func refuse(_ description: String) -> HTTPServerResponse {
            var fields = [("error", "invalid_request"), ("error_description", description)]
            if let state { fields.append(("state", state)) }
            return Reply.redirect(RedirectURIs.appending(fields, to: redirectURI))
        }
        if let challenge {
            guard method == "S256" || method == "plain" else {
                return refuse("code_challenge_method must be S256 or plain")
            }
            guard PKCE.isWellFormed(challenge) else {
                return refuse("code_challenge must be 43 to 128 characters of [A-Za-z0-9-._~]")
            }
        }
        let request = PendingConsent(ticket: Secrets.hex(byteCount: 16), clientID: clientID, redirectURI: redirectURI,
                                     responseType: responseType, scopes: scopes, state: state, codeChallenge: challenge,
                                     codeChallengeMethod: method, expiresAt: configuration.clock.now() + 600)
        return consent.begin(request)
    }

    /// Checks the client: 113 without an id, 104 for an unknown one; with `secretRequired`,
    /// 113 without a secret; 116 for a wrong secret whenever one is given.
    private func authenticateClient(_ exchange: Exchange, _ parameters: [String: String],
                                    secretRequired: Bool) throws -> String {
        let (id, secret) = OAuthRequest.clientCredentials(exchange, parameters)
        guard let id, !id.isEmpty else { throw DoubanError.missing("client_id") }
        guard id == Sandbox.clientID else { throw DoubanError.invalidAPIKey }
        if let secret, !secret.isEmpty {
            guard secret == Sandbox.clientSecret else { throw DoubanError.clientSecretMismatch }
        } else if secretRequired {
            throw DoubanError.missing("client_secret")
        }
        return id
    }

    // MARK: - /service/auth2/token

    func token(_ exchange: Exchange) throws -> HTTPServerResponse {
        let parameters = try OAuthRequest.parameters(exchange)
        let (id, _) = OAuthRequest.clientCredentials(exchange, parameters)
        guard let id, !id.isEmpty else { throw DoubanError.missing("client_id") }
        guard id == Sandbox.clientID else { throw DoubanError.invalidAPIKey }
        guard let grantType = parameters["grant_type"], !grantType.isEmpty else { throw DoubanError.missing("grant_type") }
        switch grantType {
        case "authorization_code":
            let clientID = try authenticateClient(exchange, parameters, secretRequired: true)
            return try exchangeCode(parameters, clientID: clientID)
        case "refresh_token":
            let clientID = try authenticateClient(exchange, parameters, secretRequired: true)
            return try refresh(parameters, clientID: clientID)
        case OAuthRequest.deviceGrantType:
            let clientID = try authenticateClient(exchange, parameters, secretRequired: false)
            return try pollDevice(parameters, clientID: clientID)
        default:
            throw DoubanError.unsupportedGrantType
        }
    }

    private func tokenReply(_ access: AccessTokenRecord, _ refresh: RefreshTokenRecord?, user: UserRecord?, ttl: Double) -> HTTPServerResponse {
        var object: JSONObject = ["access_token": .string(access.token), "expires_in": .number(ttl.jsonNumberText)]
        if let refresh { object["refresh_token"] = .string(refresh.token) }
        object["douban_user_id"] = .string(String(access.userID))
        object["douban_user_name"] = .string(user?.name ?? "")
        object["scope"] = .string(access.scopes.joined(separator: ","))
        return Reply.json(200, .object(object), headers: Reply.noStore)
    }

    private func exchangeCode(_ parameters: [String: String], clientID: String) throws -> HTTPServerResponse {
        guard let code = parameters["code"], !code.isEmpty else { throw DoubanError.missing("code") }
        guard let redirectURI = parameters["redirect_uri"], !redirectURI.isEmpty else { throw DoubanError.missing("redirect_uri") }
        let verifier = parameters["code_verifier"]
        let now = configuration.clock.now()
        let ttl = configuration.tokenTTL
        let outcome: Result<(AccessTokenRecord, RefreshTokenRecord?, UserRecord?), DoubanError> = state.withLock { state in
            guard var record = state.codes[code], record.clientID == clientID, record.realm == .douban else {
                return .failure(.invalidCode())
            }
            if record.used {
                // RFC 6749 §4.1.2: a code used twice revokes what it was exchanged for.
                if let token = record.issuedAccessToken { state.revokeAccessToken(token) }
                if let token = record.issuedRefreshToken { state.revokeRefreshToken(token) }
                return .failure(.invalidCode("the code has already been used"))
            }
            record.used = true
            state.codes[code] = record
            guard record.expiresAt > now else { return .failure(.invalidCode("the code has expired")) }
            guard record.redirectURI == redirectURI else { return .failure(.redirectURIMismatch) }
            if let problem = PKCE.problem(record, verifier: verifier) { return .failure(.invalidCode(problem)) }
            let (access, refresh) = state.issueTokens(userID: record.userID, clientID: clientID, scopes: record.scopes,
                                                      ttl: ttl, now: now)
            record.issuedAccessToken = access.token
            record.issuedRefreshToken = refresh?.token
            state.codes[code] = record
            return .success((access, refresh, state.users[record.userID]))
        }
        let (access, refresh, user) = try outcome.get()
        return tokenReply(access, refresh, user: user, ttl: ttl)
    }

    private func refresh(_ parameters: [String: String], clientID: String) throws -> HTTPServerResponse {
        guard let token = parameters["refresh_token"], !token.isEmpty else { throw DoubanError.missing("refresh_token") }
        let now = configuration.clock.now()
        let ttl = configuration.tokenTTL
        let outcome: Result<(AccessTokenRecord, RefreshTokenRecord?, UserRecord?), DoubanError> = state.withLock { state in
            guard let record = state.refreshTokens[token], record.clientID == clientID else {
                return .failure(.invalidRefreshToken)
            }
            // Usable only once its access token has expired (or was revoked).
            if case .valid = state.checkAccessToken(record.accessToken, now: now) { return .failure(.tokenNotExpired) }
            state.revokeRefreshToken(token)
            state.revokeAccessToken(record.accessToken)
            let (access, refresh) = state.issueTokens(userID: record.userID, clientID: clientID, scopes: record.scopes,
                                                      ttl: ttl, now: now)
            return .success((access, refresh, state.users[record.userID]))
        }
        let (access, refresh, user) = try outcome.get()
        return tokenReply(access, refresh, user: user, ttl: ttl)
    }

    // MARK: - Device authorization (RFC 8628)

    func deviceAuthorization(_ exchange: Exchange) throws -> HTTPServerResponse {
        let parameters = try OAuthRequest.parameters(exchange)
        let clientID = try authenticateClient(exchange, parameters, secretRequired: false)
        let scopes = try DoubanScopes.parse(parameters["scope"])
        return deviceGrant.start(clientID: clientID, scopes: scopes, realm: .douban, verificationPath: "/service/auth2/device/verify")
    }

    private func pollDevice(_ parameters: [String: String], clientID: String) throws -> HTTPServerResponse {
        let ttl = configuration.tokenTTL
        let now = configuration.clock.now()
        let (access, refresh, user) = try deviceGrant.redeem(parameters, clientID: clientID, realm: .douban) { state, userID, scopes in
            let (access, refresh) = state.issueTokens(userID: userID, clientID: clientID, scopes: scopes, ttl: ttl, now: now)
            return (access, refresh, state.users[userID])
        }.get()
        return tokenReply(access, refresh, user: user, ttl: ttl)
    }

    /// `/service/auth2/device/verify`: the page where a person enters the device's code.
    func deviceVerify(_ exchange: Exchange) throws -> HTTPServerResponse {
        try deviceGrant.verificationPage(exchange, realm: .douban)
    }

    // MARK: - /service/auth2/revoke (RFC 7009)

    func revoke(_ exchange: Exchange) throws -> HTTPServerResponse {
        let parameters = try OAuthRequest.parameters(exchange)
        let (id, _) = OAuthRequest.clientCredentials(exchange, parameters)
        if let id, !id.isEmpty { _ = try authenticateClient(exchange, parameters, secretRequired: false) }
        guard let token = parameters["token"], !token.isEmpty else { throw DoubanError.missing("token") }
        let hint = parameters["token_type_hint"]
        state.withLock { state in
            func revokeRefresh() -> Bool {
                guard let record = state.refreshTokens[token] else { return false }
                state.revokeRefreshToken(token)
                state.revokeAccessToken(record.accessToken)  // RFC 7009 §2.1: the grant's access tokens go too
                return true
            }
            if hint == "refresh_token", revokeRefresh() { return }
            if state.accessTokens[token] != nil {
                state.revokeAccessToken(token)
                return
            }
            _ = revokeRefresh()
        }
        return Reply.json(200, [:], headers: Reply.noStore)
    }
}
