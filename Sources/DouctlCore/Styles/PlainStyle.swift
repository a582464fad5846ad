import DouctlJSON

/// A plain OAuth2 REST API (GitHub, GitLab, Django REST Framework, …): a profile with
/// neither a preset nor a `style`. It follows the RFCs and HTTP: space-separated scopes, no
/// identity call without `user_url`, no check on status ids, a warning when a walk has to
/// guess where a list ends, and errors judged by their HTTP status (401 authentication,
/// 403 permission) with the reason read from the common error dialects — never by Douban's
/// or Coding's error codes, which mean nothing here. Its typed commands are `user me`
/// (the `user_url` reply) and `upload --to`; users and 广播 are refused (`PlainService`).
public struct PlainStyle: APIStyleRules {
    public init() {}

    /// No codes of its own: the HTTP status decides.
    public func kind(ofCode code: String) -> APIError.Kind? { nil }
    /// Only a 401 (every style's rule, in `meansExpiredToken`) says the token expired.
    public func isExpiredToken(code: String, status: Int) -> Bool { false }
    public func codeMayMeanExpiredToken(status: Int) -> Bool { false }
    public func pageScheme(guessedFrom payload: JSON) -> PageScheme { PageScheme.guessed(from: payload, bareArrays: .offset()) }
    public func service(for client: APIClient) -> SocialService { PlainService(client: client) }
    public func pictureURLs(in status: JSON) -> [String] { [] }

    /// Who is logged in is only known from `user_url`.
    public func identity(with client: APIClient) throws(DouctlError) -> Identity? { nil }

    public var warnsWhenTheEndIsAGuess: Bool { true }

    public var hasStatuses: Bool { false }
}
