import DouctlServer
import DouctlSystem

/// Who is calling a Coding endpoint.
struct CodingCaller {
    let userID: Int64
    /// The OAuth token's scopes; nil for a cookie session, which may do all its user may.
    let scopes: [String]?
    let token: String?
    let sid: String?

    func may(_ scope: String) -> Bool { scopes?.contains(scope) ?? true }
}

/// Finds who calls a Coding endpoint: an OAuth token in `access_token` (1000 unknown, 3207 expired),
/// or a logged-in cookie session, whose unsafe requests must echo the XSRF cookie.
struct CodingAuthentication: Sendable {
    let state: LockedValue<SandboxState>
    /// The sandbox's wall clock (`SandboxConfiguration.clock`).
    let clock: SandboxClock

    /// The caller, or nil when the request carries neither an `access_token` nor a logged-in
    /// session cookie. An unknown token is 1000, an expired one 3207. A cookie session's
    /// POST/PUT/DELETE must echo the `XSRF-TOKEN` cookie in `X-XSRF-TOKEN` (HTTP 403 otherwise);
    /// token requests are exempt.
    func callerIfAny(_ exchange: Exchange) throws(CodingError) -> CodingCaller? {
        let now = clock.now()
        if let token = exchange.query("access_token"), !token.isEmpty {
            switch state.withLock({ $0.coding.checkAccessToken(token, now: now) }) {
            case .invalid: throw .notLoggedIn
            case .expired: throw .loginExpired
            case .valid(let record):
                return CodingCaller(userID: record.userID, scopes: record.scopes, token: token, sid: nil)
            }
        }
        guard let sid = exchange.cookie(CodingCookies.session) else { return nil }
        let found: (CodingCookieSession, Bool)? = state.withLock { state in
            state.coding.liveSession(sid, now: now).map { ($0, $0.userID.map { state.coding.users[$0] != nil } ?? false) }
        }
        guard let (session, userExists) = found, let userID = session.userID, userExists else { return nil }
        if exchange.isUnsafeMethod { try checkXSRF(exchange, session) }
        return CodingCaller(userID: userID, scopes: nil, token: nil, sid: sid)
    }

    /// The caller, who must have `scope` (when given): 1000 without one, `permission_denied`
    /// (code 403, HTTP 200) when the token lacks the scope.
    func caller(_ exchange: Exchange, scope: String?) throws(CodingError) -> CodingCaller {
        guard let caller = try callerIfAny(exchange) else { throw .notLoggedIn }
        if let scope, !caller.may(scope) { throw .scopeDenied }
        return caller
    }

    func checkXSRF(_ exchange: Exchange, _ session: CodingCookieSession) throws(CodingError) {
        guard let header = exchange.request.headers[CodingCookies.xsrfHeader], header == session.xsrfToken else {
            throw .xsrfInvalid
        }
    }

    /// The request's live session, or a new anonymous one whose cookies go out with the reply.
    func ensureSession(_ exchange: Exchange) -> CodingCookieSession {
        let now = clock.now()
        let sid = exchange.cookie(CodingCookies.session)
        let (session, created): (CodingCookieSession, Bool) = state.withLock { state in
            if let sid, let session = state.coding.liveSession(sid, now: now) { return (session, false) }
            return (state.coding.newSession(now: now), true)
        }
        if created { exchange.extraHeaders += CodingCookies.set(session) }
        return session
    }

    /// The request's live session (any stage), or nil.
    func currentSession(_ exchange: Exchange) -> CodingCookieSession? {
        guard let sid = exchange.cookie(CodingCookies.session) else { return nil }
        let now = clock.now()
        return state.withLock { $0.coding.liveSession(sid, now: now) }
    }
}
