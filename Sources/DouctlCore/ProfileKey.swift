import DouctlHTTP
import DouctlJSON
import DouctlSystem
/// The settings a profile may hold (the man page's FILES lists them). Unknown keys are an error, so a typo in
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
    case userURL = "user_url"
    case userIDField = "user_id_field"
    case userNameField = "user_name_field"
    case itemsKey = "items_key"
    case graphqlURL = "graphql_url"
    case nextPageHeader = "next_page_header"
    case cursorKey = "cursor_key"
    case cursorParam = "cursor_param"
    case tokenAuth = "token_auth"
    case tokenPlacement = "token_placement"
    case authScheme = "auth_scheme"
    case tokenHeader = "token_header"
    case tokenQuery = "token_query"
    case issuer
    case expectUser = "expect_user"
    case pkce
    case bodyFormat = "body_format"
    case commonParams = "common_params"
    case commonHeaders = "common_headers"
    case signing
    case signingSecret = "signing_secret"
    case signingCommand = "signing_command"
    case rateLimit = "rate_limit"
    case cacheMaxMB = "cache_max_mb"
    case caBundle = "ca_bundle"
    case caPath = "ca_path"
    case clientCert = "client_cert"
    case clientKey = "client_key"
    case insecure
    case proxy
    case keep
    case openapi
    case recordScrub = "record_scrub"

    /// `api_base` → `api-base`: the flag name `profile add` accepts.
    public var flagName: String { rawValue.replacingAll("_", with: "-") }

    public var isList: Bool { self == .scopes || self == .recordScrub }
    /// Keys whose value is an object of names to values (`common_params`, `common_headers`).
    public var isMap: Bool { self == .commonParams || self == .commonHeaders }
    public var isSecret: Bool { self == .clientSecret || self == .signingSecret }
    public var isURL: Bool { [.apiBase, .authorizeURL, .tokenURL, .deviceAuthorizationURL, .revokeURL, .redirectURI, .issuer].contains(self) }

    public var allowedValues: [String]? {
        switch self {
        case .preset: return Preset.names
        case .style: return APIStyle.allCases.map(\.rawValue)
        case .tokenAuth: return TokenAuth.allCases.map(\.rawValue)
        case .tokenPlacement: return TokenPlacement.allCases.map(\.rawValue)
        case .bodyFormat: return BodyFormat.allCases.map(\.rawValue)
        case .signing: return SigningScheme.allCases.map(\.rawValue)
        case .insecure, .pkce: return ["true", "false"]
        default: return nil
        }
    }

    public var help: String {
        switch self {
        case .preset: return "start from a preset's settings"
        case .style: return "API family: douban or coding (neither, with no preset: a plain OAuth2 API, shown as oauth2)"
        case .apiBase: return "base URL of API requests"
        case .authorizeURL: return "OAuth2 authorization endpoint (browser)"
        case .tokenURL: return "OAuth2 token endpoint"
        case .deviceAuthorizationURL: return "OAuth2 device authorization endpoint (RFC 8628)"
        case .revokeURL: return "token revocation endpoint (RFC 7009), used by auth logout"
        case .clientID: return "OAuth2 client id (API key)"
        case .clientSecret: return "OAuth2 client secret"
        case .scopes: return "scopes to request, separated by commas or spaces"
        case .redirectURI: return "registered redirect URI, sent as registered; loopback (127.0.0.1, [::1], localhost) means a local listener on that host (port 0 or none: any free port), anything else the paste flow"
        case .userURL: return "endpoint that says whose the token is (path under api_base or URL), e.g. /user; without it a profile with no preset stores logins as an unknown user"
        case .userIDField: return "field of the user_url reply holding the user id (dotted path, e.g. data.id; default id)"
        case .userNameField: return "field of the user_url reply holding the user name (dotted path; default login, else username, else name)"
        case .nextPageHeader: return "a reply header that holds the next page's URL or number, for api --paginate (Next-Page and X-Next-Page are read without it)"
        case .cursorKey: return "where api --paginate finds the next page's cursor in a reply (dotted path; next_cursor, response_metadata.next_cursor, meta.next_cursor, nextPageToken are read without it)"
        case .cursorParam: return "the request parameter api --paginate sends a cursor (or a header's page number) back as: in the query, or in a POST's JSON or form body (e.g. start_cursor; default cursor, page for a page number)"
        case .graphqlURL: return "the GraphQL endpoint that douctl api graphql posts to (a URL or a path under api_base; default api_base/graphql)"
        case .itemsKey: return "where api --paginate finds a page's items when the reply is an object (dotted path, e.g. rows or data.items; --items wins)"
        case .tokenAuth: return "how the client authenticates at the token endpoint: post, basic or none"
        case .tokenPlacement: return "where the access token goes: header (Authorization) or query (access_token=)"
        case .authScheme: return "the Authorization scheme the token is sent with (default Bearer; token for CODING and GitHub personal access tokens)"
        case .tokenHeader: return "send the token (an API key read with auth login --with-token) as this header, e.g. X-API-Key, instead of Authorization"
        case .tokenQuery: return "send the token (an API key read with auth login --with-token) as this query parameter, e.g. key"
        case .issuer: return "the OpenID Connect / RFC 8414 issuer the endpoints were read from (profile add --issuer); an ID token's iss must be it"
        case .expectUser: return "the account this profile must be (user id or name): a login or refresh that yields another is refused, nothing stored"
        case .pkce: return "false: send no PKCE challenge (a provider whose metadata lists no S256); default true"
        case .bodyFormat: return "how douctl api sends -f/-F fields by default: form or json (like --json)"
        case .commonParams: return "parameters added to every request (query for GET/DELETE, body otherwise): NAME=VALUE,... or a JSON object; \"$VAR\" reads the environment at send time"
        case .commonHeaders: return "headers added to every request: NAME=VALUE,... or a JSON object; \"$VAR\" reads the environment"
        case .signing: return "request signing: hmac-sha1, md5-sorted or command (see REQUEST SHAPING)"
        case .signingSecret: return "the signing secret, or \"$VAR\" to read it from the environment (set it from stdin: config set signing_secret -)"
        case .signingCommand: return "the program the command signing scheme runs (canonical request on stdin, JSON of headers/params to add on stdout)"
        case .rateLimit: return "client-side request quota shared by every douctl process of the profile, e.g. 40/min, 10/5s, 1000/hour"
        case .cacheMaxMB: return "size bound of the response cache (--cache), in MB; least recently used entries go first (default 50)"
        case .caBundle: return "PEM file of CA certificates to trust instead of the system's (like --cacert)"
        case .caPath: return "directory of hashed CA certificates to trust (like --capath)"
        case .clientCert: return "PEM client certificate for mutual TLS (like --cert)"
        case .clientKey: return "private key of client_cert, when not in the same file (like --key)"
        case .insecure: return "true: do not verify TLS certificates (like --insecure; warns on every use)"
        case .proxy: return "proxy URL for this profile's requests (like --proxy); proxy variables in the environment win"
        case .keep: return "false: never send through the connection keeper (like --no-keep); or how long it keeps idle connections (60s, 5m)"
        case .openapi: return "the API's description (OpenAPI 3.x or Swagger 2.0, JSON or YAML; URL or file): fills api_base and the auth, and makes its operations commands (douctl NAME OPERATION)"
        case .recordScrub: return "more names whose values --record scrubs (headers, query and form fields, JSON keys; case-insensitive, * matches any run), separated by commas"
        }
    }

    /// Checks a value typed by a user; returns what to store.
    public func parse(_ text: String) throws(DouctlError) -> ProfileValue {
        if isMap {
            let pairs = try Self.parseMap(text, key: rawValue)
            if let problem = headerProblem(pairs) { throw .usage("invalid value for \(rawValue): \(problem)") }
            return .map(pairs)
        }
        if self == .rateLimit, RateQuota(text) == nil {
            throw .usage("invalid value '\(text)' for rate_limit: expected N/UNIT, e.g. 40/min, 10/5s, 1000/hour")
        }
        if self == .cacheMaxMB, Double(text).map({ $0 > 0 && $0.isFinite }) != true {
            throw .usage("invalid value '\(text)' for cache_max_mb: expected a positive number of MB")
        }
        if isList {
            // Commas as douctl writes them, spaces as RFC 6749 does: "read write" is two scopes.
            let items = text.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }).map(String.init)
            return .list(items)
        }
        if let allowed = allowedValues, !allowed.contains(text) {
            throw .usage("invalid value '\(text)' for \(rawValue): expected one of \(allowed.joined(separator: ", "))")
        }
        if self == .authScheme, !AuthScheme.isValid(text) {
            throw .usage("invalid value '\(text)' for auth_scheme: expected one word of letters, digits, '-', '_' or '.', e.g. Bearer or token")
        }
        if self == .tokenHeader || self == .tokenQuery, text.isEmpty || HTTPSyntax.headerProblem(name: text, value: "x") != nil || text.contains("=") || text.contains("&") {
            throw .usage("invalid value '\(text)' for \(rawValue): expected a name such as X-API-Key or key")
        }
        if self == .proxy, text.isEmpty || text.contains(" ") {
            throw .usage("invalid value '\(text)' for proxy: expected a URL such as http://proxy.example:3128")
        }
        if self == .keep, text != "true", text != "false", KeeperRoute.idleSeconds(text) == nil {
            throw .usage("invalid value '\(text)' for keep: expected true, false or an idle time such as 60s or 5m")
        }
        if self == .expectUser, text.isEmpty || text.contains(where: { $0 == "\n" || $0 == "\r" }) {
            throw .usage("invalid value for expect_user: expected a user id or name")
        }
        // Any host, a single label included (http://x as http://docker): the scheme and a host.
        if isURL, Self.urlHost(text)?.isEmpty != false {
            throw .usage("invalid value '\(text)' for \(rawValue): expected an http:// or https:// URL")
        }
        return .text(text)
    }
}

