import DouctlSystem
/// Hides secrets in what douctl logs. Applied to every line `-v` prints, and to URLs in
/// error messages, so a pasted log never carries a usable credential.
public enum Redaction {
    /// Headers whose whole value is secret (the auth scheme word of Authorization is kept).
    static let secretHeaders: Set<String> = [
        "authorization", "proxy-authorization", "cookie", "set-cookie", "x-xsrf-token",
    ]

    /// Query and form parameter names whose values are secret.
    public static let secretParameters: Set<String> = [
        "access_token", "refresh_token", "client_secret", "code", "code_verifier", "password",
        "token", "device_code", "apikey", "j_captcha",
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
        if name.contains("cookie") {
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

    /// Redacts secret query parameters anywhere in `text` (a URL or a request line).
    public static func redactURL(_ text: String) -> String {
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
}
