#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether another local user could change a file douctl takes orders from (config.json,
/// credentials.json, a cookie jar, a CA bundle a profile names): the one place that decides,
/// judged as ssh judges `~/.ssh/config` ("Bad owner or permissions").
///
/// A file is trusted when it, and every directory above it (above its name, and above what a
/// symbolic link at that name points to), is owned by the user running douctl or by root,
/// and none of them is writable by group or others — except a directory with the sticky bit
/// (`/tmp`), where others may create names but not rename or replace the ones someone else owns.
public enum FileTrust {
    /// Why another user could change a file, and the command that fixes it.
    public struct Problem: Sendable, Equatable {
        /// "it is writable by other users (mode 666)", "its directory /x is owned by another user (uid 7, not 0)"
        public let reason: String
        /// "chmod go-w /x/config.json", "chown 0 /x"
        public let fix: String
    }

    /// Why another user could change `path`, or nil when it is trusted or does not exist
    /// (douctl then creates it itself, 0600 in a 0700 directory).
    public static func problem(_ path: String, user: UInt32 = UInt32(geteuid())) -> Problem? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        if let problem = problem(of: info, at: path, user: user, isDirectory: false) { return problem }
        // The directories holding the name (whoever can write there can replace a link or
        // the file) and, when it is a symbolic link, those holding what it points to.
        let starts = [realPath(FileIO.directoryName(path)), realPath(path).map(FileIO.directoryName)].compactMap { $0 }
        var checked = Set<String>()
        for start in starts {
            var directory = start
            while checked.insert(directory).inserted {
                var status = stat()
                guard stat(directory, &status) == 0 else { break }
                if let problem = problem(of: status, at: directory, user: user, isDirectory: true) {
                    return problem
                }
                if directory == "/" || directory == "." { break }
                directory = FileIO.directoryName(directory)
            }
        }
        return nil
    }

    private static func problem(of info: stat, at path: String, user: UInt32, isDirectory: Bool) -> Problem? {
        let what = isDirectory ? "its directory \(path)" : "it"
        let owner = UInt32(info.st_uid)
        if owner != user && owner != 0 {
            return Problem(reason: "\(what) is owned by another user (uid \(owner), not \(user))", fix: "chown \(user) \(path)")
        }
        let mode = UInt32(info.st_mode) & 0o7777
        let sticky = isDirectory && mode & UInt32(S_ISVTX) != 0
        if mode & 0o022 != 0 && !sticky {
            let who = mode & 0o002 != 0 ? "other users" : "its group"
            return Problem(reason: "\(what) is writable by \(who) (mode \(String(mode & 0o777, radix: 8)))", fix: "chmod go-w \(path)")
        }
        return nil
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
