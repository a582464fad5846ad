/// OAuth's records, shared by both fakes: tokens, authorization codes, consent tickets, device
/// codes, and the rate-limit window of a Douban token.

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
