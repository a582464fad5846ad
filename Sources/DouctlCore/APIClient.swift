import DouctlSystem
import DouctlHTTP
import DouctlJSON

/// How an `APIClient` behaves beyond its profile, transport and credentials.
public struct APIClientOptions {
    /// The run's request settings, as the session has them: the environment "$VAR" values
    /// in common_params, common_headers and signing_secret are read from, `--record`,
    /// `--wait-on-rate-limit` and the run's stop request (which ends the `rate_limit` wait,
    /// and tells a walk stopped by `--max-time` from one stopped by Ctrl-C).
    public var requests: RequestSettings
    /// `--cache`, `--cache-only`: GET and HEAD replies from and into the response cache.
    public var cachePolicy: CachePolicy?
    /// `rate_limit`: every request waits for its turn under the profile's quota.
    public var rateLimiter: ClientRateLimiter?
    /// The reset a server announced (`X-RateLimit-*`, `RateLimit`, `Retry-After`), shared
    /// by the profile's processes: nothing is sent before it.
    public var serverRateLimit: ServerRateLimit?
    /// Whether a request that carries the token may go out without one. Typed commands
    /// refuse before sending (exit 4, "not logged in"); `douctl api` sends anonymously, like
    /// curl, so public endpoints work without a login.
    public var allowsAnonymous = false

    public init(requests: RequestSettings = RequestSettings()) {
        self.requests = requests
    }
}

