import DouctlJSON

/// Douban's JSON shapes (user, status with attachments, comment), built from the state. `viewer` is the user whose token
/// made the call (for `liked`, `following`, `relation`); `base` the sandbox's base URL (pictures
/// and avatars are served by the sandbox itself, so nothing reaches the network).
extension SandboxState {
    static let webBase = "http://www.douban.com"

    // MARK: Users

    private func avatar(_ user: UserRecord, _ variant: String, base: String) -> JSON {
        .string("\(base)/icon/\(variant)\(user.id)-2.jpg")
    }

    private func profileURL(_ user: UserRecord) -> JSON {
        .string("\(Self.webBase)/people/\(user.uid)/")
    }

    /// §6.6 UserInfo: `/v2/user/:name`, `/v2/user/~me`.
    func userInfo(_ user: UserRecord, viewer: Int64?, base: String) -> JSON {
        var object: JSONObject = [
            "id": .string(String(user.id)), "uid": .string(user.uid), "name": .string(user.name),
            "avatar": .string("\(base)/icon/u\(user.id)-28.jpg"), "large_avatar": avatar(user, "ul", base: base),
            "alt": profileURL(user), "type": "user",
        ]
        if let viewer { object["relation"] = .string(relation(of: user.id, to: viewer)) }
        object["created"] = .string(BeijingTime.format(user.created))
        object["loc_id"] = .string(user.locationID)
        object["loc_name"] = .string(user.locationName)
        object["desc"] = .string(user.description)
        object["signature"] = .string(user.signature)
        return .object(object)
    }

    /// "friend" when both follow each other, "contact" when the viewer follows the user,
    /// "stranger" otherwise, "self" for the viewer's own profile.
    func relation(of userID: Int64, to viewer: Int64) -> String {
        if userID == viewer { return "self" }
        let follows = isFollowing(viewer, userID)
        if follows && isFollowing(userID, viewer) { return "friend" }
        return follows ? "contact" : "stranger"
    }

    /// §6.6 simple User: search results.
    func simpleUser(_ user: UserRecord, base: String) -> JSON {
        ["id": .string(String(user.id)), "name": .string(user.name), "uid": .string(user.uid),
         "alt": profileURL(user), "avatar": .string("\(base)/icon/u\(user.id)-28.jpg")]
    }

    /// §6.2 status user, embedded as `status.user`; also the pack's reshare/like users.
    func statusUser(_ user: UserRecord, base: String) -> JSON {
        ["id": .string(String(user.id)), "uid": .string(user.uid), "screen_name": .string(user.name), "type": "user",
         "description": .string(user.description), "small_avatar": avatar(user, "u", base: base),
         "large_avatar": avatar(user, "ul", base: base)]
    }

    /// §6.3 shuo user: following/followers, likers, resharers, friendships.
    func shuoUser(_ user: UserRecord, viewer: Int64?, base: String) -> JSON {
        [
            "uid": .string(user.uid), "id": .string(String(user.id)), "type": "user",
            "description": .string(user.description), "small_avatar": avatar(user, "u", base: base),
            "large_avatar": avatar(user, "ul", base: base), "screen_name": .string(user.name),
            "following_count": .int(followingIDs(of: user.id).count), "followers_count": .int(followerIDs(of: user.id).count),
            "statuses_count": .int(statusCount(of: user.id)), "blocked": false, "blocking": false,
            "following": .bool(viewer.map { isFollowing($0, user.id) } ?? false),
            "city": .string(user.locationName), "location": .string(user.locationName), "verified": false,
            "is_first_visit": false, "new_site_to_vu_count": 0, "logged_in": .bool(viewer == user.id),
            "url": profileURL(user), "created_at": .string(BeijingTime.format(user.created)),
            "icon_avatar": avatar(user, "u", base: base),
        ]
    }

    /// §6.4 comment user.
    func commentUser(_ user: UserRecord, base: String) -> JSON {
        [
            "uid": .string(user.uid), "id": .string(String(user.id)), "type": "user",
            "description": .string(user.description), "small_avatar": avatar(user, "u", base: base),
            "large_avatar": avatar(user, "ul", base: base), "screen_name": .string(user.name),
            "city": .string(user.locationName), "verified": false, "is_first_visit": false, "new_site_to_vu_count": 0,
            "location": .string(user.locationName), "statuses_count": .int(statusCount(of: user.id)),
            "url": profileURL(user), "created_at": .string(BeijingTime.format(user.created)),
            "icon_avatar": avatar(user, "u", base: base),
        ]
    }

    // MARK: Statuses

