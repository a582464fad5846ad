import DouctlHTTP
import DouctlSystem

// Interim: the cache keyed by the request as it goes out, until ResponseCache keys it itself.
extension ResponseCache {
    static func key(profile: String, request: HTTPRequest, unixSocket: String?) -> String {
        let identity = ["Authorization", "Cookie"].compactMap { request.headers.value(of: $0) } + request.secrets
        return key(profile: profile, method: request.method, url: (unixSocket.map { "unix:" + $0 + " " } ?? "") + request.url,
                   credential: identity.isEmpty ? nil : identity.joined(separator: "\n"))
    }

    func load(_ key: String, request: HTTPRequest) -> Entry? { load(key) }

    func store(_ key: String, _ response: HTTPResponse, request: HTTPRequest, now: Double) throws(DouctlError) {
        try store(key, response, now: now)
    }
}
