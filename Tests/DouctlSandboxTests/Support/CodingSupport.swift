import DouctlJSON
import DouctlSandbox
import DouctlServer

// Helpers for the Coding half: token calls (`?access_token=`), a cookie-keeping "browser" for
// the password login, and envelope accessors.

extension TestResponse {
    /// `data` of a Coding envelope.
    var data: JSON? { (try? json())?["data"] }

    /// The keys and texts of a Coding error's `msg` object.
    var codingMsg: [String: String] {
        guard let object = (try? json())?["msg"]?.objectValue else { return [:] }
        var result: [String: String] = [:]
        for (key, value) in object { result[key] = value.stringValue ?? value.description }
        return result
    }

    /// The values of every `Set-Cookie` header.
    var setCookies: [String] { headers.values("Set-Cookie") }
}

extension Harness {
    /// A Coding token for `user` with every Coding scope (or `scopes`).
    func codingToken(_ user: String = "coder", scopes: [String] = Sandbox.codingScopes) -> String {
        sandbox.issueCodingToken(user: user, scopes: scopes).accessToken
    }

    /// `target` with `access_token` (and `query`) added to its query string.
    static func codingTarget(_ target: String, token: String?, query: [(String, String)] = []) -> String {
        let fields = query + (token.map { [("access_token", $0)] } ?? [])
        guard !fields.isEmpty else { return target }
        return target + (target.contains("?") ? "&" : "?") + FormURLEncoded.serialize(fields)
    }

    func codingGet(_ target: String, token: String?, query: [(String, String)] = [],
                   headers: [(String, String)] = []) throws -> TestResponse {
        try get(Self.codingTarget(target, token: token, query: query), headers: headers)
    }

    func codingPost(_ target: String, form: [(String, String)] = [], token: String?,
                    headers: [(String, String)] = []) throws -> TestResponse {
        try post(Self.codingTarget(target, token: token), form: form, headers: headers)
    }

    func codingDelete(_ target: String, token: String?, headers: [(String, String)] = []) throws -> TestResponse {
        try send("DELETE", Self.codingTarget(target, token: token), headers: headers)
    }

    /// Posts a tweet and returns it.
    func postTweet(_ content: String, token: String) throws -> JSON {
        let reply = try codingPost("/api/tweet", form: [("content", content)], token: token)
        guard reply.status == 200, reply.code == 0, let tweet = reply.data else {
            throw TestFailure("posting a tweet failed: \(reply.status) \(reply.text)")
        }
        return tweet
    }

    // MARK: Coding OAuth

    static let codingAuthorizeFields: [(String, String)] = [
        ("client_id", Sandbox.clientID), ("redirect_uri", loopbackRedirect), ("response_type", "code"),
        ("scope", "user,social,social:tweet"), ("state", "st-7"),
    ]

    /// GET /oauth_authorize.html (auto approval) and the code from the redirect.
    func codingAuthorizationCode(_ fields: [(String, String)] = codingAuthorizeFields) throws -> String {
        let reply = try get("/oauth_authorize.html?" + FormURLEncoded.serialize(fields))
        guard reply.status == 302, let location = reply.header("Location"), let code = queryFields(of: location)["code"] else {
            throw TestFailure("authorize did not redirect with a code: \(reply.status) \(reply.text)")
        }
        return code
    }

    func codingTokenRequest(_ fields: [(String, String)], headers: [(String, String)] = []) throws -> TestResponse {
        try post("/api/oauth/access_token", form: fields, headers: headers)
    }
}

/// A client that keeps cookies like Coding-iOS's shared cookie storage, and replays
/// `XSRF-TOKEN` as `X-XSRF-TOKEN` on unsafe requests (unless told otherwise).
final class CodingBrowser {
    let harness: Harness
    private(set) var cookies: [(name: String, value: String)] = []

    init(_ harness: Harness) {
        self.harness = harness
    }

    func cookie(_ name: String) -> String? { cookies.first { $0.name == name }?.value }

    var sid: String? { cookie("sid") }

    /// Applies a reply's `Set-Cookie` headers (`Max-Age=0` deletes).
    func absorb(_ reply: TestResponse) {
        for header in reply.setCookies {
            let pieces = header.split(separator: ";").map { trimmingSpaces($0) }
            guard let first = pieces.first, let equals = first.firstIndex(of: "=") else { continue }
            let name = String(first[..<equals])
            let value = String(first[first.index(after: equals)...])
            cookies.removeAll { $0.name == name }
            let deleted = pieces.contains { $0.lowercased() == "max-age=0" } || value.isEmpty
            if !deleted { cookies.append((name: name, value: value)) }
        }
    }

