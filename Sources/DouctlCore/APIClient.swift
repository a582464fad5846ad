import DouctlHTTP
import DouctlJSON

/// Sends `APIRequest`s for one profile: builds URLs, attaches the token where the profile
/// says (header or query), refreshes and replays once when the server says the token
/// expired, and decodes the reply's envelope.
public final class APIClient {
    public let profile: ResolvedProfile
    public let http: HTTPClient
    public let tokens: AccessTokenSource?
    /// Extra per-request behaviour, such as a cookie session (Coding's password login).
    public var session: SessionHooks?
    /// The token the last exchange carried: it decides an auth error's hint, and is
    /// scrubbed from error text (Douban echoes it: "invalid_access_token: <token>").
    private var lastSentToken: String?

    public init(profile: ResolvedProfile, http: HTTPClient, tokens: AccessTokenSource?, session: SessionHooks? = nil) {
        self.profile = profile
        self.http = http
        self.tokens = tokens
        self.session = session
    }

    /// Sends and decodes: the payload, or the API's error as a `DouctlError`.
    public func send(_ request: APIRequest, progress: ((TransferProgress) -> Void)? = nil) throws(DouctlError) -> APIReply {
        let response = try exchange(request, progress: progress)
        return try decode(response, for: request)
    }

    /// Decodes a reply `exchange` returned, adding the login hint to authentication errors.
    public func decode(_ response: HTTPResponse, for request: APIRequest, parsesArrays: Bool = true) throws(DouctlError) -> APIReply {
        do {
            return try ReplyDecoder.decode(response, style: profile.style, request: request.summary, parsesArrays: parsesArrays)
        } catch {
            guard case .api(var apiError) = error else { throw error }
            if let token = lastSentToken {
                apiError.message = Redaction.scrub(apiError.message, secrets: [token])
            }
            if apiError.kind == .authentication, apiError.hint == nil {
                if lastSentToken != nil, let tokens {
                    apiError.hint = tokens.rejectionHint
                } else {
                    apiError.hint = "not logged in; run: douctl auth login" + (profile.name == "douban" ? "" : " --profile \(profile.name)")
                }
            }
            throw .api(apiError)
        }
    }

    /// Sends with authentication and the one refresh-and-replay, returning the raw reply
    /// whatever its status (`api --include` prints heads of error replies too).
    public func exchange(_ request: APIRequest, progress: ((TransferProgress) -> Void)? = nil) throws(DouctlError) -> HTTPResponse {
        let token = request.sendsToken ? try tokens?.currentToken() : nil
        lastSentToken = token
        let response = try perform(request, token: token, progress: progress)
        guard let token, let tokens, ReplyDecoder.meansExpiredToken(response, style: profile.style) else {
            return response
        }
        guard let fresh = try tokens.refresh(rejected: token) else { return response }
        if case .raw(let body, _) = request.body, !body.isReplayable {
            throw .authentication("the token had expired and is now refreshed, but the request body came from a pipe and cannot be sent again; run the command again")
        }
        lastSentToken = fresh
        return try perform(request, token: fresh, progress: progress)
    }

    /// The HTTP request `request` becomes with `token`.
    public func httpRequest(_ request: APIRequest, token: String?) throws(DouctlError) -> HTTPRequest {
        var query = request.query
        var headers: [HTTPHeader] = []
        if headersLack(request.headers, "Accept") { headers.append(HTTPHeader("Accept", "application/json")) }
        let url = profile.url(for: request.path)
        if let token, profile.isOwnOrigin(url) {
            switch profile.tokenPlacement {
            case .header: headers.append(HTTPHeader("Authorization", "Bearer \(token)"))
            case .query: query.append(("access_token", token))
            }
        }
        let body: RequestBody
        switch request.body {
        case .none:
            body = .none
        case .form(let fields):
            body = .bytes(Array(FormEncoding.encode(fields).utf8))
            headers.append(HTTPHeader("Content-Type", "application/x-www-form-urlencoded; charset=UTF-8"))
        case .multipart(let form):
            body = try form.requestBody()
            headers.append(HTTPHeader("Content-Type", form.contentType))
        case .raw(let raw, let contentType):
            body = raw
            if let contentType, headersLack(request.headers, "Content-Type") {
                headers.append(HTTPHeader("Content-Type", contentType))
            }
        }
        var httpRequest = HTTPRequest(
            method: request.method.uppercased(),
            url: FormEncoding.appendQuery(query, to: url),
            headers: headers + request.headers,
            body: body)
        if profile.isOwnOrigin(url) { session?.prepare(&httpRequest) }
        return httpRequest
    }

    private func perform(_ request: APIRequest, token: String?, progress: ((TransferProgress) -> Void)?) throws(DouctlError) -> HTTPResponse {
        let httpRequest = try httpRequest(request, token: token)
        let response: HTTPResponse
        do {
            response = try http.fetch(httpRequest, progress: progress)
        } catch .interrupted {
            throw .interrupted
        } catch .bodyFile(let detail) {
            throw .localInput(detail)
        } catch {
            throw .transport(error)
        }
        // After redirects the reply may come from elsewhere: its cookies are not the API's.
        if profile.isOwnOrigin(response.head.url ?? httpRequest.url) { try session?.received(response, for: httpRequest) }
        return response
    }

    private func headersLack(_ headers: [HTTPHeader], _ name: String) -> Bool {
        headers.value(of: name) == nil
    }
}

/// Hooks for state that rides along with requests, like a cookie jar.
public protocol SessionHooks: AnyObject {
    /// Adds what the session needs to an outgoing request (Cookie, X-XSRF-TOKEN).
    func prepare(_ request: inout HTTPRequest)
    /// Learns from a reply (Set-Cookie).
    func received(_ response: HTTPResponse, for request: HTTPRequest) throws(DouctlError)
}
