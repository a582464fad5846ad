@testable import DouctlCore
import DouctlHTTP
import DouctlJSON
import Testing

@Suite("Reply decoding: envelopes and errors")
struct ReplyDecoderTests {
    func response(_ status: Int, _ body: String, type: String = "application/json") -> HTTPResponse {
        HTTPResponse(head: HTTPResponseHead(status: status, headers: [HTTPHeader("Content-Type", type)]), body: Array(body.utf8))
    }

    func decode(_ status: Int, _ body: String, style: APIStyle = .douban, type: String = "application/json") throws(DouctlError) -> APIReply {
        try ReplyDecoder.decode(response(status, body, type: type), rules: style.rules, request: "GET /x")
    }

    @Test(arguments: [
        (#"{"code":0,"data":{"a":1}}"#, #"{"a":1}"#),
        (#"{"code":200,"msg":"ok","data":[1]}"#, "[1]"),
        (#"{"errcode":0,"ret":"x"}"#, #""x""#),
        (#"{"errCode":"0","data":null,"ret":5}"#, "5"),
        (#"{"code":0,"msg":"ok"}"#, #"{"code":0,"msg":"ok"}"#), // no data: the whole body (sAPI rule 5)
        (#"{"id":"1","code":"ABC"}"#, #"{"id":"1","code":"ABC"}"#), // a resource with a code field is not an envelope
        (#"{"Response":{"X":1,"RequestId":"r"}}"#, #"{"X":1,"RequestId":"r"}"#),
        ("[1,2]", "[1,2]"),
    ])
    func payloads(body: String, payload: String) throws {
        let reply = try decode(200, body)
        #expect(reply.payload == (try JSONParser.parse(payload)))
    }

    @Test func codingErrorKeepsMessageKeys() {
        #expect(throws: DouctlError.api(APIError(kind: .general, httpStatus: 200, code: "3", message: "验证码错误; 再试一次", messageKeys: ["j_captcha_error", "retry"], request: "GET /x"))) {
            try decode(200, #"{"code":3,"msg":{"j_captcha_error":"验证码错误","retry":"再试一次"}}"#, style: .coding)
        }
    }

    @Test(arguments: [
        (400, #"{"msg":"access_token_has_expired : x","code":106,"request":"GET \/v2\/user\/~me"}"#, APIStyle.douban, APIError.Kind.authentication),
        (403, #"{"msg":"need_permission","code":1000,"request":"GET /v2/user/~me"}"#, .douban, .permission),
        (404, #"{"msg":"uri_not_found","code":1001,"request":"GET /x"}"#, .douban, .notFound),
        (400, #"{"msg":"rate_limit_exceeded1","code":111}"#, .douban, .rateLimited),
        (400, #"{"msg":"image_too_large","code":1003}"#, .douban, .general),
        (200, #"{"code":1000,"msg":{"user_not_login":"未登录"}}"#, .coding, .authentication),
        (200, #"{"code":3207,"msg":"expired"}"#, .coding, .authentication),
        (200, #"{"code":-5,"msg":"negative codes fail too"}"#, .coding, .general),
        (429, #"{"error":"slow"}"#, .douban, .rateLimited),
        (401, #"{"error":"invalid_token","error_description":"gone"}"#, .douban, .authentication),
        (200, #"{"Response":{"Error":{"Code":"AuthFailure.TokenExpired","Message":"m"},"RequestId":"r"}}"#, .coding, .authentication),
        (200, #"{"Response":{"Error":{"Code":"ResourceNotFound","Message":"m"},"RequestId":"r"}}"#, .coding, .notFound),
    ])
    func errorKinds(status: Int, body: String, style: APIStyle, kind: APIError.Kind) {
        do {
            _ = try decode(status, body, style: style)
            Issue.record("expected an error")
        } catch {
            guard case .api(let apiError) = error else {
                Issue.record("expected an API error, got \(error)")
                return
            }
            #expect(apiError.kind == kind)
            #expect(apiError.httpStatus == status)
        }
    }

    @Test func doubanRequestFieldIsUsedInTheSummary() {
        #expect(throws: DouctlError.api(APIError(kind: .notFound, httpStatus: 404, code: "1001", message: "uri_not_found", request: "GET /shuo/v2/statuses/1"))) {
            try decode(404, #"{"msg":"uri_not_found","code":1001,"request":"GET \/shuo\/v2\/statuses\/1"}"#)
        }
        let error = APIError(kind: .notFound, httpStatus: 404, code: "1001", message: "uri_not_found", request: "GET /shuo/v2/statuses/1")
        #expect(error.summary == "not found (uri_not_found, code 1001, GET /shuo/v2/statuses/1)")
    }

    @Test func codingCaptchaCodesCarryAHint() {
        do {
            _ = try decode(200, #"{"code":907,"msg":{"operation_need_captcha":"操作需要验证码"}}"#, style: .coding)
        } catch {
            guard case .api(let apiError) = error else {
                Issue.record("expected API error")
                return
            }
            #expect(apiError.hint?.contains("/api/request_valid") == true)
            #expect(apiError.hint?.contains("type=3") == true)
            return
        }
        Issue.record("expected an error")
    }

    @Test func nonJSONBodies() throws {
        #expect(try decode(200, "", type: "application/json").payload == nil)
        #expect(try decode(204, "  \n").payload == nil)
        // A 2xx HTML page is data (Apache's WebDAV answers PUT and MKCOL with one): the
        // body as received; a command that needs JSON says it is HTML.
        let page = try decode(201, "<html></html>", type: "text/html; charset=utf-8")
        #expect(page.payload == nil)
        #expect(page.body == Array("<html></html>".utf8))
        #expect(throws: DouctlError.badReply("the reply is HTML, not JSON (HTTP 201, text/html)", httpStatus: 201)) {
            try page.requireJSON()
        }
        #expect(throws: DouctlError.api(APIError(kind: .general, httpStatus: 502, message: "", request: "GET /x"))) {
            try decode(502, "")
        }
        let image = try decode(200, "GIF89a", type: "image/gif")
        #expect(image.payload == nil)
        #expect(image.body == Array("GIF89a".utf8))
        #expect(throws: DouctlError.badReply("the reply was empty (HTTP 200) where JSON was due", httpStatus: 200)) {
            try decode(200, "").requireJSON()
        }
    }

    @Test(arguments: [
        (400, #"{"msg":"access_token_has_expired","code":106}"#, APIStyle.douban, true),
        (400, #"{"msg":"invalid_access_token: x","code":103}"#, .douban, true),
        (403, #"{"msg":"need_permission","code":1000}"#, .douban, false),
        (200, #"{"code":1000,"msg":{"user_not_login":"x"}}"#, .coding, true),
        (200, #"{"code":3207,"msg":"x"}"#, .coding, true),
        (200, #"{"code":0,"data":{}}"#, .coding, false),
        (401, "", .douban, true),
        (404, #"{"code":106}"#, .douban, false),
    ])
    func expiredTokenDetection(status: Int, body: String, style: APIStyle, expected: Bool) {
        #expect(style.rules.meansExpiredToken(response(status, body)) == expected)
    }
}