/// Sends `APIRequest`s for one profile: builds URLs, attaches the token where the profile
/// says (header or query), refreshes and replays once when the server says the token
/// expired, and decodes the reply's envelope.
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
    /// The run's request settings (see `RequestSettings`).
    public var requests: RequestSettings { options.requests }
    public var cachePolicy: CachePolicy? { options.cachePolicy }
    public var rateLimiter: ClientRateLimiter? { options.rateLimiter }
    public var allowsAnonymous: Bool { options.allowsAnonymous }
    /// Whether requests go out: false over a transport that answers with stand-ins
    /// (`HTTPTransport.sendsRequests`). Only what a stand-in reply cannot tell asks it:
    /// `{me}` stays as written, and stand-in replies are not checked for fields.
    public var sendsRequests: Bool { http.sendsRequests }
    /// The token the last exchange carried: it decides an auth error's hint, and is
    /// scrubbed from error text (Douban echoes it: "invalid_access_token: <token>").
    private var lastSentToken: String?

    public init(profile: ResolvedProfile, http: any HTTPTransport, tokens: AccessTokenSource?, session: SessionHooks? = nil, options: APIClientOptions = APIClientOptions()) {
        self.profile = profile
        self.http = http
        self.tokens = tokens
        self.session = session
        self.options = options
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
            if let token = lastSentToken {
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
        if profile.isOwnOrigin(url), lastSentToken != nil, let tokens {
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

    private var knownUserID: String?

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

    /// The shared record of the server's resets, for requests to the profile's own API:
    /// a URL elsewhere (`api https://other.example/x`, a download from a CDN) neither
    /// spends nor waits for the profile's quota.
    private func serverRateLimit(for request: APIRequest) -> ServerRateLimit? {
        guard let limit = options.serverRateLimit, profile.isOwnOrigin(profile.url(for: request.path)) else { return nil }
        return limit
    }

    /// `rate_limit`: waits (interruptibly) until the profile's quota allows one more request.
    /// Before that, a reset a server announced (by any douctl process of the profile) is
    /// waited for with `--wait-on-rate-limit`; without it the request is not sent (exit 6).
    private func waitForRateLimit(_ request: APIRequest, honouringServerReset: Bool = true) throws(DouctlError) {
        if honouringServerReset, let serverRateLimit = serverRateLimit(for: request), let (until, reason) = serverRateLimit.blockedUntil(now: requests.clock.now()) {
            let seconds = until - requests.clock.now()
            guard let rateLimitWait = requests.rateLimitWait, seconds <= rateLimitWait.maximum else {
                throw .api(APIError(
                    kind: .rateLimited, httpStatus: 429,
                    message: "the server's quota is spent for \(Int(max(seconds, 1).rounded(.up)))s more, per \(reason); nothing was sent",
                    request: request.summary, hint: "the quota is shared by every douctl of profile '\(profile.name)'; pass --wait-on-rate-limit to wait for it"))
            }
            if seconds > 0, !rateLimitWait.wait(seconds, reason) { throw .interrupted }
        }
        let (clock, cancellation) = (requests.clock, requests.cancellation)
        try rateLimiter?.acquire(now: clock.now) { seconds in
            clock.sleep(seconds, cancellation)
            return !cancellation.isRequested
        }
    }

    /// Throws "not logged in" unless the profile has a token, a cookie session, or the
    /// client may send anonymously; commands that send many requests call it first, so
    /// the user reads the error once.
    public func requireLogin() throws(DouctlError) {
        guard !allowsAnonymous, session == nil else { return }
        if try tokens?.currentToken() == nil {
            guard profile.apiBaseOverridden else { throw .notLoggedIn(profile.name) }
            // --api-base elsewhere: logging in to this profile is no advice for that server.
            let owner = profile.profileSendingCredentials(to: profile.apiBase)
            throw .authentication("not logged in: no credentials for \(Redaction.redactURL(profile.apiBase))" + (owner.map { "; profile \($0) sends credentials there: use --profile \($0)" } ?? ""))
        }
    }

    /// Sends with authentication and the one refresh-and-replay, returning the raw reply
    /// whatever its status (`api --include` prints heads of error replies too).
    public func exchange(_ request: APIRequest, progress: ((TransferProgress) -> Void)? = nil) throws(DouctlError) -> HTTPResponse {
        if let cachePolicy, ["GET", "HEAD"].contains(request.method.uppercased()) {
            return try cachedExchange(request, policy: cachePolicy, progress: progress)
        }
        return try uncachedExchange(request, progress: progress)
    }

    /// A fresh cached reply; else, for a stale entry with validators, a conditional request
    /// whose 304 renews the entry (RFC 9111 §4.3); else the network (storing a plain
    /// success); else — when the network fails or answers 5xx — a stale copy with a note
    /// (stale-if-error). Error replies are never stored, so never served.
    private func cachedExchange(_ request: APIRequest, policy: CachePolicy, progress: ((TransferProgress) -> Void)?) throws(DouctlError) -> HTTPResponse {
        // A request made conditional or partial by the caller gets the server's own answer.
        if ResponseCache.asksConditionally(request.headers) {
            return try uncachedExchange(request, progress: progress)
        }
        let token = request.sendsToken ? try tokens?.currentToken() : nil
        // Logged out means logged out, whatever the cache holds.
        if request.sendsToken, token == nil { try requireLogin() }
        let url = FormEncoding.appendQuery(request.query, to: profile.url(for: request.path))
        // The credential in force: the token, else the cookie session (sent to the API's own
        // origin only), else none (an anonymous request).
        let credential = token ?? (profile.isOwnOrigin(url) ? session?.credentialDigest.map { "session:" + $0 } : nil)
        let key = ResponseCache.key(profile: profile.name, method: request.method, url: url, credential: credential)
        let now = requests.clock.now()
        let entry = policy.cache.load(key)
        if let entry, policy.cacheOnly || policy.freshFor.map({ now - entry.storedAt <= $0 }) == true {
            policy.cache.count(.hits)
            return entry.response
        }
        if policy.cacheOnly {
            throw .notCached("not in the cache: \(request.summary) (--cache-only sends nothing; nothing was contacted)")
        }
        var conditional = request
        if let entry { conditional.headers += entry.conditionalHeaders }
        var response: HTTPResponse
        do {
            response = try uncachedExchange(conditional, progress: progress)
        } catch .transport(let error) where error.cameFromTheNetwork {
            guard let entry else { throw .transport(error) }
            policy.note("douctl: warning: \(error.message); using the cached reply from \(Timestamp.describeRemaining(now - entry.storedAt)) ago")
            policy.cache.count(.hits)
            return entry.response
        }
        if response.status == 304 {
            if let entry, entry.hasValidator, entry.isConfirmed(by: response.head) {
                policy.cache.count(.revalidations)
                do {
                    return try policy.cache.refresh(key, entry, with: response.head, now: now).response
                } catch {
                    policy.note("douctl: warning: \(error.message)")
                    return entry.response
                }
            }
            // A 304 that is not about what we hold (another ETag, or none asked for):
            // its "not modified" confirms nothing; ask again for the whole reply.
            if entry?.hasValidator == true {
                policy.note("douctl: warning: the server answered 304 Not Modified for a version douctl does not hold; fetching the whole reply")
                response = try uncachedExchange(request, progress: progress)
            }
            // Still "not modified", with nothing asked or nothing held: no body to serve.
            if response.status == 304 {
                throw .badReply("the server answered 304 Not Modified, but douctl holds no copy it confirms: \(request.summary)", httpStatus: 304)
            }
        }
        if ResponseCache.isStorable(response, requestHeaders: request.headers) {
            do { try policy.cache.store(key, response, now: now) } catch { policy.note("douctl: warning: \(error.message)") }
        } else if response.status >= 500, let entry {
            policy.note("douctl: warning: the server answered HTTP \(response.status); using the cached reply from \(Timestamp.describeRemaining(now - entry.storedAt)) ago")
            policy.cache.count(.hits)
            return entry.response
        }
        policy.cache.count(.misses)
        return response
    }

    private func uncachedExchange(_ request: APIRequest, progress: ((TransferProgress) -> Void)?) throws(DouctlError) -> HTTPResponse {
        try refreshingAndReplaying(request) { (token: String?) throws(DouctlError) -> HTTPResponse in
            try perform(request, token: token, progress: progress)
        }
    }

    /// The one refresh-and-replay path, for buffered (`exchange`) and streamed (`stream`)
    /// requests alike: sends with the token in force; when the reply says the token expired
    /// or is invalid, refreshes once and replays once (a body from a pipe cannot be).
    private func refreshingAndReplaying(
        _ request: APIRequest, send: (String?) throws(DouctlError) -> HTTPResponse
    ) throws(DouctlError) -> HTTPResponse {
        let token = request.sendsToken ? try tokens?.currentToken() : nil
        if request.sendsToken, token == nil { try requireLogin() }
        lastSentToken = token
        let response = try send(token)
        guard let token, let tokens, profile.rules.meansExpiredToken(response) else {
            return response
        }
        guard let fresh = try tokens.refresh(rejected: token) else { return response }
        if case .raw(let body, _) = request.body, !body.isReplayable {
            throw .authentication("the token had expired and is now refreshed, but the request body came from a pipe and cannot be sent again; run the command again")
        }
        lastSentToken = fresh
        return try send(fresh)
    }

    /// One try after another under `rate_limit`'s quota, and with `--wait-on-rate-limit`
    /// a rate-limited reply waited out and the request sent again (buffered and streamed
    /// requests alike; a body from a pipe cannot be sent again).
    private func waitingOutRateLimits(
        _ request: APIRequest, attempt: () throws(DouctlError) -> HTTPResponse
    ) throws(DouctlError) -> HTTPResponse {
        var waited = 0.0
        // Just waited out a reset this process was told of: the shared record of the same
        // reset is not waited for twice.
        var justWaited = false
        while true {
            try waitForRateLimit(request, honouringServerReset: !justWaited)
            let response = try attempt()
            let notice = RateLimitNotice.read(response.head, now: requests.clock.now())
            let limited = profile.rules.meansRateLimited(response)
            if let notice, let until = notice.resetAt, notice.isExhausted || limited {
                serverRateLimit(for: request)?.record(until: until, reason: notice.reason, now: requests.clock.now())
            }
            guard let rateLimitWait = requests.rateLimitWait, limited,
                  request.body.isReplayable else { return response }
            let (seconds, reason) = RateLimitWait.delay(for: response, notice: notice, now: requests.clock.now())
            guard waited + seconds <= rateLimitWait.maximum else { return response }
            waited += seconds
            if !rateLimitWait.wait(seconds, reason) { throw .interrupted }
            justWaited = true
        }
    }

    /// Every secret in force now, for `--record` to scrub wherever it appears: the token
    /// sent, the stored access and refresh tokens, the client and signing secrets, the
    /// session's cookies.
    func liveSecrets(sent token: String?) -> [String] {
        var secrets = [token, profile.clientSecret].compactMap { $0 }
        if let written = profile.signingSecret {
            secrets.append(RequestShaper(profile: profile, environment: requests.environment, now: requests.clock.now).resolve(written))
        }
        secrets += tokens?.liveSecrets() ?? []
        secrets += session?.liveSecrets() ?? []
        return secrets
    }

    /// The HTTP request `request` becomes with `token`.
    public func httpRequest(_ request: APIRequest, token: String?) throws(DouctlError) -> HTTPRequest {
        var request = request
        if profile.isOwnOrigin(profile.url(for: request.path)) {
            request = try RequestShaper(profile: profile, environment: requests.environment, now: requests.clock.now).shape(request)
        }
        var query = request.query
        var headers: [HTTPHeader] = []
        if headersLack(request.headers, "Accept") { headers.append(HTTPHeader("Accept", "application/json")) }
        let url = profile.url(for: request.path)
        var secrets: [String] = []
        if let token, profile.isOwnOrigin(url) {
            secrets.append(token)
            if tokens?.credentialScheme == "Basic" {
                // auth login --basic: the stored user:password, as HTTP Basic, to this origin only.
                headers.append(HTTPHeader("Authorization", "Basic \(token)"))
            } else if let name = profile.tokenQuery {
                // An API key in a query parameter of the API's choosing (token_query key).
                query.append((name, token))
            } else if let name = profile.tokenHeader {
                // An API key in a header of the API's choosing (token_header X-API-Key).
                guard HTTPSyntax.isFieldValue(token) else {
                    throw .localInput("the API key (\(tokens is FixedToken ? "DOUCTL_TOKEN" : "the stored login of '\(profile.name)'")) contains a line break (CR or LF) or NUL, so it cannot be sent")
                }
                headers.append(HTTPHeader(name, token))
            } else {
            switch profile.tokenPlacement {
            case .header:
                // DOUCTL_TOKEN, or what a token endpoint sent: never let it end the header.
                guard HTTPSyntax.isFieldValue(token) else {
                    throw .localInput("the access token (\(tokens is FixedToken ? "DOUCTL_TOKEN" : "the stored login of '\(profile.name)'")) contains a line break (CR or LF) or NUL, so it cannot be sent")
                }
                headers.append(HTTPHeader("Authorization", "\(profile.authScheme) \(token)"))
            case .query: query.append(("access_token", token))
            }
            }
        }
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
            if let contentType, headersLack(request.headers, "Content-Type") {
                headers.append(HTTPHeader("Content-Type", contentType))
            }
        }
        var httpRequest = HTTPRequest(
            method: request.method.uppercased(),
            url: FormEncoding.appendQuery(query, to: url),
            headers: headers + request.headers,
            body: body)
        httpRequest.secrets = secrets
        httpRequest.acceptsCompression = request.acceptsCompression
        if profile.isOwnOrigin(url) { session?.prepare(&httpRequest) }
        return httpRequest
    }

    private func perform(_ request: APIRequest, token: String?, progress: ((TransferProgress) -> Void)?) throws(DouctlError) -> HTTPResponse {
        let httpRequest = try httpRequest(request, token: token)
        return try waitingOutRateLimits(request) { () throws(DouctlError) -> HTTPResponse in
            try fetchOnce(httpRequest, token: token, progress: progress)
        }
    }

    /// One buffered try: the reply, its cookies kept, the exchange recorded.
    private func fetchOnce(_ httpRequest: HTTPRequest, token: String?, progress: ((TransferProgress) -> Void)?) throws(DouctlError) -> HTTPResponse {
        let response: HTTPResponse
        do {
            response = try http.fetch(httpRequest, progress: progress)
        } catch {
            throw .transport(error)
        }
        if profile.isOwnOrigin(httpRequest.url) { try session?.received(response, for: httpRequest) }
        if let recorder = requests.recorder { try recorder.record(httpRequest, response, secrets: liveSecrets(sent: token)) }
        return response
    }

    /// Like `exchange`, but a successful (2xx) reply's body goes to `sink` as it arrives,
    /// after `head` has seen the reply's head, and is never held in memory: downloads. Any
    /// other reply comes back with its body (its first 64 KiB; the rest is not read) for `decode`, after the one
    /// refresh-and-replay. `restart` takes back what a broken attempt already streamed, so
    /// a retry may begin again (false: no retry).
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
        try refreshingAndReplaying(request) { (token: String?) throws(DouctlError) -> HTTPResponse in
            try performStreaming(request, token: token, progress: progress, restart: resume, head: head, sink: sink)
        }
    }

    private func performStreaming(
        _ request: APIRequest, token: String?, progress: ((TransferProgress) -> Void)?, restart: (() -> SinkRestart)?,
        head: @escaping (HTTPResponseHead) -> Void, sink: @escaping (UnsafeRawBufferPointer) -> Bool
    ) throws(DouctlError) -> HTTPResponse {
        let httpRequest = try httpRequest(request, token: token)
        return try waitingOutRateLimits(request) { () throws(DouctlError) -> HTTPResponse in
            try streamOnce(httpRequest, progress: progress, restart: restart, head: head, sink: sink)
        }
    }

    /// One streamed try: a 2xx body to `sink`, any other's first 64 KiB kept for `decode`.
    private func streamOnce(
        _ httpRequest: HTTPRequest, progress: ((TransferProgress) -> Void)?, restart: (() -> SinkRestart)?,
        head: @escaping (HTTPResponseHead) -> Void, sink: @escaping (UnsafeRawBufferPointer) -> Bool
    ) throws(DouctlError) -> HTTPResponse {
        let errorLimit = HTTPResponse.maximumErrorBodyBytes
        var errorBody = CappedBody()
        var streaming = false
        var finalHead: HTTPResponseHead?
        let responseHead: HTTPResponseHead
        do {
            responseHead = try http.send(httpRequest, progress: progress, restartSink: {
                errorBody.removeAll()
                return streaming ? restart?() ?? .refused : .fromStart
            }, head: { received in
                finalHead = received
                streaming = (200..<300).contains(received.status)
                if streaming { head(received) }
            }, sink: { chunk in
                if streaming { return sink(chunk) }
                // An error reply is quoted, not kept: the rest of it is never read.
                return errorBody.take(chunk, cap: errorLimit)
            })
        } catch .outputFailed(let detail) {
            guard errorBody.wasCut, let finalHead else { throw .transport(.outputFailed(detail)) }
            responseHead = finalHead
        } catch {
            throw .transport(error)
        }
        let response = HTTPResponse(head: responseHead, body: streaming ? [] : errorBody.bytes)
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

    /// `Retry-After` when the server sends it; else the reset the other headers announce
    /// (`RateLimitNotice`: RateLimit, X-RateLimit-Reset, capped at an hour); else a minute
    /// (Douban's X-Ratelimit headers tell the hourly quota, not when it resets).
    static func delay(for response: HTTPResponse, notice: RateLimitNotice? = nil, now: Double) -> (Double, String) {
        if let value = response.head.header("Retry-After"),
           let seconds = RetryPolicy.parseRetryAfter(value, now: now), seconds.isFinite {
            return (min(max(seconds, 1), 86400), "Retry-After: \(value)")
        }
        if let notice, let until = notice.resetAt {
            return (max(until - now, 1), notice.reason)
        }
        return (60, "HTTP \(response.status), no Retry-After")
    }
}
