import DouctlJSON

/// A plain OAuth2 REST API (GitHub, GitLab, …): a profile with neither a preset nor a
/// `style`. It follows the RFCs where douctl's conventions differ: space-separated scopes,
/// no identity call without `user_url`, no check on status ids, and a warning when a walk
/// has to guess where a list ends.
///
/// Everything else is read as Douban reads it (error codes, pictures, the typed commands'
/// endpoints): Douban was the style of such profiles before they were told apart, and
/// what their replies mean has not changed.
public struct PlainStyle: APIStyleRules {
    public init() {}

    private var douban: DoubanStyle { DoubanStyle() }

    public func kind(ofCode code: String) -> APIError.Kind? { douban.kind(ofCode: code) }
    public func isExpiredToken(code: String, status: Int) -> Bool { douban.isExpiredToken(code: code, status: status) }
    public func refusesPermission(_ error: APIError) -> Bool { douban.refusesPermission(error) }
    public func pageScheme(guessedFrom payload: JSON) -> PageScheme { douban.pageScheme(guessedFrom: payload) }
    public func service(for client: APIClient) -> SocialService { douban.service(for: client) }
    public func pictureURLs(in status: JSON) -> [String] { douban.pictureURLs(in: status) }

    /// Who is logged in is only known from `user_url`.
    public func identity(with client: APIClient) throws(DouctlError) -> Identity? { nil }

    public var warnsWhenTheEndIsAGuess: Bool { true }
}
