import DouctlServer

/// Coding's half of the routing table: checks the method, calls the handler family the route
/// belongs to, and turns whatever it throws into Coding's `{"code","msg"}` envelope (or an HTML
/// page, or an RFC 6749 error from the OAuth endpoints).
struct CodingRouter: Sendable {
    let oauth: CodingOAuthHandlers
    let accounts: CodingAccountHandlers
    let users: CodingUserHandlers
    let tweets: CodingTweetHandlers

    func dispatch(_ exchange: Exchange, _ route: CodingRoute) -> HTTPServerResponse {
        do {
            if case .notFound = route { throw CodingError.pathNotFound }
            guard route.methods.contains(exchange.request.method) else { throw CodingError.methodNotAllowed }
            switch route {
            case .authorize: return try oauth.authorize(exchange)
            case .token: return try oauth.token(exchange)
            case .deviceAuthorization: return try oauth.deviceAuthorization(exchange)
            case .deviceVerify: return try oauth.deviceVerify(exchange)
            case .captchaNeeded: return accounts.captchaNeeded(exchange)
            case .captchaImage: return try accounts.captchaImage(exchange)
            case .login: return try accounts.login(exchange)
            case .twoFactor: return try accounts.twoFactor(exchange)
            case .logout: return try accounts.logout(exchange)
            case .requestValid: return try accounts.requestValid(exchange)
            case .currentUser: return try users.currentUser(exchange)
            case .unreadCount: return try users.unreadCount(exchange)
            case .user(let key): return try users.user(exchange, globalKey: key)
            case .publicTweets: return try tweets.publicTweets(exchange)
            case .friendsTweets: return try tweets.friendsTweets(exchange)
            case .userTweets: return try tweets.userTweets(exchange)
            case .postTweet: return try tweets.postTweet(exchange)
            case .insertImage: return try tweets.insertImage(exchange)
            case .tweetDetail(let key, let id): return try tweets.tweetDetail(exchange, globalKey: key, id: id)
            case .deleteTweet(let id): return try tweets.deleteTweet(exchange, id: id)
            case .like(let id): return try tweets.like(exchange, id: id, like: true)
            case .unlike(let id): return try tweets.like(exchange, id: id, like: false)
            case .likes(let id): return try tweets.likes(exchange, id: id)
            case .comments(let id): return try tweets.comments(exchange, id: id)
            case .comment(let id): return try tweets.addComment(exchange, id: id)
            case .deleteComment(let tweetID, let commentID):
                return try tweets.deleteComment(exchange, tweetID: tweetID, commentID: commentID)
            case .notFound: throw CodingError.pathNotFound
            }
        } catch let error as CodingError {
            return Reply.coding(error)
        } catch let error as StandardOAuthError {
            return Reply.standard(error)
        } catch let error as PageError {
            return Reply.html(error.status, Pages.message(title: error.title, message: error.message, realm: .coding))
        } catch let error as DoubanError {
            // From the shared body readers: an oversized or malformed body.
            if error.status == 413 {
                return Reply.coding(error.detail.map(CodingError.multipartTooLarge) ?? CodingError.bodyTooLarge)
            }
            return Reply.coding(CodingError.badRequest(error.message))
        } catch {
            return Reply.coding(CodingError.serverError("\(error)"))
        }
    }

    /// 429 and 500 faults in Coding's envelope (502–504 stay the proxy's HTML page).
    static func faultReply(_ code: Int) -> HTTPServerResponse? {
        switch code {
        case 429:
            var response = Reply.coding(CodingError.tooManyRequests)
            response.headers.append(("Retry-After", "1"))
            return response
        case 500:
            return Reply.coding(CodingError.serverError("injected fault"))
        default:
            return nil
        }
    }
}
