import DouctlSystem
/// The Coding half's public face: constants and test hooks.
///
/// Cookie sessions use the cookies `sid` (HttpOnly) and `XSRF-TOKEN`; a POST/PUT/DELETE on a
/// cookie session must send `X-XSRF-TOKEN` with the `XSRF-TOKEN` value. The captcha and 2FA
/// codes a person would read off a picture or a phone are logged (`coding captcha for session
/// SID: CODE`, `coding 2fa code for KEY: 123456`) and readable here.
extension Sandbox {
    /// Coding's seeded accounts (global_keys); the first is the default login, `twofa` logs in
    /// with a second factor. All share `codingPassword`.
    public static let codingSeededUsers = CodingSeed.users
    public static let codingPassword = CodingSeed.password
    /// Every Coding scope the sandbox knows.
    public static let codingScopes = CodingScopes.all
    /// The lowercase hex SHA-1 of a password, as Coding's login form sends it.
    public static func codingPasswordHash(_ password: String) -> String {
        Digest.hex(Digest.sha1(Array(password.utf8)))
    }

    /// Issues a Coding token pair as if `user` (global_key or numeric id) had logged in through
    /// OAuth; an unknown global_key is created as a new account. `ttl` defaults to the
    /// configured token lifetime.
    @discardableResult
    public func issueCodingToken(user: String = "coder", scopes: [String] = Sandbox.codingScopes,
                                 ttl: Double? = nil) -> (accessToken: String, refreshToken: String) {
        let lifetime = ttl ?? configuration.tokenTTL
        let now = core.configuration.clock.now()
        let pair = core.state.withLock { state in
            let userID = state.coding.user(named: user)?.id
                ?? state.coding.addUser(globalKey: user, name: user, created: now).id
            let (access, refresh) = state.coding.issueTokens(userID: userID, clientID: Sandbox.clientID, scopes: scopes,
                                                             ttl: lifetime, now: now)
            return (access.token, refresh.token)
        }
        core.saveLoggingFailure()
        return (accessToken: pair.0, refreshToken: pair.1)
    }

    /// The login captcha last shown to the cookie session `sid`, or nil.
    public func codingCaptcha(forSession sid: String) -> String? {
        core.state.withLock { $0.coding.sessions[sid]?.captcha }
    }

    /// The action captcha (`getCaptcha?type=N`) last shown to `user` (global_key), or nil.
    public func codingCaptcha(forUser user: String) -> String? {
        core.state.withLock { state in state.coding.user(named: user).flatMap { state.coding.actionCaptchas[$0.id] } }
    }

    /// The text of the most recent captcha picture of any kind.
    public var lastCodingCaptcha: String? {
        core.state.withLock { $0.coding.lastCaptcha }
    }

    /// The 2FA code the pending login of `user` (global_key) waits for, or nil.
    public func codingTwoFactorCode(for user: String) -> String? {
        core.state.withLock { $0.coding.twoFactorCodes[user] }
    }

    public var lastCodingTwoFactorCode: String? {
        core.state.withLock { $0.coding.lastTwoFactorCode }
    }

    /// From now on, posting a tweet answers 907 `operation_need_captcha` until someone passes
    /// `POST /api/request_valid` with the captcha of `GET /api/getCaptcha?type=3`.
    public func requireCodingActionCaptcha() {
        core.state.withLock { $0.coding.actionCaptchaRequired = true }
    }

    /// Adds `count` tweets by `user` (global_key; created if unknown), one second apart and
    /// ending now (or just after the newest tweet), for benchmarks and paging tests. Returns
    /// their ids, ascending.
    @discardableResult
    public func seedTweets(count: Int, user: String = "coder") -> [Int64] {
        guard count > 0 else { return [] }
        let now = core.configuration.clock.now()
        let ids: [Int64] = core.state.withLock { state in
            let userID = state.coding.user(named: user)?.id ?? state.coding.addUser(globalKey: user, name: user, created: now).id
            var ids: [Int64] = []
            ids.reserveCapacity(count)
            for index in 0..<count {
                let tweet = state.coding.addTweet(ownerID: userID, content: "第\(index + 1)条冒泡：沙盒里的测试数据。",
                                                  created: now - Double(count - 1 - index))
                ids.append(tweet.id)
            }
            return ids
        }
        core.saveLoggingFailure()
        return ids
    }

    /// The id of a Coding account (by global_key), or nil.
    public func codingUserID(of globalKey: String) -> Int64? {
        core.state.withLock { $0.coding.user(named: globalKey)?.id }
    }
}
