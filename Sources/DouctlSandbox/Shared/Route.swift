/// Every path the sandbox serves, matched on the decoded path. Douban's wildcards: `:id` is
/// digits only, `:name` digits, letters and `-_.`.
enum Route: Equatable {
    case root
    // OAuth2 (www.douban.com/service/auth2/…)
    case authorize
    case token
    case deviceAuthorization
    case deviceVerify
    case revoke
    // /v2/user
    case userMe
    case user(String)
    case userSearch
    // /shuo/v2/statuses
    case postStatus
    case homeTimeline
    case userTimeline(String?)
    case status(Int64)
    case statusComments(Int64)
    case comment(Int64)
    case reshare(Int64)
    case like(Int64)
    // /shuo/v2/users, friendships
    case following(String)
    case followers(String)
    case followCreate
    case followDestroy
    // Static files: uploaded pictures and avatars.
    case picture(Int64)
    case avatar
    /// Coding's legacy API and OAuth pages (CodingRoute.swift).
    case coding(CodingRoute)
    case notFound

    /// The methods the route answers; any other gives 101 invalid_request_method.
    var methods: [String] {
        switch self {
        case .root, .avatar, .picture: return ["GET"]  // HEAD too: the server answers it for any GET
        case .authorize, .deviceVerify: return ["GET", "POST"]
        case .token, .deviceAuthorization, .revoke, .postStatus, .followCreate, .followDestroy: return ["POST"]
        case .userMe, .user, .userSearch, .homeTimeline, .userTimeline, .following, .followers: return ["GET"]
        case .status, .comment: return ["GET", "DELETE"]
        case .statusComments, .reshare: return ["GET", "POST"]
        case .like: return ["GET", "POST", "DELETE"]
        case .coding(let route): return route.methods
        case .notFound: return []
        }
    }

    /// The OAuth2 endpoints and pages a login uses.
    var isOAuth: Bool {
        switch self {
        case .authorize, .token, .deviceAuthorization, .deviceVerify, .revoke: return true
        case .coding(let route): return [.authorize, .token, .deviceAuthorization, .deviceVerify].contains(route)
        default: return false
        }
    }

    /// The HTML pages a person uses: never subject to faults.
    var isHTMLPage: Bool {
        if case .coding(let route) = self { return route.isHTMLPage }
        return self == .authorize || self == .deviceVerify
    }

    static func match(_ path: String) -> Route {
        if CodingRoute.owns(path) { return .coding(CodingRoute.match(path)) }
        switch path {
        case "/": return .root
        case "/service/auth2/auth": return .authorize
        case "/service/auth2/token": return .token
        case "/service/auth2/device": return .deviceAuthorization
        case "/service/auth2/device/verify": return .deviceVerify
        case "/service/auth2/revoke": return .revoke
        case "/v2/user": return .userSearch
        case "/v2/user/~me": return .userMe
        case "/shuo/v2/statuses/": return .postStatus
        case "/shuo/v2/statuses/home_timeline": return .homeTimeline
        case "/shuo/v2/statuses/user_timeline": return .userTimeline(nil)
        case "/shuo/v2/friendships/create": return .followCreate
        case "/shuo/v2/friendships/destroy": return .followDestroy
        default: break
        }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        // A leading "/" gives an empty first segment; a trailing "/" an empty last one.
        guard segments.count >= 2, segments[0].isEmpty, !segments.dropFirst().contains("") else { return .notFound }
        let parts = Array(segments.dropFirst())
        switch parts.count {
        case 3 where parts[0] == "v2" && parts[1] == "user" && isName(parts[2]):
            return .user(parts[2])
        case 4 where parts[0] == "shuo" && parts[1] == "v2" && parts[2] == "statuses":
            if let id = digits(parts[3]) { return .status(id) }
        case 5 where parts[0] == "shuo" && parts[1] == "v2" && parts[2] == "statuses":
            if parts[3] == "user_timeline" && isName(parts[4]) { return .userTimeline(parts[4]) }
            if parts[3] == "comment", let id = digits(parts[4]) { return .comment(id) }
            if let id = digits(parts[3]) {
                switch parts[4] {
                case "comments": return .statusComments(id)
                case "reshare": return .reshare(id)
                case "like": return .like(id)
                default: break
                }
            }
        case 5 where parts[0] == "shuo" && parts[1] == "v2" && parts[2] == "users" && isName(parts[3]):
            if parts[4] == "following" { return .following(parts[3]) }
            if parts[4] == "followers" { return .followers(parts[3]) }
        case 5 where parts[0] == "view" && parts[1] == "status" && ["small", "median", "raw"].contains(parts[2])
            && parts[3] == "public":
            // p<ID>.<ext>
            let file = parts[4]
            guard file.hasPrefix("p"), let dot = file.firstIndex(of: ".") else { break }
            if let id = digits(String(file[file.index(after: file.startIndex)..<dot])),
               ["jpg", "png", "gif", "webp", "bmp"].contains(file[file.index(after: dot)...]) {
                return .picture(id)
            }
        case 2 where parts[0] == "icon" && isName(parts[1]):
            return .avatar
        default:
            break
        }
        return .notFound
    }

    private static func digits(_ text: String) -> Int64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int64(text)
    }

    private static func isName(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                return true
            default:
                return false
            }
        }
    }
}
