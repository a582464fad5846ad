import DouctlServer

/// Douban's half of the routing table: checks the method and `apikey` as Douban does, calls the
/// handler family the route belongs to, and turns whatever it throws into Douban's error JSON
/// (or an HTML page, or an RFC 6749 error for the device grant's polls).
struct DoubanRouter: Sendable {
    let oauth: DoubanOAuthHandlers
    let users: DoubanUserHandlers
    let statuses: DoubanStatusHandlers
    let statics: StaticHandlers

    func dispatch(_ exchange: Exchange) -> HTTPServerResponse {
        let request = exchange.request
        do {
            let route = exchange.route
            if case .notFound = route { throw DoubanError.notFound }
            guard route.methods.contains(request.method) else {
                // Douban never implemented undoing a reshare: it answers like an unknown URI.
                if case .reshare = route, request.method == "DELETE" { throw DoubanError.notFound }
                throw DoubanError.invalidMethod(request.method)
            }
            if let apikey = exchange.query("apikey"), apikey != Sandbox.clientID { throw DoubanError.invalidAPIKey }
            switch route {
            case .root: return statics.rootPage()
            case .authorize: return try oauth.authorize(exchange)
            case .token: return try oauth.token(exchange)
            case .deviceAuthorization: return try oauth.deviceAuthorization(exchange)
            case .deviceVerify: return try oauth.deviceVerify(exchange)
            case .revoke: return try oauth.revoke(exchange)
            case .userMe: return try users.userMe(exchange)
            case .user(let name): return try users.user(exchange, name: name)
            case .userSearch: return try users.userSearch(exchange)
            case .postStatus: return try statuses.postStatus(exchange)
            case .homeTimeline: return try statuses.homeTimeline(exchange)
            case .userTimeline(let name): return try statuses.userTimeline(exchange, name: name)
            case .status(let id): return try statuses.status(exchange, id: id)
            case .statusComments(let id): return try statuses.statusComments(exchange, id: id)
            case .comment(let id): return try statuses.comment(exchange, id: id)
            case .reshare(let id): return try statuses.reshare(exchange, id: id)
            case .like(let id): return try statuses.like(exchange, id: id)
            case .following(let name): return try users.followList(exchange, name: name, followers: false)
            case .followers(let name): return try users.followList(exchange, name: name, followers: true)
            case .followCreate: return try users.friendship(exchange, follow: true)
            case .followDestroy: return try users.friendship(exchange, follow: false)
            case .picture(let id): return try statics.picture(exchange, id: id)
            case .avatar: return statics.avatar()
            // Coding's paths never get here: `Router` sends them to `CodingRouter`.
            case .coding, .notFound: throw DoubanError.notFound
            }
        } catch let error as DoubanError {
            return Reply.douban(error, request: exchange.requestLabel)
        } catch let error as StandardOAuthError {
            return Reply.standard(error)
        } catch let error as PageError {
            return Reply.html(error.status, Pages.message(title: error.title, message: error.message))
        } catch {
            return Reply.douban(DoubanError(status: 500, code: 999, name: "unknow_v2_error", detail: "\(error)"),
                                request: exchange.requestLabel)
        }
    }

    /// An injected 429 or 500 in Douban's JSON (codes 111 and 999).
    static func faultReply(_ code: Int, _ exchange: Exchange) -> HTTPServerResponse? {
        switch code {
        case 429:
            var error = DoubanError(status: 429, code: 111, name: "rate_limit_exceeded1")
            error.headers = [("Retry-After", "1")]
            return Reply.douban(error, request: exchange.requestLabel)
        case 500:
            return Reply.douban(DoubanError(status: 500, code: 999, name: "unknow_v2_error"), request: exchange.requestLabel)
        default:
            return nil
        }
    }
}
