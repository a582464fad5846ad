import DouctlJSON
import DouctlServer
import DouctlSystem

/// Coding's cookie login (GET /api/captcha/login, POST /api/v2/account/login with the SHA-1 of the password, then /api/check_two_factor_auth_code), captchas, logout, and the user
/// endpoints.
///
/// The session cookie `sid` (and `XSRF-TOKEN`) is set by `GET /api/captcha/login` (or by the
/// first `GET /api/getCaptcha`): a login POST without that session answers 1000.
extension SandboxCore {
    // MARK: - Captchas

    /// `GET /api/captcha/login`: does the login need a captcha? Starts the session.
    func codingCaptchaNeeded(_ exchange: Exchange) -> HTTPServerResponse {
        _ = ensureSession(exchange)
        return Reply.coding(.bool(configuration.codingCaptchaRequired))
    }

    /// `GET /api/getCaptcha[?type=N]`: a PNG of a new four-character code. Without `type` (the
    /// login captcha) it is bound to the session, started if need be; with a `type` (an action
    /// captcha, answered at `request_valid`) to the logged-in caller when there is one.
    /// The code is logged as `coding captcha for session SID: CODE` (or `for user KEY`).
    func codingCaptchaImage(_ exchange: Exchange) throws -> HTTPServerResponse {
        let text = Captcha.text()
        let type = exchange.query("type")?.nonEmpty
        if type != nil, let caller = try codingCallerIfAny(exchange) {
            let key: String = state.withLock { state in
                state.coding.actionCaptchas[caller.userID] = text
                state.coding.lastCaptcha = text
                return state.coding.users[caller.userID]?.globalKey ?? String(caller.userID)
            }
            logCoding("coding captcha for user \(key): \(text)")
        } else {
            let session = ensureSession(exchange)
            let now = SandboxClock.now()
            state.withLock { state in
                state.coding.sessions[session.sid]?.captcha = text
                state.coding.lastCaptcha = text
                state.coding.pruneSessions(now: now)
            }
            logCoding("coding captcha for session \(session.sid): \(text)")
        }
        return HTTPServerResponse(status: 200, headers: [("Content-Type", "image/png"), ("Cache-Control", "no-store")],
                                  body: .bytes(Captcha.png(text)))
    }

    /// `POST /api/request_valid` (`type`, `j_captcha`): answers the action captcha last shown
    /// to the caller; right, it lifts the 907 `operation_need_captcha` block; wrong, 903 (and a
    /// new captcha is needed).
    func codingRequestValid(_ exchange: Exchange) throws -> HTTPServerResponse {
        let caller = try codingCaller(exchange, scope: nil)
        let given = try exchange.field("j_captcha")
        let passed: Bool = state.withLock { state in
            let expected = state.coding.actionCaptchas.removeValue(forKey: caller.userID)
            guard Captcha.matches(given, expected) else { return false }
            state.coding.actionCaptchaRequired = false
            return true
        }
        guard passed else { throw CodingError.captchaWrong }
        return Reply.coding(nil)
    }

    // MARK: - Login

    /// `POST /api/v2/account/login`: `account` (email, phone or global_key), `password` (hex
    /// SHA-1), `remember_me`, `j_captcha`. Success rotates the session and answers the User.
    func codingLogin(_ exchange: Exchange) throws -> HTTPServerResponse {
        guard let session = currentSession(exchange) else { throw CodingError.notLoggedIn }
        try checkXSRF(exchange, session)
        let account = (try exchange.field("account") ?? "").trimmingSpaces()
        let password = (try exchange.field("password") ?? "").trimmingSpaces().lowercased()
        let rememberMe = ["true", "1", "on", "yes"].contains((try exchange.field("remember_me") ?? "").lowercased())
        let captcha = try exchange.field("j_captcha")
        let captchaRequired = configuration.codingCaptchaRequired
        let now = SandboxClock.now()
        let base = baseURL
        enum Outcome {
            case loggedIn(CodingSession, JSON)
            case twoFactor(globalKey: String, code: String)
            case failed(CodingError)
        }
        let outcome: Outcome = state.withLock { state in
            guard var current = state.coding.liveSession(session.sid, now: now) else { return .failed(.notLoggedIn) }
            if captchaRequired {
                let expected = current.captcha
                current.captcha = nil  // one attempt per captcha
                state.coding.sessions[current.sid] = current
                guard Captcha.matches(captcha, expected) else { return .failed(.captchaWrong) }
            }
            guard !account.isEmpty, !password.isEmpty, let user = state.coding.user(account: account),
                  !user.passwordSHA1.isEmpty, user.passwordSHA1 == password else {
                return .failed(.accountOrPassword)
            }
            if user.twoFactor {
                let code = String(Int.random(in: 0...999_999) + 1_000_000).dropFirst()
                current.stage = .awaitingTwoFactor(userID: user.id, since: now, code: String(code))
                current.rememberMe = rememberMe
                state.coding.sessions[current.sid] = current
                state.coding.twoFactorCodes[user.globalKey] = String(code)
                state.coding.lastTwoFactorCode = String(code)
                return .twoFactor(globalKey: user.globalKey, code: String(code))
            }
            let fresh = state.coding.logIn(replacing: current.sid, userID: user.id, rememberMe: rememberMe, now: now)
            return .loggedIn(fresh, state.coding.render(user, viewer: user.id, showEmail: true, base: base))
        }
        switch outcome {
        case .loggedIn(let fresh, let user):
            return Reply.coding(user, headers: CodingCookies.set(fresh))
        case .twoFactor(let globalKey, let code):
            logCoding("coding 2fa code for \(globalKey): \(code)")
            throw CodingError.twoFactorNeeded(globalKey)
        case .failed(let error):
            throw error
        }
    }

