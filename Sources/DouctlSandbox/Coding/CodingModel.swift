import DouctlSystem
/// Coding's half of the sandbox's world: its own accounts, tweets (冒泡),
/// comments, likes, OAuth tokens and cookie sessions. It lives in `SandboxState.coding`, under
/// the same lock as Douban's half; the two share only the picture store. Douban tokens are not
/// accepted by the Coding paths, nor Coding tokens by the Douban paths.

struct CodingUserRecord: Sendable {
    var id: Int64
    var globalKey: String
    var name: String
    var email: String
    var phone: String
    /// Lowercase hex SHA-1 of the UTF-8 password: what the login form carries.
    var passwordSHA1: String
    /// The login stops at `two_factor_auth_code_not_empty` until a code is checked.
    var twoFactor: Bool
    var slogan: String
    var location: String
    var created: Double
}

struct TweetRecord: Sendable {
    var id: Int64
    var ownerID: Int64
    /// The Markdown as posted; replies carry it rendered to HTML.
    var content: String
    var created: Double
    /// Epoch milliseconds, unique, and increasing with the id (so `last_id` and `last_time`
    /// cursors walk the same order without gaps).
    var sortTime: Int64
    var device: String
    var location: String
    var coord: String
    var address: String
}

struct TweetCommentRecord: Sendable {
    var id: Int64
    var tweetID: Int64
    var ownerID: Int64
    var content: String
    var created: Double
}

/// A cookie session (`sid` cookie), from the first `GET /api/captcha/login` to the logout.
struct CodingCookieSession: Sendable {
    enum Stage: Sendable, Equatable {
        /// Not logged in yet: may fetch a captcha and post the login form.
        case anonymous
        /// The password was right, the account has 2FA: waiting for the code.
        case awaitingTwoFactor(userID: Int64, since: Double, code: String)
        case loggedIn(userID: Int64)
    }

    var sid: String
    /// The `XSRF-TOKEN` cookie; unsafe requests must echo it in `X-XSRF-TOKEN`.
    var xsrfToken: String
    var stage: Stage
    var created: Double
    var expiresAt: Double
    var rememberMe: Bool
    /// The login captcha last shown to this session (consumed by each login attempt).
    var captcha: String?

    var userID: Int64? {
        if case .loggedIn(let userID) = stage { return userID }
        return nil
    }

    /// An anonymous session lasts an hour; a logged-in one a day, or 30 days with remember_me.
    static let anonymousLifetime: Double = 3600
    static let loginLifetime: Double = 86_400
    static let rememberedLifetime: Double = 30 * 86_400
}

struct CodingState: Sendable {
    var users: [Int64: CodingUserRecord] = [:]
    /// Users in creation order.
    var userOrder: [Int64] = []
    var userIDsByKey: [String: Int64] = [:]
    /// follower → the users they follow, oldest first.
    var follows: [Int64: [(userID: Int64, since: Double)]] = [:]

    var tweets: [Int64: TweetRecord] = [:]
    /// Ids ascending, which is also `sort_time` ascending.
    var tweetOrder: [Int64] = []
    var tweetCounts: [Int64: Int] = [:]
    var comments: [Int64: TweetCommentRecord] = [:]
    /// tweet → its comments, oldest first.
    var commentsByTweet: [Int64: [Int64]] = [:]
    /// tweet → likers, oldest first.
    var likes: [Int64: [(userID: Int64, since: Double)]] = [:]

    var accessTokens: [String: AccessTokenRecord] = [:]
    var refreshTokens: [String: RefreshTokenRecord] = [:]
    /// Saved when logged in; anonymous and half-done (2FA) sessions are not.
    var sessions: [String: CodingCookieSession] = [:]

    var nextUserID: Int64 = 9001
    /// Tweet ids stay far below Coding's first-page sentinel `last_id=99999999`.
    var nextTweetID: Int64 = 100_001
    var nextCommentID: Int64 = 500_001

    // Not persisted.
    /// user → the action captcha (`getCaptcha?type=N`) last shown to them.
    var actionCaptchas: [Int64: String] = [:]
    /// Set by `Sandbox.requireCodingActionCaptcha()`: tweet posts answer 907 until a
    /// `request_valid` passes.
    var actionCaptchaRequired = false
    /// The latest captcha text of any kind, and the latest 2FA code per global_key (test hooks).
    var lastCaptcha: String?
    var twoFactorCodes: [String: String] = [:]
    var lastTwoFactorCode: String?

    static let firstPageLastID: Int64 = 99_999_999

    // MARK: Users

    /// A global_key, or a numeric id.
    func user(named name: String) -> CodingUserRecord? {
        if let id = userIDsByKey[name] { return users[id] }
        if let id = Int64(name) { return users[id] }
        return nil
    }

