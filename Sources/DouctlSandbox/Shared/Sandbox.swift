import DouctlServer
import DouctlSystem

/// A faithful local fake of Douban API v2 with OAuth2 (`douctl sandbox`), on the loopback
/// HTTP/1.1 server of DouctlServer. A client that works against it should work against Douban:
/// the paths, shapes, error bodies and status codes follow Douban API v2 as its wiki documented it, and the strict parts
/// (single-use rotating refresh tokens, 124 on early refresh, scopes, Bearer-only auth) are kept.
///
/// The same server also fakes Coding's legacy API (`/api/…`, `/oauth_authorize.html`;
/// the /api/… paths), with its own accounts, tokens and cookie sessions (Coding/CodingSandbox.swift).
///
/// It also serves what Douban never had but a CLI wants: the device grant (RFC 8628), token
/// revocation (RFC 7009), PKCE (RFC 7636), and fault injection.
public final class Sandbox: @unchecked Sendable {
    public static let clientID = "douctl-sandbox"
    public static let clientSecret = "sandbox-secret"
    /// Every scope the sandbox knows.
    public static let allScopes: [String] = DoubanScopes.all
    /// Live grants (logins) a user keeps per client; a new one revokes the oldest.
    public static let grantsPerUserAndClient = GrantLimit.perUserAndClient
    /// Parts a multipart body may have (the reader refuses the next one; the reply is 413).
    public static let maxMultipartParts = MultipartReader.defaultMaxParts
    /// The seeded users' uids; the first is the default login.
    public static let seededUsers = ["ahbei", "linglu", "chenmo", "sunxiaomei", "wangdali"]
    /// `--fault` syntax (the same text as `SandboxFault.faultHelp`).
    public static let faultHelp = SandboxFault.faultHelp

    public let configuration: SandboxConfiguration
    let core: SandboxCore
    private let server: HTTPServer

    /// Loads (or seeds) the state and binds the port; serves nothing until `start()`.
    /// Throws `SandboxError` for a bad data directory or a corrupt state file, and the
    /// server's error when the address cannot be bound.
    public init(_ configuration: SandboxConfiguration) throws {
        guard configuration.tokenTTL > 0, configuration.tokenTTL.isFinite else {
            throw SandboxError("the token lifetime must be a positive number of seconds")
        }
        guard configuration.deviceCodeLifetime >= 0, configuration.deviceInterval >= 0 else {
            throw SandboxError("device code lifetime and interval must not be negative")
        }
        self.configuration = configuration
        let core = try SandboxCore(configuration: configuration)
        var limits = HTTPServerLimits()
        limits.maxBodyBytes = configuration.maxBodyBytes
        limits.stopGracePeriod = 2
        do {
            // HEAD is answered wherever GET is, by the server layer: no route lists it.
            server = try HTTPServer(host: configuration.host, port: configuration.port, limits: limits,
                                    handler: HTTPServer.answeringHEAD { request in core.handle(request) })
        } catch {
            core.removeOwnedPictures()
            throw SandboxError("cannot listen on \(configuration.host):\(configuration.port): \(error)")
        }
        core.baseURL.set(server.baseURL)
        self.core = core
    }

    deinit {
        stop()
    }

    /// Starts serving on a thread of its own (one more per connection).
    public func start() throws {
        try server.start()
    }

    /// Stops promptly: paused handlers (faults) wake up, open connections are shut down, and the
    /// state is saved one last time. Idempotent.
    public func stop() {
        core.beginStopping()
        server.stop()
        core.saveLoggingFailure()
        core.removeOwnedPictures()
    }

    /// Blocks until `stop()` has finished (from another thread or a signal handler's flag).
    public func waitUntilStopped() {
        server.waitUntilStopped()
    }

    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { server.baseURL }

    /// With `--replay`: how many exchanges it serves, and how many of them grant a token.
    public var replaying: (exchanges: Int, grants: Int)? {
        core.replay.map { ($0.count, $0.grants) }
    }
    /// TCP connections accepted so far: tests prove that a command reuses one.
    public var acceptedConnections: Int { server.acceptedConnectionCount }

