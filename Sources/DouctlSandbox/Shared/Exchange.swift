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
    static func missingArgs(_ name: String) -> DoubanError {
        DoubanError(status: 400, code: 1002, name: "missing_args", detail: name)
    }
    static let imageTooLarge = DoubanError(status: 400, code: 1003, name: "image_too_large")
    static let inputTooShort = DoubanError(status: 400, code: 1005, name: "input_too_short")
    static let imageWrongFormat = DoubanError(status: 400, code: 1009, name: "image_wrong_format")
    static let bodyTooLarge = DoubanError(status: 413, code: 999, name: "unknow_v2_error", detail: "request body too large")
    static func unknown(_ detail: String) -> DoubanError {
        DoubanError(status: 400, code: 999, name: "unknow_v2_error", detail: detail)
    }
}

/// An RFC 6749 §5.2 / RFC 8628 §3.5 error (the device grant's polling answers).
struct StandardOAuthError: Error {
    var error: String
    var description: String?
}

/// A failure on one of the HTML pages, shown as a page.
struct PageError: Error {
    var status: Int
    var title: String
    var message: String
}

/// One request while it is being handled: lazily parsed body fields, what to record, extra
/// reply headers. Used by one thread only.
final class Exchange {
    let request: HTTPServerRequest
    let route: Route
    /// Added to whatever reply is sent (rate-limit headers).
    var extraHeaders: [(String, String)] = []
    private var parsedFields: [(name: String, value: String)]?
    private(set) var recordedForm: [(name: String, value: String)] = []
    var recordedParts: [RecordedPart] = []
    /// Set once a handler has consumed the body itself (the status upload).
    var bodyHandled = false

    /// Form fields beyond this are not read (the server's body-size limit guards the rest).
    static let formLimit = 1 << 20

    init(request: HTTPServerRequest, route: Route) {
        self.request = request
        self.route = route
    }

    /// "GET /v2/user/~me", the `request` member of Douban errors.
    var requestLabel: String { "\(request.method) \(request.path)" }

    var isMultipart: Bool { request.mediaType?.hasPrefix("multipart/") ?? false }

    var isFormEncoded: Bool {
        guard let mediaType = request.mediaType else { return true }  // no type: try it as a form
        return mediaType == "application/x-www-form-urlencoded"
    }

    func query(_ name: String) -> String? { request.queryValue(name) }

    /// The body's fields: an urlencoded form, or the text parts of a multipart body (file parts
    /// are recorded and skipped). Read once, on first use.
    func fields() throws -> [(name: String, value: String)] {
        if let parsedFields { return parsedFields }
        var fields: [(name: String, value: String)] = []
        if isMultipart {
            bodyHandled = true
            guard let reader = MultipartReader(body: request.body, contentType: request.headers["Content-Type"] ?? "") else {
                throw DoubanError.unknown("multipart body without a boundary")
            }
            do {
                while let part = try reader.nextPart() {
                    let (bytes, size) = try Exchange.consume(part, keeping: Exchange.formLimit)
                    recordedParts.append(RecordedPart(name: part.name, filename: part.filename, contentType: part.contentType,
                                                      size: size, bytes: bytes))
                    if part.filename == nil, let name = part.name, let bytes {
                        fields.append((name: name, value: String(decoding: bytes, as: UTF8.self)))
                    }
                }
            } catch let error as HTTPServerError where error == .bodyTooLarge {
                throw DoubanError.bodyTooLarge
            } catch {
                throw DoubanError.unknown("malformed multipart body")
            }
        } else if isFormEncoded && !request.body.isComplete {
            bodyHandled = true
            do {
                fields = FormURLEncoded.parse(try request.body.readAll(limit: Exchange.formLimit))
            } catch {
                _ = try? request.body.drain()
                throw DoubanError.bodyTooLarge
            }
            recordedForm = fields
        }
        parsedFields = fields
        return fields
    }

    /// The first body field `name`.
    func field(_ name: String) throws -> String? {
        try fields().first { $0.name == name }?.value
    }

    /// Reads a part to its end, keeping at most `limit` bytes (nil when it was longer).
    static func consume(_ part: MultipartPart, keeping limit: Int) throws -> (bytes: [UInt8]?, size: Int64) {
        var kept: [UInt8]? = []
        var size: Int64 = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = try part.read(into: buffer)
            if count == 0 { break }
            size += Int64(count)
            if kept != nil {
                if kept!.count + count > limit {
                    kept = nil
                } else {
                    kept!.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                }
            }
        }
        return (kept, size)
    }

    /// Reads whatever of the body no handler read, so the record shows what the client sent
    /// (fields, parts, size). Errors are left for the server to diagnose.
    func finishBody() {
        guard !request.body.isComplete else { return }
        if !bodyHandled && (isMultipart || (isFormEncoded && request.body.contentLength.map { $0 <= Int64(Exchange.formLimit) } ?? true)) {
            _ = try? fields()
        }
        if !request.body.isComplete { _ = try? request.body.drain() }
    }

    func record(status: Int) -> RecordedRequest {
        RecordedRequest(method: request.method, path: request.path, rawTarget: request.target, query: request.query,
                        headers: request.headers.map { (name: $0.name, value: $0.value) },
                        contentType: request.headers["Content-Type"], contentLength: request.contentLength,
                        isChunked: request.isChunked, bodySize: request.body.bytesRead, form: recordedForm,
                        parts: recordedParts, status: status)
    }
}

// MARK: - Reply builders

enum Reply {
    static func json(_ status: Int, _ value: JSON, headers: [(String, String)] = []) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: [("Content-Type", "application/json; charset=utf-8")] + headers,
                           body: .bytes(value.serialized(.compact)))
    }

    static func douban(_ error: DoubanError, request: String) -> HTTPServerResponse {
        json(error.status, ["msg": .string(error.message), "code": .int(error.code), "request": .string(request)],
             headers: error.headers)
    }

    static func standard(_ error: StandardOAuthError) -> HTTPServerResponse {
        var object: JSONObject = ["error": .string(error.error)]
        if let description = error.description { object["error_description"] = .string(description) }
        return json(400, .object(object), headers: noStore)
    }

    static let noStore = [("Cache-Control", "no-store"), ("Pragma", "no-cache")]

    static func html(_ status: Int, _ page: String) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store")],
                           body: .bytes(Array(page.utf8)))
    }

    static func redirect(_ location: String) -> HTTPServerResponse {
        let page = "<!doctype html><title>Redirecting</title><p>Redirecting to <a href=\"\(HTML.escape(location))\">\(HTML.escape(location))</a></p>\n"
        return HTTPServerResponse(status: 302, headers: [("Location", location), ("Content-Type", "text/html; charset=utf-8"),
                                                         ("Cache-Control", "no-store")],
                                  body: .bytes(Array(page.utf8)))
    }
}
