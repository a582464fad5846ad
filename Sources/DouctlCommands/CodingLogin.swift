import DouctlCore
import DouctlJSON
import DouctlSystem

/// `auth login --password` on a coding-style profile, and the cookie session in
/// `auth status` and `auth logout`.
enum CodingLogin {
    static func run(_ context: CommandContext, profile: ResolvedProfile) throws(DouctlError) -> Identity {
        let stdin = context.process.standardInput
        var console = AuthCommands.console(context)
        console.readSecret = { Terminal.readSecretLine(stdin) }
        let directory = try context.configDirectory()
        try directory.ensureExists()
        console.captchaDirectory = directory.path
        let jar = CookieJar(directory: try context.configDirectory(), profile: profile.name)
        var factory = try context.clientFactory()
        factory.profile = profile
        return try CodingPasswordLogin(clients: factory, http: try context.http(), console: console, jar: jar).run()
    }
}

enum CodingSession {
    /// The cookie session's summary for `auth status` and who logged in to it, or nil
    /// when there is none.
    static func status(_ context: CommandContext, profile: ResolvedProfile) throws(DouctlError) -> (json: JSON, owner: Identity?)? {
        guard profile.rules.hasCookieSessions else { return nil }
        let jar = CookieJar(directory: try context.configDirectory(), profile: profile.name)
        guard jar.exists else { return nil }
        let names = try jar.load().map(\.name)
        let json: JSON = .object(JSONObject([("cookie_jar", .string(jar.path)), ("cookies", .array(names.map(JSON.string)))]))
        return (json, try jar.owner())
    }

    /// Ends the server session where possible, then deletes the jar; true when there was one.
    /// A corrupt jar is deleted with a warning: there is no session left in it to end.
    static func forget(_ context: CommandContext, profile: ResolvedProfile) throws(DouctlError) -> Bool {
        guard profile.rules.hasCookieSessions else { return false }
        let jar = CookieJar(directory: try context.configDirectory(), profile: profile.name)
        guard jar.exists else { return false }
        let hooks: SessionHooks?
        do {
            hooks = try CookieSession.stored(for: profile, store: try context.credentialStore())
        } catch .badConfig(let path, let detail) {
            context.warn("\(path) is corrupt (\(detail)); deleting it")
            hooks = nil
        }
        if let hooks {
            var factory = try context.clientFactory()
            factory.profile = profile
            let client = factory.client(http: try context.http(), tokens: nil, session: hooks)
            // The server's session ends by itself in time; an offline logout still forgets it here.
            try? CodingService(client: client).endSession()
        }
        try jar.save([])
        return true
    }
}
