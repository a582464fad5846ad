import DouctlSystem
/// Hides secrets in what douctl logs. Applied to every line `-v` prints, and to URLs in
/// error messages, so a pasted log never carries a usable credential.
public enum Redaction {
    /// Headers whose whole value is secret (the auth scheme word of Authorization is kept).
    static let secretHeaders: Set<String> = [
        "authorization", "proxy-authorization", "cookie", "set-cookie", "x-xsrf-token",
        "x-api-key", "api-key", "apikey", "private-token", "x-auth-token",
    ]

    /// Query and form parameter names whose values are secret.
    public static let secretParameters: Set<String> = [
        "access_token", "refresh_token", "client_secret", "code", "code_verifier", "password",
        "token", "device_code", "apikey", "api_key", "key", "j_captcha",
    ]

    public static let mask = "***"

    /// Redacts one header line such as "Authorization: Bearer abc" → "Authorization: Bearer ***".
    public static func redactHeaderLine(_ line: String) -> String {
        guard let colon = line.firstIndex(of: ":") else { return redactURL(line) }
        let name = line[..<colon].lowercased()
        guard secretHeaders.contains(name) else { return redactURL(line) }
        let value = line[line.index(after: colon)...].trimmingCharacters(in: " \t")
        if name.hasSuffix("authorization"), let space = value.firstIndex(of: " ") {
            return "\(line[..<colon]): \(value[..<space]) \(mask)"
        }
        if name.containsBytes("cookie") {
            // Keep cookie names (useful when debugging a session), hide values.
            let cookies = value.split(separator: ";").map { part -> String in
                let trimmed = part.trimmingCharacters(in: " ")
                guard let equals = trimmed.firstIndex(of: "=") else { return trimmed }
                let cookieName = trimmed[..<equals]
                let attribute = cookieName.lowercased()
                let keep = ["path", "domain", "expires", "max-age", "samesite"].contains(attribute)
                return keep ? trimmed : "\(cookieName)=\(mask)"
            }
            return "\(line[..<colon]): \(cookies.joined(separator: "; "))"
        }
        return "\(line[..<colon]): \(mask)"
    }

    /// Redacts secret query parameters and URL passwords (`http://user:secret@proxy`)
    /// anywhere in `text` (a URL, a request line, a libcurl message).
    public static func redactURL(_ text: String) -> String {
        redactQuery(redactUserinfo(text))
    }

    /// `scheme://user:password@host` → `scheme://user:***@host`, wherever it appears.
    public static func redactUserinfo(_ text: String) -> String {
        guard text.containsBytes("://"), text.contains("@") else { return text }
        var result = ""
        var rest = Substring(text)
        while let marker = rest.firstRange(ofBytes: "://") {
            result += rest[..<marker.upperBound]
            rest = rest[marker.upperBound...]
            // The authority ends at the first '/', '?', '#', whitespace or quote.
            let end = rest.firstIndex(where: { "/?#'\" \t".contains($0) }) ?? rest.endIndex
            let authority = rest[..<end]
            if let at = authority.lastIndex(of: "@") {
                let userinfo = authority[..<at]
                if let colon = userinfo.firstIndex(of: ":") {
                    result += userinfo[..<colon] + ":" + mask
                } else {
                    result += mask
                }
                result += authority[at...]
                rest = rest[end...]
            }
        }
        result += rest
        return result
    }

