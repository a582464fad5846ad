import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// What a recording must not hold, found by name and by shape: the values of headers,
/// query and form fields and JSON keys whose names say secret (tokens, secrets, passwords,
/// API keys, cookies, signatures, codes; `isSecret(name:)`), plus the names a profile adds
/// (`record_scrub`), and anything shaped like a JWT. Every secret value found in an exchange
/// (a cookie's value, a Basic credential's password, a token in a reply) is also scrubbed
/// wherever else it appears in that exchange: a server's echo of it, a path, a text body.
public struct RecordingScrubber: Sendable {
    /// Extra names, lowercased; `*` matches any run of characters (`x-*-key`).
    public var extraNames: [String]

    public init(extraNames: [String] = []) {
        self.extraNames = extraNames.map { HTTPSyntax.asciiLowercased($0) }.filter { !$0.isEmpty }
    }

    /// Names (lowercased, without `-`, `_` and `.`) that hold secrets.
    static let secretNames: Set<String> = [
        "token", "accesstoken", "refreshtoken", "idtoken", "idtokenhint", "authtoken", "apitoken", "sessiontoken",
        "privatetoken", "subjecttoken", "actortoken", "jwt", "assertion", "clientassertion", "clientsecret", "secret",
        "password", "passwd", "pwd", "newpassword", "oldpassword", "passcode", "otp", "totp", "apikey", "key", "accesskey",
        "secretkey", "privatekey", "code", "codeverifier", "devicecode", "sig", "sign", "xamzsignature", "xamzcredential", "authorization",
        "proxyauthorization", "cookie", "setcookie", "xsrftoken", "csrftoken", "csrfmiddlewaretoken", "sessionid", "session",
        "sid", "auth", "credential", "credentials", "xapikey", "xauthtoken", "xaccesstoken", "xapitoken", "xxsrftoken",
        "xcsrftoken", "xamzsecuritytoken", "xgoogapikey", "ocpapimsubscriptionkey",
    ]
    /// Endings that make a name a secret's (`github_token`, `stripe_secret`, `x-api-key`),
    /// unless it names a page or cursor (`next_page_token` moves a walk on; it guards nothing).
    static let secretEndings = ["token", "secret", "password", "apikey", "accesskey", "secretkey", "privatekey", "sessionid"]
    /// Short names that are secrets in a query, a form or a header (`?key=`, `code=`,
    /// `Session:`) but ordinary data as JSON keys (an S3 listing's `Key`, an error `code`).
    static let secretOutsideJSON: Set<String> = ["key", "code", "sig", "sign", "session", "sid", "auth"]
    static let notSecretMarks = ["page", "cursor", "continuation", "sync", "next", "prev", "tokentype", "expires"]

    /// Whether a header, field or key of this name holds a secret (`inJSON`: a JSON key).
    public func isSecret(name: String, inJSON: Bool = false) -> Bool {
        let lowered = HTTPSyntax.asciiLowercased(name)
        let folded = String(lowered.unicodeScalars.filter { $0 != "-" && $0 != "_" && $0 != "." }.map(Character.init))
        if Self.secretNames.contains(folded) && !(inJSON && Self.secretOutsideJSON.contains(folded)) { return true }
        if !Self.notSecretMarks.contains(where: { folded.containsBytes($0) }), Self.secretEndings.contains(where: { folded.hasSuffix($0) }) {
            return true
        }
        return extraNames.contains { Self.glob($0, matches: lowered) }
    }

    /// `*` matches any run of characters; everything else itself.
    static func glob(_ pattern: String, matches text: String) -> Bool {
        let parts = pattern.split(separator: "*", omittingEmptySubsequences: false).map(String.init)
        guard parts.count > 1 else { return pattern == text }
        guard let first = parts.first, text.hasPrefix(first) else { return false }
        var rest = String(text.dropFirst(first.count))
        for (index, part) in parts.enumerated().dropFirst() {
            if index == parts.count - 1 { return part.isEmpty || rest.hasSuffix(part) }
            guard !part.isEmpty else { continue }
            guard let range = rest.firstRange(ofBytes: part) else { return false }
            rest = String(rest[range.upperBound...])
        }
        return true
    }

