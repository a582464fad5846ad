import DouctlHTTP
import DouctlJSON

/// Which family of API a profile names in its `style` setting (config.json, `config set
/// style`). What a style *knows* is its `APIStyleRules`; this enum only names the built-in
/// ones and maps each to its rules, here and nowhere else.
public enum APIStyle: String, Sendable, Equatable, CaseIterable {
    /// Douban API v2: bare JSON on success, `{"msg","code","request"}` errors, auth errors as HTTP 400.
    case douban
    /// Coding: replies wrapped in `{code, data, msg}`; `msg` may be an object of key → text.
    case coding

    /// The rules of this style.
    public var rules: any APIStyleRules {
        switch self {
        case .douban: return DoubanStyle()
        case .coding: return CodingStyle()
        }
    }

    /// The rules of a resolved profile: a profile with neither a preset nor a `style` is a
    /// plain OAuth2 API (`PlainStyle`); else its style's (Douban when none is set).
    static func rules(style: APIStyle, isPlainOAuth2: Bool) -> any APIStyleRules {
        isPlainOAuth2 ? PlainStyle() : style.rules
    }
}

/// What douctl knows about one family of API, in one place: how its replies are wrapped and
/// what its error codes mean (expired token, rate limited, …), how its lists page, where a
/// status keeps its pictures, which operations (`SocialService`) it has, and how it logs in.
/// Each style is one file under `Styles/`; a new style is one new type conforming to this
/// protocol, set on a profile (`ResolvedProfile.rules`).
///
/// Requirements with a default (below) follow the common dialects `ReplyDecoder` reads
/// (`{code, msg, data}` envelopes, CODING's `{"Response": …}`, RFC 6749 errors) and RFC
/// conventions; a style overrides only where it differs.
public protocol APIStyleRules: Sendable {
    // MARK: replies

    /// A parsed JSON reply with HTTP `status`: the payload commands print (an envelope
    /// unwrapped), or the error it carries. `request` ("GET /v2/user/~me") names the call
    /// when the server does not.
    func read(_ json: JSON, status: Int, request: String) -> ReplyReading
    /// The error code a reply carries, if any (for the expired-token and rate-limit checks).
    func errorCode(in json: JSON) -> String?
    /// What an error code means in this style, when it says more than the HTTP status;
    /// nil leaves the decision to the status (401 authentication, 403 permission, 404, 429,
    /// else general).
    func kind(ofCode code: String) -> APIError.Kind?
    /// Whether an error code (with its HTTP status) says the access token expired or is
    /// invalid, so a refresh and one replay may help. (Any 401 does, in every style.)
    func isExpiredToken(code: String, status: Int) -> Bool
    /// Whether a reply with HTTP `status` can carry such a code at all: when not, the body
    /// is not parsed to look (a walk's 2xx pages were parsed twice, once only for this).
    func codeMayMeanExpiredToken(status: Int) -> Bool
    /// What the user can do about an error code (Coding's captcha), or nil.
    func hint(forCode code: String) -> String?
    /// Whether an authentication error is a refused permission (logging in again cannot help).
    func refusesPermission(_ error: APIError) -> Bool

    /// True when the reply says the access token expired or is invalid.
    func meansExpiredToken(_ response: HTTPResponse) -> Bool
    /// True when the reply says "too many requests".
    func meansRateLimited(_ response: HTTPResponse) -> Bool

    // MARK: paging

    /// How `api --paginate` walks a list it was given no scheme for, from its first page.
    func pageScheme(guessedFrom payload: JSON) -> PageScheme
    /// Whether a walk that ends on a page saying nothing about further pages (no links, no
    /// total, no position) says it took that page as the last.
    var warnsWhenTheEndIsAGuess: Bool { get }

    // MARK: operations

    /// The typed operations (`user`, `shuo`, `upload`) on this style's endpoints.
    func service(for client: APIClient) -> SocialService
    /// Whether the API has 广播 (statuses): `shuo`, and `upload` without `--to`, post them.
    var hasStatuses: Bool { get }
    /// Who the client's credential belongs to, when the profile has no `user_url`; nil when
    /// the style has no way to ask.
    func identity(with client: APIClient) throws(DouctlError) -> Identity?
    /// The pictures of a status as URLs (`shuo get --save-images`), http(s) only, once each.
    func pictureURLs(in status: JSON) -> [String]
    /// Refuses a status id this style cannot have (exit 2) before anything is sent.
    func checkStatusID(_ id: String) throws(DouctlError)

