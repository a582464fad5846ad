import DouctlJSON
import DouctlServer
import DouctlSystem

/// What a real API checks before it dispatches, switched on from the command line so
/// douctl's request shaping can be proven end to end:
/// - `--signing hmac-sha1:SECRET`: `_sig` must be base64 HMAC-SHA1(SECRET,
///   "METHOD&" + percent-encoded path + "&" + `_ts`), `apikey` the sandbox's client id, `_ts`
///   within five minutes; `--signing md5-sorted:SECRET`: `sign` must be the MD5 hex of the
///   sorted `k=v&…` query and form parameters (without `sign`) followed by SECRET.
///   A bad or missing signature is HTTP 400 `{"msg":"invalid_signature","code":1010}`.
/// - `--quota N/UNIT` (e.g. 40/min): more than N API requests in any UNIT window answer
///   429 with Retry-After and Douban's code 111.
/// OAuth endpoints and pages are exempt, as on Douban.
struct ShapingGate: Sendable {
    enum Scheme: String, Sendable { case hmacSHA1 = "hmac-sha1", md5Sorted = "md5-sorted" }

    var signing: (scheme: Scheme, secret: String)?
    var quota: (count: Int, seconds: Double)?
    private let sent = LockedValue<[Double]>([])

    init(signing: (scheme: Scheme, secret: String)?, quota: (count: Int, seconds: Double)?) {
        self.signing = signing
        self.quota = quota
    }

    var isActive: Bool { signing != nil || quota != nil }

    static func exempt(_ path: String) -> Bool {
        path.hasPrefix("/service/auth2/") || path.hasPrefix("/api/oauth/") || path.hasPrefix("/oauth_authorize")
            || path.hasPrefix("/view/") || path.hasPrefix("/icon/") || path == "/"
    }

    /// An error reply when the request fails a check, else nil (and it is counted).
    func check(_ exchange: Exchange, now: Double) -> HTTPServerResponse? {
        let request = exchange.request
        if Self.exempt(request.path) { return nil }
        if let signing, !verify(exchange, scheme: signing.scheme, secret: signing.secret, now: now) {
            return Reply.json(400, .object(JSONObject([
                ("msg", "invalid_signature"), ("code", 1010), ("request", .string(exchange.requestLabel)),
            ])))
        }
        if let quota {
            let wait: Double? = sent.withLock { times in
                times.removeAll { $0 <= now - quota.seconds }
                if times.count >= quota.count { return (times.first ?? now) + quota.seconds - now }
                times.append(now)
                return nil
            }
            if let wait {
                return Reply.json(429, .object(JSONObject([
                    ("msg", "rate_limit_exceeded1"), ("code", 111), ("request", .string(exchange.requestLabel)),
                ])), headers: [("Retry-After", String(max(1, Int(wait.rounded(.up)))))])
            }
        }
        return nil
    }

    private func verify(_ exchange: Exchange, scheme: Scheme, secret: String, now: Double) -> Bool {
        let request = exchange.request
        switch scheme {
        case .hmacSHA1:
            guard let signature = request.queryValue("_sig"), let stamp = request.queryValue("_ts"), let time = Double(stamp),
                  abs(time - now) <= 300, request.queryValue("apikey") == Sandbox.clientID else { return false }
            return signature == RequestSignature.hmacSHA1(method: request.sentMethod, path: request.path, timestamp: stamp, secret: secret)
        case .md5Sorted:
            guard let signature = request.queryValue("sign") else { return false }
            var params = request.query.filter { $0.name != "sign" }.map { ($0.name, $0.value) }
            if exchange.isFormEncoded || exchange.isMultipart, let fields = try? exchange.fields() {
                params += fields.map { ($0.name, $0.value) }
            }
            return signature == RequestSignature.md5Sorted(params, secret: secret)
        }
    }

    /// "hmac-sha1:SECRET" / "md5-sorted:SECRET".
    static func parseSigning(_ text: String) throws(SandboxError) -> (scheme: Scheme, secret: String) {
        guard let colon = text.firstIndex(of: ":"), let scheme = Scheme(rawValue: String(text[..<colon])) else {
            throw SandboxError("--signing takes hmac-sha1:SECRET or md5-sorted:SECRET")
        }
        let secret = String(text[text.index(after: colon)...])
        guard !secret.isEmpty else { throw SandboxError("--signing needs a secret after the scheme") }
        return (scheme, secret)
    }

    /// "40/min", "10/5s", "1000/hour".
    static func parseQuota(_ text: String) throws(SandboxError) -> (count: Int, seconds: Double) {
        guard let quota = RateQuota(text) else { throw SandboxError("--quota takes N/UNIT, e.g. 40/min, 10/5s, 1000/hour") }
        return (quota.count, quota.seconds)
    }
}
