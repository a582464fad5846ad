import DouctlCore
import DouctlSystem

/// `douctl auth login URL`: the profile whose api_base has the URL's origin logs in; with
/// none, the API names its authorization server (RFC 9728), douctl registers itself there
/// when no client id is given (RFC 7591, DOUCTL_CLIENT_ID otherwise) and writes a profile for
/// the origin, which then logs in as any profile does. Nothing is written until every
/// document has been checked (`ResourceDiscovery`).
enum ResourceLogin {
    static func prepare(_ url: String, _ context: CommandContext) throws(DouctlError) {
        guard URLParts(url) != nil, url.hasPrefix("https://") || url.hasPrefix("http://") else {
            throw .usage("invalid URL '\(TerminalText.escaped(url))': expected the API's https:// URL")
        }
        if context.globals.profile != nil {
            throw .usage("give either --profile or the API's URL, not both")
        }
        let config = try context.session.config()
        if let owner = config.profileOwning(url) {
            context.session.choose(ProfileChoice(name: owner, rule: .url(url)))
            return
        }
        let http = try context.session.http()
        let recorder = context.session.settings.requests.recorder
        let discovery = try ResourceDiscovery.discover(url, http: http, recorder: recorder)
        let name = discovery.profileName
        if config.profile(named: name) != nil || Preset.named(name) != nil {
            throw .usage("a profile named '\(name)' exists with another api_base; log in to it with --profile \(name), or remove it first")
        }
        let client: (clientID: String, clientSecret: String?)
        var redirectURI = "http://127.0.0.1/callback"
        if let given = context.environment["DOUCTL_CLIENT_ID"], !given.isEmpty {
            client = (given, nil)
        } else {
            redirectURI = ResourceDiscovery.redirectURI()
            client = try discovery.register(redirectURI: redirectURI, http: http, recorder: recorder)
        }
        let settings = discovery.settings(clientID: client.clientID, clientSecret: client.clientSecret, redirectURI: redirectURI)
        try context.session.updateConfig { (config: inout ConfigFile) throws(DouctlError) in
            var profile = ProfileSettings()
            for (key, value) in settings { profile[key] = value }
            config.setProfile(name, profile)
        }
        context.output.note("\(TerminalText.escaped(discovery.apiBase)) logs in at \(TerminalText.escaped(discovery.provider.issuer)) (read \(TerminalText.escaped(discovery.metadataURL))); wrote profile \(name)\(client.clientSecret == nil && context.environment["DOUCTL_CLIENT_ID"] == nil ? " with a registered client" : "").")
        context.session.choose(ProfileChoice(name: name, rule: .url(url)))
    }
}