    // MARK: login

    /// Whether a profile of this style may log in with a password, into a cookie session
    /// (`auth login --password`) that `auth status` shows and `auth logout` ends.
    var hasCookieSessions: Bool { get }
    /// How scopes are joined in the `scope` parameter.
    var scopeSeparator: String { get }
    /// The fake server `douctl sandbox` runs for this style, if it has one.
    var sandbox: SandboxConventions? { get }
}

extension APIStyleRules {
    public func read(_ json: JSON, status: Int, request: String) -> ReplyReading {
        ReplyDecoder.readCommonDialects(json, status: status, request: request, rules: self)
    }

    public func errorCode(in json: JSON) -> String? {
        guard case .object(let object) = json else { return nil }
        return ReplyDecoder.firstScalar(in: object, keys: ReplyDecoder.codeKeys)
    }

    public func hint(forCode code: String) -> String? { nil }

    public func refusesPermission(_ error: APIError) -> Bool { error.kind == .permission || error.httpStatus == 403 }

    public func codeMayMeanExpiredToken(status: Int) -> Bool { true }

    public func meansExpiredToken(_ response: HTTPResponse) -> Bool {
        if response.head.status == 401 { return true }
        guard codeMayMeanExpiredToken(status: response.head.status),
              let json = try? JSONParser.parse(response.body), let code = errorCode(in: json) else { return false }
        return isExpiredToken(code: code, status: response.head.status)
    }

    public func meansRateLimited(_ response: HTTPResponse) -> Bool {
        if response.head.status == 429 || RateLimitNotice.isExhaustedGitHubStyle(response.head) { return true }
        guard response.head.status >= 400, let json = try? JSONParser.parse(response.body),
              let code = errorCode(in: json) else { return false }
        return ReplyDecoder.kind(status: response.head.status, code: code, rules: self) == .rateLimited
    }

    public var warnsWhenTheEndIsAGuess: Bool { false }

    public func identity(with client: APIClient) throws(DouctlError) -> Identity? {
        try service(for: client).identity()
    }

    public func checkStatusID(_ id: String) throws(DouctlError) {}

    public var hasStatuses: Bool { true }

    public var hasCookieSessions: Bool { false }

    /// RFC 6749 §3.3: space-separated.
    public var scopeSeparator: String { " " }

    public var sandbox: SandboxConventions? { nil }
}

/// A JSON reply as a style reads it: what commands print, or the error it carries.
public enum ReplyReading: Sendable, Equatable {
    case payload(JSON)
    case error(APIError)
}

/// What `douctl sandbox` writes for a style's profile: the preset it names, and the paths of
/// the fake server's OAuth endpoints under its base URL, in the order they are written.
public struct SandboxConventions: Sendable {
    public var presetName: String
    /// "Douban": the preset's summary says "the local fake Douban server".
    public var label: String
    public var scopes: [String]
    public var tokenPlacement: TokenPlacement
    public var endpoints: [Endpoint]

    public struct Endpoint: Sendable {
        public var key: ProfileKey
        public var path: String

        public init(_ key: ProfileKey, _ path: String) {
            self.key = key
            self.path = path
        }
    }

    public init(presetName: String, label: String, scopes: [String], tokenPlacement: TokenPlacement, endpoints: [Endpoint]) {
        self.presetName = presetName
        self.label = label
        self.scopes = scopes
        self.tokenPlacement = tokenPlacement
        self.endpoints = endpoints
    }
}

/// Holds a profile's rules so `ResolvedProfile` stays `Equatable`: two profiles' rules are
/// equal when they are of the same style type (styles are stateless).
struct StyleRulesBox: Sendable, Equatable {
    let rules: any APIStyleRules

    init(_ rules: any APIStyleRules) {
        self.rules = rules
    }

    static func == (lhs: StyleRulesBox, rhs: StyleRulesBox) -> Bool {
        ObjectIdentifier(type(of: lhs.rules)) == ObjectIdentifier(type(of: rhs.rules))
    }
}
