import DouctlJSON
import DouctlSystem

/// The typed commands on a plain OAuth2 API (a profile with neither a preset nor a
/// `style`): `user me` is the profile's `user_url`; users, follows and 广播 are Douban's
/// and Coding's endpoints, which such an API does not have, so each is refused (exit 2)
/// before anything is sent, pointing to `douctl api`.
public struct PlainService: SocialService {
    public let client: APIClient

    public init(client: APIClient) {
        self.client = client
    }

    private var profileName: String { client.profile.name }

    /// Exit 2: `what` is Douban's and Coding's; `douctl api` serves this API.
    public static func notThisAPI(_ what: String, profile: String) -> DouctlError {
        .unsupported("\(what) is Douban's and Coding's; profile '\(profile)' is a plain OAuth2 API, which douctl api serves (e.g. douctl --profile \(profile) api /PATH)")
    }

    private func refuse(_ what: String) -> DouctlError { Self.notThisAPI(what, profile: profileName) }

    // MARK: users

    /// The `user_url` reply as it is; without `user_url` there is no endpoint to ask.
    public func me() throws(DouctlError) -> JSON {
        guard let userURL = client.profile.userURL else {
            throw .usage("profile '\(profileName)' has no user_url, the endpoint that says who is logged in; set it (e.g. douctl config set user_url /user --profile \(profileName)), or ask with douctl api")
        }
        return try client.json(APIRequest(path: userURL))
    }

    public func identity() throws(DouctlError) -> Identity {
        guard client.profile.userURL != nil, let identity = try Identity.fetch(with: client) else {
            throw .usage("profile '\(profileName)' has no user_url, the endpoint that says who is logged in")
        }
        return identity
    }

    public func user(_ idOrName: String) throws(DouctlError) -> JSON { throw refuse("user get") }
    public func searchUsers(_ query: String) throws(DouctlError) -> Listing { throw refuse("user search") }
    public func following(_ user: String) throws(DouctlError) -> Listing { throw refuse("user following") }
    public func followers(_ user: String) throws(DouctlError) -> Listing { throw refuse("user followers") }
    public func follow(_ user: String) throws(DouctlError) -> JSON { throw refuse("user follow") }
    public func unfollow(_ user: String) throws(DouctlError) -> JSON { throw refuse("user unfollow") }

    // MARK: statuses (refused first by the shuo commands; here for completeness)

    public func post(_ draft: StatusDraft) throws(DouctlError) -> JSON { throw refuse("shuo") }
    public func ignoredParts(of draft: StatusDraft) -> String? { nil }
    public func status(_ id: String, packed: Bool) throws(DouctlError) -> JSON { throw refuse("shuo") }
    public func delete(_ id: String) throws(DouctlError) -> JSON? { throw refuse("shuo") }
    public func timeline(_ query: TimelineQuery) throws(DouctlError) -> Listing { throw refuse("shuo") }
    public func comments(_ statusID: String) throws(DouctlError) -> Listing { throw refuse("shuo") }
    public func comment(on statusID: String, text: String) throws(DouctlError) -> JSON { throw refuse("shuo") }
    public func deleteComment(_ commentID: String, statusID: String?) throws(DouctlError) -> JSON? { throw refuse("shuo") }
    public func like(_ statusID: String) throws(DouctlError) -> JSON? { throw refuse("shuo") }
    public func unlike(_ statusID: String) throws(DouctlError) -> JSON? { throw refuse("shuo") }
    public func reshare(_ statusID: String) throws(DouctlError) -> JSON { throw refuse("shuo") }
    public func pictureURLs(in status: JSON) -> [String] { [] }

    // MARK: uploads

    /// `upload` on a plain API needs `--to PATH` (the command refuses it without); the
    /// field stays `image`, as it was.
    public var defaultUpload: (path: String, field: String) { ("", "image") }

    @discardableResult
    public func checkPicture(_ path: String) throws(DouctlError) -> FileStatus {
        try MultipartForm.checkReadableFile(path)
    }
}