    /// The login form's `account`: an email (any case), a phone number or a global_key.
    func user(account: String) -> CodingUserRecord? {
        if let id = userIDsByKey[account], let user = users[id] { return user }
        let lowered = account.lowercased()
        for id in userOrder {
            guard let user = users[id] else { continue }
            if !user.email.isEmpty && user.email.lowercased() == lowered { return user }
            if !user.phone.isEmpty && user.phone == account { return user }
        }
        return nil
    }

    mutating func insert(_ user: CodingUserRecord) {
        if users[user.id] == nil { userOrder.append(user.id) }
        users[user.id] = user
        userIDsByKey[user.globalKey] = user.id
        nextUserID = max(nextUserID, user.id + 1)
    }

    @discardableResult
    mutating func addUser(globalKey: String, name: String, email: String = "", phone: String = "",
                          password: String = "", twoFactor: Bool = false, slogan: String = "", location: String = "",
                          created: Double) -> CodingUserRecord {
        let user = CodingUserRecord(id: nextUserID, globalKey: globalKey, name: name, email: email, phone: phone,
                                    passwordSHA1: password.isEmpty ? "" : Digest.hex(Digest.sha1(Array(password.utf8))),
                                    twoFactor: twoFactor, slogan: slogan, location: location, created: created)
        insert(user)
        return user
    }

    func isFollowing(_ follower: Int64, _ followee: Int64) -> Bool {
        follows[follower]?.contains { $0.userID == followee } ?? false
    }

    func followingIDs(of userID: Int64) -> [Int64] {
        (follows[userID] ?? []).map(\.userID)
    }

    func fanCount(of userID: Int64) -> Int {
        follows.values.reduce(0) { $0 + ($1.contains { $0.userID == userID } ? 1 : 0) }
    }

    mutating func follow(_ follower: Int64, _ followee: Int64, at time: Double) {
        guard follower != followee, !isFollowing(follower, followee) else { return }
        follows[follower, default: []].append((followee, time))
    }

    // MARK: Tweets

    /// Adds a tweet with the next id. Its `sort_time` is its creation time in milliseconds,
    /// nudged past the newest tweet's when needed, so ids and sort times grow together.
    @discardableResult
    mutating func addTweet(ownerID: Int64, content: String, created: Double, device: String = "",
                           location: String = "", coord: String = "", address: String = "") -> TweetRecord {
        var sortTime = Int64((created * 1000).rounded(.down))
        if let last = tweetOrder.last, let newest = tweets[last], sortTime <= newest.sortTime {
            sortTime = newest.sortTime + 1
        }
        let tweet = TweetRecord(id: nextTweetID, ownerID: ownerID, content: content, created: created, sortTime: sortTime,
                                device: device, location: location, coord: coord, address: address)
        insert(tweet)
        return tweet
    }

    /// Adds a tweet as it is (loading state); keeps the order by id.
    mutating func insert(_ tweet: TweetRecord) {
        if let previous = tweets[tweet.id] {
            tweetCounts[previous.ownerID, default: 1] -= 1
        } else if let last = tweetOrder.last, last > tweet.id {
            let index = tweetOrder.firstIndex { $0 > tweet.id } ?? tweetOrder.count
            tweetOrder.insert(tweet.id, at: index)
        } else {
            tweetOrder.append(tweet.id)
        }
        tweets[tweet.id] = tweet
        tweetCounts[tweet.ownerID, default: 0] += 1
        nextTweetID = max(nextTweetID, tweet.id + 1)
    }

    mutating func removeTweet(_ id: Int64) {
        guard let tweet = tweets.removeValue(forKey: id) else { return }
        tweetCounts[tweet.ownerID, default: 1] -= 1
        if let index = binarySearch(tweetOrder, id) { tweetOrder.remove(at: index) }
        for commentID in commentsByTweet.removeValue(forKey: id) ?? [] { comments[commentID] = nil }
        likes[id] = nil
    }

    func tweetCount(of userID: Int64) -> Int {
        tweetCounts[userID] ?? 0
    }

    func isLiked(_ tweetID: Int64, by userID: Int64) -> Bool {
        likes[tweetID]?.contains { $0.userID == userID } ?? false
    }

    /// Newest first: tweets by `authors` (all when nil) with an id below `beforeID` and a sort
    /// time below `beforeTime` (both strict, as Coding's cursors are), at most `limit`.
    func tweetPage(authors: Set<Int64>?, beforeID: Int64?, beforeTime: Int64?, limit: Int) -> [TweetRecord] {
        // The first position past the cursor, found by binary search on either key.
        func end(where isBefore: (TweetRecord) -> Bool) -> Int {
            var low = 0
            var high = tweetOrder.count
            while low < high {
                let middle = (low + high) / 2
                if let tweet = tweets[tweetOrder[middle]], isBefore(tweet) { low = middle + 1 } else { high = middle }
            }
            return low
        }
        var index = tweetOrder.count
        if let beforeID { index = min(index, end { $0.id < beforeID }) }
        if let beforeTime { index = min(index, end { $0.sortTime < beforeTime }) }
        var result: [TweetRecord] = []
        index -= 1
        while index >= 0 && result.count < limit {
            defer { index -= 1 }
            guard let tweet = tweets[tweetOrder[index]] else { continue }
            if let authors, !authors.contains(tweet.ownerID) { continue }
            result.append(tweet)
        }
        return result
    }

