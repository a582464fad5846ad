#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Replaces a file so readers see either the old bytes or the new ones, never a mix:
/// write a temp file in the same directory (created with `mode`), fsync it, rename it over
/// the target, fsync the directory. A crash at any point leaves the old file intact.
public enum AtomicFile {
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) throws {
        let directory = FileIO.directoryName(path)
        let name = FileIO.baseName(path)
        var random = SystemRandomNumberGenerator()
        let suffix = String(random.next() & 0xFFFF_FFFF, radix: 16)
        let temporary = "\(directory)/.\(name).tmp-\(getpid())-\(suffix)"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        if fd < 0 { throw SystemError("create", path: temporary) }
        var failure: SystemError?
        do {
            try FileIO.writeAll(fd, bytes)
            if fchmod(fd, mode) != 0 { throw SystemError("chmod", path: temporary) }
            if fsync(fd) != 0 { throw SystemError("fsync", path: temporary) }
        } catch let error as SystemError {
            failure = error
        } catch {
            failure = SystemError("write", path: temporary, errno: EIO)
        }
        close(fd)
        if let failure {
            unlink(temporary)
            throw failure
        }
        holdBeforeRenameForTests()
        if rename(temporary, path) != 0 {
            let error = SystemError("rename", path: path)
            unlink(temporary)
            throw error
        }
        let directoryFD = open(directory, O_RDONLY | O_CLOEXEC)
        if directoryFD >= 0 {
            fsync(directoryFD)
            close(directoryFD)
        }
    }
}

/// Test hook: with DOUCTL_TEST_HOLD_BEFORE_RENAME=SECONDS the writer pauses after the temp
/// file is complete and before the rename, so a test can kill the process exactly there.
private func holdBeforeRenameForTests() {
    guard let value = getenv("DOUCTL_TEST_HOLD_BEFORE_RENAME"), let seconds = Double(String(cString: value)), seconds > 0 else { return }
    usleep(useconds_t(min(seconds, 60) * 1_000_000))
}

/// An exclusive advisory lock (`flock`) on a lock file, held until `unlock()` or deinit.
/// Every douctl process that reads-modifies-writes a shared file takes it first.
public final class FileLock: Sendable {
    private let descriptor: LockedValue<Int32>

    /// Blocks until the lock is ours (or, with `wait` false, throws EWOULDBLOCK when another
    /// holder has it). Creates the lock file (0600) when missing.
    public init(path: String, wait: Bool = true) throws {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if fd < 0 { throw SystemError("open", path: path) }
        while flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) != 0 {
            if currentErrno() == EINTR { continue }
            let error = SystemError("flock", path: path)
            close(fd)
            throw error
        }
        descriptor = LockedValue(fd)
    }

    public func unlock() {
        descriptor.withLock { fd in
            guard fd >= 0 else { return }
            flock(fd, LOCK_UN)
            close(fd)
            fd = -1
        }
    }

    deinit { unlock() }
}
