import DouctlJSON
import DouctlServer
import DouctlSystem

/// The redirect URIs registered for the sandbox's client.
enum RedirectURIs {
    /// Loopback URIs match with any port and any path below `/callback` (RFC 8252 §7.3);
    /// the non-loopback one (for the paste-code flow) only exactly.
    static let registered = ["http://127.0.0.1/callback", "http://localhost/callback", "http://[::1]/callback",
                             "https://example.com/back"]

    static func isRegistered(_ uri: String) -> Bool {
        if uri == "https://example.com/back" { return true }
        guard uri.hasPrefix("http://"), !uri.contains("#") else { return false }
        var rest = Substring(uri.dropFirst(7))
        var matchedHost = false
        for host in ["127.0.0.1", "localhost", "[::1]"] where rest.hasPrefix(host) {
            rest = rest.dropFirst(host.count)
            matchedHost = true
            break
        }
        guard matchedHost else { return false }
        if rest.first == ":" {
            rest = rest.dropFirst()
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count <= 5, let port = Int(digits), port <= 65535 else { return false }
            rest = rest.dropFirst(digits.count)
        }
        guard rest.hasPrefix("/callback") else { return false }
        let after = rest.dropFirst("/callback".count)
        return after.isEmpty || after.first == "/" || after.first == "?"
    }

    /// `uri` with query fields added.
    static func appending(_ fields: [(String, String)], to uri: String) -> String {
        uri + (uri.contains("?") ? "&" : "?") + URLText.query(fields)
    }
}

enum Scopes {
    static let all = [
        "douban_basic_common", "community_basic_user", "shuo_basic_r", "shuo_basic_w", "shuo_private",
        "community_basic_note", "community_basic_photo", "community_advanced_photo", "community_advanced_doumail_r",
        "community_advanced_doumail_w", "community_basic_online", "community_advanced_online",
        "book_basic_r", "book_basic_w", "movie_basic_r", "movie_basic_w", "music_basic_r", "music_basic_w",
        "event_basic_r", "event_basic_w", "movie_basic", "movie_advance_r", "movie_advance_w",
        "movie_premium_r", "movie_premium_w", "travel_basic_r", "douban_common_basic",
    ]
    /// What an authorization without `scope` grants.
    static let defaults = ["douban_basic_common", "shuo_basic_r", "shuo_basic_w"]

    static let descriptions: [String: String] = [
        "douban_basic_common": "读取你的豆瓣公开信息",
        "shuo_basic_r": "读取你的广播、关注关系",
        "shuo_basic_w": "发布和删除广播、评论、赞、转播，关注和取消关注",
    ]

    /// A comma- (or space-) separated list; nil or empty means the defaults. Unknown → 125.
    static func parse(_ text: String?) throws -> [String] {
        let requested = (text ?? "").split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init)
        if requested.isEmpty { return defaults }
        var result: [String] = []
        for scope in requested where !result.contains(scope) {
            guard all.contains(scope) else { throw DoubanError.invalidScope(scope) }
            result.append(scope)
        }
        return result
    }
}

extension SandboxCore {
    static let deviceGrantType = "urn:ietf:params:oauth:grant-type:device_code"

    var defaultUserID: Int64 {
        state.withLock { $0.user(named: Seed.defaultUserUID)?.id ?? $0.userOrder.first ?? 1_000_001 }
    }

    /// Who an automatic approval signs in: ahbei on Douban, coder on Coding.
    func defaultUserID(_ realm: APIRealm) -> Int64 {
        switch realm {
        case .douban: return defaultUserID
        case .coding: return state.withLock { $0.coding.user(named: CodingSeed.defaultUserKey)?.id ?? $0.coding.userOrder.first ?? 9001 }
        }
    }

    static func defaultUID(_ realm: APIRealm) -> String {
        realm == .coding ? CodingSeed.defaultUserKey : Seed.defaultUserUID
    }

