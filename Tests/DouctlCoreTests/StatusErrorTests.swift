@testable import DouctlCore
import DouctlTestSupport
import DouctlHTTP
import DouctlJSON
import Testing

/// Issue 22, REST: errors are judged by their status, not their body; redirects that were
/// not followed are errors; OpenAPI error codes; advice only where it helps.
@Suite("Errors by status")
struct StatusErrorTests {
    func decode(_ status: Int, _ body: String, type: String? = "application/json", headers: [HTTPHeader] = [], style: APIStyle = .douban,
                request: String = "GET /x") throws(DouctlError) -> APIReply {
        var all = headers
        if let type { all.append(HTTPHeader("Content-Type", type)) }
        return try ReplyDecoder.decode(HTTPResponse(head: HTTPResponseHead(status: status, headers: all), body: Array(body.utf8)), rules: style.rules, request: request)
    }

    func error(_ status: Int, _ body: String, type: String? = "application/json", headers: [HTTPHeader] = [], style: APIStyle = .douban,
               request: String = "GET /x") -> DouctlError? {
        do {
            _ = try decode(status, body, type: type, headers: headers, style: style, request: request)
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: [
        // status, body, content type, kind, message
        (503, "<html>\r\n<head><title>503 Service\tTemporarily Unavailable</title></head><body>nginx</body></html>", "text/html",
         APIError.Kind.general, #""503 Service Temporarily Unavailable""#),
        (502, "<html><body><h1>Bad\u{1B}[31m Gateway</h1></body></html>", "text/html", .general, #""Bad [31m Gateway""#),
        (400, "", nil, .general, ""),
        (400, "{not json", "application/json", .general, #""{not json""#),
        (401, "Unauthorized\n", "text/plain", .authentication, #"HTTP 401: "Unauthorized""#),
        (404, "", nil, .notFound, "HTTP 404"),
        (429, "slow down", "text/plain", .rateLimited, #"HTTP 429: "slow down""#),
    ] as [(Int, String, String?, APIError.Kind, String)])
    func theStatusDecidesWhateverTheBody(status: Int, body: String, type: String?, kind: APIError.Kind, message: String) {
        guard case .api(let apiError)? = error(status, body, type: type, request: "HEAD /x") else {
            Issue.record("HTTP \(status) must be an API error, got \(String(describing: error(status, body, type: type)))")
            return
        }
        #expect(apiError.kind == kind)
        #expect(apiError.httpStatus == status)
        #expect(apiError.message == message)
        #expect(!apiError.summary.contains("where JSON was due"))
        #expect(!apiError.summary.contains("\u{1B}") && !apiError.summary.contains("\n") && !apiError.summary.contains("\r"))
    }

    @Test func aLongBodyIsQuotedBriefly() {
        guard case .api(let apiError)? = error(500, String(repeating: "x", count: 5000), type: "text/plain") else {
            Issue.record("expected an API error")
            return
        }
        #expect(apiError.message.count <= BodyQuote.textLimit + 3)
        #expect(apiError.message.hasSuffix("…\""))
    }

    /// pypiserver's 409 is text/plain and says why on its second line: the error line keeps
    /// its first lines (was: cut at 60 characters, before "--overwrite"), on one line,
    /// controls turned to spaces; more than three lines or 300 characters are cut.
    @Test func aTextErrorBodyKeepsItsReason() {
        let body = "\n  Package 'demo-1.0.tar.gz' already exists!\r\n\u{1B}[31m  You may start server with `--overwrite` option.\n\nline three\nline four is dropped\n"
        guard case .api(let apiError)? = error(409, body, type: "text/plain; charset=UTF-8") else {
            Issue.record("expected an API error")
            return
        }
        #expect(apiError.message == #""Package 'demo-1.0.tar.gz' already exists! [31m You may start server with `--overwrite` option. line three""#)
        #expect(!apiError.summary.contains("\u{1B}"))
        guard case .api(let html)? = error(409, "<html><title>Conflict</title><body>" + String(repeating: "x ", count: 400) + "</body></html>", type: "text/html") else {
            Issue.record("expected an API error")
            return
        }
        #expect(html.message == #""Conflict""#)
        guard case .api(let binary)? = error(500, "\u{0}\u{1}PNG", type: "application/octet-stream") else {
            Issue.record("expected an API error")
            return
        }
        #expect(binary.message == "")
    }

    @Test func doubansTokenCodesStillMeanAnExpiredToken() {
        guard case .api(let apiError)? = error(400, #"{"msg":"access_token_has_expired","code":106}"#) else {
            Issue.record("expected an API error")
            return
        }
        #expect(apiError.kind == .authentication)
    }

    @Test(arguments: [301, 302, 303, 307, 308])
    func aRedirectThatWasNotFollowedIsAnErrorNamingTheLocation(status: Int) {
        let result = error(status, #"{"moved":true}"#, headers: [HTTPHeader("Location", "https://other.example/new?access_token=secret")], request: "POST /x")
        guard case .transport(.redirect(let text))? = result else {
            Issue.record("HTTP \(status) after POST must not succeed: \(String(describing: result))")
            return
        }
        #expect(text.contains("HTTP \(status)"))
        #expect(text.contains("https://other.example/new"))
        #expect(!text.contains("secret"))
        #expect(text.contains("POST /x"))
    }

    @Test func notModifiedIsNotARedirect() throws {
        #expect(try decode(304, "", type: nil).payload == nil)
    }

    @Test(arguments: [
        ("AuthFailure.InvalidToken", APIError.Kind.authentication),
        ("ResourceNotFound.Project", .notFound),
        ("LimitExceeded", .rateLimited),
        ("RequestLimitExceeded", .rateLimited),
        ("InvalidParameterValue", .general),
    ])
    func openAPIErrorCodes(code: String, kind: APIError.Kind) {
        let body = #"{"Response":{"Error":{"Code":"\#(code)","Message":"m"},"RequestId":"r-1"}}"#
        guard case .api(let apiError)? = error(200, body, style: .coding) else {
            Issue.record("expected an API error")
            return
        }
        #expect(apiError.kind == kind)
        #expect(apiError.code == code)
        #expect(apiError.message == "m")
    }

    // MARK: advice

    func hint(_ status: Int, _ body: String, path: String = "/x", token: String? = "t") throws -> String? {
        let transport = ScriptedTransport([.json(status, body)])
        let profile = try TestProfiles.douban()
        var options = APIClientOptions()
        options.allowsAnonymous = true
        let client = APIClient(profile: profile, http: transport, tokens: token.map { StubTokens($0) }, options: options)
        do {
            _ = try client.send(APIRequest(path: path, sendsToken: profile.isOwnOrigin(profile.url(for: path))))
        } catch {
            guard case .api(let apiError) = error else { Issue.record("\(error)"); return nil }
            return apiError.summary
        }
        Issue.record("expected an error")
        return nil
    }

    @Test func aPermissionErrorGivesNoLoginAdvice() throws {
        let line = try hint(403, #"{"msg":"need_permission","code":1000,"request":"GET /shuo/v2/statuses/1"}"#)
        #expect(line?.contains("auth login") == false, "\(line ?? "")")
    }

    @Test func aRefusedTokenAdvisesLoggingInOnce() throws {
        let line = try hint(401, #"{"msg":"invalid_access_token","code":103}"#) ?? ""
        #expect(line.ranges(of: "auth login").count == 1, "\(line)")
    }

    @Test func aURLOutsideTheAPIGetsNoLoginAdvice() throws {
        let line = try hint(401, "", path: "https://elsewhere.example/private") ?? ""
        #expect(!line.contains("auth login"), "\(line)")
        #expect(!line.contains("api_base"), "no sentence about this profile's api_base: \(line)")
    }

    @Test func notLoggedInStillSaysHowToLogIn() throws {
        let line = try hint(401, "", token: nil) ?? ""
        #expect(line.contains("not logged in; run: douctl auth login --profile sandbox"), "\(line)")
    }
}

/// Tokens that are never refreshed and advise logging in, as stored tokens do.
final class StubTokens: AccessTokenSource {
    let token: String
    init(_ token: String) { self.token = token }
    func currentToken() throws(DouctlError) -> String? { token }
    func refresh(rejected token: String) throws(DouctlError) -> String? { nil }
    var rejectionHint: String { "run: \(DouctlError.loginCommand("sandbox"))" }
}
