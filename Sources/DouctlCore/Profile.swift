import DouctlSystem
/// A profile's own settings, in the order they were written.
public struct ProfileSettings: Sendable, Equatable {
    public private(set) var entries: [(key: ProfileKey, value: ProfileValue)]

    public init(_ entries: [(ProfileKey, ProfileValue)] = []) {
        self.entries = entries.map { (key: $0.0, value: $0.1) }
    }

    public subscript(key: ProfileKey) -> ProfileValue? {
        get { entries.first { $0.key == key }?.value }
        set {
            if let newValue {
                if let index = entries.firstIndex(where: { $0.key == key }) {
                    entries[index].value = newValue
                } else {
                    entries.append((key: key, value: newValue))
                }
            } else {
                entries.removeAll { $0.key == key }
            }
        }
    }

    public static func == (lhs: ProfileSettings, rhs: ProfileSettings) -> Bool {
        lhs.entries.count == rhs.entries.count && zip(lhs.entries, rhs.entries).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}

/// Everything a command needs to talk to one API, with presets, the config file,
/// environment overrides and `--api-base` already applied.
public struct ResolvedProfile: Sendable, Equatable {
    public var name: String
    public var preset: String?
    public var style: APIStyle
    public var apiBase: String
    public var authorizeURL: String?
    public var tokenURL: String?
    public var deviceAuthorizationURL: String?
    public var revokeURL: String?
    public var clientID: String?
    public var clientSecret: String?
    public var scopes: [String]
    public var redirectURI: String?
    public var tokenAuth: TokenAuth
    public var tokenPlacement: TokenPlacement
    /// The Authorization scheme: "Bearer" (RFC 6750) unless `auth_scheme` says e.g. "token".
    public var authScheme: String = AuthScheme.standard
    public var bodyFormat: BodyFormat = .form
    /// Added to every request; a value "$VAR" is read from the environment at send time.
    public var commonParams: [ProfileValue.Pair] = []
    public var commonHeaders: [ProfileValue.Pair] = []
    public var signing: SigningScheme?
    /// The secret itself, or "$VAR" naming the environment variable that holds it.
    public var signingSecret: String?
    public var signingCommand: String?
    public var rateLimit: RateQuota?
    public var cacheMaxMB: Double = 50
    /// `rate_limit` as written, for `config get`.
    public var rateLimitText: String?
    /// TLS and proxy settings (keys ca_bundle, ca_path, client_cert, client_key, insecure, proxy).
    public var caBundle: String? = nil
    public var caPath: String? = nil
    public var clientCert: String? = nil
    public var clientKey: String? = nil
    public var insecure: Bool = false
    public var proxy: String? = nil
    /// `keep`: "false" turns the connection keeper off; a duration is its idle time.
    public var keep: String? = nil
    /// The API description its operations come from (key openapi: a URL or a file).
    public var openAPI: String? = nil
    /// `record_scrub`: names (besides the known secret names) whose values `--record` scrubs.
    public var recordScrub: [String] = []
    /// The identity endpoint and the fields of its reply (`user_url`, `user_id_field`,
    /// `user_name_field`): who a token belongs to, for any OAuth2 API.
    public var userURL: String? = nil
    public var userIDField: String? = nil
    /// Where `api --paginate` finds a page's items (`items_key`).
    public var itemsKey: String? = nil
    /// Where `api graphql` posts (`graphql_url`); nil: api_base + /graphql.
    public var graphqlURL: String? = nil
    /// Paging shapes (`PageShapes`): `next_page_header`, `cursor_key`, `cursor_param`.
    public var nextPageHeader: String? = nil
    public var cursorKey: String? = nil
    public var cursorParam: String? = nil
    public var userNameField: String? = nil
    /// An API key's header or query parameter (`token_header`, `token_query`).
    public var tokenHeader: String? = nil
    public var tokenQuery: String? = nil
    /// The issuer the endpoints came from (`profile add --issuer`): an ID token's `iss`.
    public var issuer: String? = nil
    /// The account the profile must be (`expect_user`): a user id or name.
    public var expectUser: String? = nil
    /// Whether the authorization request carries a PKCE challenge (`pkce`, default true).
    public var pkce: Bool = true
    /// True for a profile with neither a preset nor a `style`: a plain OAuth2 REST API that
    /// follows the RFCs (space-separated scopes, no Douban `~me` identity call). Read from
    /// the rules, which are decided from the same facts when the profile is resolved.
    public var isPlainOAuth2: Bool { rules is PlainStyle }
    /// What the profile's API style knows (`APIStyleRules`), decided once when the profile
    /// is resolved; a test may give a profile a style of its own.
    public var rules: any APIStyleRules {
        get { styleRules.rules }
        set { styleRules = StyleRulesBox(newValue) }
    }
    var styleRules = StyleRulesBox(DoubanStyle())
    /// True when `redirect_uri` is the profile's own setting (what the user registered):
    /// it is then sent as written. A preset's `redirect_uri` is a template that gets the
    /// per-profile callback path.
    public var redirectURIIsRegistered: Bool = false
    /// False when the profile exists only as a preset (no entry in config.json).
    public var isConfigured: Bool
    /// True when `--api-base` moved this run's requests off the profile's own api_base:
    /// logging in to this profile is then no advice for where they go.
    public var apiBaseOverridden: Bool = false
    /// The profile's own api_base (preset, then config.json) when `--api-base` overrides it
    /// for this run; nil otherwise (then it is `apiBase`). A stored login belongs to it.
    public var ownAPIBase: String?
    /// The other profiles' api_base (name → URL), so advice can name the profile whose
    /// credentials would go to a URL.
    public var otherProfileBases: [ProfileValue.Pair] = []

