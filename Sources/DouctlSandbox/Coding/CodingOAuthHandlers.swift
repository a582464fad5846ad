import DouctlJSON
import DouctlServer
import DouctlSystem

/// Coding's OAuth2 (the legacy /oauth_authorize.html and /api/oauth/access_token): the authorize page, the token endpoint (codes with
/// optional PKCE, rotating refresh tokens, the current reply shape with `expires_in` as a
/// string), and, as a sandbox convenience, the device grant. Errors are RFC 6749 §5.2 objects
/// with HTTP 400. The client is the sandbox's own (`douctl-sandbox` / `sandbox-secret`), with
/// the same registered redirect URIs and approval mode as on the Douban side.
struct CodingOAuthHandlers: Sendable {
    static let team = "sandbox"

    let state: LockedValue<SandboxState>
    let configuration: SandboxConfiguration
    let consent: ConsentFlow
    let deviceGrant: DeviceGrant

    // MARK: - GET /oauth_authorize.html

    func authorize(_ exchange: Exchange) throws -> HTTPServerResponse {
        if exchange.request.method == "POST" { return try consent.decide(exchange) }
        func value(_ name: String) -> String? { exchange.query(name)?.nonEmpty }
        guard let clientID = value("client_id"), clientID == Sandbox.clientID else {
            throw PageError(status: 400, title: "应用不存在", message: "Unknown or missing client_id; the sandbox's client is \(Sandbox.clientID).")
        }
        guard let redirectURI = value("redirect_uri"), RedirectURIs.isRegistered(redirectURI) else {
            throw PageError(status: 400, title: "回调地址错误",
                            message: "The redirect_uri is missing or not registered for \(Sandbox.clientID) (loopback /callback URIs or https://example.com/back).")
        }
        let state = exchange.query("state")
        func refuse(_ error: String, _ description: String) -> HTTPServerResponse {
            var fields = [("error", error), ("error_description", description)]
            if let state { fields.append(("state", state)) }
            return Reply.redirect(RedirectURIs.appending(fields, to: redirectURI))
        }
        guard value("response_type") == "code" else {
            return refuse("unsupported_response_type", "response_type must be code")
        }
        let scopes: [String]
        switch CodingScopes.parse(exchange.query("scope")) {
        case .success(let parsed): scopes = parsed
        case .failure(let error): return refuse(error.error, error.description ?? "")
        }
        let challenge = value("code_challenge")
        let method = value("code_challenge_method") ?? "plain"
        if let challenge {
            guard method == "S256" || method == "plain" else { return refuse("invalid_request", "code_challenge_method must be S256 or plain") }
            guard PKCE.isWellFormed(challenge) else {
                return refuse("invalid_request", "code_challenge must be 43 to 128 characters of [A-Za-z0-9-._~]")
            }
        }
        return consent.begin(PendingConsent(
            ticket: Secrets.hex(byteCount: 16), clientID: clientID, redirectURI: redirectURI, responseType: "code",
            scopes: scopes, state: state, codeChallenge: challenge, codeChallengeMethod: method,
            expiresAt: configuration.clock.now() + 600, realm: .coding))
    }

    // MARK: - POST /api/oauth/access_token

    func token(_ exchange: Exchange) throws -> HTTPServerResponse {
        let parameters = try readParameters(exchange)
        guard let grantType = parameters["grant_type"], !grantType.isEmpty else {
            throw StandardOAuthError(error: "invalid_request", description: "grant_type is missing")
        }
        switch grantType {
        case "authorization_code":
            let clientID = try client(exchange, parameters, secretRequired: true)
            return try exchangeCode(parameters, clientID: clientID)
        case "refresh_token":
            let clientID = try client(exchange, parameters, secretRequired: true)
            return try refresh(parameters, clientID: clientID)
        case OAuthRequest.deviceGrantType:
            let clientID = try client(exchange, parameters, secretRequired: false)
            let ttl = configuration.tokenTTL
            let now = configuration.clock.now()
            let (access, refresh) = try deviceGrant.redeem(parameters, clientID: clientID, realm: .coding) { state, userID, scopes in
                state.coding.issueTokens(userID: userID, clientID: clientID, scopes: scopes, ttl: ttl, now: now)
            }.get()
            return tokenReply(access, refresh, ttl: ttl)
        default:
            _ = try client(exchange, parameters, secretRequired: false)
            throw StandardOAuthError(error: "unsupported_grant_type", description: "grant_type \(grantType) is not supported")
        }
    }

    private func readParameters(_ exchange: Exchange) throws -> [String: String] {
        do {
            return try OAuthRequest.parameters(exchange)
        } catch {
            throw StandardOAuthError(error: "invalid_request", description: "the form body could not be read")
        }
    }

