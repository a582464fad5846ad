import DouctlJSON
import DouctlSystem

/// The operations behind `douctl user`, `douctl shuo` and `douctl upload`, independent of
/// which API family answers them. Each style implements them on its own endpoints; an
/// operation a style lacks throws `.unsupported` (exit 2) instead of sending something wrong.
public protocol SocialService {
    var client: APIClient { get }

    func me() throws(DouctlError) -> JSON
    /// Who the client's token (or session) belongs to, from the same endpoint as `me`, read
    /// leniently: a login must not fail over a field `user me` would insist on.
    func identity() throws(DouctlError) -> Identity
    func user(_ idOrName: String) throws(DouctlError) -> JSON
    func searchUsers(_ query: String) throws(DouctlError) -> Listing
    func following(_ user: String) throws(DouctlError) -> Listing
    func followers(_ user: String) throws(DouctlError) -> Listing
    func follow(_ user: String) throws(DouctlError) -> JSON
    func unfollow(_ user: String) throws(DouctlError) -> JSON

    /// Posts a status; an empty draft is a usage error, a part the API lacks unsupported.
    func post(_ draft: StatusDraft) throws(DouctlError) -> JSON
    /// What of `draft` this API would silently drop, to be said before posting; nil when
    /// every part of it is sent.
    func ignoredParts(of draft: StatusDraft) -> String?
    func status(_ id: String, packed: Bool) throws(DouctlError) -> JSON
    func delete(_ id: String) throws(DouctlError) -> JSON?
    func timeline(_ query: TimelineQuery) throws(DouctlError) -> Listing
    func comments(_ statusID: String) throws(DouctlError) -> Listing
    func comment(on statusID: String, text: String) throws(DouctlError) -> JSON
    func deleteComment(_ commentID: String, statusID: String?) throws(DouctlError) -> JSON?
    func like(_ statusID: String) throws(DouctlError) -> JSON?
    func unlike(_ statusID: String) throws(DouctlError) -> JSON?
    func reshare(_ statusID: String) throws(DouctlError) -> JSON
    /// The pictures of a status this API returned, as URLs (`shuo get --save-images`).
    func pictureURLs(in status: JSON) -> [String]

    /// Where `douctl upload` sends files unless told otherwise.
    var defaultUpload: (path: String, field: String) { get }
    /// Checks a picture before it is posted (Douban: JPEG/GIF/PNG, ≤ 3 MiB), and the file
    /// itself (exists, regular, readable) on the way.
    @discardableResult
    func checkPicture(_ path: String) throws(DouctlError) -> FileStatus
}

/// A 广播 to post.
public struct StatusDraft: Sendable, Equatable {
    public var text: String?
    public var imagePath: String?
    public var recommendation: Recommendation?

    public struct Recommendation: Sendable, Equatable {
        public var url: String?
        public var title: String?
        public var description: String?
        public var image: String?

        public init(url: String? = nil, title: String? = nil, description: String? = nil, image: String? = nil) {
            self.url = url
            self.title = title
            self.description = description
            self.image = image
        }

        public var isEmpty: Bool { url == nil && title == nil && description == nil && image == nil }
    }

    public init(text: String? = nil, imagePath: String? = nil, recommendation: Recommendation? = nil) {
        self.text = text
        self.imagePath = imagePath
        self.recommendation = recommendation
    }

    /// A status needs text, a picture or a link.
    func requireContent() throws(DouctlError) {
        if (text ?? "").isEmpty && imagePath == nil && recommendation?.isEmpty ?? true {
            throw .usage("nothing to post: give TEXT, --image or --rec-url")
        }
    }
}

/// Which timeline, and which part of it.
public struct TimelineQuery: Sendable, Equatable {
    /// Someone's own statuses; nil means the home timeline (you and those you follow).
    public var user: String?
    public var count: Int?
    public var sinceID: String?
    public var untilID: String?
    /// Everyone's public statuses (Coding's public_tweets; Douban has none).
    public var isPublic: Bool

    public init(user: String? = nil, count: Int? = nil, sinceID: String? = nil, untilID: String? = nil, isPublic: Bool = false) {
        self.user = user
        self.count = count
        self.sinceID = sinceID
        self.untilID = untilID
        self.isPublic = isPublic
    }
}

/// A list endpoint: the first page's request and how to walk the rest (`--all`).
public struct Listing: Sendable, Equatable {
    public var request: APIRequest
    public var scheme: PageScheme

    public init(request: APIRequest, scheme: PageScheme) {
        self.request = request
        self.scheme = scheme
    }

    /// Adds `start`/`count` style paging parameters the user gave.
    public func paged(start: Int?, count: Int?) -> Listing {
        var listing = self
        switch scheme {
        case .offset(let startKey, let countKey, _):
            if let start { listing.request.setQuery(startKey, String(start)) }
            if let count { listing.request.setQuery(countKey, String(count)) }
        case .pageNumber(let pageKey, let sizeKey, _):
            if let count { listing.request.setQuery(sizeKey, String(count)) }
            if let start, let count, count > 0 { listing.request.setQuery(pageKey, String(start / count + 1)) }
        case .cursor, .until:
            if let count { listing.request.setQuery("count", String(count)) }
        }
        return listing
    }
}

extension APIClient {
    /// The service for this profile's API style.
    public var service: SocialService { profile.rules.service(for: self) }

    /// Sends and requires a JSON payload.
    func json(_ request: APIRequest) throws(DouctlError) -> JSON {
        try send(request).requireJSON()
    }

    /// Sends; a reply with no body is fine (DELETEs).
    func optionalJSON(_ request: APIRequest) throws(DouctlError) -> JSON? {
        try send(request).payload
    }
}
