/// The sandbox's whole world: one value, guarded by one lock (`SandboxCore.state`).
/// Everything persisted lives here; so do the short-lived OAuth records (codes, consent
/// tickets, device codes) and rate-limit windows, which are not saved.

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

struct PictureRecord: Sendable {
    var id: Int64
    var fileName: String
    var contentType: String
    var width: Int
    var height: Int
    var size: Int64
    var isAnimated: Bool

    var fileExtension: String {
        switch contentType {
        case "image/png": return "png"
        case "image/gif": return "gif"
        case "image/webp": return "webp"
        case "image/bmp": return "bmp"
        default: return "jpg"
        }
    }
}

struct AccessTokenRecord: Sendable {
    var token: String
    var userID: Int64
    var clientID: String
    var scopes: [String]
    var expiresAt: Double
    /// The refresh token issued with it (nil for the user-agent flow and test tokens without one).
    var refreshToken: String?
    /// When the grant was made or last refreshed (0 when a saved state predates the field): the
    /// grant limit revokes the oldest first.
    var issuedAt: Double = 0
}

/// Like GitHub's OAuth apps, the sandbox keeps at most `perUserAndClient` live grants (an access token
/// with its refresh token) per user and client, and a new grant revokes the oldest. Without a limit, a
/// sandbox that sees a login every few seconds grows without bound.
enum GrantLimit {
    static let perUserAndClient = 10

    /// The grants of `userID` for `clientID` over the limit, oldest first.
    static func surplus(in accessTokens: [String: AccessTokenRecord], userID: Int64, clientID: String) -> [AccessTokenRecord] {
        let grants = accessTokens.values.filter { $0.userID == userID && $0.clientID == clientID }
        guard grants.count > perUserAndClient else { return [] }
        let oldestFirst = grants.sorted { ($0.issuedAt, $0.token) < ($1.issuedAt, $1.token) }
        return Array(oldestFirst.dropLast(perUserAndClient))
    }
}

struct RefreshTokenRecord: Sendable {
    var token: String
    var userID: Int64
    var clientID: String
    var scopes: [String]
    /// The access token issued with it: while that one is live, refreshing gives 124.
    var accessToken: String
}

struct AuthorizationCodeRecord: Sendable {
    var code: String
    var clientID: String
    var redirectURI: String
    var userID: Int64
    var scopes: [String]
    var codeChallenge: String?
    var codeChallengeMethod: String
    var expiresAt: Double
    var realm = APIRealm.douban
    var used = false
    /// Tokens issued for this code, revoked if the code is presented again (RFC 6749 §4.1.2).
    var issuedAccessToken: String?
    var issuedRefreshToken: String?
}

/// Which fake an OAuth record belongs to. Douban's and Coding's authorization codes, consent
/// tickets and device codes share their tables but are good only at their own endpoints.
enum APIRealm: String, Sendable {
    case douban, coding
}

/// An authorization request waiting on the consent page (approval `.manual`).
struct PendingConsent: Sendable {
    var ticket: String
    var clientID: String
    var redirectURI: String
    var responseType: String
    var scopes: [String]
    var state: String?
    var codeChallenge: String?
    var codeChallengeMethod: String
    var expiresAt: Double
    var realm = APIRealm.douban
}

struct DeviceRecord: Sendable {
    enum Decision: Sendable, Equatable {
        case pending
        case approved(userID: Int64)
        case denied
        case redeemed
    }

    var deviceCode: String
    var userCode: String
    var clientID: String
    var scopes: [String]
    var expiresAt: Double
    /// Grows by 5 s on each `slow_down` caused by polling too fast (RFC 8628 §3.5).
    var interval: Double
    var lastPoll: Double?
    var polls = 0
    var decision = Decision.pending
    var realm = APIRealm.douban
    /// When the code was redeemed or denied: a settled code is kept only a minute after that, long
    /// enough to answer a repeated poll, then pruned.
    var settledAt: Double?

    static let settledRetention: Double = 60
}

struct RateWindow: Sendable {
    var start: Double
    var count: Int
}

struct SandboxState: Sendable {
    var users: [Int64: UserRecord] = [:]
    /// Users in creation order (search results, the consent page's choice).
    var userOrder: [Int64] = []
    var userIDsByUID: [String: Int64] = [:]
    /// follower → the users they follow, oldest first, with when each follow began.
    var follows: [Int64: [(userID: Int64, since: Double)]] = [:]

