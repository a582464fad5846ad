import DouctlJSON
import DouctlServer

/// A Coding error reply: `{"code":N,"msg":{"<key>":"<text>"}}`, HTTP 200 unless noted
/// ({"code": 0, "data": …} on success; {"code": N, "msg": {key: text}} on errors).
struct CodingError: Error {
    var status: Int
    var code: Int
    var key: String
    var text: String

    init(_ code: Int, _ key: String, _ text: String, status: Int = 200) {
        self.status = status
        self.code = code
        self.key = key
        self.text = text
    }

    /// No token or session, or an unknown one: the client logs out (or refreshes).
    static let notLoggedIn = CodingError(1000, "user_not_login", "用户未登录")
    /// An expired OAuth token, or a 2FA step that took too long.
    static let loginExpired = CodingError(3207, "user_login_status_expired", "登录状态已过期")
    /// The token lacks the endpoint's scope. Not 1000/3207, so clients do not refresh in vain.
    static let scopeDenied = CodingError(403, "permission_denied", "权限不足")
    static let xsrfInvalid = CodingError(403, "xsrf_token_invalid", "请求校验失败", status: 403)
    static let captchaWrong = CodingError(903, "j_captcha_error", "验证码错误")
    static let needCaptcha = CodingError(907, "operation_need_captcha", "操作需要验证码")
    static let accountOrPassword = CodingError(1, "account_or_password_error", "账号或密码错误")
    static func twoFactorNeeded(_ globalKey: String) -> CodingError {
        CodingError(3205, "two_factor_auth_code_not_empty", globalKey)
    }
    static let twoFactorWrong = CodingError(3206, "two_factor_auth_code_error", "验证码错误")
    static let tweetNotFound = CodingError(1101, "tweet_not_exist", "冒泡不存在", status: 404)
    static let notOwner = CodingError(1102, "permission_denied", "权限不足")
    static let commentNotFound = CodingError(1103, "comment_not_exist", "评论不存在", status: 404)
    static let userNotFound = CodingError(1, "user_not_exists", "用户不存在", status: 404)
    static let contentEmpty = CodingError(1, "content_empty", "内容不能为空")
    static let imageMissing = CodingError(1, "image_empty", "请选择要上传的图片")
    static let imageTooLarge = CodingError(1003, "image_too_large", "图片过大")
    static let imageWrongFormat = CodingError(1009, "image_wrong_format", "图片格式不正确")
    static let pathNotFound = CodingError(404, "not_found", "接口不存在", status: 404)
    static let methodNotAllowed = CodingError(405, "method_not_allowed", "请求方法错误", status: 405)
    static let bodyTooLarge = CodingError(413, "request_too_large", "请求体过大", status: 413)
    static let tooManyRequests = CodingError(429, "request_too_frequent", "请求过于频繁", status: 429)
    static func serverError(_ detail: String) -> CodingError {
        CodingError(500, "server_error", "服务器错误：\(detail)", status: 500)
    }
    static func badRequest(_ detail: String) -> CodingError {
        CodingError(1, "param_error", "参数错误：\(detail)", status: 400)
    }
}

extension Reply {
    /// `{"code":0,"data":…}`, or `{"code":0}` without data.
    static func coding(_ data: JSON?, headers: [(String, String)] = []) -> HTTPServerResponse {
        var object: JSONObject = ["code": 0]
        if let data { object["data"] = data }
        return json(200, .object(object), headers: headers)
    }

    static func coding(_ error: CodingError) -> HTTPServerResponse {
        json(error.status, ["code": .int(error.code), "msg": [error.key: .string(error.text)]])
    }
}

/// The cookies of Coding's web session.
enum CodingCookies {
    static let session = "sid"
    static let xsrf = "XSRF-TOKEN"
    static let xsrfHeader = "X-XSRF-TOKEN"

