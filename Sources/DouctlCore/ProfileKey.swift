import DouctlSystem
/// The settings a profile may hold (design §5). Unknown keys are an error, so a typo in
/// config.json is caught instead of silently ignored.
public enum ProfileKey: String, CaseIterable, Sendable {
    case preset
    case style
    case apiBase = "api_base"
    case authorizeURL = "authorize_url"
    case tokenURL = "token_url"
    case deviceAuthorizationURL = "device_authorization_url"
    case revokeURL = "revoke_url"
    case clientID = "client_id"
    case clientSecret = "client_secret"
    case scopes
    case redirectURI = "redirect_uri"
    case tokenAuth = "token_auth"
    case tokenPlacement = "token_placement"
    case bodyFormat = "body_format"

    /// `api_base` → `api-base`: the flag name `profile add` accepts.
    public var flagName: String { rawValue.replacingAll("_", with: "-") }

    public var isList: Bool { self == .scopes }
    public var isSecret: Bool { self == .clientSecret }
    public var isURL: Bool { [.apiBase, .authorizeURL, .tokenURL, .deviceAuthorizationURL, .revokeURL, .redirectURI].contains(self) }

    public var allowedValues: [String]? {
        switch self {
        case .preset: return Preset.all.map(\.name)
        case .style: return APIStyle.allCases.map(\.rawValue)
        case .tokenAuth: return TokenAuth.allCases.map(\.rawValue)
        case .tokenPlacement: return TokenPlacement.allCases.map(\.rawValue)
        case .bodyFormat: return BodyFormat.allCases.map(\.rawValue)
        default: return nil
        }
    }

    public var help: String {
        switch self {
        case .preset: return "start from a preset's settings"
        case .style: return "API family: douban or coding"
        case .apiBase: return "base URL of API requests"
        case .authorizeURL: return "OAuth2 authorization endpoint (browser)"
        case .tokenURL: return "OAuth2 token endpoint"
        case .deviceAuthorizationURL: return "OAuth2 device authorization endpoint (RFC 8628)"
        case .revokeURL: return "token revocation endpoint (RFC 7009), used by auth logout"
        case .clientID: return "OAuth2 client id (API key)"
        case .clientSecret: return "OAuth2 client secret"
        case .scopes: return "scopes to request, comma-separated"
        case .redirectURI: return "registered redirect URI; loopback means a local listener, anything else the paste flow"
        case .tokenAuth: return "how the client authenticates at the token endpoint: post, basic or none"
        case .tokenPlacement: return "where the access token goes: header (Bearer) or query (access_token=)"
        case .bodyFormat: return "how douctl api sends -f/-F fields by default: form or json (like --json)"
        }
    }

    /// Checks a value typed by a user; returns what to store.
    public func parse(_ text: String) throws(DouctlError) -> ProfileValue {
        if isList {
            let items = text.split(separator: ",").map { $0.trimmingCharacters(in: " ") }.filter { !$0.isEmpty }
            return .list(items)
        }
        if let allowed = allowedValues, !allowed.contains(text) {
            throw .usage("invalid value '\(text)' for \(rawValue): expected one of \(allowed.joined(separator: ", "))")
        }
        if isURL, !(text.hasPrefix("http://") || text.hasPrefix("https://")) || text.count < 10 {
            throw .usage("invalid value '\(text)' for \(rawValue): expected an http:// or https:// URL")
        }
        return .text(text)
    }
}

/// A stored setting: a string, or a list of strings (scopes).
public enum ProfileValue: Sendable, Equatable {
    case text(String)
    case list([String])

    /// How `config get` prints it: lists comma-separated.
    public var display: String {
        switch self {
        case .text(let text): return text
        case .list(let items): return items.joined(separator: ",")
        }
    }
}

/// How the client proves itself at the token endpoint.
public enum TokenAuth: String, Sendable, CaseIterable {
    /// `client_id` and `client_secret` in the form body (Douban, Coding).
    case post
    /// HTTP Basic with the client id and secret (RFC 6749 §2.3.1's preferred way).
    case basic
    /// A public client: `client_id` only.
    case none
}

/// Where API requests carry the access token.
public enum TokenPlacement: String, Sendable, CaseIterable {
    /// `Authorization: Bearer TOKEN` (Douban).
    case header
    /// `?access_token=TOKEN` (Coding's legacy API).
    case query
}

/// How `douctl api` encodes its fields in a request body by default (`body_format`).
public enum BodyFormat: String, CaseIterable, Sendable {
    /// application/x-www-form-urlencoded, as Douban and Coding's legacy API take.
    case form
    /// A JSON object, as the CODING OpenAPI takes (`--json` for one call).
    case json
}
