#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Starting helper programs (the web browser) without Foundation's Process.
public enum Subprocess {
    /// Starts `arguments[0]` (looked up in PATH) with stdin/stdout/stderr on /dev/null and
    /// does not wait for it. Returns its pid, or nil when it could not start.
    public static func spawnDetached(_ arguments: [String]) -> pid_t? {
        guard let program = arguments.first else { return nil }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd in Int32(0)...2 {
            posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        var cArguments: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        cArguments.append(nil)
        defer { cArguments.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, program, &actions, nil, cArguments, environ)
        return result == 0 ? pid : nil
    }

    /// Collects finished children started by `spawnDetached`, without blocking.
    public static func reapFinished() {
        var status: Int32 = 0
        while waitpid(-1, &status, WNOHANG) > 0 {}
    }

    /// True when `name` is an executable file in one of PATH's directories.
    public static func isOnPath(_ name: String, path: String?) -> Bool {
        guard let path else { return false }
        return path.split(separator: ":").contains { access("\($0)/\(name)", X_OK) == 0 }
    }
}
