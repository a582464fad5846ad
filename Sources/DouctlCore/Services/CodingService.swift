import DouctlJSON
import DouctlSystem

/// Coding's legacy REST API: `/api/…` paths, replies in `{code, data, msg}`,
/// tweets (冒泡) for statuses, Pageable lists and `last_id` cursors.
public struct CodingService: SocialService {
    public let client: APIClient
    /// Uploads a tweet's picture and returns its URL (legacy `insert_image` by default;
    /// the Qiniu flow can be another implementation without touching commands).
    public var imageUploader: ImageUploader

    /// The first `last_id` of a tweet timeline (Coding's kDefaultLastId).
    public static let firstCursor = "99999999"

    public init(client: APIClient, imageUploader: ImageUploader? = nil) {
        self.client = client
        self.imageUploader = imageUploader ?? InsertImageUploader(client: client)
    }

    static func segment(_ text: String) -> String { FormEncoding.pathSegment(text) }

    private func unsupported(_ what: String) -> DouctlError {
        .unsupported("\(what) has no Coding equivalent (profile '\(client.profile.name)' is coding-style)")
    }

    /// The logged-in user's global_key, which Coding puts in some tweet paths.
    func ownGlobalKey() throws(DouctlError) -> String {
        if let name = try StoredIdentity.userName(client) { return name }
        guard let key = try me()["global_key"]?.scalarText else {
            throw .badReply("the current user has no global_key")
        }
        return key
    }

    // MARK: users

    static let meRequest = APIRequest(path: "/api/account/current_user")

    public func me() throws(DouctlError) -> JSON {
        try client.checked(client.json(Self.meRequest), has: ReplyShape.codingUser, what: "user", request: Self.meRequest.summary)
    }

