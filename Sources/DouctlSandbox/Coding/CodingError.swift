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
    /// A multipart body past a limit of the sandbox's (parts, part headers, fields in all).
    static func multipartTooLarge(_ detail: String) -> CodingError {
        CodingError(413, "request_too_large", "请求体过大 (\(detail))", status: 413)
    }
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