    static func redactQuery(_ text: String) -> String {
        guard text.contains("=") else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count)
        var rest = Substring(text)
        while let equals = rest.firstIndex(of: "=") {
            let before = rest[..<equals]
            let nameStart = before.lastIndex(where: { $0 == "?" || $0 == "&" || $0 == " " }).map(before.index(after:)) ?? before.startIndex
            let name = before[nameStart...]
            result += rest[...equals]
            rest = rest[rest.index(after: equals)...]
            if secretParameters.contains(String(name)) {
                let valueEnd = rest.firstIndex(where: { $0 == "&" || $0 == " " || $0 == "#" }) ?? rest.endIndex
                if valueEnd != rest.startIndex { result += mask }
                rest = rest[valueEnd...]
            }
        }
        result += rest
        return result
    }

    /// Replaces every occurrence of each secret in `text` (for messages that quote server text).
    public static func scrub(_ text: String, secrets: [String]) -> String {
        var result = text
        for secret in secrets where secret.count >= 4 {
            result = result.replacingAll(secret, with: mask)
        }
        return result
    }

    /// True for libcurl's internal lines that carry memory addresses ("Found bundle for
    /// host: 0x55d0c…"): noise to a user, and they differ on every run.
    public static func isPointerNoise(_ line: String) -> Bool {
        var rest = Substring(line)
        while let start = rest.firstRange(ofBytes: "0x") {
            let digits = rest[start.upperBound...].prefix { $0.isHexDigit }
            if digits.count >= 6 { return true }
            rest = rest[start.upperBound...]
        }
        return false
    }

    /// A request or reply body as `-v` shows it: secrets in form and JSON bodies masked.
    public static func redactBody(_ text: String, contentType: String?) -> String {
        let type = contentType?.lowercased() ?? ""
        if type.containsBytes("json") || text.hasPrefix("{") || text.hasPrefix("[") {
            return redactJSON(text)
        }
        if type.hasPrefix("multipart/") {
            return redactMultipartText(text)
        }
        return redactQuery(text)
    }

    /// Keys that are an OAuth secret in a form or query (`code=` is an authorization code)
    /// but in a JSON reply usually the API's own status (`{"msg": …, "code": 106}`): there a
    /// number, or a string of digits, is shown; any other value is masked.
    static let statusCodeKeys: Set<String> = ["code"]

    static func isStatusCode(key: String, value: String) -> Bool {
        statusCodeKeys.contains(key) && !value.isEmpty && value.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    /// Masks the string values of secret keys: `"access_token": "abc"` → `"access_token": "***"`.
    static func redactJSON(_ text: String) -> String {
        let characters = Array(text)
        var result = ""
        var index = 0
        var lastString = ""
        var lastWasKey = false
        while index < characters.count {
            let character = characters[index]
            if character == "\"" {
                var end = index + 1
                var value = ""
                while end < characters.count, characters[end] != "\"" {
                    if characters[end] == "\\", end + 1 < characters.count {
                        value.append(characters[end])
                        end += 1
                    }
                    value.append(characters[end])
                    end += 1
                }
                if lastWasKey, secretParameters.contains(lastString), !isStatusCode(key: lastString, value: value) {
                    result += "\"" + mask + "\""
                    lastWasKey = false
                } else {
                    result += "\"" + value + (end < characters.count ? "\"" : "")
                    lastString = value
                    // A key when the next non-space character is ':'.
                    var probe = end + 1
                    while probe < characters.count, characters[probe] == " " || characters[probe] == "\n" || characters[probe] == "\t" || characters[probe] == "\r" { probe += 1 }
                    lastWasKey = probe < characters.count && characters[probe] == ":"
                    if !lastWasKey { lastString = "" }
                }
                index = end + 1
                continue
            }
            if lastWasKey, character != ":", character != " ", character != "\n", character != "\t", character != "\r" {
                // A non-string value (number, literal): masked too when the key is secret.
                if secretParameters.contains(lastString), !statusCodeKeys.contains(lastString), character != "{", character != "[" {
                    var end = index
                    while end < characters.count, !",}] \n\r\t".contains(characters[end]) { end += 1 }
                    result += mask
                    index = end
                    lastWasKey = false
                    continue
                }
                lastWasKey = false
            }
            result.append(character)
            index += 1
        }
        return result
    }

    /// Masks the values of multipart fields with secret names (the part after its blank line).
    static func redactMultipartText(_ text: String) -> String {
        var lines: [String] = []
        var secretPart = false
        var inBody = false
        // "\r\n" is one Character in Swift, so split on both forms.
        for line in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).map(String.init) {
            let bare = line
            if bare.hasPrefix("--") {
                secretPart = false
                inBody = false
                lines.append(line)
            } else if !inBody {
                if bare.lowercased().hasPrefix("content-disposition:"), let range = bare.firstRange(ofBytes: "name=\"") {
                    let name = bare[range.upperBound...].prefix { $0 != "\"" }
                    secretPart = secretParameters.contains(String(name))
                }
                if bare.isEmpty { inBody = true }
                lines.append(line)
            } else {
                lines.append(secretPart ? mask : line)
            }
        }
        return lines.joined(separator: "\r\n")
    }
}

