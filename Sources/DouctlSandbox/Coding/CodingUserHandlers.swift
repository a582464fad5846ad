import DouctlJSON
import DouctlServer
import DouctlSystem

/// Coding's user endpoints (scope `user`; the email only with `user:email` or a cookie session).
struct CodingUserHandlers: Sendable {
    let state: LockedValue<SandboxState>
    let baseURL: BaseURL
    let authentication: CodingAuthentication

    /// `GET /api/account/current_user` (scope `user`).
    func currentUser(_ exchange: Exchange) throws -> HTTPServerResponse {
        let caller = try authentication.caller(exchange, scope: "user")
        let base = baseURL.value
        let json: JSON? = state.withLock { state in
            state.coding.users[caller.userID].map {
                state.coding.render($0, viewer: caller.userID, showEmail: caller.may("user:email"), base: base)
            }
        }
        guard let json else { throw CodingError.notLoggedIn }
        return Reply.coding(json)
    }

    /// `GET /api/user/key/{global_key}` (scope `user`).
    func user(_ exchange: Exchange, globalKey: String) throws -> HTTPServerResponse {
        let caller = try authentication.caller(exchange, scope: "user")
        let base = baseURL.value
        let json: JSON? = state.withLock { state in
            state.coding.user(named: globalKey).map { user in
                state.coding.render(user, viewer: caller.userID, showEmail: user.id == caller.userID && caller.may("user:email"),
                                    base: base)
            }
        }
        guard let json else { throw CodingError.userNotFound }
        return Reply.coding(json)
    }

    /// `GET /api/user/unread-count`: the session check after a login (any valid caller).
    func unreadCount(_ exchange: Exchange) throws -> HTTPServerResponse {
        _ = try authentication.caller(exchange, scope: nil)
        return Reply.coding(["messages": 0, "notifications": 0, "project_update": 0])
    }
}
