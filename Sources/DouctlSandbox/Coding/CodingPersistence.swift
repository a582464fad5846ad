import DouctlJSON

/// Coding's half of the state file: the object `coding` beside Douban's members. Accounts,
/// follows, tweets, comments, likes, OAuth tokens and logged-in sessions are kept; captchas,
/// pending 2FA steps and anonymous sessions are not.
extension StateCoding {
    static func encodeCoding(_ coding: CodingState) -> JSON {
        var object = JSONObject()
        object["next_user_id"] = .int(coding.nextUserID)
        object["next_tweet_id"] = .int(coding.nextTweetID)
        object["next_comment_id"] = .int(coding.nextCommentID)
        object["users"] = .array(coding.userOrder.compactMap { coding.users[$0] }.map(encode))
        object["follows"] = .array(encodeFollows(coding.follows))
        object["tweets"] = .array(coding.tweetOrder.compactMap { coding.tweets[$0] }.map(encode))
        object["comments"] = .array(coding.comments.keys.sorted().compactMap { coding.comments[$0] }.map(encode))
        object["likes"] = .array(encodeLikes(coding.likes, key: "tweet"))
        object["access_tokens"] = .array(coding.accessTokens.keys.sorted().compactMap { coding.accessTokens[$0] }.map(encode))
        object["refresh_tokens"] = .array(coding.refreshTokens.keys.sorted().compactMap { coding.refreshTokens[$0] }.map(encode))
        object["sessions"] = .array(coding.sessions.keys.sorted().compactMap { coding.sessions[$0] }.compactMap(encode))
        return .object(object)
    }

    static func decodeCoding(_ json: JSON) throws(Failure) -> CodingState {
        guard case .object = json else { throw Failure(reason: "'coding' is not an object") }
        var coding = CodingState()
        for item in try array(json, "users") { coding.insert(try decodeCodingUser(item)) }
        for item in try array(json, "follows") {
            let (follower, entry) = try decodeFollow(item)
            coding.follows[follower, default: []].append(entry)
        }
        for item in try array(json, "tweets") { coding.insert(try decodeTweet(item)) }
        makeSortTimesIncrease(&coding)
        for item in try array(json, "comments") { coding.insert(try decodeTweetComment(item)) }
        for item in try array(json, "likes") {
            let (tweetID, entry) = try decodeLike(item, key: "tweet")
            coding.likes[tweetID, default: []].append(entry)
        }
        for item in try array(json, "access_tokens") {
            let token = try decodeAccessToken(item)
            coding.accessTokens[token.token] = token
        }
        for item in try array(json, "refresh_tokens") {
            let token = try decodeRefreshToken(item)
            coding.refreshTokens[token.token] = token
        }
        for item in try array(json, "sessions") {
            let session = try decodeCookieSession(item)
            coding.sessions[session.sid] = session
        }
        coding.nextUserID = max(coding.nextUserID, json["next_user_id"]?.int64Value ?? 0)
        coding.nextTweetID = max(coding.nextTweetID, json["next_tweet_id"]?.int64Value ?? 0)
        coding.nextCommentID = max(coding.nextCommentID, json["next_comment_id"]?.int64Value ?? 0)
        return coding
    }

    // MARK: - Accounts

    static func encode(_ user: CodingUserRecord) -> JSON {
        ["id": .int(user.id), "global_key": .string(user.globalKey), "name": .string(user.name),
         "email": .string(user.email), "phone": .string(user.phone), "password_sha1": .string(user.passwordSHA1),
         "two_factor": .bool(user.twoFactor), "slogan": .string(user.slogan), "location": .string(user.location),
         "created": number(user.created)]
    }

    static func decodeCodingUser(_ item: JSON) throws(Failure) -> CodingUserRecord {
        CodingUserRecord(
            id: try int(item, "id"), globalKey: try string(item, "global_key"), name: try string(item, "name"),
            email: try string(item, "email"), phone: try string(item, "phone"),
            passwordSHA1: try string(item, "password_sha1"), twoFactor: item["two_factor"]?.boolValue ?? false,
            slogan: try string(item, "slogan"), location: try string(item, "location"), created: try double(item, "created"))
    }

    // MARK: - Tweets

    static func encode(_ tweet: TweetRecord) -> JSON {
        ["id": .int(tweet.id), "owner": .int(tweet.ownerID), "content": .string(tweet.content),
         "created": number(tweet.created), "sort_time": .int(tweet.sortTime), "device": .string(tweet.device),
         "location": .string(tweet.location), "coord": .string(tweet.coord), "address": .string(tweet.address)]
    }

    static func decodeTweet(_ item: JSON) throws(Failure) -> TweetRecord {
        TweetRecord(
            id: try int(item, "id"), ownerID: try int(item, "owner"), content: try string(item, "content"),
            created: try double(item, "created"), sortTime: try int(item, "sort_time"), device: try string(item, "device"),
            location: try string(item, "location"), coord: try string(item, "coord"), address: try string(item, "address"))
    }

    /// Keeps sort times unique and growing with ids, whatever a hand-edited file says.
    static func makeSortTimesIncrease(_ coding: inout CodingState) {
        var previous = Int64.min
        for id in coding.tweetOrder {
            guard var tweet = coding.tweets[id] else { continue }
            if tweet.sortTime <= previous {
                tweet.sortTime = previous + 1
                coding.tweets[id] = tweet
            }
            previous = tweet.sortTime
        }
    }

    // MARK: - Comments

    static func encode(_ comment: TweetCommentRecord) -> JSON {
        ["id": .int(comment.id), "tweet": .int(comment.tweetID), "owner": .int(comment.ownerID),
         "content": .string(comment.content), "created": number(comment.created)]
    }

    static func decodeTweetComment(_ item: JSON) throws(Failure) -> TweetCommentRecord {
        TweetCommentRecord(id: try int(item, "id"), tweetID: try int(item, "tweet"), ownerID: try int(item, "owner"),
                           content: try string(item, "content"), created: try double(item, "created"))
    }

    // MARK: - Cookie sessions

    /// Nil for a session nobody has logged in to: only logged-in sessions are saved.
    static func encode(_ session: CodingCookieSession) -> JSON? {
        guard let userID = session.userID else { return nil }
        return ["sid": .string(session.sid), "xsrf": .string(session.xsrfToken), "user": .int(userID),
                "created": number(session.created), "expires_at": number(session.expiresAt),
                "remember": .bool(session.rememberMe)]
    }

    static func decodeCookieSession(_ item: JSON) throws(Failure) -> CodingCookieSession {
        CodingCookieSession(sid: try string(item, "sid"), xsrfToken: try string(item, "xsrf"),
                            stage: .loggedIn(userID: try int(item, "user")), created: try double(item, "created"),
                            expiresAt: try double(item, "expires_at"), rememberMe: item["remember"]?.boolValue ?? false,
                            captcha: nil)
    }
}
