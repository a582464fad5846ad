import DouctlJSON
import DouctlSystem

/// Douban API v2 (users and 广播): `/v2/user…` and `/shuo/v2/…`,
/// form bodies, the picture of a status in the multipart field `image`.
public struct DoubanService: SocialService {
    public let client: APIClient

    public init(client: APIClient) {
        self.client = client
    }

    static func segment(_ text: String) -> String { FormEncoding.pathSegment(text) }

    // MARK: users

    static let meRequest = APIRequest(path: "/v2/user/~me")

    public func me() throws(DouctlError) -> JSON {
        try client.checked(client.json(Self.meRequest), has: ReplyShape.doubanUser, what: "user", request: Self.meRequest.summary)
    }

    public func identity() throws(DouctlError) -> Identity {
        let me = try client.json(Self.meRequest)
        return Identity(id: me["id"]?.scalarText, name: me["uid"]?.scalarText ?? me["name"]?.scalarText, displayName: me["name"]?.scalarText)
    }

    public func user(_ idOrName: String) throws(DouctlError) -> JSON {
        let request = APIRequest(path: "/v2/user/\(Self.segment(idOrName))")
        return try client.checked(client.json(request), has: ReplyShape.doubanUser, what: "user", request: request.summary)
    }

    public func searchUsers(_ query: String) throws(DouctlError) -> Listing {
        Listing(request: APIRequest(path: "/v2/user", query: [("q", query)]), scheme: .offset())
    }

    public func following(_ user: String) throws(DouctlError) -> Listing {
        Listing(request: APIRequest(path: "/shuo/v2/users/\(Self.segment(user))/following"), scheme: .offset())
    }

    public func followers(_ user: String) throws(DouctlError) -> Listing {
        Listing(request: APIRequest(path: "/shuo/v2/users/\(Self.segment(user))/followers"), scheme: .offset())
    }

    public func follow(_ user: String) throws(DouctlError) -> JSON {
        try client.json(APIRequest(method: "POST", path: "/shuo/v2/friendships/create", body: .form([("user_id", user)])))
    }

    public func unfollow(_ user: String) throws(DouctlError) -> JSON {
        try client.json(APIRequest(method: "POST", path: "/shuo/v2/friendships/destroy", body: .form([("user_id", user)])))
    }

    // MARK: statuses

    /// S1: `POST /shuo/v2/statuses/` — a form, or multipart with the picture in `image`
    /// (Douban then ignores `rec_*`, so they are not sent).
    public func post(_ draft: StatusDraft) throws(DouctlError) -> JSON {
        try draft.requireContent()
        var fields: [(String, String)] = []
        if let text = draft.text { fields.append(("text", text)) }
        if let imagePath = draft.imagePath {
            try checkPicture(imagePath)
            let parts = fields.map { MultipartForm.Part.field(name: $0.0, value: $0.1) } + [.file(name: "image", path: imagePath)]
            return try client.checked(client.json(APIRequest(method: "POST", path: "/shuo/v2/statuses/", body: .multipart(MultipartForm(parts: parts)))),
                                        has: ReplyShape.doubanStatus, what: "new status", request: "POST /shuo/v2/statuses/")
        }
        if let recommendation = draft.recommendation {
            if let url = recommendation.url { fields.append(("rec_url", url)) }
            if let title = recommendation.title { fields.append(("rec_title", title)) }
            if let description = recommendation.description { fields.append(("rec_desc", description)) }
            if let image = recommendation.image { fields.append(("rec_image", image)) }
        }
        return try client.checked(client.json(APIRequest(method: "POST", path: "/shuo/v2/statuses/", body: .form(fields))),
                                    has: ReplyShape.doubanStatus, what: "new status", request: "POST /shuo/v2/statuses/")
    }

    /// Douban ignores `rec_*` beside a picture, so `post` leaves them out.
    public func ignoredParts(of draft: StatusDraft) -> String? {
        guard draft.imagePath != nil, let recommendation = draft.recommendation, !recommendation.isEmpty else { return nil }
        return "Douban ignores --rec-* when a picture is sent; sending the text and picture only"
    }

    public func status(_ id: String, packed: Bool) throws(DouctlError) -> JSON {
        let request = APIRequest(path: "/shuo/v2/statuses/\(Self.segment(id))", query: packed ? [("pack", "true")] : [])
        let reply = try client.json(request)
        // A packed reply wraps the status: {"status": {...}, "comments": [...], ...}.
        _ = try client.checked(packed ? reply["status"] ?? .null : reply, has: ReplyShape.doubanStatus, what: "status", request: request.summary)
        return reply
    }