    /// The "hot" sort: most likes plus comments first, then the newest.
    func hotTweets(limit: Int) -> [TweetRecord] {
        let scored = tweetOrder.compactMap { id -> (TweetRecord, Int)? in
            guard let tweet = tweets[id] else { return nil }
            return (tweet, (likes[id]?.count ?? 0) + (commentsByTweet[id]?.count ?? 0))
        }
        return scored.sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0.id > $1.0.id }.prefix(limit).map(\.0)
    }

    // MARK: Comments

    mutating func addComment(tweetID: Int64, ownerID: Int64, content: String, created: Double) -> TweetCommentRecord {
        let comment = TweetCommentRecord(id: nextCommentID, tweetID: tweetID, ownerID: ownerID, content: content, created: created)
        insert(comment)
        return comment
    }

    mutating func insert(_ comment: TweetCommentRecord) {
        if comments[comment.id] == nil { commentsByTweet[comment.tweetID, default: []].append(comment.id) }
        comments[comment.id] = comment
        nextCommentID = max(nextCommentID, comment.id + 1)
    }

    mutating func removeComment(_ id: Int64) {
        guard let comment = comments.removeValue(forKey: id) else { return }
        commentsByTweet[comment.tweetID]?.removeAll { $0 == id }
    }

    // MARK: Tokens

    func checkAccessToken(_ token: String, now: Double) -> SandboxState.TokenCheck {
        guard let record = accessTokens[token] else { return .invalid }
        return record.expiresAt > now ? .valid(record) : .expired
    }

    mutating func issueTokens(userID: Int64, clientID: String, scopes: [String], ttl: Double,
                              now: Double) -> (access: AccessTokenRecord, refresh: RefreshTokenRecord) {
        let accessToken = Secrets.hex(byteCount: 16)
        let refresh = RefreshTokenRecord(token: Secrets.hex(byteCount: 16), userID: userID, clientID: clientID,
                                         scopes: scopes, accessToken: accessToken)
        let access = AccessTokenRecord(token: accessToken, userID: userID, clientID: clientID, scopes: scopes,
                                       expiresAt: now + ttl, refreshToken: refresh.token, issuedAt: now)
        accessTokens[accessToken] = access
        refreshTokens[refresh.token] = refresh
        for old in GrantLimit.surplus(in: accessTokens, userID: userID, clientID: clientID) { revokePair(old.token) }
        return (access, refresh)
    }

    /// Removes a token pair, given either of its tokens.
    mutating func revokePair(_ token: String) {
        if let access = accessTokens.removeValue(forKey: token), let refresh = access.refreshToken {
            refreshTokens[refresh] = nil
        }
        if let refresh = refreshTokens.removeValue(forKey: token) {
            accessTokens[refresh.accessToken] = nil
        }
    }

    // MARK: Sessions

    func liveSession(_ sid: String, now: Double) -> CodingCookieSession? {
        guard let session = sessions[sid], session.expiresAt > now else { return nil }
        return session
    }

    mutating func newSession(now: Double) -> CodingCookieSession {
        pruneSessions(now: now)
        let session = CodingCookieSession(sid: Secrets.hex(byteCount: 20), xsrfToken: Secrets.hex(byteCount: 16), stage: .anonymous,
                                    created: now, expiresAt: now + CodingCookieSession.anonymousLifetime, rememberMe: false,
                                    captcha: nil)
        sessions[session.sid] = session
        return session
    }

    /// Replaces `sid` with a fresh logged-in session (new `sid` and XSRF token: no fixation).
    mutating func logIn(replacing sid: String, userID: Int64, rememberMe: Bool, now: Double) -> CodingCookieSession {
        sessions[sid] = nil
        let lifetime = rememberMe ? CodingCookieSession.rememberedLifetime : CodingCookieSession.loginLifetime
        let session = CodingCookieSession(sid: Secrets.hex(byteCount: 20), xsrfToken: Secrets.hex(byteCount: 16),
                                    stage: .loggedIn(userID: userID), created: now, expiresAt: now + lifetime,
                                    rememberMe: rememberMe, captcha: nil)
        sessions[session.sid] = session
        return session
    }

    mutating func pruneSessions(now: Double) {
        if sessions.values.contains(where: { $0.expiresAt <= now }) {
            sessions = sessions.filter { $0.value.expiresAt > now }
        }
    }
}