    /// A Douban-style profile with no client_id: nothing a browser login could use (the
    /// state of a fresh install, whose default profile is douban).
    public var lacksAnApp: Bool { style == .douban && !isPlainOAuth2 && (clientID ?? "").isEmpty }

    /// The profile whose requests carry credentials to `url`'s origin (its api_base), or nil.
    public func profileSendingCredentials(to url: String) -> String? {
        if !apiBaseOverridden, isOwnOrigin(url) { return name }
        for other in otherProfileBases {
            var probe = self
            probe.apiBase = other.value
            if probe.isOwnOrigin(url) { return other.name }
        }
        return nil
    }

    /// What kind of API the profile talks to, as `config get style`, `profile show` and
    /// `profile list` say it: its style (douban, coding), or oauth2 for a profile with neither a
    /// preset nor a style (a plain OAuth2 REST API, which follows the RFCs rather than
    /// Douban's conventions).
    public var styleName: String { isPlainOAuth2 ? "oauth2" : style.rawValue }

    /// The resolved value of one key, for `config get` and `profile show`.
    public func value(_ key: ProfileKey) -> ProfileValue? {
        switch key {
        case .preset: return preset.map(ProfileValue.text)
        case .style: return .text(styleName)
        case .apiBase: return .text(apiBase)
        case .authorizeURL: return authorizeURL.map(ProfileValue.text)
        case .tokenURL: return tokenURL.map(ProfileValue.text)
        case .deviceAuthorizationURL: return deviceAuthorizationURL.map(ProfileValue.text)
        case .revokeURL: return revokeURL.map(ProfileValue.text)
        case .clientID: return clientID.map(ProfileValue.text)
        case .clientSecret: return clientSecret.map(ProfileValue.text)
        case .scopes: return .list(scopes)
        case .redirectURI: return redirectURI.map(ProfileValue.text)
        case .userURL: return userURL.map(ProfileValue.text)
        case .userIDField: return userIDField.map(ProfileValue.text)
        case .itemsKey: return itemsKey.map(ProfileValue.text)
        case .graphqlURL: return graphqlURL.map(ProfileValue.text)
        case .nextPageHeader: return nextPageHeader.map(ProfileValue.text)
        case .cursorKey: return cursorKey.map(ProfileValue.text)
        case .cursorParam: return cursorParam.map(ProfileValue.text)
        case .userNameField: return userNameField.map(ProfileValue.text)
        case .tokenAuth: return .text(tokenAuth.rawValue)
        case .tokenPlacement: return .text(tokenPlacement.rawValue)
        case .authScheme: return .text(authScheme)
        case .tokenHeader: return tokenHeader.map(ProfileValue.text)
        case .tokenQuery: return tokenQuery.map(ProfileValue.text)
        case .issuer: return issuer.map(ProfileValue.text)
        case .expectUser: return expectUser.map(ProfileValue.text)
        case .pkce: return pkce ? nil : .text("false")
        case .bodyFormat: return .text(bodyFormat.rawValue)
        case .commonParams: return commonParams.isEmpty ? nil : .map(commonParams)
        case .commonHeaders: return commonHeaders.isEmpty ? nil : .map(commonHeaders)
        case .signing: return signing.map { .text($0.rawValue) }
        case .signingSecret: return signingSecret.map(ProfileValue.text)
        case .signingCommand: return signingCommand.map(ProfileValue.text)
        case .rateLimit: return rateLimitText.map(ProfileValue.text)
        case .cacheMaxMB: return .text(String(cacheMaxMB))
        case .caBundle: return caBundle.map(ProfileValue.text)
        case .caPath: return caPath.map(ProfileValue.text)
        case .clientCert: return clientCert.map(ProfileValue.text)
        case .clientKey: return clientKey.map(ProfileValue.text)
        case .insecure: return insecure ? .text("true") : nil
        case .proxy: return proxy.map(ProfileValue.text)
        case .keep: return keep.map(ProfileValue.text)
        case .openapi: return openAPI.map(ProfileValue.text)
        case .recordScrub: return recordScrub.isEmpty ? nil : .list(recordScrub)
        }
    }