    public var port: UInt16 { server.port }

    /// Where uploaded pictures are kept.
    public var pictureDirectory: String { core.pictureDirectory }

    // MARK: - Test hooks

    /// The most recent requests (up to 5,000), oldest first.
    public var requests: [RecordedRequest] {
        core.journal.withLock { $0.recent }
    }

    public func clearRequests() {
        core.journal.withLock { $0.clear() }
    }

    /// Issues a token pair as if `user` (uid or numeric id) had logged in; an unknown uid is
    /// created as a new user. `ttl` defaults to the configured token lifetime.
    @discardableResult
    public func issueToken(user: String = "ahbei", scopes: [String] = Sandbox.allScopes,
                           ttl: Double? = nil) -> (accessToken: String, refreshToken: String) {
        let lifetime = ttl ?? configuration.tokenTTL
        let now = core.configuration.clock.now()
        let pair: (String, String) = core.state.withLock { state in
            let userID = state.user(named: user)?.id
                ?? state.addUser(uid: user, name: user, created: now).id
            let (access, refresh) = state.issueTokens(userID: userID, clientID: Sandbox.clientID, scopes: scopes,
                                                      ttl: lifetime, now: now)
            return (access.token, refresh?.token ?? "")
        }
        core.saveLoggingFailure()
        return (accessToken: pair.0, refreshToken: pair.1)
    }

    /// Makes every live access token expire now, Douban's and Coding's, so the next call gets
    /// 106 (Douban) or 3207 (Coding) and must refresh.
    public func expireAccessTokens() {
        let now = core.configuration.clock.now()
        core.state.withLock { state in
            for (token, record) in state.accessTokens where record.expiresAt > now - 1 {
                state.accessTokens[token]?.expiresAt = now - 1
            }
            for (token, record) in state.coding.accessTokens where record.expiresAt > now - 1 {
                state.coding.accessTokens[token]?.expiresAt = now - 1
            }
            state.generation += 1
        }
        core.saveLoggingFailure()
    }

    /// Approves a pending device code (as `user`: by default ahbei for a Douban code, coder for
    /// a Coding one), as the verification page would. False when the code is unknown, expired
    /// or already decided, or the user is not one of the code's side.
    @discardableResult
    public func approveDevice(userCode: String) -> Bool {
        core.deviceGrant.decide(userCode: userCode, approve: true)
    }

    @discardableResult
    public func approveDevice(userCode: String, user: String) -> Bool {
        core.deviceGrant.decide(userCode: userCode, approve: true, uid: user)
    }

    @discardableResult
    public func denyDevice(userCode: String) -> Bool {
        core.deviceGrant.decide(userCode: userCode, approve: false)
    }

    /// Adds `count` text statuses by `user` (created if unknown), the newest last, one second
    /// apart and ending now (for benchmarks and paging tests). Returns their ids, ascending.
    @discardableResult
    public func seedStatuses(count: Int, user: String) -> [Int64] {
        guard count > 0 else { return [] }
        let now = core.configuration.clock.now()
        let ids: [Int64] = core.state.withLock { state in
            let userID = state.user(named: user)?.id ?? state.addUser(uid: user, name: user, created: now).id
            var ids: [Int64] = []
            ids.reserveCapacity(count)
            for index in 0..<count {
                let id = state.newStatusID()
                state.insert(StatusRecord(id: id, userID: userID, text: "第\(index + 1)条广播：沙盒里的测试数据。",
                                          created: now - Double(count - 1 - index), kind: .text, recommendation: nil,
                                          pictureID: nil, resharedID: nil, source: DoubanStatusHandlers.appName))
                ids.append(id)
            }
            return ids
        }
        core.saveLoggingFailure()
        return ids
    }

    /// The user id (as Douban writes it, a string) of a uid, or nil.
    public func userID(of uid: String) -> String? {
        core.state.withLock { $0.user(named: uid).map { String($0.id) } }
    }
}
