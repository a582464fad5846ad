#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlJSON
import DouctlSystem

/// What douctl keeps for a logged-in profile (credentials.json, one entry per profile).
public struct Credential: Sendable, Equatable {
    public var accessToken: String
    public var refreshToken: String?
    /// Seconds since 1970; nil when the server gave no lifetime.
    public var expiresAt: Double?
    public var scopes: [String]
    public var userID: String?
    public var userName: String?
    /// Fields this version does not know, kept so an older douctl never drops a newer one's data.
    public var extra: JSONObject

    public init(accessToken: String, refreshToken: String? = nil, expiresAt: Double? = nil, scopes: [String] = [], userID: String? = nil, userName: String? = nil, extra: JSONObject = JSONObject()) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
        self.scopes = scopes
        self.userID = userID
        self.userName = userName
        self.extra = extra
    }

    /// Expired, with a small margin so a token does not lapse in flight.
    public func isExpired(now: Double, margin: Double = 30) -> Bool {
        guard let expiresAt else { return false }
        return now + margin >= expiresAt
    }

    /// Where a credential says which grant made it, among its extra keys: "client_credentials"
    /// for `auth login --client-credentials`, whose tokens are fetched again, not refreshed.
    public static let grantKey = "grant"
    public static let clientCredentialsGrant = "client_credentials"

    /// True for a client-credentials login (RFC 6749 §4.4): no refresh token, and a new
    /// token is had by asking again with the client's id and secret.
    public var isClientCredentials: Bool { extra[Self.grantKey]?.stringValue == Self.clientCredentialsGrant }

    /// Where a credential names its scheme among its extra keys: "Basic" for `auth login
    /// --basic`, whose access_token is base64 of user:password.
    public static let schemeKey = "scheme"

    /// A user name and password sent as HTTP Basic (`auth login --basic`).
    public var isBasic: Bool { extra[Self.schemeKey]?.stringValue == "Basic" }

    /// The stored Basic credential for `user` and `password` (RFC 7617).
    public static func basic(user: String, password: String) -> Credential {
        var credential = Credential(accessToken: Base64.encode(Array("\(user):\(password)".utf8)), userName: user)
        credential.extra[schemeKey] = "Basic"
        return credential
    }

    /// The password of a Basic credential, for scrubbing wherever a server echoes it.
    public var basicPassword: String? {
        guard isBasic, let bytes = Base64.decode(accessToken), let colon = bytes.firstIndex(of: 0x3A) else { return nil }
        return String(decoding: bytes[(colon + 1)...], as: UTF8.self)
    }

    static let knownKeys: Set<String> = ["access_token", "refresh_token", "expires_at", "scopes", "user_id", "user_name"]

    public init?(json: JSON) {
        guard case .object(let object) = json, let accessToken = object["access_token"]?.stringValue else { return nil }
        self.accessToken = accessToken
        refreshToken = object["refresh_token"]?.stringValue
        expiresAt = object["expires_at"]?.stringValue.flatMap(Timestamp.parseRFC3339)
        scopes = object["scopes"]?.arrayValue?.compactMap(\.stringValue) ?? []
        userID = object["user_id"]?.scalarText
        userName = object["user_name"]?.stringValue
        extra = JSONObject(object.filter { !Self.knownKeys.contains($0.key) }.map { ($0.key, $0.value) })
    }

    public var json: JSON {
        var object = JSONObject()
        object["access_token"] = .string(accessToken)
        if let refreshToken { object["refresh_token"] = .string(refreshToken) }
        if let expiresAt { object["expires_at"] = .string(Timestamp.rfc3339(expiresAt)) }
        object["scopes"] = .array(scopes.map(JSON.string))
        if let userID { object["user_id"] = .string(userID) }
        if let userName { object["user_name"] = .string(userName) }
        for (key, value) in extra { object[key] = value }
        return .object(object)
    }
}

/// credentials.json: one entry per profile, mode 0600 in a 0700 directory, replaced
/// atomically, and changed only under an exclusive `flock` so concurrent douctl processes
/// never lose each other's writes or spend a single-use refresh token twice.
public struct CredentialStore: Sendable {
    public let directory: ConfigDirectory

    public init(directory: ConfigDirectory) {
        self.directory = directory
    }

    public var path: String { directory.credentialsPath }

    /// The profile's credential, or nil when it has none. Refuses a file others can read.
    public func load(_ profile: String) throws(DouctlError) -> Credential? {
        try readFile()[profile]
    }

    /// Room kept for the credentials to grow by in one change (a rotated token may be longer).
    static let reservationHeadroom = 64 * 1024

