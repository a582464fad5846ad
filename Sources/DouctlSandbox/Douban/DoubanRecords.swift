/// Douban's records: users, statuses (text, photo, recommendation, reshare) and comments.

struct UserRecord: Sendable {
    var id: Int64
    var uid: String
    var name: String
    var description: String
    var signature: String
    var locationID: String
    var locationName: String
    var created: Double
}

struct Recommendation: Sendable, Equatable {
    var title: String
    var url: String
    var description: String
    var image: String
}

struct StatusRecord: Sendable {
    enum Kind: String, Sendable {
        case text, photo, rec, reshare
    }

    var id: Int64
    var userID: Int64
    var text: String
    var created: Double
    var kind: Kind
    var recommendation: Recommendation?
    var pictureID: Int64?
    /// For a reshare: the original status (always the root, never another reshare).
    var resharedID: Int64?
    /// The posting app's name (`source.title`).
    var source: String
}

struct CommentRecord: Sendable {
    var id: Int64
    var statusID: Int64
    var userID: Int64
    var text: String
    var created: Double
    var source: String
}