    static func set(_ session: CodingSession) -> [(String, String)] {
        let maxAge = session.rememberMe ? "; Max-Age=\(Int(CodingSession.rememberedLifetime))" : ""
        return [("Set-Cookie", "\(Self.session)=\(session.sid); Path=/\(maxAge); HttpOnly"),
                ("Set-Cookie", "\(xsrf)=\(session.xsrfToken); Path=/\(maxAge)")]
    }

    static let cleared: [(String, String)] = [
        ("Set-Cookie", "\(session)=; Path=/; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly"),
        ("Set-Cookie", "\(xsrf)=; Path=/; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT"),
    ]
}

extension Exchange {
    /// The first cookie `name` of the request's `Cookie` headers.
    func cookie(_ name: String) -> String? {
        for header in request.headers.values("Cookie") {
            for piece in header.split(separator: ";") {
                let pair = piece.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                if pair[0].trimmingSpaces() == name {
                    let value = pair.count > 1 ? pair[1].trimmingSpaces() : ""
                    return value.isEmpty ? nil : value
                }
            }
        }
        return nil
    }

    /// POST, PUT, DELETE, PATCH: what the XSRF check guards.
    var isUnsafeMethod: Bool {
        !["GET", "HEAD", "OPTIONS"].contains(request.method)
    }
}

extension SandboxCore {
    /// Who is calling a Coding endpoint.
    struct CodingCaller {
        let userID: Int64
        /// The OAuth token's scopes; nil for a cookie session, which may do all its user may.
        let scopes: [String]?
        let token: String?
        let sid: String?

        func may(_ scope: String) -> Bool { scopes?.contains(scope) ?? true }
    }

    // MARK: - Dispatch

    func codingDispatch(_ exchange: Exchange, _ route: CodingRoute) -> HTTPServerResponse {
        do {
            if case .notFound = route { throw CodingError.pathNotFound }
            guard route.methods.contains(exchange.request.method) else { throw CodingError.methodNotAllowed }
            switch route {
            case .authorize: return try codingAuthorize(exchange)
            case .token: return try codingToken(exchange)
            case .deviceAuthorization: return try codingDeviceAuthorization(exchange)
            case .deviceVerify: return try deviceVerify(exchange, realm: .coding)
            case .captchaNeeded: return codingCaptchaNeeded(exchange)
            case .captchaImage: return try codingCaptchaImage(exchange)
            case .login: return try codingLogin(exchange)
            case .twoFactor: return try codingTwoFactor(exchange)
            case .logout: return try codingLogout(exchange)
            case .requestValid: return try codingRequestValid(exchange)
            case .currentUser: return try codingCurrentUser(exchange)
            case .unreadCount: return try codingUnreadCount(exchange)
            case .user(let key): return try codingUser(exchange, globalKey: key)
            case .publicTweets: return try codingPublicTweets(exchange)
            case .friendsTweets: return try codingFriendsTweets(exchange)
            case .userTweets: return try codingUserTweets(exchange)
            case .postTweet: return try codingPostTweet(exchange)
            case .insertImage: return try codingInsertImage(exchange)
            case .tweetDetail(let key, let id): return try codingTweetDetail(exchange, globalKey: key, id: id)
            case .deleteTweet(let id): return try codingDeleteTweet(exchange, id: id)
            case .like(let id): return try codingLike(exchange, id: id, like: true)
            case .unlike(let id): return try codingLike(exchange, id: id, like: false)
            case .likes(let id): return try codingLikes(exchange, id: id)
            case .comments(let id): return try codingComments(exchange, id: id)
            case .comment(let id): return try codingAddComment(exchange, id: id)
            case .deleteComment(let tweetID, let commentID):
                return try codingDeleteComment(exchange, tweetID: tweetID, commentID: commentID)
            case .notFound: throw CodingError.pathNotFound
            }
        } catch let error as CodingError {
            return Reply.coding(error)
        } catch let error as StandardOAuthError {
            return Reply.standard(error)
        } catch let error as PageError {
            return Reply.html(error.status, Pages.message(title: error.title, message: error.message, realm: .coding))
        } catch let error as DoubanError {
            // From the shared body readers: an oversized or malformed body.
            if error.status == 413 { return Reply.coding(CodingError.bodyTooLarge) }
            return Reply.coding(CodingError.badRequest(error.message))
        } catch {
            return Reply.coding(CodingError.serverError("\(error)"))
        }
    }