    /// §6.1 Status.
    func render(_ status: StatusRecord, viewer: Int64?, base: String) -> JSON {
        let author = users[status.userID]
        let title: String
        let category: String
        let type: String
        var layout = 1
        switch status.kind {
        case .text: (title, category, type) = ("说：", "saying", "text")
        case .photo: (title, category, type, layout) = ("说：", "saying", "photo", 2)
        case .rec: (title, category, type) = ("推荐网址", "rec", "rec")
        case .reshare: (title, category, type) = ("转播：", "reshare", "reshare")
        }
        var object: JSONObject = [
            "id": .int(status.id), "category": .string(category), "type": .string(type), "title": .string(title),
            "text": .string(status.text), "created_at": .string(BeijingTime.format(status.created)),
            "reshared_count": .int(reshares[status.id]?.count ?? 0), "like_count": .int(likes[status.id]?.count ?? 0),
            "comments_count": .int(commentsByStatus[status.id]?.count ?? 0), "can_reply": 1,
            "liked": .bool(viewer.map { isLiked(status.id, by: $0) } ?? false),
            "is_follow": .bool(viewer.map { isFollowing($0, status.userID) } ?? false),
            "has_photo": .bool(status.kind == .photo), "layout": .int(layout), "from_subscription": false,
            "source": ["title": .string(status.source), "href": .string(Self.webBase + "/")],
            "entities": ["user_mentions": [], "topics": .array(Self.topics(in: status.text)), "urls": []],
            "attachments": .array(attachments(of: status, base: base)),
            "user": author.map { statusUser($0, base: base) } ?? .null,
        ]
        if let original = status.resharedID, let originalStatus = statuses[original] {
            object["reshared_status"] = render(originalStatus, viewer: viewer, base: base)
        }
        return .object(object)
    }

    func pictureURL(_ picture: PictureRecord, size: String, base: String) -> String {
        "\(base)/view/status/\(size)/public/p\(picture.id).\(picture.fileExtension)"
    }

    private func attachments(of status: StatusRecord, base: String) -> [JSON] {
        if status.kind == .photo, let pictureID = status.pictureID, let picture = pictures[pictureID] {
            let median = pictureURL(picture, size: "median", base: base)
            let raw = pictureURL(picture, size: "raw", base: base)
            let media: JSON = [
                "type": "image", "src": .string(median), "href": .string(raw), "original_src": .string(raw),
                "secret_pid": "",
                "sizes": ["small": Self.size(picture, fitting: 150), "median": Self.size(picture, width: 460),
                          "raw": [.int(picture.width), .int(picture.height)]],
                "is_animated": .bool(picture.isAnimated),
            ]
            return [["description": "", "title": "", "expaned_href": .string(raw), "caption": "", "href": .string(raw),
                     "type": "image", "properties": [:], "media": [media]]]
        }
        if status.kind == .rec, let rec = status.recommendation {
            var media: [JSON] = []
            if !rec.image.isEmpty {
                media.append(["type": "image", "src": .string(rec.image), "href": .string(rec.url),
                              "original_src": .string(rec.image), "secret_pid": "", "sizes": [:], "is_animated": false])
            }
            return [["description": .string(rec.description), "title": .string(rec.title.isEmpty ? "无标题" : rec.title),
                     "expaned_href": .string(rec.url), "caption": "", "href": .string(rec.url), "type": "url",
                     "properties": [:], "media": .array(media)]]
        }
        return []
    }

    /// The picture scaled to fit a `limit`-pixel square (never enlarged).
    private static func size(_ picture: PictureRecord, fitting limit: Int) -> JSON {
        let longest = max(picture.width, picture.height)
        guard longest > limit else { return [.int(picture.width), .int(picture.height)] }
        return [.int(max(1, picture.width * limit / longest)), .int(max(1, picture.height * limit / longest))]
    }

    /// The picture scaled to at most `width` pixels wide (never enlarged).
    private static func size(_ picture: PictureRecord, width: Int) -> JSON {
        guard picture.width > width else { return [.int(picture.width), .int(picture.height)] }
        return [.int(width), .int(max(1, picture.height * width / picture.width))]
    }

    /// `#话题#` topics with their character offsets `[start, end)`.
    static func topics(in text: String) -> [JSON] {
        let characters = Array(text)
        var topics: [JSON] = []
        var index = 0
        while index < characters.count {
            if characters[index] == "#", let close = characters[(index + 1)...].firstIndex(of: "#"), close > index + 1 {
                let name = String(characters[(index + 1)..<close])
                if !name.contains(where: { $0 == " " || $0 == "\n" }) {
                    topics.append(["text": .string(name), "indices": [.int(index), .int(close + 1)]])
                    index = close + 1
                    continue
                }
            }
            index += 1
        }
        return topics
    }

    // MARK: Comments

    /// §6.4 shuo comment.
    func render(_ comment: CommentRecord, base: String) -> JSON {
        [
            "id": .int(comment.id), "text": .string(comment.text),
            "created_at": .string(BeijingTime.format(comment.created)), "source": .string(comment.source),
            "entities": ["user_mentions": [], "topics": .array(Self.topics(in: comment.text)), "urls": []],
            "user": users[comment.userID].map { commentUser($0, base: base) } ?? .null,
        ]
    }
}