    /// `POST /api/check_two_factor_auth_code` (`code`): finishes a login that stopped at
    /// `two_factor_auth_code_not_empty`. Wrong: 3206; too late: 3207 and the login starts over.
    func codingTwoFactor(_ exchange: Exchange) throws -> HTTPServerResponse {
        guard let session = currentSession(exchange) else { throw CodingError.notLoggedIn }
        try checkXSRF(exchange, session)
        let given = (try exchange.field("code") ?? "").trimmingSpaces()
        let now = SandboxClock.now()
        let timeout = configuration.codingTwoFactorTimeout
        let base = baseURL
        let outcome: Result<(CodingSession, JSON), CodingError> = state.withLock { state in
            guard var current = state.coding.liveSession(session.sid, now: now),
                  case .awaitingTwoFactor(let userID, let since, let expected) = current.stage,
                  let user = state.coding.users[userID] else {
                return .failure(.notLoggedIn)
            }
            guard now - since <= timeout else {
                current.stage = .anonymous
                state.coding.sessions[current.sid] = current
                state.coding.twoFactorCodes[user.globalKey] = nil
                return .failure(.loginExpired)
            }
            guard given == expected else { return .failure(.twoFactorWrong) }
            state.coding.twoFactorCodes[user.globalKey] = nil
            let fresh = state.coding.logIn(replacing: current.sid, userID: userID, rememberMe: current.rememberMe, now: now)
            return .success((fresh, state.coding.render(user, viewer: userID, showEmail: true, base: base)))
        }
        let (fresh, user) = try outcome.get()
        return Reply.coding(user, headers: CodingCookies.set(fresh))
    }

    /// `POST /api/account/logout`: ends the cookie session (the cookies are expired), or, with
    /// an `access_token`, revokes that token and its refresh token.
    func codingLogout(_ exchange: Exchange) throws -> HTTPServerResponse {
        if let token = exchange.query("access_token"), !token.isEmpty {
            state.withLock { $0.coding.revokePair(token) }  // expired or unknown: nothing left to end
            return Reply.coding(nil)
        }
        if let session = currentSession(exchange) {
            if session.userID != nil { try checkXSRF(exchange, session) }
            state.withLock { $0.coding.sessions[session.sid] = nil }
        }
        return Reply.coding(nil, headers: CodingCookies.cleared)
    }

    // MARK: - Users

    /// `GET /api/account/current_user` (scope `user`).
    func codingCurrentUser(_ exchange: Exchange) throws -> HTTPServerResponse {
        let caller = try codingCaller(exchange, scope: "user")
        let base = baseURL
        let json: JSON? = state.withLock { state in
            state.coding.users[caller.userID].map {
                state.coding.render($0, viewer: caller.userID, showEmail: caller.may("user:email"), base: base)
            }
        }
        guard let json else { throw CodingError.notLoggedIn }
        return Reply.coding(json)
    }

    /// `GET /api/user/key/{global_key}` (scope `user`).
    func codingUser(_ exchange: Exchange, globalKey: String) throws -> HTTPServerResponse {
        let caller = try codingCaller(exchange, scope: "user")
        let base = baseURL
        let json: JSON? = state.withLock { state in
            state.coding.user(named: globalKey).map { user in
                state.coding.render(user, viewer: caller.userID, showEmail: user.id == caller.userID && caller.may("user:email"),
                                    base: base)
            }
        }
        guard let json else { throw CodingError.userNotFound }
        return Reply.coding(json)
    }

    /// `GET /api/user/unread-count`: the session check after a login (any valid caller).
    func codingUnreadCount(_ exchange: Exchange) throws -> HTTPServerResponse {
        _ = try codingCaller(exchange, scope: nil)
        return Reply.coding(["messages": 0, "notifications": 0, "project_update": 0])
    }
}