extension Redaction {
    /// Any line douctl logs for a transfer (`-v`): libcurl's informational text, headers out
    /// and in, and body previews, all through this one function. Structure first (header
    /// values, query parameters, URL passwords, and a secret header quoted inside libcurl's
    /// text, as HTTP/2's `[authorization: Bearer …]`), then every known secret of the request
    /// by value, wherever it stands.
    public static func redactLogLine(_ line: String, _ kind: LogLine, secrets: [String]) -> String {
        let structured: String
        switch kind {
        case .text: structured = redactQuotedHeaders(redactURL(line))
        case .header: structured = redactHeaderLine(line)
        case .body: structured = line  // VerboseBody masked its fields already
        }
        return scrub(structured, secrets: secrets)
    }

    /// What a `-v` line of a transfer is: libcurl's text (`* `), a header line (`> `, `< `),
    /// or a line of a body preview.
    public enum LogLine: Sendable {
        case text, header, body
    }

    /// `… [authorization: Bearer abc] …` → `… [authorization: Bearer ***] …`: a secret header
    /// named inside a line of text (libcurl's HTTP/2 request log, `h2h3 [name: value]` in 7.88,
    /// `[HTTP/2] [1] [name: value]` in 8.x). The value ends at `]` or the end of the line.
    /// Anything else of a known secret is caught by value (`credentials(of:)`).
    static func redactQuotedHeaders(_ text: String) -> String {
        guard text.contains(":") else { return text }
        let lower = HTTPSyntax.lowercased(Substring(text))
        guard secretHeaders.contains(where: { lower.containsBytes($0 + ":") }) else { return text }
        var result = ""
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "[") {
            result += rest[...open]
            rest = rest[rest.index(after: open)...]
            let close = rest.firstIndex(of: "]") ?? rest.endIndex
            let inside = String(rest[..<close])
            result += redactHeaderLine(inside)
            rest = rest[close...]
        }
        result += rest
        return result
    }

    /// The secrets a request carries in itself: the credential of its Authorization and
    /// Proxy-Authorization headers (a Basic one's password too), and a URL's `user:password@` — the password, decoded and
    /// as written, and the Basic value libcurl makes of it. Scrubbed from every log line and
    /// recording, wherever a server echoes them.
    public static func credentials(of request: HTTPRequest) -> [String] {
        var secrets: [String] = request.secrets
        for header in request.headers {
            let name = HTTPSyntax.lowercased(Substring(header.name))
            guard name == "authorization" || name == "proxy-authorization" else { continue }
            let value = header.value.trimmingCharacters(in: " \t")
            if let space = value.firstIndex(of: " ") {
                let credential = value[value.index(after: space)...].trimmingCharacters(in: " \t")
                secrets.append(credential)
                // Basic: the password alone too, as typed and as a client secret is
                // form-encoded before it is joined (RFC 6749 §2.3.1), wherever a server echoes it.
                if HTTPSyntax.lowercased(value[..<space]) == "basic", let pair = Base64.decode(credential),
                   let colon = pair.firstIndex(of: UInt8(ascii: ":")) {
                    let password = String(decoding: pair[(colon + 1)...], as: UTF8.self)
                    secrets += [password, PercentEncoding.decode(password, plusAsSpace: true)]
                }
            } else {
                secrets.append(value)
            }
        }
        if let url = HTTPURL(request.url), !url.userinfo.isEmpty {
            let user: Substring
            let password: Substring
            if let colon = url.userinfo.firstIndex(of: ":") {
                user = url.userinfo[..<colon]
                password = url.userinfo[url.userinfo.index(after: colon)...]
            } else {
                user = Substring(url.userinfo)
                password = ""
            }
            let decodedUser = PercentEncoding.decode(String(user))
            let decodedPassword = PercentEncoding.decode(String(password))
            secrets += [String(password), decodedPassword]
            secrets.append(Base64.encode(Array("\(decodedUser):\(decodedPassword)".utf8)))
        }
        // Too short to replace without mangling ordinary text ("a", "pw").
        return secrets.filter { $0.utf8.count >= 4 }
    }
}
