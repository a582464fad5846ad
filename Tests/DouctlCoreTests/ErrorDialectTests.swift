@testable import DouctlCore
import DouctlTestSupport
import DouctlHTTP
import DouctlJSON
import Testing

/// Issue 32: the error line says why, in every common error dialect; 401 is a failed
/// login, 403 a refused permission; a plain profile does not read Douban's codes.
@Suite("Error dialects")
struct ErrorDialectTests {
    func apiError(_ status: Int, _ body: String, style: any APIStyleRules = PlainStyle(), request: String = "POST /api/items/") -> APIError? {
        let response = HTTPResponse(head: HTTPResponseHead(status: status, headers: [HTTPHeader("Content-Type", "application/json")]), body: Array(body.utf8))
        do {
            _ = try ReplyDecoder.decode(response, rules: style, request: request)
        } catch {
            if case .api(let apiError) = error { return apiError }
            Issue.record("expected an API error, got \(error)")
            return nil
        }
        Issue.record("HTTP \(status) must be an error")
        return nil
    }

    @Test(arguments: [
        // DRF: detail; field errors; non_field_errors
        (403, #"{"detail":"You do not have permission to perform this action."}"#, "You do not have permission to perform this action."),
        (404, #"{"detail":"No Item matches the given query."}"#, "No Item matches the given query."),
        (405, #"{"detail":"Method \"DELETE\" not allowed."}"#, #"Method "DELETE" not allowed."#),
        (400, #"{"name":["This field is required."],"qty":["Ensure this value is greater than or equal to 0."]}"#,
         "name: This field is required.; qty: Ensure this value is greater than or equal to 0."),
        (400, #"{"non_field_errors":["The fields a, b must make a unique set."]}"#, "The fields a, b must make a unique set."),
        (400, #"{"lines":[{},{"qty":["A valid integer is required."]}]}"#, "lines.1.qty: A valid integer is required."),
        // RFC 9457 problem details, with an errors extension
        (403, #"{"type":"https://example.com/probs/out-of-credit","title":"You do not have enough credit.","detail":"Your current balance is 30, but that costs 50.","instance":"/account/12345/msgs/abc"}"#,
         "You do not have enough credit.: Your current balance is 30, but that costs 50."),
        (422, ##"{"type":"about:blank","title":"Unprocessable","status":422,"errors":[{"detail":"must be a positive integer","pointer":"#/age"}]}"##,
         "Unprocessable: age: must be a positive integer"),
        // GitHub
        (422, #"{"message":"Validation Failed","errors":[{"resource":"Issue","field":"title","code":"missing_field"},{"resource":"Issue","field":"body","code":"custom","message":"body is too long"}],"documentation_url":"https://docs.github.com/rest"}"#,
         "Validation Failed: title: missing_field; body: body is too long"),
        (404, #"{"message":"Not Found","documentation_url":"https://docs.github.com/rest"}"#, "Not Found"),
        // GitLab: message as a string or an object; error/error_description
        (400, #"{"message":{"name":["has already been taken"],"path":["is too short (minimum is 1 character)"]}}"#,
         "name: has already been taken; path: is too short (minimum is 1 character)"),
        (404, #"{"message":"404 Project Not Found"}"#, "404 Project Not Found"),
        (400, #"{"error":"title is missing"}"#, "title is missing"),
        (401, #"{"error":"invalid_token","error_description":"Token was revoked. You have to re-authorize from the user."}"#,
         "invalid_token: Token was revoked. You have to re-authorize from the user."),
        // JSON:API
        (422, #"{"errors":[{"status":"422","source":{"pointer":"/data/attributes/firstName"},"title":"Invalid Attribute","detail":"First name must contain at least two characters."}]}"#,
         "firstName: First name must contain at least two characters."),
        (403, #"{"errors":[{"status":"403","title":"Forbidden","detail":"Editing is not allowed."}]}"#, "Forbidden: Editing is not allowed."),
        // Google
        (404, #"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND"}}"#, "Requested entity was not found."),
        // Datasette
        (404, #"{"ok": false, "error": "Table not found", "status": 404, "title": null}"#, "Table not found"),
        (400, #"{"ok": false, "error": "no such column: nope", "status": 400, "title": "Invalid SQL"}"#, "Invalid SQL: no such column: nope"),
    ] as [(Int, String, String)])
    func theReasonIsReadFromEachDialect(status: Int, body: String, reason: String) throws {
        let error = try #require(apiError(status, body))
        #expect(error.message == reason)
        #expect(error.summary.contains(reason))
    }

    @Test func googlesStatusIsTheCode() throws {
        let error = try #require(apiError(404, #"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND"}}"#))
        #expect(error.code == "NOT_FOUND")
        #expect(error.kind == .notFound)
        #expect(error.summary == "not found (Requested entity was not found., code NOT_FOUND, POST /api/items/)")
    }

    @Test func manyFieldErrorsAreCountedNotListed() throws {
        let fields = (1...12).map { #""f\#($0)":["bad"]"# }.joined(separator: ",")
        let error = try #require(apiError(400, "{\(fields)}"))
        #expect(error.message.hasPrefix("f1: bad; f2: bad;"))
        #expect(error.message.hasSuffix("f8: bad; … (4 more)"))
    }

    @Test func aServersTextCannotBreakTheLine() throws {
        let error = try #require(apiError(400, #"{"detail":"line one\nline two\u001b[31m red"}"#))
        #expect(!error.message.contains("\n") && !error.message.contains("\u{1B}"))
        let long = try #require(apiError(400, #"{"detail":"\#(String(repeating: "x", count: 5000))"}"#))
        #expect(long.message.count <= ErrorDialects.textLimit + 1)
    }

    // MARK: 401 and 403

    @Test func fourHundredOneIsAuthenticationAndFourHundredThreeIsPermission() throws {
        let refused = try #require(apiError(401, #"{"detail":"Authentication credentials were not provided."}"#, request: "GET /api/items/"))
        #expect(refused.kind == .authentication)
        #expect(refused.summary == "authentication failed (Authentication credentials were not provided., GET /api/items/)")
        let denied = try #require(apiError(403, #"{"detail":"You do not have permission to perform this action."}"#, request: "GET /api/items/"))
        #expect(denied.kind == .permission)
        #expect(denied.summary == "permission denied (You do not have permission to perform this action., GET /api/items/)")
        #expect(PlainStyle().refusesPermission(denied))
        #expect(!PlainStyle().refusesPermission(refused))
    }

    @Test func doubansNeedPermissionIsAPermissionError() throws {
        let error = try #require(apiError(403, #"{"msg":"need_permission","code":1000,"request":"GET /shuo/v2/statuses/1"}"#, style: DoubanStyle()))
        #expect(error.kind == .permission)
        #expect(error.summary == "permission denied (need_permission, code 1000, GET /shuo/v2/statuses/1)")
    }

    // MARK: Douban's codes are Douban's

    @Test func aPlainProfileDoesNotBorrowDoubansCodes() throws {
        // {"code": 1001, "msg": …} is "not found" to Douban; to any other API its status says.
        let plain = try #require(apiError(400, #"{"code":1001,"msg":"quantity too large"}"#))
        #expect(plain.kind == .general)
        let douban = try #require(apiError(400, #"{"code":1001,"msg":"uri_not_found"}"#, style: DoubanStyle()))
        #expect(douban.kind == .notFound)
        // Douban's rate-limit and token codes mean nothing either.
        #expect(try #require(apiError(400, #"{"code":111,"msg":"x"}"#)).kind == .general)
        #expect(try #require(apiError(400, #"{"code":103,"msg":"x"}"#)).kind == .general)
        let body = HTTPResponse(head: HTTPResponseHead(status: 400, headers: []), body: Array(#"{"code":106,"msg":"x"}"#.utf8))
        #expect(!PlainStyle().meansExpiredToken(body))
        #expect(DoubanStyle().meansExpiredToken(body))
        #expect(!PlainStyle().meansRateLimited(HTTPResponse(head: HTTPResponseHead(status: 400, headers: []), body: Array(#"{"code":111,"msg":"x"}"#.utf8))))
    }
}
