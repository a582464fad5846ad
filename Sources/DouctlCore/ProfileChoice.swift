#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem

/// Which profile a run uses and the rule that chose it, decided from the run's own inputs
/// only — no command writes what another run then reads (gh #326, "auth switch mutates
/// global state"): `--profile`, else `DOUCTL_PROFILE`, else a `.douctl` file found upward
/// from the working directory, else a URL rule (an absolute URL given to `api`/`download`
/// picks the profile whose api_base has its origin), else the config's `default_profile`,
/// else the `douban` preset.
public struct ProfileChoice: Sendable, Equatable {
    public enum Rule: Sendable, Equatable {
        case option
        case environment
        /// The `.douctl` file at this path.
        case directoryFile(String)
        /// The absolute URL whose origin is the profile's api_base.
        case url(String)
        case defaultProfile
        case builtIn
    }

    public var name: String
    public var rule: Rule

    public init(name: String, rule: Rule) {
        self.name = name
        self.rule = rule
    }

    /// How `auth status --explain` says the rule.
    public var ruleText: String {
        switch rule {
        case .option: return "--profile"
        case .environment: return "DOUCTL_PROFILE"
        case .directoryFile(let path): return "the file \(path)"
        case .url(let url): return "the URL rule (\(Self.origin(of: url)) is its api_base's origin)"
        case .defaultProfile: return "default_profile in config.json"
        case .builtIn: return "no rule matched: the built-in default"
        }
    }

    /// The scheme and authority of `url` ("https://api.example.com:8443").
    public static func origin(of url: String) -> String {
        guard let parts = URLParts(url) else { return url }
        let port = parts.port.map { ":\($0)" } ?? ""
        return parts.scheme + "://" + parts.host + port
    }

    /// The name of the file that picks a directory's profile.
    public static let fileName = ".douctl"

    /// The nearest `.douctl` at or above `directory` and the profile it names, or nil when
    /// there is none. A file another user could change, or a symbolic link, is refused (exit
    /// 3) as config.json is: it decides where credentials go.
    public static func directoryFile(from directory: String) throws(DouctlError) -> (path: String, profile: String)? {
        var current = directory.isEmpty ? "/" : directory
        while true {
            let candidate = (current == "/" ? "" : current) + "/" + fileName
            var info = stat()
            if lstat(candidate, &info) == 0 {
                return (candidate, try read(candidate, info: info))
            }
            if current == "/" || current == "." || current.isEmpty { return nil }
            current = FileIO.directoryName(current)
        }
    }

    private static func read(_ path: String, info: stat) throws(DouctlError) -> String {
        let type = UInt32(info.st_mode) & UInt32(S_IFMT)
        if type == UInt32(S_IFLNK) {
            throw .badConfig(path: path, detail: "it is a symbolic link; a .douctl file picks the profile and must be a plain file (replace the link with a copy)")
        }
        guard type == UInt32(S_IFREG) else {
            throw .badConfig(path: path, detail: "it is not a regular file (remove it, or write the profile's name into a file)")
        }
        if let problem = FileTrust.problem(path) {
            throw .badConfig(path: path, detail: "\(problem.reason), so another user could choose your profile; fix: \(problem.fix)")
        }
        guard info.st_size <= 4096 else {
            throw .badConfig(path: path, detail: "it is \(info.st_size) bytes; a .douctl file holds one profile name")
        }
        let bytes: [UInt8]
        do {
            bytes = try FileIO.readFile(path)
        } catch {
            throw .badConfig(path: path, detail: "cannot read it (\(error))")
        }
        // The first line, as .nvmrc: surrounding blanks and a comment line (#) ignored.
        let text = String(decoding: bytes, as: UTF8.self)
        let line = text.split(whereSeparator: { $0 == "\n" || $0 == "\r" })
            .map { $0.trimmingCharacters(in: " \t") }
            .first { !$0.isEmpty && !$0.hasPrefix("#") }
        guard let name = line else {
            throw .badConfig(path: path, detail: "it names no profile; write a profile's name in it (e.g. echo work > \(path))")
        }
        do {
            try ConfigFile.checkProfileName(name)
        } catch {
            throw .badConfig(path: path, detail: error.message)
        }
        return name
    }

    /// The working directory of the process, or nil when it cannot be read (removed).
    public static func currentDirectory() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension ConfigFile {
    /// The profile whose api_base has `url`'s origin (the URL rule): the default profile when
    /// it does, else the first configured profile that does, else the first preset; nil when
    /// none does.
    public func profileOwning(_ url: String) -> String? {
        guard url.hasPrefix("http://") || url.hasPrefix("https://") else { return nil }
        var candidates = [activeProfileName(requested: nil)]
        candidates += knownProfileNames.filter { $0 != candidates[0] }
        for name in candidates {
            guard let profile = try? resolve(name), profile.isConfigured || Preset.named(name) != nil else { continue }
            if profile.isOwnOrigin(url) { return name }
        }
        return nil
    }
}

extension ResolvedProfile {
    /// Why `credential` may not be stored for this profile: `expect_user` names another
    /// account (matched against the user id and the user name), or nothing says whose the
    /// login is. nil when the profile pins no account or the login is that account.
    public func expectedUserRefusal(_ credential: Credential, doing: String = "the login") -> DouctlError? {
        expectedUserRefusal(userID: credential.userID, userName: credential.userName, doing: doing)
    }

    /// The same check for a login that is no stored credential (Coding's cookie session).
    public func expectedUserRefusal(userID: String?, userName: String?, doing: String = "the login") -> DouctlError? {
        guard let expected = expectUser else { return nil }
        if userID == expected || userName == expected { return nil }
        let who = [userName, userID].compactMap { $0 }.map { "'\(TerminalText.escaped($0))'" }.first
        let fix = "log in as \(expected), or change the pin: douctl config set expect_user NAME --profile \(name)"
        guard let who else {
            return .authentication("\(doing) does not say whose it is, and profile '\(name)' expects '\(expected)' (expect_user); nothing was stored; \(fix)")
        }
        return .authentication("\(doing) is for \(who), but profile '\(name)' expects '\(expected)' (expect_user); nothing was stored; \(fix)")
    }
}