    /// The accounts a consent or verification page offers: (uid or global_key, name).
    static func accounts(_ state: SandboxState, _ realm: APIRealm) -> [(uid: String, name: String)] {
        switch realm {
        case .douban: return state.userOrder.compactMap { state.users[$0] }.map { (uid: $0.uid, name: $0.name) }
        case .coding: return state.coding.userOrder.compactMap { state.coding.users[$0] }.map { (uid: $0.globalKey, name: $0.name) }
        }
    }

    /// A user id from a uid (Douban) or global_key (Coding).
    static func userID(named name: String, _ realm: APIRealm, in state: SandboxState) -> Int64? {
        switch realm {
        case .douban: return state.user(named: name)?.id
        case .coding: return state.coding.user(named: name)?.id
        }
    }

    // MARK: - /service/auth2/auth

    func authorize(_ exchange: Exchange) throws -> HTTPServerResponse {
        if exchange.request.method == "POST" { return try consentDecision(exchange) }
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
        let scopes = try Scopes.parse(exchange.query("scope"))
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
            guard Self.isPKCEValue(challenge) else {
                return refuse("code_challenge must be 43 to 128 characters of [A-Za-z0-9-._~]")
            }
        }
        let request = PendingConsent(ticket: Secrets.hex(byteCount: 16), clientID: clientID, redirectURI: redirectURI,
                                     responseType: responseType, scopes: scopes, state: state, codeChallenge: challenge,
                                     codeChallengeMethod: method, expiresAt: SandboxClock.now() + 600)
        return beginConsent(request)
    }

    /// Approves at once (`--approve auto`, as the realm's default user) or shows the consent page.
    func beginConsent(_ request: PendingConsent) -> HTTPServerResponse {
        if configuration.approval == .auto {
            return grant(request, userID: defaultUserID(request.realm))
        }
        let users: [(uid: String, name: String)] = self.state.withLock { state in
            state.pruneTransientRecords(now: SandboxClock.now())
            state.consents[request.ticket] = request
            return Self.accounts(state, request.realm)
        }
        return Reply.html(200, Pages.consent(request, users: users, defaultUID: Self.defaultUID(request.realm)))
    }

    /// The consent form's POST: `request_id`, `decision` (approve | deny), `user`.
    func consentDecision(_ exchange: Exchange) throws -> HTTPServerResponse {
        let ticket = try exchange.field("request_id") ?? ""
        let decision = try exchange.field("decision") ?? ""
        let chosen = try exchange.field("user")
        let now = SandboxClock.now()
        let found: (PendingConsent, Int64?)? = state.withLock { state in
            guard let request = state.consents.removeValue(forKey: ticket), request.expiresAt > now else { return nil }
            return (request, Self.userID(named: chosen ?? Self.defaultUID(request.realm), request.realm, in: state))
        }
        guard let (request, userID) = found else {
            throw PageError(status: 400, title: "授权请求已失效", message: "This authorization request has expired or was already answered. Start the login again.")
        }
        if decision != "approve" {
            var fields = [("error", "access_denied")]
            if let state = request.state { fields.append(("state", state)) }
            if request.responseType == "token" {
                return Reply.redirect(request.redirectURI + "#" + URLText.query(fields))
            }
            return Reply.redirect(RedirectURIs.appending(fields, to: request.redirectURI))
        }
        guard let userID else {
            throw PageError(status: 400, title: "没有这个用户", message: "There is no sandbox user '\(chosen ?? Self.defaultUID(request.realm))'.")
        }
        return grant(request, userID: userID)
    }

    /// Redirects back with a code (`response_type=code`) or a token in the fragment (`token`).
    private func grant(_ request: PendingConsent, userID: Int64) -> HTTPServerResponse {
        let now = SandboxClock.now()
        let ttl = configuration.tokenTTL
        let codeLifetime = configuration.authorizationCodeLifetime
        if request.responseType == "token" {
            let token = state.withLock { state in
                state.issueTokens(userID: userID, clientID: request.clientID, scopes: request.scopes, ttl: ttl, now: now,
                                  withRefreshToken: false).access.token
            }
            var fields = [("access_token", token), ("expires_in", ttl.jsonNumberText), ("token_type", "bearer"),
                          ("douban_user_id", String(userID))]
            if let state = request.state { fields.append(("state", state)) }
            return Reply.redirect(request.redirectURI + "#" + URLText.query(fields))
        }
        let code = Secrets.hex(byteCount: 10)
        state.withLock { state in
            state.codes[code] = AuthorizationCodeRecord(
                code: code, clientID: request.clientID, redirectURI: request.redirectURI, userID: userID,
                scopes: request.scopes, codeChallenge: request.codeChallenge, codeChallengeMethod: request.codeChallengeMethod,
                expiresAt: now + codeLifetime, realm: request.realm)
        }
        var fields = [("code", code)]
        if let state = request.state { fields.append(("state", state)) }
        return Reply.redirect(RedirectURIs.appending(fields, to: request.redirectURI))
    }

    static func isPKCEValue(_ text: String) -> Bool {
        (43...128).contains(text.utf8.count) && text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                 UInt8(ascii: "~"):
                return true
            default:
                return false
            }
        }
    }

    // MARK: - Client authentication

    /// Form (and query) parameters of an OAuth POST: the wiki shows them in the query string,
    /// every SDK sends a form; the form wins.
    func oauthParameters(_ exchange: Exchange) throws -> [String: String] {
        var parameters: [String: String] = [:]
        for (name, value) in exchange.request.query where parameters[name] == nil { parameters[name] = value }
        var fromForm: [String: String] = [:]
        for (name, value) in try exchange.fields() where fromForm[name] == nil { fromForm[name] = value }
        parameters.merge(fromForm) { _, form in form }
        return parameters
    }

    /// client_id and client_secret from HTTP Basic (RFC 6749 §2.3.1, form-encoded inside) or the form.
    func clientCredentials(_ exchange: Exchange, _ parameters: [String: String]) -> (id: String?, secret: String?) {
        if let header = exchange.request.headers["Authorization"], header.lowercased().hasPrefix("basic "),
           let decoded = Base64.decode(String(header.dropFirst(6)).trimmingSpaces()) {
            let pair = String(decoding: decoded, as: UTF8.self)
            let pieces = pair.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            let id = PercentEncoding.decode(String(pieces[0]), plusAsSpace: true)
            let secret = pieces.count > 1 ? PercentEncoding.decode(String(pieces[1]), plusAsSpace: true) : nil
            return (id, secret)
        }
        return (parameters["client_id"], parameters["client_secret"])
    }

    /// Checks the client: 113 without an id, 104 for an unknown one; with `secretRequired`,
    /// 113 without a secret; 116 for a wrong secret whenever one is given.
    private func authenticateClient(_ exchange: Exchange, _ parameters: [String: String],
                                    secretRequired: Bool) throws -> String {
        let (id, secret) = clientCredentials(exchange, parameters)
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
        let parameters = try oauthParameters(exchange)
        let (id, _) = clientCredentials(exchange, parameters)
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
        case Self.deviceGrantType:
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
        let now = SandboxClock.now()
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
            if let problem = Self.pkceProblem(record, verifier: verifier) { return .failure(.invalidCode(problem)) }
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

    /// Why `verifier` does not satisfy the code's PKCE challenge (RFC 7636 §4.6), or nil.
    static func pkceProblem(_ record: AuthorizationCodeRecord, verifier: String?) -> String? {
        guard let challenge = record.codeChallenge else { return nil }
        guard let verifier, !verifier.isEmpty else { return "code_verifier is missing" }
        guard isPKCEValue(verifier) else { return "code_verifier is malformed" }
        let expected = record.codeChallengeMethod == "S256" ? Base64.encode(Digest.sha256(Array(verifier.utf8)), urlSafe: true) : verifier
        return expected == challenge ? nil : "code_verifier does not match the code_challenge"
    }

    private func refresh(_ parameters: [String: String], clientID: String) throws -> HTTPServerResponse {
        guard let token = parameters["refresh_token"], !token.isEmpty else { throw DoubanError.missing("refresh_token") }
        let now = SandboxClock.now()
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
        let parameters = try oauthParameters(exchange)
        let clientID = try authenticateClient(exchange, parameters, secretRequired: false)
        let scopes = try Scopes.parse(parameters["scope"])
        return startDeviceGrant(clientID: clientID, scopes: scopes, realm: .douban, verificationPath: "/service/auth2/device/verify")
    }

    /// Issues a device code and user code (RFC 8628 §3.2) for `realm`.
    func startDeviceGrant(clientID: String, scopes: [String], realm: APIRealm, verificationPath: String) -> HTTPServerResponse {
        let now = SandboxClock.now()
        let lifetime = configuration.deviceCodeLifetime
        let interval = max(0, configuration.deviceInterval)
        let record: DeviceRecord = state.withLock { state in
            state.pruneTransientRecords(now: now)
            var userCode = Secrets.userCode()
            while state.deviceCodesByUserCode[Secrets.normalizeUserCode(userCode)] != nil { userCode = Secrets.userCode() }
            let record = DeviceRecord(deviceCode: Secrets.hex(byteCount: 20), userCode: userCode, clientID: clientID,
                                      scopes: scopes, expiresAt: now + lifetime, interval: interval, realm: realm)
            state.devices[record.deviceCode] = record
            state.deviceCodesByUserCode[Secrets.normalizeUserCode(userCode)] = record.deviceCode
            return record
        }
        let verificationURI = baseURL + verificationPath
        return Reply.json(200, [
            "device_code": .string(record.deviceCode), "user_code": .string(record.userCode),
            "verification_uri": .string(verificationURI),
            "verification_uri_complete": .string(verificationURI + "?user_code=" + URLText.encode(record.userCode)),
            "expires_in": .number(lifetime.jsonNumberText), "interval": .number(interval.jsonNumberText),
        ], headers: Reply.noStore)
    }

    private func pollDevice(_ parameters: [String: String], clientID: String) throws -> HTTPServerResponse {
        let ttl = configuration.tokenTTL
        let now = SandboxClock.now()
        let (access, refresh, user) = try redeemDeviceCode(parameters, clientID: clientID, realm: .douban) { state, userID, scopes in
            let (access, refresh) = state.issueTokens(userID: userID, clientID: clientID, scopes: scopes, ttl: ttl, now: now)
            return (access, refresh, state.users[userID])
        }.get()
        return tokenReply(access, refresh, user: user, ttl: ttl)
    }

    /// One poll of the device grant (RFC 8628 §3.4, §3.5): `issue` makes the tokens once the
    /// code is approved (inside the state lock, so a code is redeemed exactly once).
    func redeemDeviceCode<Issued>(_ parameters: [String: String], clientID: String, realm: APIRealm,
                                  issue: (inout SandboxState, _ userID: Int64, _ scopes: [String]) -> Issued)
        -> Result<Issued, StandardOAuthError> {
        guard let deviceCode = parameters["device_code"], !deviceCode.isEmpty else {
            return .failure(StandardOAuthError(error: "invalid_request", description: "device_code is missing"))
        }
        let now = SandboxClock.now()
        let slowDownPolls = faults.slowDownPolls
        let autoApprove = configuration.approval == .auto
        let defaultUser = defaultUserID(realm)
        return state.withLock { state in
            guard var record = state.devices[deviceCode], record.clientID == clientID, record.realm == realm else {
                return .failure(StandardOAuthError(error: "invalid_grant", description: "unknown device_code"))
            }
            defer { state.devices[deviceCode] = record }
            guard record.expiresAt > now else {
                return .failure(StandardOAuthError(error: "expired_token", description: "the device code has expired"))
            }
            switch record.decision {
            case .redeemed:
                return .failure(StandardOAuthError(error: "invalid_grant", description: "the device code has already been used"))
            case .denied:
                return .failure(StandardOAuthError(error: "access_denied", description: "the user denied the request"))
            case .pending, .approved:
                break
            }
            record.polls += 1
            let previous = record.lastPoll
            record.lastPoll = now
            if record.polls <= slowDownPolls {
                return .failure(StandardOAuthError(error: "slow_down", description: "polling too fast (injected fault)"))
            }
            if let previous, now - previous < record.interval - 0.01 {
                record.interval += 5
                return .failure(StandardOAuthError(error: "slow_down",
                                                   description: "poll at most every \(record.interval.jsonNumberText) seconds"))
            }
            var approvedUser: Int64
            switch record.decision {
            case .approved(let userID):
                approvedUser = userID
            default:
                guard autoApprove else {
                    return .failure(StandardOAuthError(error: "authorization_pending", description: nil))
                }
                approvedUser = defaultUser
            }
            record.decision = .redeemed
            record.settledAt = now
            return .success(issue(&state, approvedUser, record.scopes))
        }
    }

    /// Approves or denies a pending device code (of `realm`, or of either when nil) as `uid`
    /// (the realm's default user when nil); false when there is no such pending code or user.
    func decideDevice(userCode: String, approve: Bool, uid: String? = nil, realm: APIRealm? = nil) -> Bool {
        let now = SandboxClock.now()
        return state.withLock { state in
            guard let deviceCode = state.deviceCodesByUserCode[Secrets.normalizeUserCode(userCode)],
                  var record = state.devices[deviceCode], record.expiresAt > now, record.decision == .pending,
                  realm == nil || realm == record.realm else {
                return false
            }
            if approve {
                guard let userID = Self.userID(named: uid ?? Self.defaultUID(record.realm), record.realm, in: state) else {
                    return false
                }
                record.decision = .approved(userID: userID)
            } else {
                record.decision = .denied
                record.settledAt = now
            }
            state.devices[deviceCode] = record
            return true
        }
    }

    /// The verification page (Douban's, or Coding's `/oauth_device.html`): GET shows the
    /// form, POST records the decision.
    func deviceVerify(_ exchange: Exchange, realm: APIRealm = .douban) throws -> HTTPServerResponse {
        let users: [(uid: String, name: String)] = state.withLock { Self.accounts($0, realm) }
        if exchange.request.method == "GET" {
            return Reply.html(200, Pages.deviceVerify(userCode: exchange.query("user_code") ?? "", users: users,
                                                      defaultUID: Self.defaultUID(realm), notice: nil, realm: realm))
        }
        let userCode = try exchange.field("user_code") ?? ""
        let approve = try exchange.field("decision") == "approve"
        let uid = try exchange.field("user") ?? Self.defaultUID(realm)
        guard !userCode.isEmpty else {
            return Reply.html(400, Pages.deviceVerify(userCode: "", users: users, defaultUID: uid,
                                                      notice: "请输入设备上显示的代码。Enter the code shown on your device.", realm: realm))
        }
        guard decideDevice(userCode: userCode, approve: approve, uid: uid, realm: realm) else {
            return Reply.html(400, Pages.deviceVerify(userCode: userCode, users: users, defaultUID: uid,
                                                      notice: "代码无效、已过期或已使用。The code is unknown, expired or already used.",
                                                      realm: realm))
        }
        return Reply.html(200, approve
            ? Pages.message(title: "已授权", message: "The device is signed in as \(uid). You can return to your terminal.", realm: realm)
            : Pages.message(title: "已拒绝", message: "The request was denied. You can close this page.", realm: realm))
    }

    // MARK: - /service/auth2/revoke (RFC 7009)

    func revoke(_ exchange: Exchange) throws -> HTTPServerResponse {
        let parameters = try oauthParameters(exchange)
        let (id, _) = clientCredentials(exchange, parameters)
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