    /// Scopes as the authorization server reads them: space-separated (RFC 6749 §3.3) for a
    /// plain OAuth2 profile, comma-separated for the Douban and Coding conventions.
    public var scopeParameter: String { scopes.joined(separator: rules.scopeSeparator) }

    /// True when the login asks for an OpenID Connect ID token (the `openid` scope).
    public var asksForIDToken: Bool { scopes.contains("openid") }

    /// True when `url` is on the API's own origin (scheme, host, port): only there do tokens
    /// and session cookies go, so `douctl api https://elsewhere/…` never leaks them.
    public func isOwnOrigin(_ url: String) -> Bool {
        Self.isOrigin(of: url, apiBase)
    }

    /// Whether `url` has the scheme, host and port of `base`.
    public static func isOrigin(of url: String, _ base: String) -> Bool {
        guard let target = URLParts(url), let base = URLParts(base) else { return false }
        func port(_ parts: URLParts) -> UInt16? { parts.port ?? (parts.scheme == "https" ? 443 : parts.scheme == "http" ? 80 : nil) }
        return target.scheme == base.scheme && target.host == base.host && port(target) == port(base)
    }

    /// The full URL for an API path ("/v2/user/~me") or an absolute URL given as is.
    public func url(for path: String) -> String {
        if path.hasPrefix(bytes: "http://") || path.hasPrefix(bytes: "https://") { return path }
        // No path: the base itself (an Action API such as the CODING OpenAPI takes every call there).
        if path.isEmpty { return apiBase }
        let base = apiBase.hasSuffix("/") ? String(apiBase.dropLast()) : apiBase
        return base + (path.hasPrefix(bytes: "/") ? path : "/" + path)
    }
}

/// Inputs that override the config file for one run.
public struct ProfileOverrides: Sendable, Equatable {
    /// `--api-base`.
    public var apiBase: String?
    /// `DOUCTL_CLIENT_ID`, `DOUCTL_CLIENT_SECRET`.
    public var clientID: String?
    public var clientSecret: String?

    public init(apiBase: String? = nil, clientID: String? = nil, clientSecret: String? = nil) {
        self.apiBase = apiBase
        self.clientID = clientID
        self.clientSecret = clientSecret
    }
}

extension ConfigFile {
    /// The profile a run uses: `--profile`/`DOUCTL_PROFILE` (passed as `requested`), else
    /// `default_profile`, else the `douban` preset.
    public func activeProfileName(requested: String?) -> String {
        requested ?? defaultProfile ?? "douban"
    }

    /// Applies preset → profile settings → overrides.
    public func resolve(_ name: String, overrides: ProfileOverrides = .init()) throws(DouctlError) -> ResolvedProfile {
        let settings = profile(named: name)
        if settings == nil, Preset.named(name) == nil {
            let known = knownProfileNames
            var message = "no profile named '\(name)' (known: \(known.joined(separator: ", ")))"
            if let guess = Suggestions.closest(to: name, in: known) { message += "; did you mean '\(guess)'?" }
            throw .usage(message)
        }
        var merged = MergedSettings()
        let presetName = settings?[.preset]?.display ?? (Preset.named(name) != nil ? name : nil)
        if let presetName {
            guard let preset = Preset.named(presetName) else {
                throw .usage("profile '\(name)' names an unknown preset '\(presetName)'")
            }
            merged.values = preset.settings
        }
        for entry in settings?.entries ?? [] { merged.values[entry.key] = entry.value }
        merged.apply(overrides)
        var resolved = try ResolvedProfile(name: name, preset: presetName, merged: merged, isConfigured: settings != nil)
        resolved.rules = APIStyle.rules(style: resolved.style, isPlainOAuth2: presetName == nil && merged.text(.style) == nil)
        resolved.redirectURIIsRegistered = settings?[.redirectURI] != nil
        if let override = overrides.apiBase {
            var own = MergedSettings()
            if let presetName, let preset = Preset.named(presetName) { own.values = preset.settings }
            for entry in settings?.entries ?? [] { own.values[entry.key] = entry.value }
            resolved.apiBaseOverridden = own.text(.apiBase) != override
            resolved.ownAPIBase = own.text(.apiBase)
        }
        resolved.otherProfileBases = knownProfileNames.filter { $0 != name }.compactMap { other in
            let base = profile(named: other)?[.apiBase]?.display
                ?? (profile(named: other)?[.preset]?.display ?? (Preset.exists(other) ? other : nil))
                    .flatMap { Preset.apiBase(named: $0) }
            return base.map { ProfileValue.Pair(other, $0) }
        }
        return resolved
    }

