import DouctlJSON
import DouctlServer

/// A Douban error reply: `{"msg":"<name>[: detail]","code":N,"request":"METHOD /path"}`.
struct DoubanError: Error {
    var status: Int
    var code: Int
    var name: String
    var detail: String?
    var headers: [(String, String)] = []

    init(status: Int, code: Int, name: String, detail: String? = nil) {
        self.status = status
        self.code = code
        self.name = name
        self.detail = detail
    }

    var message: String { detail.map { "\(name): \($0)" } ?? name }

    static func missing(_ parameter: String) -> DoubanError {
        DoubanError(status: 400, code: 113, name: "required_parameter_is_missing", detail: parameter)
    }
    static func invalidMethod(_ method: String) -> DoubanError {
        DoubanError(status: 400, code: 101, name: "invalid_request_method", detail: method)
    }
    static let tokenMissing = DoubanError(status: 400, code: 102, name: "access_token_is_missing")
    static func invalidToken(_ token: String) -> DoubanError {
        DoubanError(status: 400, code: 103, name: "invalid_access_token", detail: token)
    }
    static let invalidAPIKey = DoubanError(status: 400, code: 104, name: "invalid_apikey")
    static func tokenExpired(_ token: String) -> DoubanError {
        DoubanError(status: 400, code: 106, name: "access_token_has_expired", detail: token)
    }
    static let unsupportedGrantType = DoubanError(status: 400, code: 114, name: "unsupported_grant_type")
    static let unsupportedResponseType = DoubanError(status: 400, code: 115, name: "unsupported_response_type")
    static let clientSecretMismatch = DoubanError(status: 400, code: 116, name: "client_secret_mismatch")
    static let redirectURIMismatch = DoubanError(status: 400, code: 117, name: "redirect_uri_mismatch")
    static func invalidCode(_ detail: String? = nil) -> DoubanError {
        DoubanError(status: 400, code: 118, name: "invalid_authorization_code", detail: detail)
    }
    static let invalidRefreshToken = DoubanError(status: 400, code: 119, name: "invalid_refresh_token")
    static let tokenNotExpired = DoubanError(status: 400, code: 124, name: "access_token_has_not_expired")
    static func invalidScope(_ scope: String) -> DoubanError {
        DoubanError(status: 400, code: 125, name: "invalid_request_scope", detail: scope)
    }
    static let needPermission = DoubanError(status: 403, code: 1000, name: "need_permission")
    static let notFound = DoubanError(status: 404, code: 1001, name: "uri_not_found")
    static let imageTooLarge = DoubanError(status: 400, code: 1003, name: "image_too_large")
    static let inputTooShort = DoubanError(status: 400, code: 1005, name: "input_too_short")
    static let imageWrongFormat = DoubanError(status: 400, code: 1009, name: "image_wrong_format")
    static let bodyTooLarge = DoubanError(status: 413, code: 999, name: "unknow_v2_error", detail: "request body too large")
    /// What a multipart reader's failure means to the client: 413 for a body past a limit
    /// (size, part count, part headers), else 400 "malformed multipart body".
    static func forMultipart(_ error: HTTPServerError) -> DoubanError {
        switch error {
        case .bodyTooLarge: return bodyTooLarge
        case .multipartTooLarge(let detail): return DoubanError(status: 413, code: 999, name: "unknow_v2_error", detail: detail)
        default: return unknown("malformed multipart body")
        }
    }
    static func unknown(_ detail: String) -> DoubanError {
        DoubanError(status: 400, code: 999, name: "unknow_v2_error", detail: detail)
    }
}

extension Reply {
    static func douban(_ error: DoubanError, request: String) -> HTTPServerResponse {
        json(error.status, ["msg": .string(error.message), "code": .int(error.code), "request": .string(request)],
             headers: error.headers)
    }
}
