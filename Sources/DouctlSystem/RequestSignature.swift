/// The request-signing formulas, one definition for the client that signs and the sandbox
/// that checks (their correctness is pinned by vectors computed outside douctl).
public enum RequestSignature {
    /// base64(HMAC-SHA1(secret, "METHOD&" + percent-encoded path + "&" + timestamp)), the
    /// path encoded with only RFC 3986's unreserved characters kept.
    public static func hmacSHA1(method: String, path: String, timestamp: String, secret: String) -> String {
        let base = method.uppercased() + "&" + PercentEncoding.encode(path) + "&" + timestamp
        return Base64.encode(Digest.hmacSHA1(key: Array(secret.utf8), message: Array(base.utf8)))
    }

    /// MD5 hex of "k1=v1&k2=v2…" (sorted by name, then value) followed by the secret.
    public static func md5Sorted(_ params: [(String, String)], secret: String) -> String {
        let sorted = params.sorted { $0.0 == $1.0 ? $0.1 < $1.1 : $0.0 < $1.0 }
        let text = sorted.map { "\($0.0)=\($0.1)" }.joined(separator: "&") + secret
        // A command line's byte that is not UTF-8 is signed as the byte the server receives.
        return Digest.hex(Digest.md5(EscapedBytes.bytes(text)))
    }
}

/// A request quota: `count` requests per `seconds`, written N/UNIT (40/min, 10/5s,
/// 1000/hour): the client's `rate_limit` and the sandbox's `--quota`.
public struct RateQuota: Sendable, Equatable {
    public var count: Int
    public var seconds: Double

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1).map { String($0.filter { $0 != " " }) }
        guard parts.count == 2, let count = Int(parts[0]), count > 0, count <= 1_000_000 else { return nil }
        var unit = Substring(parts[1])
        let digits = unit.prefix { $0.isASCII && $0.isNumber }
        let multiplier = digits.isEmpty ? 1 : Double(digits) ?? 0
        unit = unit.dropFirst(digits.count)
        let unitSeconds: Double
        switch unit {
        case "s", "sec", "second", "seconds": unitSeconds = 1
        case "m", "min", "minute", "minutes": unitSeconds = 60
        case "h", "hour", "hours": unitSeconds = 3600
        default: return nil
        }
        guard multiplier > 0, multiplier <= 86400 else { return nil }
        self.count = count
        seconds = multiplier * unitSeconds
    }
}
