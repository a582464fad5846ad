import DouctlHTTP
import DouctlSystem

/// Attaches the profile's credential — the token in force (header, query parameter or API
/// key header, as the profile says; Basic for a stored user:password) and the cookie session —
/// only to the API's own origin, and only when the request carries no credential of its own:
/// an explicit `Authorization`, the profile's key header or its token query parameter wins
/// (as gh adds its token only to a request without one, and curl uses your header instead
/// of its own). When the reply says the token expired, refreshes once and replays once.
final class CredentialLayer: RequestLayer {
    let next: RequestLayer
    let profile: ResolvedProfile
    let tokens: AccessTokenSource?
    let session: SessionHooks?
    let allowsAnonymous: Bool
    let requests: RequestSettings
    /// The stored token the last exchange carried: it decides an auth error's hint, and is
    /// scrubbed from error text (Douban echoes it: "invalid_access_token: <token>").
    private(set) var lastSentToken: String?

    init(profile: ResolvedProfile, tokens: AccessTokenSource?, session: SessionHooks?, allowsAnonymous: Bool,
         requests: RequestSettings, next: RequestLayer) {
        self.profile = profile
        self.tokens = tokens
        self.session = session
        self.allowsAnonymous = allowsAnonymous
        self.requests = requests
        self.next = next
    }

    func send(_ request: OutgoingRequest, _ reply: ReplyHandling) throws(DouctlError) -> HTTPResponse {
        let ownOrigin = profile.isOwnOrigin(request.http.url)
        let explicit = ownOrigin ? explicitCredential(in: request.http) : nil
        // --api-base moved this run off the origin the stored login was obtained for: it
        // sends none (issue 39), as gh's --hostname picks that host's own token.
        let elsewhere = ownOrigin ? try !loginBelongs(to: request.http.url) : false
        let token = request.wantsCredential && explicit == nil && !elsewhere ? try tokens?.currentToken() : nil
        if request.wantsCredential, explicit == nil, token == nil { try requireLogin(elsewhere: elsewhere) }
        if let explicit, request.wantsCredential, let verbose = requests.verboseLog {
            verbose("* credential: \(explicit) given with the request is sent; the profile's own is not")
        }
        let response = try send(request, with: token, reply)
        guard let token, let tokens, profile.rules.meansExpiredToken(response) else { return response }
        guard let fresh = try tokens.refresh(rejected: token) else { return response }
        guard request.isReplayable else {
            throw .authentication("the token had expired and is now refreshed, but the request body came from a pipe and cannot be sent again; run the command again")
        }
        requests.announce?("the server refused the token as expired; refreshed it, sending \(request.summary) again (try 2 of 2)")
        return try send(request, with: fresh, reply)
    }

    private func send(_ request: OutgoingRequest, with token: String?, _ reply: ReplyHandling) throws(DouctlError) -> HTTPResponse {
        lastSentToken = token
        return try next.send(OutgoingRequest(http: try attaching(token, to: request.http), summary: request.summary,
                                             wantsCredential: request.wantsCredential), reply)
    }

    /// The credential the request already carries for the API's origin, named for `-v`
    /// ("the Authorization header"), or nil.
    func explicitCredential(in request: HTTPRequest) -> String? {
        if request.headers.value(of: "Authorization") != nil { return "the Authorization header" }
        if let name = profile.tokenHeader, request.headers.value(of: name) != nil { return "the \(name) header" }
        let parameter = profile.tokenQuery ?? (profile.tokenPlacement == .query ? "access_token" : nil)
        if let parameter, let query = HTTPURL(request.url)?.query,
           query.split(separator: "&").contains(where: { $0 == parameter || $0.hasPrefix(parameter + "=") }) {
            return "the \(parameter) query parameter"
        }
        return nil
    }

    /// `request` with `token` where the profile sends it, and the cookie session, to the
    /// API's own origin only; anywhere else, as it is.
    func attaching(_ token: String?, to request: HTTPRequest) throws(DouctlError) -> HTTPRequest {
        var request = request
        guard profile.isOwnOrigin(request.url), try loginBelongs(to: request.url) else { return request }
        session?.prepare(&request)
        guard let token else { return request }
        request.secrets.append(token)
        let source = tokens is FixedToken ? "DOUCTL_TOKEN" : "the stored login of '\(profile.name)'"
        if tokens?.credentialScheme == "Basic" {
            // auth login --basic: the stored user:password, as HTTP Basic.
            request.headers.append(HTTPHeader("Authorization", "Basic \(token)"))
        } else if let name = profile.tokenQuery {
            // An API key in a query parameter of the API's choosing (token_query key).
            request.url = FormEncoding.appendQuery([(name, token)], to: request.url)
        } else if let name = profile.tokenHeader {
            // An API key in a header of the API's choosing (token_header X-API-Key).
            guard HTTPSyntax.isFieldValue(token) else {
                throw .localInput("the API key (\(source)) contains a line break (CR or LF) or NUL, so it cannot be sent")
            }
            request.headers.append(HTTPHeader(name, token))
        } else if profile.tokenPlacement == .query {
            request.url = FormEncoding.appendQuery([("access_token", token)], to: request.url)
        } else {
            // DOUCTL_TOKEN, or what a token endpoint sent: never let it end the header.
            guard HTTPSyntax.isFieldValue(token) else {
                throw .localInput("the access token (\(source)) contains a line break (CR or LF) or NUL, so it cannot be sent")
            }
            request.headers.append(HTTPHeader("Authorization", "\(profile.authScheme) \(token)"))
        }
        return request
    }

    /// Whether the credential may go to `url`: the origin it belongs to
    /// (`AccessTokenSource.loginOrigin`, the profile's own api_base), or any for DOUCTL_TOKEN.
    func loginBelongs(to url: String) throws(DouctlError) -> Bool {
        guard let origin = try tokens?.loginOrigin() else { return true }
        return ResolvedProfile.isOrigin(of: url, origin)
    }

    /// Throws "not logged in" unless the profile has a token, a cookie session, or the
    /// client may send anonymously; `elsewhere`: the stored login belongs to another origin
    /// than the one this run sends to, so the error says where it does go.
    func requireLogin(elsewhere: Bool = false) throws(DouctlError) {
        guard !allowsAnonymous, session == nil else { return }
        if elsewhere {
            let owner = profile.profileSendingCredentials(to: profile.apiBase)
            let there = Redaction.redactURL(profile.apiBase)
            let loginOrigin = Redaction.redactURL((try tokens?.loginOrigin()) ?? "")
            guard profile.apiBaseOverridden else {
                throw .authentication("not logged in at \(there): the login of profile '\(profile.name)' is for \(loginOrigin), and is sent nowhere else; log in: \(DouctlError.loginCommand(profile.name))")
            }
            throw .authentication("not logged in at \(there): the login of profile '\(profile.name)' is for \(loginOrigin) and is sent nowhere else; " + (owner.map { "profile \($0) sends credentials there: use --profile \($0)" } ?? "log in there with a profile of its own: douctl profile add NAME --api-base \(there), then douctl --profile NAME auth login"))
        }
        if try tokens?.currentToken() == nil {
            guard profile.apiBaseOverridden else { throw .notLoggedIn(profile) }
            // --api-base elsewhere: logging in to this profile is no advice for that server.
            let owner = profile.profileSendingCredentials(to: profile.apiBase)
            throw .authentication("not logged in: no credentials for \(Redaction.redactURL(profile.apiBase))" + (owner.map { "; profile \($0) sends credentials there: use --profile \($0)" } ?? ""))
        }
    }
}
