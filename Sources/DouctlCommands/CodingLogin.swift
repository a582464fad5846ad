import DouctlCore
import DouctlJSON

/// The cookie session (Coding's `auth login --password`) as `auth status` shows it. Logging
/// in with a password and ending the session are the core's `LoginService`.
enum CodingSession {
    /// The cookie session's summary for `auth status` and who logged in to it, or nil
    /// when there is none.
    static func status(_ context: CommandContext, profile: ResolvedProfile) throws(DouctlError) -> (json: JSON, owner: Identity?)? {
        guard profile.rules.hasCookieSessions else { return nil }
        let jar = CookieJar(directory: try context.session.configDirectory(), profile: profile.name)
        guard jar.exists else { return nil }
        let names = try jar.load().map(\.name)
        let json: JSON = .object(JSONObject([("cookie_jar", .string(jar.path)), ("cookies", .array(names.map(JSON.string)))]))
        return (json, try jar.owner())
    }
}
