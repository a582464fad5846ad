import DouctlJSON

/// Coding's JSON shapes, snake_case as Coding-iOS's models map them.
/// Times are epoch milliseconds. `viewer` is the caller (for `liked`, `followed`, `follow`).
extension CodingState {
    static func milliseconds(_ time: Double) -> JSON { .int(Int64((time * 1000).rounded(.down))) }

    /// A User. `email` is the address only where the caller may read it (their own profile,
    /// with a cookie session or the `user:email` scope); otherwise "".
    func render(_ user: CodingUserRecord, viewer: Int64?, showEmail: Bool = false, base: String) -> JSON {
        [
            "id": .int(user.id), "global_key": .string(user.globalKey), "name": .string(user.name),
            "avatar": .string("\(base)/icon/coding-\(user.id).jpg"), "path": .string("/u/\(user.globalKey)"),
            "email": .string(showEmail ? user.email : ""), "status": 1,
            "slogan": .string(user.slogan), "location": .string(user.location),
            "follows_count": .int(followingIDs(of: user.id).count), "fans_count": .int(fanCount(of: user.id)),
            "tweets_count": .int(tweetCount(of: user.id)),
            "followed": .bool(viewer.map { isFollowing($0, user.id) } ?? false),
            "follow": .bool(viewer.map { isFollowing(user.id, $0) } ?? false),
            "created_at": Self.milliseconds(user.created),
        ]
    }

    /// A Tweet (冒泡): the Markdown rendered to HTML, the latest five comments, the latest
    /// five likers.
    func render(_ tweet: TweetRecord, viewer: Int64?, base: String) -> JSON {
        let owner = users[tweet.ownerID]
        let commentIDs = commentsByTweet[tweet.id] ?? []
        let likers = likes[tweet.id] ?? []
        return [
            "id": .int(tweet.id), "owner_id": .int(tweet.ownerID),
            "owner": owner.map { render($0, viewer: viewer, base: base) } ?? .null,
            "content": .string(CodingMarkdown.html(tweet.content)),
            "created_at": Self.milliseconds(tweet.created), "sort_time": .int(tweet.sortTime),
            "comments": .int(commentIDs.count), "likes": .int(likers.count),
            "liked": .bool(viewer.map { isLiked(tweet.id, by: $0) } ?? false),
            "comment_list": .array(commentIDs.suffix(5).reversed().compactMap { comments[$0] }.map { render($0, viewer: viewer, base: base) }),
            "like_users": .array(likers.suffix(5).reversed().compactMap { users[$0.userID] }.map { render($0, viewer: viewer, base: base) }),
            "device": .string(tweet.device), "location": .string(tweet.location), "coord": .string(tweet.coord),
            "address": .string(tweet.address),
            "path": .string("/u/\(owner?.globalKey ?? "")/pp/\(tweet.id)"),
        ]
    }

    /// A Comment.
    func render(_ comment: TweetCommentRecord, viewer: Int64?, base: String) -> JSON {
        [
            "id": .int(comment.id), "tweet_id": .int(comment.tweetID), "owner_id": .int(comment.ownerID),
            "owner": users[comment.ownerID].map { render($0, viewer: viewer, base: base) } ?? .null,
            "content": .string(CodingMarkdown.html(comment.content)),
            "created_at": Self.milliseconds(comment.created),
        ]
    }

    /// `{"list":[…],"page":n,"pageSize":n,"totalPage":n,"totalRow":n}`.
    static func pageable(_ items: [JSON], page: Int, pageSize: Int, totalRow: Int) -> JSON {
        ["list": .array(items), "page": .int(page), "pageSize": .int(pageSize),
         "totalPage": .int((totalRow + max(1, pageSize) - 1) / max(1, pageSize)), "totalRow": .int(totalRow)]
    }
}
