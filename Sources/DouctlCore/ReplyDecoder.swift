import DouctlHTTP
import DouctlJSON

/// A reply the API accepted.
public struct APIReply: Sendable, Equatable {
    public var head: HTTPResponseHead
    /// The body exactly as received (for `--raw`).
    public var body: [UInt8]
    /// The parsed body, when it is JSON.
    public var json: JSON?
    /// What commands print: Coding's `data` (or `ret`), OpenAPI's `Response`, else the whole body.
    public var payload: JSON?
    /// A JSON array body left unparsed (no envelope can be an array): printers reformat the
    /// bytes directly, which is several times faster than building a tree of a big reply.
    public var isUnparsedJSONArray = false
    /// A GraphQL response that carried errors beside its data (a partial success): they
    /// are said on stderr after the data is printed, and the exit is 10.
    public var graphQLProblems: [GraphQL.Problem] = []

    public init(head: HTTPResponseHead, body: [UInt8], json: JSON?, payload: JSON?) {
        self.head = head
        self.body = body
        self.json = json
        self.payload = payload
    }

    /// The payload, for commands that only make sense with a JSON reply.
    public func requireJSON() throws(DouctlError) -> JSON {
        if isUnparsedJSONArray {
            do { return try JSONParser.parse(body) } catch {
                throw .badReply("the reply is not valid JSON (HTTP \(head.status): \(error.description))", httpStatus: head.status)
            }
        }
        guard let payload else {
            if body.isEmpty {
                throw .badReply("the reply was empty (HTTP \(head.status)) where JSON was due", httpStatus: head.status)
            }
            if let mediaType = head.mediaType, mediaType.containsBytes("html") {
                throw .badReply("the reply is HTML, not JSON (HTTP \(head.status), \(mediaType))", httpStatus: head.status)
            }
            throw .badReply("the reply is not JSON (HTTP \(head.status), \(head.mediaType ?? "no content type"))", httpStatus: head.status)
        }
        return payload
    }

    /// True when the payload was unwrapped from an envelope, so `--raw` prints something else.
    public var isEnvelope: Bool { json != payload }
}

/// Reads replies in every dialect douctl speaks:
/// - Douban: success is the bare value; errors are `{"msg","code","request"}`, auth errors with HTTP 400.
/// - Coding-style envelopes: code `code|errcode|errCode|errorno`; message `msg|errmsg|errMsg|errormsg`
///   (a string, or an object of key → text); data `data|ret`. Codes other than 0 and 200 are errors.
/// - The CODING OpenAPI dialect: `{"Response": {…, "Error": {"Code","Message"}, "RequestId"}}`.
/// What an error code means, and any other reading of its own, is the style's
/// (`APIStyleRules`); this type does the HTTP-level part and the dialects all styles share.
public enum ReplyDecoder {
    static let codeKeys = ["code", "errcode", "errCode", "errorno"]
    static let messageKeys = ["msg", "errmsg", "errMsg", "errormsg"]
    static let dataKeys = ["data", "ret"]

    /// Whether an object whose first member is `key` may be an envelope (or an error) that
    /// must be read whole before it can be printed. Anything else is a resource: a large one
    /// can be printed as a stream, since no envelope begins that way.
    public static func mayBeEnvelope(firstKey key: String) -> Bool {
        codeKeys.contains(key) || messageKeys.contains(key) || dataKeys.contains(key) || key == "Response"
    }

    /// What `EnvelopeStreamUnwrapper` needs to unwrap a reply as it arrives the way `decode`
    /// unwraps a whole one: the status and data names (data by preference) and the success
    /// codes. The members other than the data are kept only up to the error bound (64 KiB).
    public static var envelopeStreamRule: EnvelopeStreamUnwrapper.Rule {
        EnvelopeStreamUnwrapper.Rule(codeKeys: codeKeys, dataKeys: dataKeys, memberLimit: HTTPResponse.maximumErrorBodyBytes,
            mayBeginEnvelope: { mayBeEnvelope(firstKey: $0) }, isSuccess: codeMeansSuccess)
    }

    /// A Coding-style status that is not an error.
    static func codeMeansSuccess(_ code: String) -> Bool { code == "0" || code == "200" }

