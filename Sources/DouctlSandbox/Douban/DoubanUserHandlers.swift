import DouctlJSON
import DouctlServer
import DouctlSystem

/// Douban's users (`/v2/user…`) and follows (`/shuo/v2/users/:id/following|followers`,
/// `/shuo/v2/friendships/create|destroy`).
struct DoubanUserHandlers: Sendable {
    let state: LockedValue<SandboxState>
    let baseURL: BaseURL
    let authentication: DoubanAuthentication
    /// The sandbox's wall clock (`SandboxConfiguration.clock`).
    let clock: SandboxClock

    // MARK: - /v2/user

    func userMe(_ exchange: Exchange) throws -> HTTPServerResponse {
        let viewer = try authentication.requireViewer(exchange, scope: "douban_basic_common")
        let base = baseURL.value
        let json = state.withLock { state in
            state.users[viewer.userID].map { state.userInfo($0, viewer: viewer.userID, base: base) }
        }
        guard let json else { throw DoubanError.notFound }
        return Reply.json(200, json)
    }

    /// Public: works without a token; with one, the token must be valid and `relation` is
    /// relative to its user.
    func user(_ exchange: Exchange, name: String) throws -> HTTPServerResponse {
        let viewer = try authentication.authenticate(exchange, scope: nil, optional: true)
        let base = baseURL.value
        let json = state.withLock { state in
            state.user(named: name).map { state.userInfo($0, viewer: viewer?.userID, base: base) }
        }
        guard let json else { throw DoubanError.notFound }
        return Reply.json(200, json)
    }

    /// `{"start","count","total","users"}`: matches on uid, name, id and the self-description
    /// (so the README's `user search 豆瓣` finds 阿北, "豆瓣的阿北").
    func userSearch(_ exchange: Exchange) throws -> HTTPServerResponse {
        _ = try authentication.requireViewer(exchange, scope: "douban_basic_common")
        guard let query = exchange.query("q")?.trimmingSpaces(), !query.isEmpty else {
            throw DoubanError.missing("q")
        }
        let paging = DoubanPaging(exchange)
        let needle = query.lowercased()
        let base = baseURL.value
        let json: JSON = state.withLock { state in
            let matches = state.userOrder.compactMap { state.users[$0] }.filter { user in
                user.uid.lowercased().containsBytes(needle) || user.name.lowercased().containsBytes(needle) || String(user.id) == needle
                    || user.description.lowercased().containsBytes(needle)
            }
            let shown = paging.slice(matches)
            return ["start": .int(paging.start), "count": .int(shown.count), "total": .int(matches.count),
                    "users": .array(shown.map { state.simpleUser($0, base: base) })]
        }
        return Reply.json(200, json)
    }

    // MARK: - /shuo/v2/users/:id/following|followers

    func followList(_ exchange: Exchange, name: String, followers: Bool) throws -> HTTPServerResponse {
        let viewer = try authentication.shuoViewer(exchange)
        let paging = DoubanPaging(exchange)
        let base = baseURL.value
        let json: JSON? = state.withLock { state in
            guard let user = state.user(named: name) else { return nil }
            let ids = followers ? state.followerIDs(of: user.id) : state.followingIDs(of: user.id).reversed()
            return .array(paging.slice(ids).compactMap { state.users[$0] }.map {
                state.shuoUser($0, viewer: viewer.userID, base: base)
            })
        }
        guard let json else { throw DoubanError.notFound }
        return Reply.json(200, json)
    }

    // MARK: - /shuo/v2/friendships/create|destroy

    func friendship(_ exchange: Exchange, follow: Bool) throws -> HTTPServerResponse {
        let viewer = try authentication.shuoViewer(exchange)
        guard let target = try exchange.field("user_id")?.trimmingSpaces(), !target.isEmpty else {
            throw DoubanError.missing("user_id")
        }
        let now = clock.now()
        let base = baseURL.value
        let outcome: Result<JSON, DoubanError> = state.withLock { state in
            guard let user = state.user(named: target) else { return .failure(.notFound) }
            if follow {
                guard user.id != viewer.userID else { return .failure(.unknown("can not follow yourself")) }
                state.follow(viewer.userID, user.id, at: now)
            } else {
                state.unfollow(viewer.userID, user.id)
            }
            return .success(state.shuoUser(user, viewer: viewer.userID, base: base))
        }
        return Reply.json(200, try outcome.get())
    }
}