    /// The client, from HTTP Basic or the form: `invalid_client` when unknown, when the secret
    /// is wrong, or when it is required and missing.
    private func client(_ exchange: Exchange, _ parameters: [String: String], secretRequired: Bool) throws -> String {
        let (id, secret) = OAuthRequest.clientCredentials(exchange, parameters)
        guard let id, !id.isEmpty else { throw StandardOAuthError(error: "invalid_request", description: "client_id is missing") }
        guard id == Sandbox.clientID else { throw StandardOAuthError(error: "invalid_client", description: "unknown client_id") }
        if let secret, !secret.isEmpty {
            guard secret == Sandbox.clientSecret else {
                throw StandardOAuthError(error: "invalid_client", description: "client authentication failed")
            }
        } else if secretRequired {
            throw StandardOAuthError(error: "invalid_client", description: "client_secret is missing")
        }
        return id
    }

    /// `{"access_token","refresh_token","scope","team","token_type":"Bearer","expires_in":"7200"}`.
    private func tokenReply(_ access: AccessTokenRecord, _ refresh: RefreshTokenRecord, ttl: Double) -> HTTPServerResponse {
        Reply.json(200, [
            "access_token": .string(access.token), "refresh_token": .string(refresh.token),
            "scope": .string(access.scopes.joined(separator: ",")), "team": .string(Self.team),
            "token_type": "Bearer", "expires_in": .string(ttl.jsonNumberText),
        ], headers: Reply.noStore)
    }

    private func exchangeCode(_ parameters: [String: String], clientID: String) throws -> HTTPServerResponse {
        guard let code = parameters["code"], !code.isEmpty else {
            throw StandardOAuthError(error: "invalid_request", description: "code is missing")
        }
        let redirectURI = parameters["redirect_uri"]?.nonEmpty
        let verifier = parameters["code_verifier"]
        let now = configuration.clock.now()
        let ttl = configuration.tokenTTL
        func invalid(_ description: String) -> StandardOAuthError {
            StandardOAuthError(error: "invalid_grant", description: description)
        }
        let outcome: Result<(AccessTokenRecord, RefreshTokenRecord), StandardOAuthError> = state.withLock { state in
            guard var record = state.codes[code], record.clientID == clientID, record.realm == .coding else {
                return .failure(invalid("unknown authorization code"))
            }
            if record.used {
                // RFC 6749 §4.1.2: a code used twice revokes what it was exchanged for.
                if let token = record.issuedAccessToken { state.coding.revokePair(token) }
                return .failure(invalid("the authorization code has already been used"))
            }
            record.used = true
            state.codes[code] = record
            guard record.expiresAt > now else { return .failure(invalid("the authorization code has expired")) }
            if let redirectURI, redirectURI != record.redirectURI {
                return .failure(invalid("redirect_uri does not match the authorization request"))
            }
            if let problem = PKCE.problem(record, verifier: verifier) { return .failure(invalid(problem)) }
            let (access, refresh) = state.coding.issueTokens(userID: record.userID, clientID: clientID, scopes: record.scopes,
                                                             ttl: ttl, now: now)
            record.issuedAccessToken = access.token
            record.issuedRefreshToken = refresh.token
            state.codes[code] = record
            return .success((access, refresh))
        }
        let (access, refresh) = try outcome.get()
        return tokenReply(access, refresh, ttl: ttl)
    }

    /// Refresh tokens are single-use and rotate: the old pair (refresh and access token) is
    /// invalidated, live or not, and a new pair issued with the same scopes.
    private func refresh(_ parameters: [String: String], clientID: String) throws -> HTTPServerResponse {
        guard let token = parameters["refresh_token"], !token.isEmpty else {
            throw StandardOAuthError(error: "invalid_request", description: "refresh_token is missing")
        }
        let now = configuration.clock.now()
        let ttl = configuration.tokenTTL
        let outcome: Result<(AccessTokenRecord, RefreshTokenRecord), StandardOAuthError> = state.withLock { state in
            guard let record = state.coding.refreshTokens[token], record.clientID == clientID else {
                return .failure(StandardOAuthError(error: "invalid_grant", description: "unknown or already used refresh_token"))
            }
            state.coding.revokePair(token)
            return .success(state.coding.issueTokens(userID: record.userID, clientID: clientID, scopes: record.scopes,
                                                     ttl: ttl, now: now))
        }
        let (access, refresh) = try outcome.get()
        return tokenReply(access, refresh, ttl: ttl)
    }

    // MARK: - POST /api/oauth/device (RFC 8628; a sandbox convenience)

    func deviceAuthorization(_ exchange: Exchange) throws -> HTTPServerResponse {
        let parameters = try readParameters(exchange)
        let clientID = try client(exchange, parameters, secretRequired: false)
        let scopes = try CodingScopes.parse(parameters["scope"]).get()
        return deviceGrant.start(clientID: clientID, scopes: scopes, realm: .coding, verificationPath: "/oauth_device.html")
    }

    /// `/oauth_device.html`: the page where a person enters the device's code.
    func deviceVerify(_ exchange: Exchange) throws -> HTTPServerResponse {
        try deviceGrant.verificationPage(exchange, realm: .coding)
    }
}
