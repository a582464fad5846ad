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
    case caBundle = "ca_bundle"
    case caPath = "ca_path"
    case clientCert = "client_cert"
    case clientKey = "client_key"
    case insecure
    case proxy

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
        case .insecure: return ["true", "false"]
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
        case .caBundle: return "PEM file of CA certificates to trust instead of the system's (like --cacert)"
        case .caPath: return "directory of hashed CA certificates to trust (like --capath)"
        case .clientCert: return "PEM client certificate for mutual TLS (like --cert)"
        case .clientKey: return "private key of client_cert, when not in the same file (like --key)"
        case .insecure: return "true: do not verify TLS certificates (like --insecure; warns on every use)"
        case .proxy: return "proxy URL for this profile's requests (like --proxy); proxy variables in the environment win"
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
        if self == .proxy, text.isEmpty || text.contains(" ") {
            throw .usage("invalid value '\(text)' for proxy: expected a URL such as http://proxy.example:3128")
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
