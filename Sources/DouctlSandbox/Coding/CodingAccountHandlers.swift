import DouctlJSON
import DouctlServer
import DouctlSystem

/// Coding's cookie login (`GET /api/captcha/login`, `POST /api/v2/account/login` with the SHA-1
/// of the password, then `/api/check_two_factor_auth_code`), its captchas, and the logout.
///
/// The session cookie `sid` (and `XSRF-TOKEN`) is set by `GET /api/captcha/login` (or by the
/// first `GET /api/getCaptcha`): a login POST without that session answers 1000.
struct CodingAccountHandlers: Sendable {
    let state: LockedValue<SandboxState>
    let configuration: SandboxConfiguration
    let baseURL: BaseURL
    let authentication: CodingAuthentication

    // MARK: - Captchas

    /// `GET /api/captcha/login`: does the login need a captcha? Starts the session.
    func captchaNeeded(_ exchange: Exchange) -> HTTPServerResponse {
        _ = authentication.ensureSession(exchange)
        return Reply.coding(.bool(configuration.codingCaptchaRequired))
    }

    /// `GET /api/getCaptcha[?type=N]`: a PNG of a new four-character code. Without `type` (the
    /// login captcha) it is bound to the session, started if need be; with a `type` (an action
    /// captcha, answered at `request_valid`) to the logged-in caller when there is one.
    /// The code is logged as `coding captcha for session SID: CODE` (or `for user KEY`).
    func captchaImage(_ exchange: Exchange) throws -> HTTPServerResponse {
        let text = CodingCaptcha.text()
        let type = exchange.query("type")?.nonEmpty
        if type != nil, let caller = try authentication.callerIfAny(exchange) {
            let key: String = state.withLock { state in
                state.coding.actionCaptchas[caller.userID] = text
                state.coding.lastCaptcha = text
                return state.coding.users[caller.userID]?.globalKey ?? String(caller.userID)
            }
            (configuration.codes ?? configuration.log)?("coding captcha for user \(key): \(text)")
        } else {
            let session = authentication.ensureSession(exchange)
            let now = configuration.clock.now()
            state.withLock { state in
                state.coding.sessions[session.sid]?.captcha = text
                state.coding.lastCaptcha = text
                state.coding.pruneSessions(now: now)
            }
            (configuration.codes ?? configuration.log)?("coding captcha for session \(session.sid): \(text)")
        }
        return HTTPServerResponse(status: 200, headers: [("Content-Type", "image/png"), ("Cache-Control", "no-store")],
                                  body: .bytes(CodingCaptcha.png(text)))
    }

    /// `POST /api/request_valid` (`type`, `j_captcha`): answers the action captcha last shown
    /// to the caller; right, it lifts the 907 `operation_need_captcha` block; wrong, 903 (and a
    /// new captcha is needed).
    func requestValid(_ exchange: Exchange) throws -> HTTPServerResponse {
        let caller = try authentication.caller(exchange, scope: nil)
        let given = try exchange.field("j_captcha")
        let passed: Bool = state.withLock { state in
            let expected = state.coding.actionCaptchas.removeValue(forKey: caller.userID)
            guard CodingCaptcha.matches(given, expected) else { return false }
            state.coding.actionCaptchaRequired = false
            return true
        }
        guard passed else { throw CodingError.captchaWrong }
        return Reply.coding(nil)
    }

    // MARK: - Login

    /// `POST /api/v2/account/login`: `account` (email, phone or global_key), `password` (hex
    /// SHA-1), `remember_me`, `j_captcha`. Success rotates the session and answers the User.
    func login(_ exchange: Exchange) throws -> HTTPServerResponse {
        guard let session = authentication.currentSession(exchange) else { throw CodingError.notLoggedIn }
        try authentication.checkXSRF(exchange, session)
        let account = (try exchange.field("account") ?? "").trimmingSpaces()
        let password = (try exchange.field("password") ?? "").trimmingSpaces().lowercased()
        let rememberMe = ["true", "1", "on", "yes"].contains((try exchange.field("remember_me") ?? "").lowercased())
        let captcha = try exchange.field("j_captcha")
        let captchaRequired = configuration.codingCaptchaRequired
        let now = configuration.clock.now()
        let base = baseURL.value
        enum Outcome {
            case loggedIn(CodingCookieSession, JSON)
            case twoFactor(globalKey: String, code: String)
            case failed(CodingError)
        }
        let outcome: Outcome = state.withLock { state in
            guard var current = state.coding.liveSession(session.sid, now: now) else { return .failed(.notLoggedIn) }
            if captchaRequired {
                let expected = current.captcha
                current.captcha = nil  // one attempt per captcha
                state.coding.sessions[current.sid] = current
                guard CodingCaptcha.matches(captcha, expected) else { return .failed(.captchaWrong) }
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
            (configuration.codes ?? configuration.log)?("coding 2fa code for \(globalKey): \(code)")
            throw CodingError.twoFactorNeeded(globalKey)
        case .failed(let error):
            throw error
        }
    }

    /// `POST /api/check_two_factor_auth_code` (`code`): finishes a login that stopped at
    /// `two_factor_auth_code_not_empty`. Wrong: 3206; too late: 3207 and the login starts over.
    func twoFactor(_ exchange: Exchange) throws -> HTTPServerResponse {
        guard let session = authentication.currentSession(exchange) else { throw CodingError.notLoggedIn }
        try authentication.checkXSRF(exchange, session)
        let given = (try exchange.field("code") ?? "").trimmingSpaces()
        let now = configuration.clock.now()
        let timeout = configuration.codingTwoFactorTimeout
        let base = baseURL.value
        let outcome: Result<(CodingCookieSession, JSON), CodingError> = state.withLock { state in
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
    func logout(_ exchange: Exchange) throws -> HTTPServerResponse {
        if let token = exchange.query("access_token"), !token.isEmpty {
            state.withLock { $0.coding.revokePair(token) }  // expired or unknown: nothing left to end
            return Reply.coding(nil)
        }
        if let session = authentication.currentSession(exchange) {
            if session.userID != nil { try authentication.checkXSRF(exchange, session) }
            state.withLock { $0.coding.sessions[session.sid] = nil }
        }
        return Reply.coding(nil, headers: CodingCookies.cleared)
    }
}
