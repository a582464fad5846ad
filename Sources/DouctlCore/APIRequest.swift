import DouctlSystem
import DouctlHTTP

/// A call to the API, before authentication and URL building.
public struct APIRequest: Sendable, Equatable {
    public var method: String
    /// "/v2/user/~me", or an absolute URL.
    public var path: String
    public var query: [(String, String)]
    public var headers: [HTTPHeader]
    public var body: Body
    /// Whether to attach the profile's token (public endpoints and the token endpoint do not).
    public var sendsToken: Bool
    /// Ask for a compressed reply (see `HTTPRequest.acceptsCompression`): replies that are
    /// read, yes; downloads, which keep the bytes as served, no.
    public var acceptsCompression = true
    /// Where a download saves the body (`HTTPRequest.savedAs`), for --dry-run's curl line.
    public var savedAs: String?

    public enum Body: Sendable, Equatable {
        case none
        case form([(String, String)])
        case multipart(MultipartForm)
        case raw(RequestBody, contentType: String?)

        /// False for a body read from a pipe: once sent, it cannot be sent again.
        public var isReplayable: Bool {
            if case .raw(let body, _) = self { return body.isReplayable }
            return true
        }

        public static func == (lhs: Body, rhs: Body) -> Bool {
            switch (lhs, rhs) {
            case (.none, .none): return true
            case (.form(let a), .form(let b)): return a.elementsEqual(b) { $0 == $1 }
            case (.multipart(let a), .multipart(let b)): return a == b
            case (.raw(let a, let typeA), .raw(let b, let typeB)): return a == b && typeA == typeB
            default: return false
            }
        }
    }

    public init(method: String = "GET", path: String, query: [(String, String)] = [], headers: [HTTPHeader] = [], body: Body = .none, sendsToken: Bool = true) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.sendsToken = sendsToken
    }

    /// "GET /shuo/v2/statuses/1", the way Douban names a request in its errors.
    public var summary: String {
        var shown = path
        if let scheme = shown.firstRange(ofBytes: "://"), let slash = shown[scheme.upperBound...].firstIndex(ofASCII: "/") {
            shown = String(shown[slash...])
        }
        if let question = shown.firstIndex(ofASCII: "?") { shown = String(shown[..<question]) }
        return "\(method.uppercased()) \(shown)"
    }

    public static func == (lhs: APIRequest, rhs: APIRequest) -> Bool {
        lhs.method == rhs.method && lhs.path == rhs.path && lhs.query.elementsEqual(rhs.query) { $0 == $1 }
            && lhs.headers == rhs.headers && lhs.body == rhs.body && lhs.sendsToken == rhs.sendsToken
    }
}