    public func delete(_ id: String) throws(DouctlError) -> JSON? {
        try client.optionalJSON(APIRequest(method: "DELETE", path: "/shuo/v2/statuses/\(Self.segment(id))"))
    }

    /// S2/S3: home or user timeline. `--all` walks with `until_id` (inclusive), which, unlike
    /// `start`, neither skips nor repeats statuses when new ones arrive during the walk.
    public func timeline(_ query: TimelineQuery) throws(DouctlError) -> Listing {
        if query.isPublic { throw .unsupported("Douban has no public timeline (--public is for Coding)") }
        let path = query.user.map { "/shuo/v2/statuses/user_timeline/\(Self.segment($0))" } ?? "/shuo/v2/statuses/home_timeline"
        var request = APIRequest(path: path)
        if let count = query.count { request.query.append(("count", String(count))) }
        if let sinceID = query.sinceID { request.query.append(("since_id", sinceID)) }
        if let untilID = query.untilID { request.query.append(("until_id", untilID)) }
        return Listing(request: request, scheme: .until(key: "until_id", itemKey: "id", pageSize: query.count ?? 20))
    }

    public func comments(_ statusID: String) throws(DouctlError) -> Listing {
        Listing(request: APIRequest(path: "/shuo/v2/statuses/\(Self.segment(statusID))/comments"), scheme: .offset())
    }

    public func comment(on statusID: String, text: String) throws(DouctlError) -> JSON {
        let request = APIRequest(method: "POST", path: "/shuo/v2/statuses/\(Self.segment(statusID))/comments", body: .form([("text", text)]))
        return try client.checked(client.json(request), has: ReplyShape.doubanComment, what: "new comment", request: request.summary)
    }

    public func deleteComment(_ commentID: String, statusID: String?) throws(DouctlError) -> JSON? {
        try client.optionalJSON(APIRequest(method: "DELETE", path: "/shuo/v2/statuses/comment/\(Self.segment(commentID))"))
    }

    public func like(_ statusID: String) throws(DouctlError) -> JSON? {
        try client.optionalJSON(APIRequest(method: "POST", path: "/shuo/v2/statuses/\(Self.segment(statusID))/like"))
    }

    public func unlike(_ statusID: String) throws(DouctlError) -> JSON? {
        try client.optionalJSON(APIRequest(method: "DELETE", path: "/shuo/v2/statuses/\(Self.segment(statusID))/like"))
    }

    public func reshare(_ statusID: String) throws(DouctlError) -> JSON {
        try client.json(APIRequest(method: "POST", path: "/shuo/v2/statuses/\(Self.segment(statusID))/reshare"))
    }

    public func pictureURLs(in status: JSON) -> [String] { client.profile.rules.pictureURLs(in: status) }

    // MARK: uploads

    public var defaultUpload: (path: String, field: String) { ("/shuo/v2/statuses/", "image") }

    /// What Douban accepts as a status picture: JPEG, GIF or PNG, at most 3 MiB.
    @discardableResult
    public func checkPicture(_ path: String) throws(DouctlError) -> FileStatus {
        let status = try MultipartForm.checkReadableFile(path)
        guard let type = MediaType.sniff(MediaType.readPrefix(path)), ["image/jpeg", "image/gif", "image/png"].contains(type) else {
            throw .localInput("\(path) is not a JPEG, GIF or PNG picture (Douban accepts only those)")
        }
        if status.size > Self.maximumPictureBytes {
            throw .localInput("\(path) is \(Self.describeSize(status.size)); Douban accepts pictures up to \(Self.describeSize(Self.maximumPictureBytes))")
        }
        return status
    }

    public static let maximumPictureBytes: Int64 = 3 * 1024 * 1024

    /// "3.0 MiB (3145729 bytes)": binary units labelled as such, and the exact count, so a
    /// file just over the limit does not read as equal to it.
    static func describeSize(_ bytes: Int64) -> String {
        let tenths = (bytes * 10 + 524_288) / 1_048_576 // tenths of a MiB, rounded
        return "\(tenths / 10).\(tenths % 10) MiB (\(bytes) bytes)"
    }
}
