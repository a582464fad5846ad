#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Starting helper programs (the web browser) without Foundation's Process.
public enum Subprocess {
    /// Starts `arguments[0]` (looked up in PATH) with stdin/stdout/stderr on /dev/null and
    /// does not wait for it. Returns its pid, or nil when it could not start.
    /// `environment` ("NAME=value" entries), when given, replaces this process's.
    public static func spawnDetached(_ arguments: [String], environment: [String]? = nil) -> pid_t? {
        guard let program = arguments.first else { return nil }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd in Int32(0)...2 {
            posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        closeInherited(&actions)
        var cArguments: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        cArguments.append(nil)
        defer { cArguments.forEach { free($0) } }
        var pid: pid_t = 0
        guard let environment else {
            let result = posix_spawnp(&pid, program, &actions, nil, cArguments, environ)
            return result == 0 ? started(pid) : nil
        }
        var cEnvironment: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) }
        cEnvironment.append(nil)
        defer { cEnvironment.forEach { free($0) } }
        let result = posix_spawnp(&pid, program, &actions, nil, cArguments, cEnvironment)
        return result == 0 ? started(pid) : nil
    }

    /// A child keeps stdin, stdout and stderr and nothing else of ours: a descriptor some
    /// other part of this process opened without close-on-exec (a host's, or one a library
    /// leaves open for a moment) would otherwise live as long as the child does, and whoever
    /// waits for its end (a pipe's reader, a process monitor's socket) would wait as long.
    static func closeInherited(_ actions: inout posix_spawn_file_actions_t) {
        _ = addCloseFrom?(&actions, 3)
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), looked up at run
    /// time since the Swift module does not declare it; nil on an older C library.
    private static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// The children `spawnDetached` started and nobody has collected yet.
    private static let detached = LockedValue<[pid_t]>([])

    private static func started(_ pid: pid_t) -> pid_t {
        detached.withLock { $0.append(pid) }
        return pid
    }

    /// Collects finished children started by `spawnDetached`, without blocking. Only those:
    /// `waitpid(-1)` would also take a child some other part of this process waits for (a
    /// test runner's, when the commands run in process) and leave it waiting forever.
    public static func reapFinished() {
        detached.withLock { pids in
            pids.removeAll { pid in
                var status: Int32 = 0
                return waitpid(pid, &status, WNOHANG) != 0
            }
        }
    }

    /// True when `name` is an executable file in one of PATH's directories.
    public static func isOnPath(_ name: String, path: String?) -> Bool {
        guard let path else { return false }
        return path.split(separator: ":").contains { access("\($0)/\(name)", X_OK) == 0 }
    }
}

extension Subprocess {
    /// Runs `arguments` (argv[0] looked up in PATH) with `input` on stdin and stderr passed
    /// through; returns what it printed on stdout. Throws when it cannot start or exits
    /// non-zero. For small exchanges (a signing helper): input is written before output is
    /// read.
    public static func run(_ arguments: [String], input: [UInt8], environment: [String: String]) throws(SystemError) -> [UInt8] {
        guard let program = arguments.first else { throw SystemError("spawn", errno: EINVAL) }
        // Close-on-exec: helpers run from several threads at once (parallel uploads and
        // walks sign every request), and one that inherited another's stdin pipe kept it
        // from ever ending: two such helpers waited for each other for good.
        let toChild = try FileIO.makePipe()
        let fromChild: (read: Int32, write: Int32)
        do { fromChild = try FileIO.makePipe() } catch {
            close(toChild.read); close(toChild.write)
            throw error
        }
        // The child gets its ends as stdin and stdout; exec closes the originals.
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild.read, 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild.write, 1)
        closeInherited(&actions)
        var cArguments: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        cArguments.append(nil)
        var cEnvironment: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") }
        cEnvironment.append(nil)
        defer {
            cArguments.forEach { free($0) }
            cEnvironment.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, program, &actions, nil, cArguments, cEnvironment)
        close(toChild.read)
        close(fromChild.write)
        guard spawned == 0 else {
            close(toChild.write); close(fromChild.read)
            throw SystemError("spawn \(program)", errno: spawned)
        }
        _ = try? FileIO.writeAll(toChild.write, input)
        close(toChild.write)
        let output = (try? FileIO.readAll(fromChild.read)) ?? []
        close(fromChild.read)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && currentErrno() == EINTR {}
        let exited = status & 0x7f == 0
        guard exited && (status >> 8) & 0xff == 0 else {
            throw SystemError("\(program) exited with status \(exited ? (status >> 8) & 0xff : 128 + (status & 0x7f))", errno: 0)
        }
        return output
    }
}
