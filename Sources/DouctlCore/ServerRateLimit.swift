import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// The time until which a server said the profile's quota is spent at one origin, shared by
/// every douctl process of the profile through a small file in the config directory next to
/// `rate_limit`'s, changed only under the same flock: when one reply says "0 left until
/// T", every process waits for T (`--wait-on-rate-limit`) or stops with exit 6 before
/// sending, instead of each spending a request to learn it.
public struct ServerRateLimit: Sendable {
    let directory: ConfigDirectory
    let statePath: String
    let lockPath: String

    /// The record for `origin` (scheme://host:port) of `profile`: a reset one server
    /// announced never blocks requests to another.
    public init(directory: ConfigDirectory, profile: String, origin: String) {
        self.directory = directory
        let tag = Digest.hex(Digest.sha256(Array(origin.utf8))).prefix(16)
        statePath = directory.path + "/.ratelimit-\(profile)-server-\(tag).json"
        lockPath = directory.path + "/.ratelimit-\(profile).lock"
    }

    /// The recorded reset and why, while it is still ahead of `now` (read without the
    /// lock: the file is only ever replaced whole). A damaged file says nothing.
    public func blockedUntil(now: Double) -> (until: Double, reason: String)? {
        guard let json = (try? directory.readJSONFile(statePath)) ?? nil,
              let until = json["until"]?.doubleValue, until.isFinite, until > now else { return nil }
        // Never longer than the cap from now, whatever the file says.
        return (min(until, now + RateLimitNotice.longestWait), json["reason"]?.stringValue ?? "an earlier reply")
    }

    /// Records that the quota is spent until `until` (the later of this and what is there).
    public func record(until: Double, reason: String, now: Double) {
        guard (try? directory.ensureExists()) != nil, let lock = try? FileLock(path: lockPath) else { return }
        defer { lock.unlock() }
        if let current = blockedUntil(now: now), current.until >= until { return }
        let object = JSONObject([("until", .number(String(Int64(until.rounded(.up))))), ("reason", .string(reason))])
        try? directory.writeJSONFile(.object(object), to: statePath)
    }
}