    /// The CODING OpenAPI's "who am I": one Action, answered {"Response": {"User": {…}}}.
    static let openAPIMeRequest = APIRequest(
        method: "POST", path: "", query: [("Action", "DescribeCodingCurrentUser")],
        body: .raw(.bytes(Array(#"{"Action":"DescribeCodingCurrentUser"}"#.utf8)), contentType: "application/json"))

    public func identity() throws(DouctlError) -> Identity {
        if client.profile.preset == Preset.codingOpenAPI.name {
            let response = try client.json(Self.openAPIMeRequest)
            let user = response["User"] ?? response
            return Identity(id: user["Id"]?.scalarText, name: user["GlobalKey"]?.scalarText, displayName: user["Name"]?.scalarText)
        }
        let me = try client.json(Self.meRequest)
        return Identity(id: me["id"]?.scalarText, name: me["global_key"]?.scalarText, displayName: me["name"]?.scalarText)
    }

    public func user(_ idOrName: String) throws(DouctlError) -> JSON {
        let request = APIRequest(path: "/api/user/key/\(Self.segment(idOrName))")
        return try client.checked(client.json(request), has: ReplyShape.codingUser, what: "user", request: request.summary)
    }

    public func searchUsers(_ query: String) throws(DouctlError) -> Listing { throw unsupported("user search") }
    public func following(_ user: String) throws(DouctlError) -> Listing { throw unsupported("user following") }
    public func followers(_ user: String) throws(DouctlError) -> Listing { throw unsupported("user followers") }
    public func follow(_ user: String) throws(DouctlError) -> JSON { throw unsupported("user follow") }
    public func unfollow(_ user: String) throws(DouctlError) -> JSON { throw unsupported("user unfollow") }

    // MARK: tweets

    /// Uploads the picture first, then posts `content` with the Markdown image link, the
    /// way Coding's clients do (a tweet has no image field).
    public func post(_ draft: StatusDraft) throws(DouctlError) -> JSON {
        if let recommendation = draft.recommendation, !recommendation.isEmpty {
            throw unsupported("a recommended link (--rec-*)")
        }
        try draft.requireContent()
        var content = draft.text ?? ""
        if let imagePath = draft.imagePath {
            try checkPicture(imagePath)
            let url = try imageUploader.upload(imagePath)
            content += "\n ![图片](\(url)) "
        }
        return try client.checked(client.json(APIRequest(method: "POST", path: "/api/tweet", body: .form([("content", content)]))),
                                    has: ReplyShape.codingTweet, what: "new tweet", request: "POST /api/tweet")
    }

    /// Nothing: a part Coding lacks is refused by `post`, not dropped.
    public func ignoredParts(of draft: StatusDraft) -> String? { nil }

    /// `ID` alone means one of your own tweets; `GLOBAL_KEY/ID` someone else's.
    public func status(_ id: String, packed: Bool) throws(DouctlError) -> JSON {
        if packed { throw unsupported("--packed") }
        let (owner, tweetID) = try splitOwned(id)
        let request = APIRequest(path: "/api/tweet/\(Self.segment(owner))/\(Self.segment(tweetID))")
        return try client.checked(client.json(request), has: ReplyShape.codingTweet, what: "tweet", request: request.summary)
    }

    public func delete(_ id: String) throws(DouctlError) -> JSON? {
        try client.optionalJSON(APIRequest(method: "DELETE", path: "/api/tweet/\(Self.segment(try splitOwned(id, needsOwner: false).1))"))
    }

    /// Friends' tweets, or one user's, walked with the `last_id` cursor.
    public func timeline(_ query: TimelineQuery) throws(DouctlError) -> Listing {
        if query.sinceID != nil { throw unsupported("--since-id") }
        var request: APIRequest
        if query.isPublic {
            request = APIRequest(path: "/api/tweet/public_tweets", query: [("sort", "time")])
        } else if let user = query.user {
            request = APIRequest(path: "/api/tweet/user_public", query: [("global_key", user)])
        } else {
            request = APIRequest(path: "/api/activities/user_tweet")
        }
        request.query.append(("last_id", query.untilID ?? Self.firstCursor))
        if let count = query.count { request.query.append(("pageSize", String(count))) }
        return Listing(request: request, scheme: .cursor(key: "last_id", itemKey: "id", first: Self.firstCursor))
    }

    public func comments(_ statusID: String) throws(DouctlError) -> Listing {
        Listing(request: APIRequest(path: "/api/tweet/\(Self.segment(statusID))/comments"), scheme: .pageNumber())
    }

    public func comment(on statusID: String, text: String) throws(DouctlError) -> JSON {
        let request = APIRequest(method: "POST", path: "/api/tweet/\(Self.segment(statusID))/comment", body: .form([("content", text)]))
        return try client.checked(client.json(request), has: ReplyShape.codingComment, what: "new comment", request: request.summary)
    }

    public func deleteComment(_ commentID: String, statusID: String?) throws(DouctlError) -> JSON? {
        guard let statusID else {
            throw .usage("on Coding, deleting a comment needs its tweet: douctl shuo uncomment TWEET_ID COMMENT_ID")
        }
        return try client.optionalJSON(APIRequest(method: "DELETE", path: "/api/tweet/\(Self.segment(statusID))/comment/\(Self.segment(commentID))"))
    }

    public func like(_ statusID: String) throws(DouctlError) -> JSON? {
        try client.optionalJSON(APIRequest(method: "POST", path: "/api/tweet/\(Self.segment(statusID))/like"))
    }

    public func unlike(_ statusID: String) throws(DouctlError) -> JSON? {
        try client.optionalJSON(APIRequest(method: "POST", path: "/api/tweet/\(Self.segment(statusID))/unlike"))
    }

    public func reshare(_ statusID: String) throws(DouctlError) -> JSON { throw unsupported("reshare") }

    public func pictureURLs(in status: JSON) -> [String] { client.profile.rules.pictureURLs(in: status) }

    // MARK: sessions

    /// Ends the server side of a password login's cookie session (the client's `session`).
    public func endSession() throws(DouctlError) {
        _ = try client.send(APIRequest(method: "POST", path: "/api/account/logout", sendsToken: false))
    }

    // MARK: uploads

    public var defaultUpload: (path: String, field: String) { (InsertImageUploader.path, InsertImageUploader.field) }

    @discardableResult
    public func checkPicture(_ path: String) throws(DouctlError) -> FileStatus {
        let status = try MultipartForm.checkReadableFile(path)
        guard let type = MediaType.sniff(MediaType.readPrefix(path)), type.hasPrefix("image/") else {
            throw .localInput("\(path) is not a picture (JPEG, PNG, GIF, WebP or BMP)")
        }
        return status
    }

    private func splitOwned(_ id: String, needsOwner: Bool = true) throws(DouctlError) -> (String, String) {
        if let slash = id.firstIndex(of: "/") {
            return (String(id[..<slash]), String(id[id.index(after: slash)...]))
        }
        return (needsOwner ? try ownGlobalKey() : "", id)
    }
}

/// Uploads a picture for a tweet and returns the URL to embed.
public protocol ImageUploader {
    func upload(_ path: String) throws(DouctlError) -> String
}

/// The legacy `POST /api/tweet/insert_image` upload: multipart field `tweetImg`; the reply's
/// `data` is the picture's URL.
public struct InsertImageUploader: ImageUploader {
    public static let path = "/api/tweet/insert_image"
    public static let field = "tweetImg"
    let client: APIClient

    public func upload(_ path: String) throws(DouctlError) -> String {
        let form = MultipartForm(parts: [.file(name: Self.field, path: path)])
        let reply = try client.json(APIRequest(method: "POST", path: Self.path, body: .multipart(form)))
        guard let url = reply.stringValue else {
            throw .badReply("insert_image answered without a picture URL")
        }
        return url
    }
}

/// The identity stored with the login, so commands need not ask the API each time.
enum StoredIdentity {
    static func userName(_ client: APIClient) throws(DouctlError) -> String? {
        (client.tokens as? StoredTokens).flatMap { try? $0.store.load($0.profile.name)?.userName }
    }
}
