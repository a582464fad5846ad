/// Coding's legacy paths (the /api/… REST API and its OAuth2), served beside Douban's: everything under
/// `/api/`, plus the OAuth pages `/oauth_authorize.html` and (a sandbox convenience) the device
/// verification page `/oauth_device.html`. One trailing slash is ignored.
enum CodingRoute: Equatable {
    // OAuth2
    case authorize
    case token
    case deviceAuthorization
    case deviceVerify
    // Cookie login
    case captchaNeeded
    case captchaImage
    case login
    case twoFactor
    case logout
    case requestValid
    // Users
    case currentUser
    case unreadCount
    case user(String)
    // Tweets
    case publicTweets
    case friendsTweets
    case userTweets
    case postTweet
    case insertImage
    case tweetDetail(globalKey: String, id: Int64)
    case deleteTweet(Int64)
    case like(Int64)
    case unlike(Int64)
    case likes(Int64)
    case comments(Int64)
    case comment(Int64)
    case deleteComment(tweetID: Int64, commentID: Int64)
    case notFound

    var methods: [String] {
        switch self {
        case .authorize, .deviceVerify: return ["GET", "POST"]
        case .token, .deviceAuthorization, .login, .twoFactor, .logout, .requestValid, .postTweet, .insertImage,
             .like, .unlike, .comment:
            return ["POST"]
        case .captchaNeeded, .captchaImage, .currentUser, .unreadCount, .user, .publicTweets, .friendsTweets,
             .userTweets, .tweetDetail, .likes, .comments:
            return ["GET"]
        case .deleteTweet, .deleteComment: return ["DELETE"]
        case .notFound: return []
        }
    }

    var isHTMLPage: Bool {
        self == .authorize || self == .deviceVerify
    }

    /// Whether `path` belongs to Coding's half of the sandbox.
    static func owns(_ path: String) -> Bool {
        path.hasPrefix("/api/") || path == "/api" || path == "/oauth_authorize.html" || path == "/oauth_device.html"
    }

    static func match(_ path: String) -> CodingRoute {
        var path = Substring(path)
        if path.count > 1 && path.hasSuffix("/") { path = path.dropLast() }
        switch path {
        case "/oauth_authorize.html": return .authorize
        case "/oauth_device.html": return .deviceVerify
        case "/api/oauth/access_token": return .token
        case "/api/oauth/device": return .deviceAuthorization
        case "/api/captcha/login": return .captchaNeeded
        case "/api/getCaptcha": return .captchaImage
        case "/api/v2/account/login": return .login
        case "/api/check_two_factor_auth_code": return .twoFactor
        case "/api/account/logout": return .logout
        case "/api/request_valid": return .requestValid
        case "/api/account/current_user": return .currentUser
        case "/api/user/unread-count": return .unreadCount
        case "/api/tweet/public_tweets": return .publicTweets
        case "/api/activities/user_tweet": return .friendsTweets
        case "/api/tweet/user_public": return .userTweets
        case "/api/tweet": return .postTweet
        case "/api/tweet/insert_image": return .insertImage
        default: break
        }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        guard parts.count >= 3, parts[0] == "api", !parts.contains("") else { return .notFound }
        switch parts.count {
        case 4 where parts[1] == "user" && parts[2] == "key":
            return .user(parts[3])
        case 3 where parts[1] == "tweet":
            if let id = digits(parts[2]) { return .deleteTweet(id) }
        case 4 where parts[1] == "tweet":
            if let id = digits(parts[2]) {
                switch parts[3] {
                case "like": return .like(id)
                case "unlike": return .unlike(id)
                case "likes": return .likes(id)
                case "comments": return .comments(id)
                case "comment": return .comment(id)
                default: break
                }
            }
            if let id = digits(parts[3]) { return .tweetDetail(globalKey: parts[2], id: id) }
        case 5 where parts[1] == "tweet" && parts[3] == "comment":
            if let tweetID = digits(parts[2]), let commentID = digits(parts[4]) {
                return .deleteComment(tweetID: tweetID, commentID: commentID)
            }
        default:
            break
        }
        return .notFound
    }

    private static func digits(_ text: String) -> Int64? {
        guard !text.isEmpty, text.utf8.count <= 18,
              text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int64(text)
    }
}
