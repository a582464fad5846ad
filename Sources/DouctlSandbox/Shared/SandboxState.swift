/// The sandbox's whole world: one value, guarded by one lock (`SandboxContext.state`).
/// Everything persisted lives here; so do the short-lived OAuth records (codes, consent
/// tickets, device codes) and rate-limit windows, which are not saved. Douban's half is
/// queried through DoubanState.swift, Coding's half is `coding` (CodingModel.swift).
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
            revokeAccessToken(old.token)
            if let refreshToken = old.refreshToken { revokeRefreshToken(refreshToken) }
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

/// The index of `value` in ascending `sorted`, or nil.
func binarySearch(_ sorted: [Int64], _ value: Int64) -> Int? {
    var low = 0
    var high = sorted.count
    while low < high {
        let middle = (low + high) / 2
        if sorted[middle] < value { low = middle + 1 } else { high = middle }
    }
    return low < sorted.count && sorted[low] == value ? low : nil
}