    /// Every name `--profile` accepts, once each: the configured profiles, then the presets
    /// not configured under their own name.
    public var knownProfileNames: [String] {
        let configured = profiles.map(\.name)
        return configured + Preset.names.filter { !configured.contains($0) }
    }
}

/// A profile's settings with its preset, config.json and the run's overrides merged, read
/// key by key.
private struct MergedSettings {
    var values: [ProfileKey: ProfileValue] = [:]

    mutating func apply(_ overrides: ProfileOverrides) {
        if let apiBase = overrides.apiBase { values[.apiBase] = .text(apiBase) }
        if let clientID = overrides.clientID { values[.clientID] = .text(clientID) }
        if let clientSecret = overrides.clientSecret { values[.clientSecret] = .text(clientSecret) }
    }

    /// A text setting; an empty one counts as unset.
    func text(_ key: ProfileKey) -> String? {
        if case .text(let value)? = values[key], !value.isEmpty { return value }
        return nil
    }

    func map(_ key: ProfileKey) -> [ProfileValue.Pair] {
        if case .map(let pairs)? = values[key] { return pairs }
        return []
    }

    func list(_ key: ProfileKey) -> [String] {
        if case .list(let list)? = values[key] { return list }
        return []
    }
}

extension ResolvedProfile {
    /// Reads each setting with its default; a profile needs an api_base.
    fileprivate init(name: String, preset: String?, merged: MergedSettings, isConfigured: Bool) throws(DouctlError) {
        guard let apiBase = merged.text(.apiBase) else {
            throw .usage("profile '\(name)' has no api_base; set one with: douctl config set api_base URL --profile \(name)")
        }
        self.init(
            name: name,
            preset: preset,
            style: merged.text(.style).flatMap(APIStyle.init(rawValue:)) ?? .douban,
            apiBase: apiBase,
            authorizeURL: merged.text(.authorizeURL),
            tokenURL: merged.text(.tokenURL),
            deviceAuthorizationURL: merged.text(.deviceAuthorizationURL),
            revokeURL: merged.text(.revokeURL),
            clientID: merged.text(.clientID),
            clientSecret: merged.text(.clientSecret),
            scopes: merged.list(.scopes),
            redirectURI: merged.text(.redirectURI),
            tokenAuth: merged.text(.tokenAuth).flatMap(TokenAuth.init(rawValue:)) ?? .post,
            tokenPlacement: merged.text(.tokenPlacement).flatMap(TokenPlacement.init(rawValue:)) ?? .header,
            bodyFormat: merged.text(.bodyFormat).flatMap(BodyFormat.init(rawValue:)) ?? .form,
            commonParams: merged.map(.commonParams),
            commonHeaders: merged.map(.commonHeaders),
            signing: merged.text(.signing).flatMap(SigningScheme.init(rawValue:)),
            signingSecret: merged.text(.signingSecret),
            signingCommand: merged.text(.signingCommand),
            rateLimit: merged.text(.rateLimit).flatMap(RateQuota.init),
            cacheMaxMB: merged.text(.cacheMaxMB).flatMap(Double.init).flatMap { $0 > 0 && $0.isFinite ? $0 : nil } ?? 50,
            rateLimitText: merged.text(.rateLimit),
            isConfigured: isConfigured)
        caBundle = merged.text(.caBundle)
        caPath = merged.text(.caPath)
        clientCert = merged.text(.clientCert)
        clientKey = merged.text(.clientKey)
        insecure = merged.text(.insecure) == "true"
        proxy = merged.text(.proxy)
        keep = merged.text(.keep)
        openAPI = merged.text(.openapi)
        recordScrub = merged.list(.recordScrub)
        authScheme = merged.text(.authScheme).flatMap { AuthScheme.isValid($0) ? $0 : nil } ?? AuthScheme.standard
        userURL = merged.text(.userURL)
        userIDField = merged.text(.userIDField)
        itemsKey = merged.text(.itemsKey)
        graphqlURL = merged.text(.graphqlURL)
        nextPageHeader = merged.text(.nextPageHeader)
        cursorKey = merged.text(.cursorKey)
        cursorParam = merged.text(.cursorParam)
        userNameField = merged.text(.userNameField)
        tokenHeader = merged.text(.tokenHeader)
        tokenQuery = merged.text(.tokenQuery)
        issuer = merged.text(.issuer)
        expectUser = merged.text(.expectUser)
        pkce = merged.text(.pkce) != "false"
    }
}
