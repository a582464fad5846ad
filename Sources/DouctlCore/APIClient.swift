import DouctlSystem
import DouctlHTTP
import DouctlJSON

/// How an `APIClient` behaves beyond its profile, transport and credentials.
public struct APIClientOptions {
    /// The run's request settings, as the session has them: the environment "$VAR" values
    /// in common_params, common_headers and signing_secret are read from, `--record`,
    /// `--wait-on-rate-limit`, the clock and the run's stop request.
    public var requests: RequestSettings
    /// `--cache`, `--cache-only`: GET and HEAD replies from and into the response cache.
    public var cachePolicy: CachePolicy?
    /// `rate_limit`: every request waits for its turn under the profile's quota.
    public var rateLimiter: ClientRateLimiter?
    /// The resets servers announced, per origin, shared by the profile's processes: nothing
    /// is sent to that origin before its reset.
    public var serverRateLimit: ServerRateLimits?
    /// Whether a request that carries the token may go out without one. Typed commands
    /// refuse before sending (exit 4, "not logged in"); `douctl api` sends anonymously, like
    /// curl, so public endpoints work without a login.
    public var allowsAnonymous = false
    /// `--unix-socket`: part of what chooses a cached reply.
    public var unixSocket: String?

    public init(requests: RequestSettings = RequestSettings()) {
        self.requests = requests
    }
}

/// Sends `APIRequest`s for one profile: builds each HTTP request (URL, the profile's common
/// headers and parameters, signature, body) and sends it down the request path, whose layers
/// each own one concern (see `RequestLayer`); then decodes the reply's envelope.
public final class APIClient {
    public let profile: ResolvedProfile
    /// libcurl in douctl; a scripted transport in tests; one that only prints requests.
    public let http: any HTTPTransport
    public let tokens: AccessTokenSource?
    /// Extra per-request behaviour, such as a cookie session (Coding's password login).
    public let session: SessionHooks?
    /// How this client behaves beyond its profile, transport and credentials, fixed when it
    /// is made (`ClientFactory.client`, the one place douctl makes clients).
    public let options: APIClientOptions
    public var requests: RequestSettings { options.requests }
    public var cachePolicy: CachePolicy? { options.cachePolicy }
    public var rateLimiter: ClientRateLimiter? { options.rateLimiter }
    public var allowsAnonymous: Bool { options.allowsAnonymous }
    /// Whether requests go out: false over a transport that answers with stand-ins
    /// (`HTTPTransport.sendsRequests`). Only what a stand-in reply cannot tell asks it:
    /// `{me}` stays as written, and stand-in replies are not checked for fields.
    public let sendsRequests: Bool
    /// The layers every request goes through, composed once.
    private let credentials: CredentialLayer
    private var knownUserID: String?

    public init(profile: ResolvedProfile, http: any HTTPTransport, tokens: AccessTokenSource?, session: SessionHooks? = nil, options: APIClientOptions = APIClientOptions()) {
        self.profile = profile
        self.http = http
        self.tokens = tokens
        self.session = session
        self.options = options
        sendsRequests = http.sendsRequests
        // Credentials → Cache → Quota → Cookies → Recording → transport.
        var path: RequestLayer = TransportLayer(http)
        let requests = options.requests
        if let recorder = requests.recorder {
            let secrets = Self.standingSecrets(profile: profile, requests: requests, tokens: tokens, session: session)
            path = RecordingLayer(recorder.scrubbing(profile.recordScrub), secrets: secrets, next: path)
        }
        if let session { path = CookieLayer(session, profile: profile, next: path) }
        path = QuotaLayer(profile: profile, requests: requests, rateLimiter: options.rateLimiter, serverRateLimits: options.serverRateLimit, next: path)
        if let cachePolicy = options.cachePolicy {
            path = CacheLayer(cachePolicy, profile: profile, clock: requests.clock, unixSocket: options.unixSocket, next: path)
        }
        credentials = CredentialLayer(profile: profile, tokens: tokens, session: session, allowsAnonymous: options.allowsAnonymous,
                                      requests: requests, next: path)
    }

    /// Sends and decodes: the payload, or the API's error as a `DouctlError`.
    public func send(_ request: APIRequest, progress: ((TransferProgress) -> Void)? = nil) throws(DouctlError) -> APIReply {
        let response = try exchange(request, progress: progress)
        return try decode(response, for: request)
    }

