import DouctlServer
import DouctlSystem

/// The consent step of the authorization-code (and Douban's implicit) grant, for both fakes:
/// with `--approve auto` the realm's default user approves at once; otherwise a page lets a
/// person pick an account and approve or deny, and its form posts back here.
struct ConsentFlow: Sendable {
    let state: LockedValue<SandboxState>
    let configuration: SandboxConfiguration

    /// Approves at once (`--approve auto`, as the realm's default user) or shows the consent page.
    func begin(_ request: PendingConsent) -> HTTPServerResponse {
        if configuration.approval == .auto {
            let userID = state.withLock { request.realm.defaultUserID(in: $0) }
            return grant(request, userID: userID)
        }
        let users: [(uid: String, name: String)] = state.withLock { state in
            state.pruneTransientRecords(now: configuration.clock.now())
            state.consents[request.ticket] = request
            return request.realm.accounts(in: state)
        }
        return Reply.html(200, Pages.consent(request, users: users, defaultUID: request.realm.defaultUID))
    }

    /// The consent form's POST: `request_id`, `decision` (approve | deny), `user`.
    func decide(_ exchange: Exchange) throws -> HTTPServerResponse {
        let ticket = try exchange.field("request_id") ?? ""
        let decision = try exchange.field("decision") ?? ""
        let chosen = try exchange.field("user")
        let now = configuration.clock.now()
        let found: (PendingConsent, Int64?)? = state.withLock { state in
            guard let request = state.consents.removeValue(forKey: ticket), request.expiresAt > now else { return nil }
            return (request, request.realm.userID(named: chosen ?? request.realm.defaultUID, in: state))
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
            throw PageError(status: 400, title: "没有这个用户", message: "There is no sandbox user '\(chosen ?? request.realm.defaultUID)'.")
        }
        return grant(request, userID: userID)
    }

    /// Redirects back with a code (`response_type=code`) or a token in the fragment (`token`).
    private func grant(_ request: PendingConsent, userID: Int64) -> HTTPServerResponse {
        let now = configuration.clock.now()
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
}
