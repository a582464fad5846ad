#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Replaces a file so readers see either the old bytes or the new ones, never a mix:
/// write a temp file in the same directory (created with `mode`), fsync it, rename it over
/// the target, fsync the directory. A crash at any point leaves the old file intact.
///
/// `holdBeforeRename` (seconds, at most 60) pauses after the temp file is complete and before
/// the rename, so a test can kill the process exactly there (DOUCTL_TEST_HOLD_BEFORE_RENAME,
/// read from the run's environment by `ConfigDirectory.locate`); 0 in every other use.
public enum AtomicFile {
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600, holdBeforeRename: Double = 0) throws {
        try Reservation(for: path, reserving: 0, mode: mode, holdBeforeRename: holdBeforeRename).commit(bytes)
    }

    /// The prefix of every temp file `write` and `Reservation` make for `path`.
    static func temporaryPrefix(of path: String) -> String {
        StagedFile.temporaryPrefix(of: path)
    }

    /// Removes the temp files that writers of `path` left behind when they were killed
    /// (`kill -9`, a power cut) between creating and renaming them. Call it only while holding
    /// the lock every writer of `path` holds: then no temp file there belongs to a live writer.
    /// Only regular files are removed; returns how many.
    @discardableResult
    public static func removeAbandonedTemporaries(of path: String) -> Int {
        let directory = FileIO.directoryName(path)
        let prefix = temporaryPrefix(of: path)
        guard let names = try? FileIO.listDirectory(directory) else { return 0 }
        var removed = 0
        for name in names where name.hasPrefix(prefix) {
            let candidate = directory + "/" + name
            guard let status = try? FileIO.linkStatus(candidate), status.isRegularFile,
                  status.ownerID == UInt32(geteuid()) else { continue }
            if unlink(EscapedBytes.cString(candidate)) == 0 { removed += 1 }
        }
        return removed
    }

    /// A temp file for replacing `path`, created (exclusively, `mode`) and filled with
    /// `reserving` bytes, fsynced, *before* its contents are known: a full disk or a read-only
    /// directory fails here, before the work whose result must be stored (spending a
    /// single-use refresh token) is done. `commit` overwrites the reserved blocks in place,
    /// trims the rest and renames; on a file system that allocates in place (ext4, xfs,
    /// tmpfs) that needs no new space up to the reserved size. Removed unless committed.
    public final class Reservation {
        public let path: String
        public let temporary: String
        private let mode: mode_t
        private let holdBeforeRename: Double
        private let staged: StagedFile
        public let reserved: Int

        public init(for path: String, reserving bytes: Int, mode: mode_t = 0o600, holdBeforeRename: Double = 0) throws {
            self.path = path
            self.mode = mode
            self.holdBeforeRename = holdBeforeRename
            reserved = max(0, bytes)
            staged = try StagedFile(beside: path, mode: mode)
            temporary = staged.path
            guard reserved > 0 else { return }
            let zeros = [UInt8](repeating: 0, count: min(reserved, 64 * 1024))
            var written = 0
            do throws(SystemError) {
                while written < reserved {
                    let count = min(zeros.count, reserved - written)
                    try staged.append(count == zeros.count ? zeros : Array(zeros[0..<count]))
                    written += count
                }
                if fsync(staged.descriptor) != 0 { throw SystemError("fsync", path: temporary) }
            } catch {
                staged.discard()
                throw SystemError(error.operation, path: temporary, errno: error.errno)
            }
        }

        deinit { discard() }

        /// Writes `bytes` over the reservation, fsyncs, renames over `path`, fsyncs the
        /// directory (`StagedFile.commit`).
        public func commit(_ bytes: [UInt8]) throws {
            do throws(SystemError) {
                guard staged.descriptor >= 0 else { throw SystemError("write", path: temporary, errno: EBADF) }
                if lseek(staged.descriptor, 0, SEEK_SET) != 0 { throw SystemError("lseek", path: temporary) }
                try staged.append(bytes)
                try staged.truncate(to: Int64(bytes.count))
            } catch {
                staged.discard()
                throw SystemError(error.operation, path: temporary, errno: error.errno)
            }
            do throws(StagedFile.CommitFailure) {
                try staged.commit(to: path, mode: mode, holdBeforeRename: holdBeforeRename)
            } catch {
                staged.discard()
                switch error {
                case .write(let failure), .rename(let failure): throw failure
                case .exists: throw SystemError("rename", path: path, errno: EEXIST)
                }
            }
        }

        /// Removes the temp file (nothing to store after all). Idempotent.
        public func discard() {
            staged.discard()
        }
    }
}

/// An exclusive advisory lock (`flock`) on a lock file, held until `unlock()` or deinit.
/// Every douctl process that reads-modifies-writes a shared file takes it first.
public final class FileLock: Sendable {
    private let descriptor: LockedValue<Int32>

    /// Blocks until the lock is ours (or, with `wait` false, throws EWOULDBLOCK when another
    /// holder has it). Creates the lock file (0600) when missing. A symbolic link at `path`
    /// is never followed (ELOOP): whoever planted it does not choose the file douctl, perhaps
    /// as root, creates or opens.
    public init(path: String, wait: Bool = true) throws {
        let fd = open(EscapedBytes.cString(path), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
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