    /// Decodes a reply `exchange` returned, adding the login hint to authentication errors.
    public func decode(_ response: HTTPResponse, for request: APIRequest, parsesArrays: Bool = true) throws(DouctlError) -> APIReply {
        do {
            return try ReplyDecoder.decode(response, rules: profile.rules, request: request.summary, parsesArrays: parsesArrays)
        } catch {
            guard case .api(var apiError) = error else { throw error }
            if let token = credentials.lastSentToken {
                apiError.message = Redaction.scrub(apiError.message, secrets: [token])
            }
            if apiError.kind == .authentication || apiError.kind == .permission, apiError.hint == nil {
                apiError.hint = authenticationHint(for: apiError, url: profile.url(for: request.path))
            }
            throw .api(apiError)
        }
    }

    /// Advice for an authentication error, only where it can help: logging in helps when
    /// no token was sent or the one sent was refused (401, Douban's 103/106); it cannot help
    /// a permission error (403, Douban's need_permission 1000) nor a URL outside the API,
    /// where no credentials go.
    func authenticationHint(for error: APIError, url: String) -> String? {
        let isPermission = profile.rules.refusesPermission(error)
        if profile.isOwnOrigin(url), credentials.lastSentToken != nil, let tokens {
            return isPermission ? nil : tokens.rejectionHint
        }
        // No credentials went (a URL outside the API, or --api-base elsewhere with no login):
        // advice names the profile that would send them there, or nothing.
        guard let owner = profile.profileSendingCredentials(to: url) else { return nil }
        if owner == profile.name { return "not logged in; run: \(DouctlError.loginCommand(profile.name))" }
        return "profile \(owner) sends credentials there: add --profile \(owner)"
    }

    /// The logged-in user's id, for the `{me}` placeholder: what the login stored, else
    /// asked of the API (`~me`) once per client.
    public func currentUserID() throws(DouctlError) -> String {
        if let knownUserID { return knownUserID }
        if !sendsRequests { return "{me}" }
        var id = try (tokens as? StoredTokens).flatMap { tokens throws(DouctlError) in try tokens.store.load(profile.name)?.userID }
        if id == nil {
            try requireLogin()
            guard let identity = try Identity.fetch(with: self) else {
                throw .usage("profile '\(profile.name)' does not say who is logged in, so {me} is unknown; set the endpoint that does: douctl config set user_url /user --profile \(profile.name)")
            }
            id = identity.id
        }
        guard let id, !id.isEmpty else { throw .badReply("the API did not say who is logged in (no id in the current user)") }
        knownUserID = id
        return id
    }

    /// `text` with `{me}` replaced by the logged-in user's id (gh's `{owner}` idea), so
    /// scripts need not look it up: `douctl api /v2/user/{me}`, `shuo timeline --user {me}`.
    public func expandingPlaceholders(_ text: String) throws(DouctlError) -> String {
        guard text.containsBytes("{me}") else { return text }
        return text.replacingAll("{me}", with: try currentUserID())
    }

    /// A typed command's reply, checked for the fields it relies on (see `ReplyShape`);
    /// stand-in replies are not checked.
    public func checked(_ json: JSON, has fields: [String], what: String, request: String) throws(DouctlError) -> JSON {
        guard sendsRequests else { return json }
        return try ReplyShape.check(json, has: fields, what: what, request: request)
    }

    /// Throws "not logged in" unless the profile has a token, a cookie session, or the
    /// client may send anonymously; commands that send many requests call it first, so
    /// the user reads the error once.
    public func requireLogin() throws(DouctlError) {
        try credentials.requireLogin()
    }

    /// Sends down the request path, returning the raw reply whatever its status (`api
    /// --include` prints heads of error replies too).
    public func exchange(_ request: APIRequest, progress: ((TransferProgress) -> Void)? = nil) throws(DouctlError) -> HTTPResponse {
        try credentials.send(try outgoing(request), .buffered(progress: progress))
    }

    /// Like `exchange`, but a successful (2xx) reply's body goes to `sink` as it arrives,
    /// after `head` has seen the reply's head, and is never held in memory: downloads. Any
    /// other reply comes back with its body (its first 64 KiB; the rest is not read) for
    /// `decode`, after the one refresh-and-replay. `restart` takes back what a broken
    /// attempt already streamed, so a retry may begin again (false: no retry).
    public func stream(
        _ request: APIRequest,
        progress: ((TransferProgress) -> Void)? = nil,
        restart: (() -> Bool)? = nil,
        head: @escaping (HTTPResponseHead) -> Void,
        sink: @escaping (UnsafeRawBufferPointer) -> Bool
    ) throws(DouctlError) -> HTTPResponse {
        try stream(request, progress: progress, resume: restart.map { restart in { restart() ? .fromStart : .refused } },
                   head: head, sink: sink)
    }