    var statuses: [Int64: StatusRecord] = [:]
    /// Ids ascending (ids grow with time, so this is also oldest → newest).
    var statusOrder: [Int64] = []
    var comments: [Int64: CommentRecord] = [:]
    var commentsByStatus: [Int64: [Int64]] = [:]
    /// status → likers, oldest first.
    var likes: [Int64: [(userID: Int64, since: Double)]] = [:]
    /// original status → its reshares, oldest first.
    var reshares: [Int64: [Int64]] = [:]
    /// user → how many statuses they have.
    var statusCounts: [Int64: Int] = [:]
    var pictures: [Int64: PictureRecord] = [:]

    var accessTokens: [String: AccessTokenRecord] = [:]
    var refreshTokens: [String: RefreshTokenRecord] = [:]

    var nextUserID: Int64 = 1_000_001
    var nextStatusID: Int64 = 1_402_640_300
    var nextCommentID: Int64 = 2_580_000_100
    var nextPictureID: Int64 = 2_216_000_001

    // Not persisted.
    var codes: [String: AuthorizationCodeRecord] = [:]
    var consents: [String: PendingConsent] = [:]
    var devices: [String: DeviceRecord] = [:]
    var deviceCodesByUserCode: [String: String] = [:]
    var rateWindows: [String: RateWindow] = [:]

    /// Coding's half (CodingModel.swift). Any change to it counts as a change to save.
    var coding = CodingState() {
        didSet { generation += 1 }
    }

    /// Bumped by every change that must be saved.
    var generation: UInt64 = 0

    // MARK: Users

    func user(_ id: Int64) -> UserRecord? { users[id] }

    /// A numeric id or a uid (`1000001` or `ahbei`).
    func user(named name: String) -> UserRecord? {
        if let id = Int64(name), let user = users[id] { return user }
        return userIDsByUID[name].flatMap { users[$0] }
    }

    @discardableResult
    mutating func addUser(uid: String, name: String, description: String = "", signature: String = "",
                          locationID: String = "108288", locationName: String = "北京", created: Double) -> UserRecord {
        let user = UserRecord(id: nextUserID, uid: uid, name: name, description: description, signature: signature,
                              locationID: locationID, locationName: locationName, created: created)
        nextUserID += 1
        insert(user)
        generation += 1
        return user
    }

    mutating func insert(_ user: UserRecord) {
        if users[user.id] == nil { userOrder.append(user.id) }
        users[user.id] = user
        userIDsByUID[user.uid] = user.id
        nextUserID = max(nextUserID, user.id + 1)
    }

    func isFollowing(_ follower: Int64, _ followee: Int64) -> Bool {
        follows[follower]?.contains { $0.userID == followee } ?? false
    }

    func followingIDs(of userID: Int64) -> [Int64] {
        (follows[userID] ?? []).map(\.userID)
    }

    /// Followers of `userID`, most recent first.
    func followerIDs(of userID: Int64) -> [Int64] {
        var found: [(Int64, Double)] = []
        for (follower, list) in follows {
            if let entry = list.first(where: { $0.userID == userID }) { found.append((follower, entry.since)) }
        }
        return found.sorted { $0.1 != $1.1 ? $0.1 > $1.1 : $0.0 > $1.0 }.map(\.0)
    }

    mutating func follow(_ follower: Int64, _ followee: Int64, at time: Double) {
        guard !isFollowing(follower, followee) else { return }
        follows[follower, default: []].append((followee, time))
        generation += 1
    }

    mutating func unfollow(_ follower: Int64, _ followee: Int64) {
        guard isFollowing(follower, followee) else { return }
        follows[follower]?.removeAll { $0.userID == followee }
        generation += 1
    }

    func statusCount(of userID: Int64) -> Int {
        statusCounts[userID] ?? 0
    }

    // MARK: Statuses

    mutating func insert(_ status: StatusRecord) {
        if let previous = statuses[status.id] {
            statusCounts[previous.userID, default: 1] -= 1
        }
        statusCounts[status.userID, default: 0] += 1
        if statuses[status.id] == nil {
            if let last = statusOrder.last, last > status.id {
                let index = statusOrder.firstIndex { $0 > status.id } ?? statusOrder.count
                statusOrder.insert(status.id, at: index)
            } else {
                statusOrder.append(status.id)
            }
        }
        statuses[status.id] = status
        if let original = status.resharedID { reshares[original, default: []].append(status.id) }
        nextStatusID = max(nextStatusID, status.id + 1)
        generation += 1
    }

    mutating func newStatusID() -> Int64 {
        defer { nextStatusID += 1 }
        return nextStatusID
    }

    /// Removes a status with its comments, likes and picture; returns the picture's file name.
    mutating func removeStatus(_ id: Int64) -> String? {
        guard let status = statuses.removeValue(forKey: id) else { return nil }
        statusCounts[status.userID, default: 1] -= 1
        if let index = binarySearch(statusOrder, id) { statusOrder.remove(at: index) }
        for commentID in commentsByStatus.removeValue(forKey: id) ?? [] { comments[commentID] = nil }
        likes[id] = nil
        if let original = status.resharedID { reshares[original]?.removeAll { $0 == id } }
        generation += 1
        if let pictureID = status.pictureID, let picture = pictures.removeValue(forKey: pictureID) {
            return picture.fileName
        }
        return nil
    }