    private var cookieHeader: [(String, String)] {
        cookies.isEmpty ? [] : [("Cookie", cookies.map { "\($0.name)=\($0.value)" }.joined(separator: "; "))]
    }

    func get(_ target: String) throws -> TestResponse {
        let reply = try harness.get(target, headers: cookieHeader)
        absorb(reply)
        return reply
    }

    /// `xsrf`: nil sends the cookie's value, a string sends that, `.some(nil)`… use `withoutXSRF`.
    func post(_ target: String, form: [(String, String)] = [], xsrf: String? = nil, withoutXSRF: Bool = false) throws -> TestResponse {
        var headers = cookieHeader
        if !withoutXSRF, let token = xsrf ?? cookie("XSRF-TOKEN") { headers.append(("X-XSRF-TOKEN", token)) }
        let reply = try harness.post(target, form: form, headers: headers)
        absorb(reply)
        return reply
    }

    func send(_ method: String, _ target: String, withoutXSRF: Bool = false) throws -> TestResponse {
        var headers = cookieHeader
        if !withoutXSRF, let token = cookie("XSRF-TOKEN") { headers.append(("X-XSRF-TOKEN", token)) }
        let reply = try harness.send(method, target, headers: headers)
        absorb(reply)
        return reply
    }

    /// The login form for `account` with `password` hashed as the clients do.
    static func loginForm(_ account: String, password: String = Sandbox.codingPassword, captcha: String? = nil,
                          rememberMe: Bool = false) -> [(String, String)] {
        var form = [("account", account), ("password", Sandbox.codingPasswordHash(password)),
                    ("remember_me", rememberMe ? "true" : "false")]
        if let captcha { form.append(("j_captcha", captcha)) }
        return form
    }

    /// The whole flow: ask whether a captcha is needed, fetch it, read it off the test hook,
    /// and log in. Returns the login reply.
    @discardableResult
    func logIn(_ account: String = "coder", password: String = Sandbox.codingPassword,
               rememberMe: Bool = false) throws -> TestResponse {
        let needed = try get("/api/captcha/login")
        var captcha: String?
        if needed.data == true {
            let image = try get("/api/getCaptcha")
            guard image.status == 200, let sid else { throw TestFailure("no captcha: \(image.status)") }
            captcha = harness.sandbox.codingCaptcha(forSession: sid)
        }
        return try post("/api/v2/account/login", form: Self.loginForm(account, password: password, captcha: captcha,
                                                                       rememberMe: rememberMe))
    }
}

// MARK: - Shape checks

/// What is wrong with a Coding User object.
func codingUserProblems(_ user: JSON?) -> [String] {
    guard let user, case .object = user else { return ["not an object"] }
    var problems: [String] = []
    for key in ["id", "follows_count", "fans_count", "tweets_count", "created_at", "status"] where !isNumber(user[key]) {
        problems.append("\(key) is not a number")
    }
    for key in ["global_key", "name", "avatar", "email"] where !isString(user[key]) {
        problems.append("\(key) is not a string")
    }
    if let avatar = user["avatar"]?.stringValue, !avatar.hasPrefix("http://127.0.0.1:") { problems.append("avatar is not a sandbox URL") }
    // Milliseconds since 1970: a 13-digit number these days.
    if let created = user["created_at"]?.int64Value, created < 1_000_000_000_000 { problems.append("created_at is not in ms") }
    return problems
}

/// What is wrong with a Coding Tweet object.
func tweetProblems(_ tweet: JSON?) -> [String] {
    guard let tweet, case .object = tweet else { return ["not an object"] }
    var problems: [String] = []
    for key in ["id", "owner_id", "created_at", "sort_time", "comments", "likes"] where !isNumber(tweet[key]) {
        problems.append("\(key) is not a number")
    }
    for key in ["content", "device", "location", "coord", "address"] where !isString(tweet[key]) {
        problems.append("\(key) is not a string")
    }
    if !isBool(tweet["liked"]) { problems.append("liked is not a bool") }
    if tweet["comment_list"]?.arrayValue == nil { problems.append("comment_list is not an array") }
    if tweet["like_users"]?.arrayValue == nil { problems.append("like_users is not an array") }
    problems += codingUserProblems(tweet["owner"]).map { "owner: \($0)" }
    if tweet["owner"]?["id"] != tweet["owner_id"] { problems.append("owner.id differs from owner_id") }
    return problems
}

/// What is wrong with a Pageable `data`.
func pageableProblems(_ data: JSON?) -> [String] {
    guard let data, case .object = data else { return ["not an object"] }
    var problems: [String] = []
    if data["list"]?.arrayValue == nil { problems.append("list is not an array") }
    for key in ["page", "pageSize", "totalPage", "totalRow"] where !isNumber(data[key]) { problems.append("\(key) is not a number") }
    return problems
}
