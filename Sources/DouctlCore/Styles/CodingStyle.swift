import DouctlJSON

/// Coding's legacy API: replies in `{code, data, msg}` (`msg` may be an object of key →
/// text), Pageable lists and `last_id` cursors, pictures embedded in a tweet's content,
/// password logins into a cookie session. Its OpenAPI dialect (`{"Response": …}`) is read
/// by the common dialects.
public struct CodingStyle: APIStyleRules {
    public init() {}

    // MARK: replies

    /// 1000 user not logged in, 3207 token invalid.
    public func kind(ofCode code: String) -> APIError.Kind? {
        code == "1000" || code == "3207" ? .authentication : nil
    }

    /// Any status: Coding's envelope says it, often with HTTP 200.
    public func isExpiredToken(code: String, status: Int) -> Bool {
        code == "1000" || code == "3207"
    }

    /// 907 (an operation) and 1018 (a login) need a captcha solved first.
    public func hint(forCode code: String) -> String? {
        guard code == "907" || code == "1018" else { return nil }
        let type = code == "907" ? 3 : 1
        return "a captcha is required: solve it with douctl api /api/request_valid -X POST -f type=\(type) -f j_captcha=TEXT (the image is at /api/getCaptcha?type=\(type))"
    }

    // MARK: paging

    /// Pageable objects by page; bare arrays (tweet timelines) by the last item's id;
    /// everything else by `start`/`count`.
    public func pageScheme(guessedFrom payload: JSON) -> PageScheme {
        PageScheme.guessed(from: payload, bareArrays: .cursor())
    }

    // MARK: operations

    public func service(for client: APIClient) -> SocialService { CodingService(client: client) }

    /// The pictures embedded in the tweet's `content`, as HTML `<img src="…">` (how the API
    /// renders them) or Markdown `![alt](url)` (how they are posted).
    public func pictureURLs(in status: JSON) -> [String] {
        StatusPictures.inContent(status["content"]?.stringValue ?? "")
    }

    // MARK: login

    public var hasCookieSessions: Bool { true }

    public var scopeSeparator: String { "," }

    public var sandbox: SandboxConventions? {
        SandboxConventions(
            presetName: "coding-sandbox", label: "Coding",
            scopes: ["user", "social", "social:tweet"], tokenPlacement: .query,
            endpoints: [
                .init(.authorizeURL, "/oauth_authorize.html"),
                .init(.tokenURL, "/api/oauth/access_token"),
                .init(.deviceAuthorizationURL, "/api/oauth/device"),
            ])
    }
}