    /// `stream`, where a retry after a broken transfer may keep what arrived and ask for the
    /// rest: `resume` answers with the headers that do (a download's `Range`, `If-Range`).
    public func stream(
        _ request: APIRequest,
        progress: ((TransferProgress) -> Void)? = nil,
        resume: (() -> SinkRestart)?,
        head: @escaping (HTTPResponseHead) -> Void,
        sink: @escaping (UnsafeRawBufferPointer) -> Bool
    ) throws(DouctlError) -> HTTPResponse {
        let streaming = ReplyHandling.Streaming(restart: resume, head: head, sink: sink)
        return try credentials.send(try outgoing(request), ReplyHandling(progress: progress, streaming: streaming))
    }

    /// The HTTP request `request` becomes with `token` (what the credentials layer sends).
    public func httpRequest(_ request: APIRequest, token: String?) throws(DouctlError) -> HTTPRequest {
        try credentials.attaching(token, to: try outgoing(request).http)
    }

    /// `request` as it goes down the path: the URL, the profile's common headers and
    /// parameters and signature (its own origin only), `Accept`, and the encoded body; the
    /// credentials layer adds the credential.
    private func outgoing(_ request: APIRequest) throws(DouctlError) -> OutgoingRequest {
        var request = request
        let url = profile.url(for: request.path)
        if profile.isOwnOrigin(url) {
            request = try RequestShaper(profile: profile, environment: requests.environment, now: requests.clock.now).shape(request)
        }
        var headers: [HTTPHeader] = []
        if request.headers.value(of: "Accept") == nil { headers.append(HTTPHeader("Accept", "application/json")) }
        let body: RequestBody
        switch request.body {
        case .none:
            body = .none
        case .form(let fields):
            body = .bytes(Array(FormEncoding.encode(fields).utf8))
            headers.append(HTTPHeader("Content-Type", "application/x-www-form-urlencoded"))
        case .multipart(let form):
            body = try form.requestBody()
            headers.append(HTTPHeader("Content-Type", form.contentType))
        case .raw(let raw, let contentType):
            body = raw
            if let contentType, request.headers.value(of: "Content-Type") == nil {
                headers.append(HTTPHeader("Content-Type", contentType))
            }
        }
        var http = HTTPRequest(method: request.method.uppercased(), url: FormEncoding.appendQuery(request.query, to: url),
                               headers: headers + request.headers, body: body)
        http.acceptsCompression = request.acceptsCompression
        http.savedAs = request.savedAs
        return OutgoingRequest(http: http, summary: request.summary, wantsCredential: request.sendsToken)
    }

    /// The secrets in force beside the one a request carries, for `--record` to scrub
    /// wherever they appear: the stored access and refresh tokens, the client and signing
    /// secrets, the session's cookies.
    private static func standingSecrets(profile: ResolvedProfile, requests: RequestSettings, tokens: AccessTokenSource?, session: SessionHooks?) -> () -> [String] {
        {
            var secrets = [profile.clientSecret].compactMap { $0 }
            if let written = profile.signingSecret {
                secrets.append(RequestShaper(profile: profile, environment: requests.environment, now: requests.clock.now).resolve(written))
            }
            return secrets + (tokens?.liveSecrets() ?? []) + (session?.liveSecrets() ?? [])
        }
    }
}

/// Hooks for state that rides along with requests, like a cookie jar.
public protocol SessionHooks: AnyObject {
    /// Adds what the session needs to an outgoing request (Cookie, X-XSRF-TOKEN).
    func prepare(_ request: inout HTTPRequest)
    /// Learns from a reply (Set-Cookie).
    func received(_ response: HTTPResponse, for request: HTTPRequest) throws(DouctlError)
    /// The session's secrets (cookie values), for `--record` to scrub.
    func liveSecrets() -> [String]
    /// A digest naming the credential the session sends (never the secret itself), so
    /// the response cache keeps one identity's replies from another's.
    var credentialDigest: String? { get }
}

extension SessionHooks {
    public func liveSecrets() -> [String] { [] }
    public var credentialDigest: String? { nil }
}

/// How `--wait-on-rate-limit` waits: `wait(seconds, reason)` sleeps (showing a countdown
/// where it can) and returns false when interrupted; waits stop adding up at `maximum`.
public struct RateLimitWait: Sendable {
    public let maximum: Double
    public let wait: @Sendable (Double, String) -> Bool

    public init(maximum: Double, wait: @escaping @Sendable (Double, String) -> Bool) {
        self.maximum = maximum
        self.wait = wait
    }
}
