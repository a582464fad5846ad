/// Built-in starting points for profiles. A profile's own settings override any preset key.
public struct Preset: Sendable, Equatable {
    public let name: String
    public let summary: String
    public let settings: [ProfileKey: ProfileValue]

    public static let douban = Preset(
        name: "douban",
        summary: "Douban API v2 (api.douban.com; OAuth2 at www.douban.com)",
        settings: [
            .style: .text("douban"),
            .apiBase: .text(doubanBase),
            .authorizeURL: .text("https://www.douban.com/service/auth2/auth"),
            .tokenURL: .text("https://www.douban.com/service/auth2/token"),
            .scopes: .list(["douban_basic_common", "shuo_basic_r", "shuo_basic_w"]),
            .tokenAuth: .text("post"),
            .tokenPlacement: .text("header"),
        ])

    public static let coding = Preset(
        name: "coding",
        summary: "Coding.net legacy API (coding.net/api; token as access_token query parameter)",
        settings: [
            .style: .text("coding"),
            .apiBase: .text(codingBase),
            .authorizeURL: .text("https://coding.net/oauth_authorize.html"),
            .tokenURL: .text("https://coding.net/api/oauth/access_token"),
            .scopes: .list(["user", "social", "social:tweet"]),
            .tokenAuth: .text("post"),
            .tokenPlacement: .text("query"),
        ])

    /// CODING's OpenAPI: every call a JSON POST of {"Action": …} to one URL, answered
    /// {"Response": {…}}; a personal access token (`auth login --with-token`) goes as
    /// `Authorization: token …`. A team's own host works too: --api-base https://TEAM.coding.net/open-api.
    public static let codingOpenAPI = Preset(
        name: "coding-openapi",
        summary: "CODING OpenAPI (e.coding.net/open-api; JSON Action calls, personal access token as Authorization: token)",
        settings: [
            .style: .text("coding"),
            .apiBase: .text(codingOpenAPIBase),
            .authorizeURL: .text("https://e.coding.net/oauth_authorize.html"),
            .tokenURL: .text("https://e.coding.net/api/oauth/access_token"),
            .scopes: .list(["user:profile:ro"]),
            .tokenAuth: .text("post"),
            .tokenPlacement: .text("header"),
            .authScheme: .text("token"),
            .bodyFormat: .text("json"),
        ])

    /// The local fake Douban (`douctl sandbox`). Its client credentials are public on purpose.
    public static let sandbox = sandboxPreset(name: "sandbox", style: .douban, base: sandboxBase)

    /// The local fake Coding (`douctl sandbox` also serves Coding's paths).
    public static let codingSandbox = sandboxPreset(name: "coding-sandbox", style: .coding, base: sandboxBase)

    /// Every preset by name, in the order help lists them; each built only when asked for
    /// (all five settings tables cost a small request ~0.1 M instructions at start; issue 23).
    /// With each its api_base, which a run needs of every preset (a credential goes only to
    /// its profile's origin) without building the other settings.
    private static let byName: [(name: String, apiBase: String, preset: @Sendable () -> Preset)] = [
        ("douban", doubanBase, { douban }), ("coding", codingBase, { coding }),
        ("coding-openapi", codingOpenAPIBase, { codingOpenAPI }),
        ("sandbox", sandboxBase, { sandbox }), ("coding-sandbox", sandboxBase, { codingSandbox }),
    ]
    private static let doubanBase = "https://api.douban.com"
    private static let codingBase = "https://coding.net"
    private static let codingOpenAPIBase = "https://e.coding.net/open-api"
    private static let sandboxBase = "http://127.0.0.1:8089"

    public static var all: [Preset] { byName.map { $0.preset() } }

    /// The presets' names, without building their settings.
    public static var names: [String] { byName.map { $0.name } }

    /// The preset called `name`; only that one is built.
    public static func named(_ name: String) -> Preset? { byName.first { $0.name == name }?.preset() }

    /// Whether a preset is called `name`; none is built.
    public static func exists(_ name: String) -> Bool { byName.contains { $0.name == name } }

    /// The api_base of the preset called `name` (its settings' `.apiBase`), none built.
    public static func apiBase(named name: String) -> String? { byName.first { $0.name == name }?.apiBase }

    public static let sandboxClientID = "douctl-sandbox"
    public static let sandboxClientSecret = "sandbox-secret"

    /// The settings `douctl sandbox` writes for a server at `base` (none for a style that
    /// has no sandbox).
    public static func sandboxSettings(style: APIStyle, base: String) -> [(ProfileKey, ProfileValue)] {
        guard let sandbox = style.rules.sandbox else { return [] }
        var settings: [(ProfileKey, ProfileValue)] = [(.preset, .text(sandbox.presetName)), (.apiBase, .text(base))]
        for endpoint in sandbox.endpoints { settings.append((endpoint.key, .text(base + endpoint.path))) }
        settings.append((.clientID, .text(sandboxClientID)))
        settings.append((.clientSecret, .text(sandboxClientSecret)))
        return settings
    }

    private static func sandboxPreset(name: String, style: APIStyle, base: String) -> Preset {
        let sandbox = style.rules.sandbox
        var settings: [ProfileKey: ProfileValue] = [
            .style: .text(style.rawValue),
            .redirectURI: .text("http://127.0.0.1/callback"),
            .tokenAuth: .text("post"),
            .tokenPlacement: .text((sandbox?.tokenPlacement ?? .header).rawValue),
            .scopes: .list(sandbox?.scopes ?? []),
        ]
        for (key, value) in sandboxSettings(style: style, base: base) where key != .preset {
            settings[key] = value
        }
        return Preset(
            name: name,
            summary: "the local fake \(sandbox?.label ?? style.rawValue) server of `douctl sandbox`",
            settings: settings)
    }
}