    /// Runs `change` on the profile's entry while holding the lock, re-reading the file first
    /// so the change applies to the latest tokens; writes back only when something changed.
    ///
    /// Before `change` runs, the temp file that will hold the result is created and filled to
    /// the current file's size plus headroom: a full disk or a read-only directory fails here,
    /// so a change that spends something (a single-use refresh token) is never made when its
    /// result could not be stored. `unspent` says what the user keeps in that case. Temp files
    /// that killed writers left behind are removed first (only while holding the lock, which
    /// every writer holds, so none of them is a live writer's).
    @discardableResult
    public func update<Result>(_ profile: String, unspent: String? = nil,
                               _ change: (inout Credential?) throws(DouctlError) -> Result) throws(DouctlError) -> Result {
        try directory.ensureExists()
        let lock: FileLock
        do { lock = try FileLock(path: directory.credentialsLockPath) } catch {
            throw .localInput("cannot lock \(directory.credentialsLockPath) (\(error))")
        }
        defer { lock.unlock() }
        AtomicFile.removeAbandonedTemporaries(of: path)
        var all = try readFile()
        let reservation: AtomicFile.Reservation
        do {
            let current = (try? FileIO.linkStatus(path)).map { Int($0.size) } ?? 0
            reservation = try AtomicFile.Reservation(for: path, reserving: current + Self.reservationHeadroom, mode: 0o600,
                                                     holdBeforeRename: directory.holdBeforeRename)
        } catch {
            let kept = unspent.map { "; \($0)" } ?? ""
            let reason = (error as? SystemError)?.reason ?? "\(error)"
            throw .localInput("cannot store credentials in \(directory.path) (\(reason)); the stored credentials are unchanged\(kept)")
        }
        defer { reservation.discard() }
        var entry = all[profile]
        let before = entry
        let result = try change(&entry)
        if entry != before {
            all[profile] = entry
            try writeFile(all, into: reservation)
        }
        return result
    }

    // MARK: - file

    private func readFile() throws(DouctlError) -> [String: Credential] {
        // lstat, not stat: tokens are neither read through nor written over a link that
        // someone else may have planted or may later point elsewhere.
        if let status = try? FileIO.linkStatus(path) {
            if status.isSymbolicLink {
                throw .localInput("\(path) is a symbolic link; refusing to use it. Replace it with the file itself, or remove it and log in again")
            }
            if !status.isRegularFile {
                throw .localInput("\(path) is not a regular file; refusing to use it")
            }
            let owner = UInt32(geteuid())
            if status.ownerID != owner {
                throw .localInput("\(path) is owned by another user (uid \(status.ownerID), not \(owner)); refusing to use it. Remove it and log in again, or fix it with: chown \(owner) \(path)")
            }
            if status.mode & 0o077 != 0 {
                let mode = String(status.mode & 0o777, radix: 8)
                throw .localInput("\(path) is readable by other users (mode \(mode)); refusing to use it. Fix it with: chmod 600 \(path)")
            }
        }
        guard let json = try directory.readJSONFile(path) else { return [:] }
        guard case .object(let root) = json, case .object(let profiles)? = root["profiles"] else {
            throw .badConfig(path: path, detail: "expected {\"profiles\": {...}}")
        }
        var result: [String: Credential] = [:]
        for (name, value) in profiles {
            guard let credential = Credential(json: value) else {
                throw .badConfig(path: path, detail: "the entry of profile '\(name)' has no access_token")
            }
            result[name] = credential
        }
        return result
    }

    private func writeFile(_ all: [String: Credential], into reservation: AtomicFile.Reservation) throws(DouctlError) {
        var profiles = JSONObject()
        for name in all.keys.sorted() {
            if let credential = all[name] { profiles[name] = credential.json }
        }
        let root: JSON = .object(JSONObject([("profiles", .object(profiles))]))
        var bytes = root.serialized(.pretty)
        bytes.append(0x0A)
        do {
            try reservation.commit(bytes)
        } catch {
            throw .localInput("cannot write \(path) (\(error))")
        }
    }
}

extension CredentialStore {
    /// Renames a corrupt credentials file to `credentials.json.corrupt-<time>` (under the
    /// lock) so the user can start over without losing what was in it; returns the new path.
    public func moveAside(now: Double) throws(DouctlError) -> String {
        let lock: FileLock
        do { lock = try FileLock(path: directory.credentialsLockPath) } catch {
            throw .localInput("cannot lock \(directory.credentialsLockPath) (\(error))")
        }
        defer { lock.unlock() }
        let stamp = Timestamp.rfc3339(now).filter { $0.isNumber }
        let target = "\(path).corrupt-\(stamp)"
        guard rename(EscapedBytes.cString(path), EscapedBytes.cString(target)) == 0 else {
            throw .localInput("cannot move \(path) aside (\(SystemError("rename").reason))")
        }
        return target
    }

    /// Loads the profile's credential, explaining what to do when the file is corrupt
    /// (before a login runs a whole flow only to fail at the end).
    public func loadForLogin(_ profile: String) throws(DouctlError) -> Credential? {
        do {
            return try load(profile)
        } catch .badConfig(let path, let detail) {
            throw .localInput("\(path) is corrupt (\(detail)); move it aside, then log in again: mv '\(path)' '\(path).bad' (other profiles stored in it must log in again too)")
        }
    }
}