    func isLiked(_ statusID: Int64, by userID: Int64) -> Bool {
        likes[statusID]?.contains { $0.userID == userID } ?? false
    }

    /// Statuses by `authors` (all when nil), newest first, with Douban's paging rules:
    /// `since_id` strictly newer, `until_id` inclusive, then `start` skipped and `count` taken.
    func timeline(authors: Set<Int64>?, sinceID: Int64?, untilID: Int64?, start: Int, count: Int) -> [StatusRecord] {
        var result: [StatusRecord] = []
        var skipped = 0
        var index = statusOrder.count - 1
        if let untilID {
            // The last position whose id is ≤ untilID.
            var low = 0
            var high = statusOrder.count
            while low < high {
                let middle = (low + high) / 2
                if statusOrder[middle] <= untilID { low = middle + 1 } else { high = middle }
            }
            index = low - 1
        }
        while index >= 0 && result.count < count {
            let id = statusOrder[index]
            index -= 1
            if let sinceID, id <= sinceID { break }
            guard let status = statuses[id] else { continue }
            if let authors, !authors.contains(status.userID) { continue }
            if skipped < start {
                skipped += 1
                continue
            }
            result.append(status)
        }
        return result
    }

    // MARK: Tokens

    enum TokenCheck {
        case valid(AccessTokenRecord)
        case expired
        case invalid
    }

    func checkAccessToken(_ token: String, now: Double) -> TokenCheck {
        guard let record = accessTokens[token] else { return .invalid }
        return record.expiresAt > now ? .valid(record) : .expired
    }

    mutating func issueTokens(userID: Int64, clientID: String, scopes: [String], ttl: Double, now: Double,
                              withRefreshToken: Bool = true) -> (access: AccessTokenRecord, refresh: RefreshTokenRecord?) {
        let accessToken = Secrets.hex(byteCount: 16)
        var refresh: RefreshTokenRecord?
        if withRefreshToken {
            refresh = RefreshTokenRecord(token: Secrets.hex(byteCount: 16), userID: userID, clientID: clientID,
                                         scopes: scopes, accessToken: accessToken)
        }
        let access = AccessTokenRecord(token: accessToken, userID: userID, clientID: clientID, scopes: scopes,
                                       expiresAt: now + ttl, refreshToken: refresh?.token, issuedAt: now)
        accessTokens[accessToken] = access
        if let refresh { refreshTokens[refresh.token] = refresh }
        for old in GrantLimit.surplus(in: accessTokens, userID: userID, clientID: clientID) {
            accessTokens[old.token] = nil
            if let refreshToken = old.refreshToken { refreshTokens[refreshToken] = nil }
        }
        generation += 1
        return (access, refresh)
    }

    mutating func revokeAccessToken(_ token: String) {
        if accessTokens.removeValue(forKey: token) != nil { generation += 1 }
    }

    mutating func revokeRefreshToken(_ token: String) {
        if refreshTokens.removeValue(forKey: token) != nil { generation += 1 }
    }

    /// Drops expired OAuth leftovers so a long-running sandbox does not grow without bound.
    mutating func pruneTransientRecords(now: Double) {
        codes = codes.filter { $0.value.expiresAt + 3600 > now }
        consents = consents.filter { $0.value.expiresAt > now }
        let finishedDevices = devices.filter { _, record in
            record.expiresAt + 3600 <= now || record.settledAt.map { now - $0 >= DeviceRecord.settledRetention } == true
        }
        for (code, record) in finishedDevices {
            devices[code] = nil
            deviceCodesByUserCode[Secrets.normalizeUserCode(record.userCode)] = nil
        }
        rateWindows = rateWindows.filter { now - $0.value.start < 3600 }
        // A token with no refresh token can never be renewed: an hour after it expires, it goes.
        let deadTokens = accessTokens.values.filter { $0.refreshToken == nil && $0.expiresAt + 3600 <= now }
        if !deadTokens.isEmpty {
            for token in deadTokens { accessTokens[token.token] = nil }
            generation += 1
        }
    }
}

func binarySearch(_ sorted: [Int64], _ value: Int64) -> Int? {
    var low = 0
    var high = sorted.count
    while low < high {
        let middle = (low + high) / 2
        if sorted[middle] < value { low = middle + 1 } else { high = middle }
    }
    return low < sorted.count && sorted[low] == value ? low : nil
}