    /// 429 and 500 faults in Coding's envelope (502–504 stay the proxy's HTML page).
    func codingFaultResponse(_ code: Int) -> HTTPServerResponse? {
        switch code {
        case 429:
            var response = Reply.coding(CodingError.tooManyRequests)
            response.headers.append(("Retry-After", "1"))
            return response
        case 500:
            return Reply.coding(CodingError.serverError("injected fault"))
        default:
            return nil
        }
    }

    // MARK: - Authentication

    /// The caller, or nil when the request carries neither an `access_token` nor a logged-in
    /// session cookie. An unknown token is 1000, an expired one 3207. A cookie session's
    /// POST/PUT/DELETE must echo the `XSRF-TOKEN` cookie in `X-XSRF-TOKEN` (HTTP 403 otherwise);
    /// token requests are exempt.
    func codingCallerIfAny(_ exchange: Exchange) throws(CodingError) -> CodingCaller? {
        let now = SandboxClock.now()
        if let token = exchange.query("access_token"), !token.isEmpty {
            switch state.withLock({ $0.coding.checkAccessToken(token, now: now) }) {
            case .invalid: throw .notLoggedIn
            case .expired: throw .loginExpired
            case .valid(let record):
                return CodingCaller(userID: record.userID, scopes: record.scopes, token: token, sid: nil)
            }
        }
        guard let sid = exchange.cookie(CodingCookies.session) else { return nil }
        let found: (CodingSession, Bool)? = state.withLock { state in
            state.coding.liveSession(sid, now: now).map { ($0, $0.userID.map { state.coding.users[$0] != nil } ?? false) }
        }
        guard let (session, userExists) = found, let userID = session.userID, userExists else { return nil }
        if exchange.isUnsafeMethod { try checkXSRF(exchange, session) }
        return CodingCaller(userID: userID, scopes: nil, token: nil, sid: sid)
    }

    /// The caller, who must have `scope` (when given): 1000 without one, `permission_denied`
    /// (code 403, HTTP 200) when the token lacks the scope.
    func codingCaller(_ exchange: Exchange, scope: String?) throws(CodingError) -> CodingCaller {
        guard let caller = try codingCallerIfAny(exchange) else { throw .notLoggedIn }
        if let scope, !caller.may(scope) { throw .scopeDenied }
        return caller
    }

    func checkXSRF(_ exchange: Exchange, _ session: CodingSession) throws(CodingError) {
        guard let header = exchange.request.headers[CodingCookies.xsrfHeader], header == session.xsrfToken else {
            throw .xsrfInvalid
        }
    }

    /// The request's live session, or a new anonymous one whose cookies go out with the reply.
    func ensureSession(_ exchange: Exchange) -> CodingSession {
        let now = SandboxClock.now()
        let sid = exchange.cookie(CodingCookies.session)
        let (session, created): (CodingSession, Bool) = state.withLock { state in
            if let sid, let session = state.coding.liveSession(sid, now: now) { return (session, false) }
            return (state.coding.newSession(now: now), true)
        }
        if created { exchange.extraHeaders += CodingCookies.set(session) }
        return session
    }

    /// The request's live session (any stage), or nil.
    func currentSession(_ exchange: Exchange) -> CodingSession? {
        guard let sid = exchange.cookie(CodingCookies.session) else { return nil }
        let now = SandboxClock.now()
        return state.withLock { $0.coding.liveSession(sid, now: now) }
    }

    func logCoding(_ line: String) {
        configuration.log?(line)
    }
}
