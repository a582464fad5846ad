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
        object["users"] = .array(coding.userOrder.compactMap { coding.users[$0] }.map { user in
            ["id": .int(user.id), "global_key": .string(user.globalKey), "name": .string(user.name),
             "email": .string(user.email), "phone": .string(user.phone), "password_sha1": .string(user.passwordSHA1),
             "two_factor": .bool(user.twoFactor), "slogan": .string(user.slogan), "location": .string(user.location),
             "created": number(user.created)]
        })
        var follows: [JSON] = []
        for follower in coding.follows.keys.sorted() {
            for entry in coding.follows[follower] ?? [] {
                follows.append(["follower": .int(follower), "user": .int(entry.userID), "since": number(entry.since)])
            }
        }
        object["follows"] = .array(follows)
        object["tweets"] = .array(coding.tweetOrder.compactMap { coding.tweets[$0] }.map { tweet in
            ["id": .int(tweet.id), "owner": .int(tweet.ownerID), "content": .string(tweet.content),
             "created": number(tweet.created), "sort_time": .int(tweet.sortTime), "device": .string(tweet.device),
             "location": .string(tweet.location), "coord": .string(tweet.coord), "address": .string(tweet.address)]
        })
        object["comments"] = .array(coding.comments.keys.sorted().compactMap { coding.comments[$0] }.map { comment in
            ["id": .int(comment.id), "tweet": .int(comment.tweetID), "owner": .int(comment.ownerID),
             "content": .string(comment.content), "created": number(comment.created)]
        })
        var likes: [JSON] = []
        for tweetID in coding.likes.keys.sorted() {
            for entry in coding.likes[tweetID] ?? [] {
                likes.append(["tweet": .int(tweetID), "user": .int(entry.userID), "since": number(entry.since)])
            }
        }
        object["likes"] = .array(likes)
        object["access_tokens"] = .array(coding.accessTokens.keys.sorted().compactMap { coding.accessTokens[$0] }.map { token in
            var item: JSONObject = ["token": .string(token.token), "user": .int(token.userID), "client": .string(token.clientID),
                                    "scopes": .array(token.scopes.map(JSON.string)), "expires_at": number(token.expiresAt),
                                    "issued_at": number(token.issuedAt)]
            if let refresh = token.refreshToken { item["refresh_token"] = .string(refresh) }
            return .object(item)
        })
        object["refresh_tokens"] = .array(coding.refreshTokens.keys.sorted().compactMap { coding.refreshTokens[$0] }.map { token in
            ["token": .string(token.token), "user": .int(token.userID), "client": .string(token.clientID),
             "scopes": .array(token.scopes.map(JSON.string)), "access_token": .string(token.accessToken)]
        })
        object["sessions"] = .array(coding.sessions.keys.sorted().compactMap { coding.sessions[$0] }.compactMap { session in
            guard let userID = session.userID else { return nil }
            return ["sid": .string(session.sid), "xsrf": .string(session.xsrfToken), "user": .int(userID),
                    "created": number(session.created), "expires_at": number(session.expiresAt),
                    "remember": .bool(session.rememberMe)]
        })
        return .object(object)
    }

    static func decodeCoding(_ json: JSON) throws(Failure) -> CodingState {
        guard case .object = json else { throw Failure(reason: "'coding' is not an object") }
        var coding = CodingState()
        for item in try array(json, "users") {
            let user = CodingUserRecord(
                id: try int(item, "id"), globalKey: try string(item, "global_key"), name: try string(item, "name"),
                email: try string(item, "email"), phone: try string(item, "phone"),
                passwordSHA1: try string(item, "password_sha1"), twoFactor: item["two_factor"]?.boolValue ?? false,
                slogan: try string(item, "slogan"), location: try string(item, "location"), created: try double(item, "created"))
            coding.insert(user)
        }
        for item in try array(json, "follows") {
            coding.follows[try int(item, "follower"), default: []].append((try int(item, "user"), try double(item, "since")))
        }
        for item in try array(json, "tweets") {
            coding.insert(TweetRecord(
                id: try int(item, "id"), ownerID: try int(item, "owner"), content: try string(item, "content"),
                created: try double(item, "created"), sortTime: try int(item, "sort_time"), device: try string(item, "device"),
                location: try string(item, "location"), coord: try string(item, "coord"), address: try string(item, "address")))
        }
        // Keep sort times unique and growing with ids, whatever a hand-edited file says.
        var previous = Int64.min
        for id in coding.tweetOrder {
            guard var tweet = coding.tweets[id] else { continue }
            if tweet.sortTime <= previous {
                tweet.sortTime = previous + 1
                coding.tweets[id] = tweet
            }
            previous = tweet.sortTime
        }
        for item in try array(json, "comments") {
            coding.insert(TweetCommentRecord(id: try int(item, "id"), tweetID: try int(item, "tweet"), ownerID: try int(item, "owner"),
                                             content: try string(item, "content"), created: try double(item, "created")))
        }
        for item in try array(json, "likes") {
            coding.likes[try int(item, "tweet"), default: []].append((try int(item, "user"), try double(item, "since")))
        }
        for item in try array(json, "access_tokens") {
            let token = AccessTokenRecord(token: try string(item, "token"), userID: try int(item, "user"),
                                          clientID: try string(item, "client"), scopes: try strings(item, "scopes"),
                                          expiresAt: try double(item, "expires_at"),
                                          refreshToken: item["refresh_token"]?.stringValue,
                                          issuedAt: item["issued_at"]?.doubleValue ?? 0)
            coding.accessTokens[token.token] = token
        }
        for item in try array(json, "refresh_tokens") {
            let token = RefreshTokenRecord(token: try string(item, "token"), userID: try int(item, "user"),
                                           clientID: try string(item, "client"), scopes: try strings(item, "scopes"),
                                           accessToken: try string(item, "access_token"))
            coding.refreshTokens[token.token] = token
        }
        for item in try array(json, "sessions") {
            let session = CodingSession(sid: try string(item, "sid"), xsrfToken: try string(item, "xsrf"),
                                        stage: .loggedIn(userID: try int(item, "user")), created: try double(item, "created"),
                                        expiresAt: try double(item, "expires_at"), rememberMe: item["remember"]?.boolValue ?? false,
                                        captcha: nil)
            coding.sessions[session.sid] = session
        }
        coding.nextUserID = max(coding.nextUserID, json["next_user_id"]?.int64Value ?? 0)
        coding.nextTweetID = max(coding.nextTweetID, json["next_tweet_id"]?.int64Value ?? 0)
        coding.nextCommentID = max(coding.nextCommentID, json["next_comment_id"]?.int64Value ?? 0)
        return coding
    }
}
