#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlJSON
import DouctlSystem

/// The config directory and the files in it: config.json, credentials.json, their lock
/// files, and per-profile cookie jars. Created 0700; files 0600, so no other user reads a token.
public struct ConfigDirectory: Sendable, Equatable {
    public let path: String
    /// For douctl's own tests: seconds every write of a file here (config.json,
    /// credentials.json, cookie jars, rate-limit state) pauses between its complete temp
    /// file and the rename (`AtomicFile`), so a test can kill the writer there. 0 unless
    /// the run's environment sets DOUCTL_TEST_HOLD_BEFORE_RENAME.
    public var holdBeforeRename: Double = 0

    public init(path: String) {
        self.path = path
    }

    /// `--config-dir` (given as `explicit`), else `$DOUCTL_CONFIG_DIR`, else
    /// `$XDG_CONFIG_HOME/douctl`, else `~/.config/douctl`.
    public static func locate(explicit: String?, environment: [String: String]) throws(DouctlError) -> ConfigDirectory {
        var directory = try place(explicit: explicit, environment: environment)
        if let hold = environment["DOUCTL_TEST_HOLD_BEFORE_RENAME"].flatMap(Double.init), hold > 0 { directory.holdBeforeRename = hold }
        return directory
    }

    private static func place(explicit: String?, environment: [String: String]) throws(DouctlError) -> ConfigDirectory {
        if let explicit, !explicit.isEmpty { return ConfigDirectory(path: explicit) }
        if let fromEnvironment = environment["DOUCTL_CONFIG_DIR"], !fromEnvironment.isEmpty {
            return ConfigDirectory(path: fromEnvironment)
        }
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") {
            return ConfigDirectory(path: xdg + "/douctl")
        }
        guard let home = environment["HOME"], !home.isEmpty else {
            throw .localInput("cannot find the config directory: HOME is not set (use --config-dir or DOUCTL_CONFIG_DIR)")
        }
        return ConfigDirectory(path: home + "/.config/douctl")
    }

    public var configPath: String { path + "/config.json" }
    public var credentialsPath: String { path + "/credentials.json" }
    public var credentialsLockPath: String { path + "/.credentials.lock" }
    public var configLockPath: String { path + "/.config.lock" }
    public func cookieJarPath(profile: String) -> String { path + "/cookies-\(profile).json" }

    /// Creates the directory (0700) when missing; tightens its mode when it exists.
    public func ensureExists() throws(DouctlError) {
        do {
            try FileIO.makeDirectory(path, mode: 0o700)
        } catch {
            throw .localInput("cannot create the config directory \(path) (\(error))")
        }
    }

    // MARK: config.json

    /// Reads config.json; a missing file is an empty configuration.
    public func loadConfig() throws(DouctlError) -> ConfigFile {
        guard let json = try readJSONFile(configPath) else { return ConfigFile() }
        return try ConfigFile.decode(json, path: configPath)
    }

    /// Read-modify-write of config.json under a lock, written atomically (0600).
    @discardableResult
    public func updateConfig<Result>(_ change: (inout ConfigFile) throws(DouctlError) -> Result) throws(DouctlError) -> Result {
        try ensureExists()
        let lock: FileLock
        do { lock = try FileLock(path: configLockPath) } catch { throw .localInput("cannot lock \(configLockPath) (\(error))") }
        defer { lock.unlock() }
        // Under the lock every writer holds, a temp file here is a killed writer's.
        AtomicFile.removeAbandonedTemporaries(of: configPath)
        var config = try loadConfig()
        let result = try change(&config)
        try writeJSONFile(config.encoded(), to: configPath)
        return result
    }

    // MARK: shared file helpers

    /// Parses a JSON file; nil when it does not exist. Unreadable or malformed → `.badConfig`;
    /// one that another local user could have written (`FileTrust`) is refused unread: these
    /// files choose where tokens go, what runs (`signing_command`) and which secrets are sent.
    func readJSONFile(_ filePath: String) throws(DouctlError) -> JSON? {
        try Self.requireTrusted(filePath)
        let bytes: [UInt8]
        do {
            bytes = try FileIO.readFile(filePath)
        } catch let error as SystemError where error.isNotFound {
            return nil
        } catch {
            throw .badConfig(path: filePath, detail: "\(error)")
        }
        do {
            return try JSONParser.parse(bytes)
        } catch {
            throw .badConfig(path: filePath, detail: error.description)
        }
    }

    /// Refuses a file another local user could have written, as ssh does: exit 3, one line
    /// naming the fix.
    public static func requireTrusted(_ filePath: String, what: String? = nil) throws(DouctlError) {
        if let problem = FileTrust.problem(filePath) {
            let name = what.map { "\($0) " } ?? ""
            throw .localInput("bad owner or permissions on \(name)\(filePath) (\(problem.reason)); refusing to use it. Fix it with: \(problem.fix)")
        }
    }

    func writeJSONFile(_ json: JSON, to filePath: String) throws(DouctlError) {
        var bytes = json.serialized(.pretty)
        bytes.append(0x0A)
        do {
            try AtomicFile.write(bytes, to: filePath, mode: 0o600, holdBeforeRename: holdBeforeRename)
        } catch {
            throw .localInput("cannot write \(filePath) (\(error))")
        }
    }
}