    /// Turns a reply into its payload, or throws the error it carries.
    /// `request` ("GET /v2/user/~me") names the call in messages when the server does not.
    /// With `parsesArrays` false, a successful array reply is left as bytes (see
    /// `APIReply.isUnparsedJSONArray`).
    public static func decode(_ response: HTTPResponse, rules: any APIStyleRules, request: String, parsesArrays: Bool = true) throws(DouctlError) -> APIReply {
        do {
            return try decodeAsSent(response, rules: rules, request: request, parsesArrays: parsesArrays)
        } catch {
            // GitHub answers a spent quota with 403 and X-RateLimit-Remaining: 0: rate
            // limited (exit 6), not a permission error.
            guard case .api(var apiError) = error, apiError.kind != .rateLimited,
                  RateLimitNotice.isExhaustedGitHubStyle(response.head) else { throw error }
            apiError.kind = .rateLimited
            throw .api(apiError)
        }
    }

    private static func decodeAsSent(_ response: HTTPResponse, rules: any APIStyleRules, request: String, parsesArrays: Bool) throws(DouctlError) -> APIReply {
        let head = response.head
        let status = head.status
        if !parsesArrays, (200..<300).contains(status), firstSignificantByte(response.body) == UInt8(ascii: "[") {
            var reply = APIReply(head: head, body: response.body, json: nil, payload: nil)
            reply.isUnparsedJSONArray = true
            return reply
        }
        if (300..<400).contains(status), status != 304 {
            throw unfollowedRedirect(head, request: request)
        }
        let trimmedEmpty = response.body.allSatisfy { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        if trimmedEmpty {
            if (200..<400).contains(status) { return APIReply(head: head, body: response.body, json: nil, payload: nil) }
            throw statusOnlyError(status: status, request: request, body: response.body, mediaType: head.mediaType)
        }
        let json: JSON
        do {
            json = try JSONParser.parse(response.body)
        } catch {
            let mediaType = head.mediaType ?? "no content type"
            if (200..<300).contains(status) {
                // NDJSON (application/x-ndjson, jsonl, json-seq) is many values, not one.
                let isLines = mediaType.containsBytes("ndjson") || mediaType.containsBytes("jsonl") || mediaType.containsBytes("json-seq")
                if mediaType.containsBytes("json") && !isLines {
                    throw .badReply("the reply is not valid JSON (HTTP \(status): \(error.description))", httpStatus: status)
                }
                // HTML (Apache's WebDAV answers PUT and MKCOL with a 201 page), images and
                // other non-JSON payloads are data too: `douctl api` prints them as they are,
                // as gh does; a command that needs JSON says so (`APIReply.requireJSON`).
                return APIReply(head: head, body: response.body, json: nil, payload: nil)
            }
            if status < 400 { return APIReply(head: head, body: response.body, json: nil, payload: nil) }
            throw statusOnlyError(status: status, request: request, body: response.body, mediaType: head.mediaType)
        }

        // A GraphQL response with errors: failed without data, partly failed with it.
        if let problems = GraphQL.problems(in: json) {
            guard GraphQL.hasData(json), status < 400 else {
                var error = GraphQL.error(problems, status: status, request: request)
                error.body = response.body
                throw .api(error)
            }
            var reply = APIReply(head: head, body: response.body, json: json, payload: json)
            reply.graphQLProblems = problems
            return reply
        }
        switch rules.read(json, status: status, request: request) {
        case .payload(let payload):
            return APIReply(head: head, body: response.body, json: json, payload: payload)
        case .error(var error):
            error.body = response.body
            throw .api(error)
        }
    }

    /// The common dialects' reading of a JSON reply (the default `APIStyleRules.read`):
    /// its payload, or its error, with `rules` deciding what codes mean.
    public static func readCommonDialects(_ json: JSON, status: Int, request: String, rules: some APIStyleRules) -> ReplyReading {
        if let error = apiError(in: json, status: status, rules: rules, request: request) { return .error(error) }
        return .payload(payload(of: json))
    }

    // MARK: - helpers

    private static func firstSignificantByte(_ bytes: [UInt8]) -> UInt8? {
        bytes.first { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 && $0 != 0xEF && $0 != 0xBB && $0 != 0xBF }
    }

    private static func payload(of json: JSON) -> JSON {
        guard case .object(let object) = json else { return json }
        if let response = openAPIResponse(object) { return .object(response) }
        if firstScalar(in: object, keys: codeKeys) != nil, isEnvelopeShaped(object) {
            for key in dataKeys {
                if let data = object[key], !data.isNull { return data }
            }
        }
        return json
    }

    private static func openAPIResponse(_ object: JSONObject) -> JSONObject? {
        guard object.count == 1, case .object(let response)? = object["Response"] else { return nil }
        return response
    }

    /// An object with a code key and a message or data key: an envelope, not a resource
    /// that happens to have a field called "code".
    private static func isEnvelopeShaped(_ object: JSONObject) -> Bool {
        (messageKeys + dataKeys).contains { object[$0] != nil }
    }

    private static func apiError(in json: JSON, status: Int, rules: some APIStyleRules, request: String) -> APIError? {
        guard case .object(let object) = json else {
            return status >= 400 ? APIError(kind: statusKind(status), httpStatus: status, message: "", request: request) : nil
        }
        if let response = openAPIResponse(object) {
            guard case .object(let error)? = response["Error"] else {
                return status >= 400 ? APIError(kind: statusKind(status), httpStatus: status, message: "", request: request) : nil
            }
            let code = error["Code"]?.scalarText
            return APIError(
                kind: openAPIKind(code: code, status: status), httpStatus: status, code: code,
                message: error["Message"]?.scalarText ?? "", request: response["RequestId"]?.scalarText.map { "request \($0)" } ?? request)
        }
        let code = firstScalar(in: object, keys: codeKeys)
        let isEnvelope = code != nil && isEnvelopeShaped(object)
        let codeSaysError = isEnvelope && !(code.map(codeMeansSuccess) ?? true)
        guard status >= 400 || codeSaysError else { return nil }

        var message = ""
        var keys: [String] = []
        var dialectCode: String?
        if let (text, messageKeys) = messageText(in: object) {
            message = text
            keys = messageKeys
        } else if let reason = ErrorDialects.reason(in: object) {
            // RFC 9457, DRF, GitHub, GitLab, JSON:API, Google, Datasette, RFC 6749 §5.2.
            message = reason.text
            dialectCode = reason.code
        }
        let requestText = object["request"]?.stringValue ?? request
        var error = APIError(
            kind: kind(status: status, code: isEnvelope ? code : nil, rules: rules), httpStatus: status,
            code: isEnvelope ? code : dialectCode, message: message, messageKeys: keys, request: requestText)
        if let code, let hint = rules.hint(forCode: code) { error.hint = hint }
        return error
    }

    /// The message of an envelope: a string as is; an object's texts joined, with its keys.
    private static func messageText(in object: JSONObject) -> (String, [String])? {
        for key in messageKeys {
            guard let value = object[key], !value.isNull else { continue }
            if case .object(let parts) = value {
                let texts = parts.map { $0.value.scalarText ?? $0.value.text() }
                return (texts.joined(separator: "; "), parts.keys)
            }
            return (value.scalarText ?? value.text(), [])
        }
        return nil
    }

    static func firstScalar(in object: JSONObject, keys: [String]) -> String? {
        for key in keys {
            if let value = object[key], !value.isNull, let text = value.scalarText { return text }
        }
        return nil
    }

    /// What an error means: the style's reading of its code, else the HTTP status's.
    static func kind(status: Int, code: String?, rules: some APIStyleRules) -> APIError.Kind {
        if let code, let kind = rules.kind(ofCode: code) { return kind }
        return statusKind(status)
    }

    /// What an HTTP status alone says about an error.
    static func statusKind(_ status: Int) -> APIError.Kind {
        switch status {
        case 401: return .authentication
        case 403: return .permission
        case 404: return .notFound
        case 429: return .rateLimited
        default: return .general
        }
    }

    private static func openAPIKind(code: String?, status: Int) -> APIError.Kind {
        guard let code else { return statusKind(status) }
        if code.hasPrefix("AuthFailure") { return .authentication }
        if code.hasPrefix("UnauthorizedOperation") { return .permission }
        if code.hasPrefix("ResourceNotFound") { return .notFound }
        if code.hasPrefix("RequestLimitExceeded") || code.hasPrefix("LimitExceeded") { return .rateLimited }
        return statusKind(status)
    }

    /// An error status whose body is not JSON (an HTML 502 from a gateway, an empty reply
    /// to HEAD): the status decides the exit code, and the body is quoted briefly.
    private static func statusOnlyError(status: Int, request: String, body: [UInt8], mediaType: String?) -> DouctlError {
        let quote = BodyQuote.brief(body, mediaType: mediaType)
        var error = APIError(
            kind: statusKind(status), httpStatus: status,
            message: quote.map { "HTTP \(status): \($0)" } ?? "HTTP \(status)", request: request)
        if error.kind == .general { error.message = quote ?? "" }
        error.body = body
        return .api(error)
    }

    /// A 3xx douctl did not follow (a POST answered 302, a 307 to another origin, a body
    /// that cannot be sent again): the request did not happen where it was meant to.
    private static func unfollowedRedirect(_ head: HTTPResponseHead, request: String) -> DouctlError {
        let location = head.header("Location").map { Redaction.redactURL(BodyQuote.singleLine($0, limit: 200)) }
        let target = location.map { "to \($0)" } ?? "without a Location"
        return .transport(.redirect("the server answered HTTP \(head.status) \(target), which douctl did not follow (\(request)): the request was not carried out there"))
    }
}

/// A short, single-line, printable excerpt of a reply body for an error message.
enum BodyQuote {
    /// An HTML page is quoted by its title (or first words) to this many characters.
    static let limit = 60
    /// A text body keeps its reason: its first `textLines` lines that say something
    /// (pypiserver's 409 "… already exists! You may start server with `--overwrite`
    /// option."), joined on one line, to this many characters.
    static let textLimit = 300
    static let textLines = 3