    // MARK: - Secret values an exchange carries

    /// Every secret value in these headers: a secret-named header's value, each cookie's
    /// value, a Basic credential (encoded, decoded and its password), a bearer token.
    func values(inHeaders headers: [HTTPHeader]) -> [String] {
        var found: [String] = []
        for header in headers where isSecret(name: header.name) {
            found.append(header.value)
            let lowered = HTTPSyntax.asciiLowercased(header.name)
            if lowered == "cookie" || lowered == "set-cookie" {
                let pairs = header.value.split(separator: ";")
                for pair in lowered == "cookie" ? pairs : Array(pairs.prefix(1)) {
                    if let equals = pair.firstIndex(of: "=") { found.append(String(pair[pair.index(after: equals)...]).trimmingSpaces) }
                }
            }
            let words = header.value.split(separator: " ", maxSplits: 1).map(String.init)
            if words.count == 2 {
                found.append(words[1])
                if HTTPSyntax.asciiLowercased(words[0]) == "basic", let decoded = Base64.decode(words[1]) {
                    let text = String(decoding: decoded, as: UTF8.self)
                    found.append(text)
                    if let colon = text.firstIndex(of: ":") { found.append(String(text[text.index(after: colon)...])) }
                }
            }
        }
        return found
    }

    /// Every value of a secret-named pair.
    func values(inPairs pairs: [(String, String)]) -> [String] {
        pairs.filter { isSecret(name: $0.0) }.map(\.1)
    }

    /// Every string under a secret-named key, at any depth.
    func values(inJSON json: JSON) -> [String] {
        var found: [String] = []
        var pending = [json]
        while let value = pending.popLast() {
            switch value {
            case .object(let object):
                for (key, member) in object {
                    if isSecret(name: key, inJSON: true), let text = member.stringValue { found.append(text) } else { pending.append(member) }
                }
            case .array(let items):
                pending += items
            default:
                break
            }
        }
        return found
    }

    /// `json` with every string under a secret-named key replaced.
    func scrubNamed(_ json: JSON) -> JSON {
        switch json {
        case .object(let object):
            var scrubbed = JSONObject()
            for (key, value) in object {
                scrubbed[key] = isSecret(name: key, inJSON: true) && value.stringValue != nil ? .string(ExchangeRecorder.redacted) : scrubNamed(value)
            }
            return .object(scrubbed)
        case .array(let items):
            return .array(items.map(scrubNamed))
        default:
            return json
        }
    }

    // MARK: - JWTs

    /// Bytes with every JWT-shaped run (`eyJ…` header `.` payload `.` signature, base64url)
    /// replaced: an ID token under a name nobody knew is still a credential.
    static func scrubJWTs(_ bytes: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        var changed = false
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "e"), index + 3 <= bytes.count, bytes[index + 1] == UInt8(ascii: "y"),
               bytes[index + 2] == UInt8(ascii: "J"), index == 0 || !isBase64URL(bytes[index - 1]),
               let end = jwtEnd(bytes, from: index) {
                output += Array(ExchangeRecorder.redacted.utf8)
                index = end
                changed = true
            } else {
                output.append(bytes[index])
                index += 1
            }
        }
        return changed ? output : bytes
    }

    /// Where a JWT starting at `start` ends: three base64url segments, the first two at least
    /// 8 long, joined by dots.
    private static func jwtEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        var index = start
        for segment in 0..<3 {
            let begin = index
            while index < bytes.count, isBase64URL(bytes[index]) { index += 1 }
            if segment < 2 {
                guard index - begin >= 8, index < bytes.count, bytes[index] == UInt8(ascii: ".") else { return nil }
                index += 1
            }
        }
        return index
    }

    private static func isBase64URL(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }
}

private extension String {
    var trimmingSpaces: String {
        String(HTTPSyntax.trimmingWhitespace(Substring(self)))
    }
}