extension ProfileKey {
    /// The host of an http:// or https:// URL (empty when it names none); nil for any other text.
    static func urlHost(_ text: String) -> String? {
        let rest: Substring
        if text.hasPrefix("http://") { rest = text.dropFirst(7) } else if text.hasPrefix("https://") { rest = text.dropFirst(8) } else { return nil }
        var authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.hasPrefix("[") { return authority.contains("]") && authority.count > 2 ? String(authority) : "" }
        return String(authority.prefix { $0 != ":" })
    }
}

/// A stored setting: a string, or a list of strings (scopes).
public enum ProfileValue: Sendable, Equatable {
    case text(String)
    case list([String])
    /// Names to values, in order (`common_params`, `common_headers`).
    case map([Pair])

    public struct Pair: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    /// How `config get` prints it: lists comma-separated, maps as a JSON object.
    public var display: String {
        switch self {
        case .text(let text): return text
        case .list(let items): return items.joined(separator: ",")
        case .map(let pairs): return JSON.object(JSONObject(pairs.map { ($0.name, JSON.string($0.value)) })).text(.compact)
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

/// The word before the token in `Authorization` (RFC 9110 §11.4: a token of the scheme).
public enum AuthScheme {
    public static let standard = "Bearer"

    public static func isValid(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 64 && text.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "-" || $0 == "_" || $0 == "."
        }
    }
}

/// How `douctl api` encodes its fields in a request body by default (`body_format`).
public enum BodyFormat: String, CaseIterable, Sendable {
    /// application/x-www-form-urlencoded, as Douban and Coding's legacy API take.
    case form
    /// A JSON object, as the CODING OpenAPI takes (`--json` for one call).
    case json
}

extension ProfileKey {
    /// `a=1,b=2` or a JSON object of strings.
    /// For `common_headers`: why one of `pairs` cannot be a header (a name that is not a
    /// token, a value with CR, LF or NUL), or nil. A "$VAR" value is checked when it is read.
    public func headerProblem(_ pairs: [ProfileValue.Pair]) -> String? {
        guard self == .commonHeaders else { return nil }
        for pair in pairs {
            if let problem = HTTPSyntax.headerProblem(name: pair.name, value: pair.value) { return problem }
        }
        return nil
    }

    static func parseMap(_ text: String, key: String) throws(DouctlError) -> [ProfileValue.Pair] {
        let trimmed = text.trimmingCharacters(in: " ")
        if trimmed.hasPrefix("{") {
            guard case .object(let object)? = try? JSONParser.parse(Array(trimmed.utf8)) else {
                throw .usage("invalid value for \(key): not a JSON object")
            }
            var pairs: [ProfileValue.Pair] = []
            for (name, value) in object {
                guard let text = value.stringValue ?? value.scalarText else {
                    throw .usage("invalid value for \(key): '\(name)' must be a string")
                }
                pairs.append(.init(name, text))
            }
            return pairs
        }
        var pairs: [ProfileValue.Pair] = []
        for item in trimmed.split(separator: ",") where !item.isEmpty {
            guard let equals = item.firstIndex(of: "="), equals != item.startIndex else {
                throw .usage("invalid value for \(key): expected NAME=VALUE,... or a JSON object")
            }
            pairs.append(.init(String(item[..<equals]), String(item[item.index(after: equals)...])))
        }
        return pairs
    }
}

/// How requests are signed (`signing`).
public enum SigningScheme: String, CaseIterable, Sendable {
    /// base64 HMAC-SHA1 of `METHOD&urlencoded(path)&timestamp`, sent as `_sig` and `_ts`
    /// with `apikey` (the client id): how Douban's later API authenticates an API key.
    case hmacSHA1 = "hmac-sha1"
    /// MD5 hex of the sorted `k=v&…` parameters followed by the secret, sent as `sign`.
    case md5Sorted = "md5-sorted"
    /// An external program computes what to add.
    case command
}