    /// `"…"` around the body's first words (an HTML page's title, else its text without
    /// tags; a text body's first lines), or nil for an empty or binary body. Controls and
    /// runs of white space become one space, so nothing in it reaches a terminal as a control.
    static func brief(_ body: [UInt8], mediaType: String?) -> String? {
        let prefix = body.prefix(8192)
        if prefix.contains(0) { return nil }
        var text = String(decoding: prefix, as: UTF8.self)
        let looksHTML = mediaType?.containsBytes("html") == true || text.drop { $0 == " " || $0 == "\n" || $0 == "\r" || $0 == "\t" }.hasPrefix("<")
        if looksHTML {
            if let title = between(text, "<title>", "</title>"), !singleLine(title, limit: limit).isEmpty {
                text = title
            } else {
                text = withoutTags(text)
            }
            let line = singleLine(text, limit: limit)
            return line.isEmpty ? nil : "\"\(line)\""
        }
        let lines = text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" })
            .filter { !singleLine(String($0), limit: 1).isEmpty }.prefix(textLines)
        let line = singleLine(lines.joined(separator: "\n"), limit: textLimit)
        return line.isEmpty ? nil : "\"\(line)\""
    }

    /// Control characters and runs of white space become one space; at most `limit`
    /// characters, "…" marking a cut.
    static func singleLine(_ text: String, limit: Int) -> String {
        var out = ""
        var count = 0
        var pendingSpace = false
        for scalar in text.unicodeScalars {
            let isSpace = scalar.value < 0x20 || scalar.value == 0x7F || (0x80..<0xA0).contains(scalar.value) || scalar == " "
                || scalar.properties.isWhitespace || scalar.properties.generalCategory == .format
            if isSpace {
                pendingSpace = !out.isEmpty
                continue
            }
            if count >= limit {
                out += "…"
                return out
            }
            if pendingSpace {
                out.unicodeScalars.append(" ")
                count += 1
                pendingSpace = false
            }
            out.unicodeScalars.append(scalar)
            count += 1
        }
        return out
    }

    private static func between(_ text: String, _ open: String, _ close: String) -> String? {
        guard let start = text.firstRange(ofBytes: open) ?? text.firstRange(ofBytes: open.uppercased()),
              let end = text[start.upperBound...].firstRange(ofBytes: close) ?? text[start.upperBound...].firstRange(ofBytes: close.uppercased())
        else { return nil }
        return String(text[start.upperBound..<end.lowerBound])
    }

    private static func withoutTags(_ text: String) -> String {
        var out = ""
        var inTag = false
        for character in text {
            if character == "<" { inTag = true; out += " "; continue }
            if character == ">" { inTag = false; continue }
            if !inTag { out.append(character) }
        }
        return out
    }
}
