#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one file committer: a file written under a temporary name beside its target, then
/// committed into place — its mode set, fsynced, renamed over the target (or linked to it
/// where an existing file must never be replaced), the directory fsynced — or discarded.
/// Readers of the target see the old bytes or the new ones, never a mix, and a name is
/// never written through (rename and link act on names). `AtomicFile` (config and
/// credentials), `api -o` (`OutputFile`) and `download` (`PartialFile`) all commit here.
public final class StagedFile {
    /// Why a commit failed, by step, so each user words it as before.
    public enum CommitFailure: Error, Sendable {
        /// Setting the mode or fsyncing the temporary file (nothing was moved).
        case write(SystemError)
        /// Without replacing: the target exists (nothing was moved).
        case exists
        /// Renaming into place failed (nothing was moved).
        case rename(SystemError)
    }

    /// The temporary file's path.
    public let path: String
    /// Its descriptor, -1 once committed, closed or discarded.
    public private(set) var descriptor: Int32
    private var committed = false

    /// Creates `.NAME.tmp-PID-RANDOM` beside `target`, exclusively and never through a
    /// link, with `mode` (0600 by default: nobody else reads it before it is complete).
    public init(beside target: String, mode: mode_t = 0o600) throws(SystemError) {
        var random = SystemRandomNumberGenerator()
        let suffix = String(random.next() & 0xFFFF_FFFF, radix: 16)
        path = "\(FileIO.directoryName(target))/\(Self.temporaryPrefix(of: target))\(getpid())-\(suffix)"
        descriptor = open(EscapedBytes.cString(path), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        if descriptor < 0 { throw SystemError("create", path: path) }
    }

    /// Takes over `descriptor`, a temporary file at `path` its owner opened and checked
    /// itself (a download's resumable `.douctl-part`).
    public init(adopting descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit { close() }

    /// The prefix of every temp file made beside `target`.
    public static func temporaryPrefix(of target: String) -> String {
        ".\(FileIO.baseName(target)).tmp-"
    }

    /// Appends `bytes` at the file's offset.
    public func append(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        guard descriptor >= 0 else { throw SystemError("write", path: path, errno: EBADF) }
        do { try FileIO.writeAll(descriptor, bytes) } catch let error as SystemError { throw error } catch {
            throw SystemError("write", path: path, errno: EIO)
        }
    }

    public func append(_ bytes: [UInt8]) throws(SystemError) {
        var failure: SystemError?
        bytes.withUnsafeBytes { buffer in
            do throws(SystemError) { try append(buffer) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Cuts the file to `length` and writes on from there.
    public func truncate(to length: Int64) throws(SystemError) {
        if ftruncate(descriptor, off_t(length)) != 0 { throw SystemError("ftruncate", path: path) }
        if lseek(descriptor, off_t(length), SEEK_SET) < 0 { throw SystemError("lseek", path: path) }
    }

    /// Gives the file `mode`, fsyncs and closes it, and moves it to `target`: by rename
    /// (replacing what is there) or, with `replacing` false, by a hard link that fails when
    /// the target exists (where links are not supported: a check, then rename). Then the
    /// directory is fsynced. `holdBeforeRename` (seconds, at most 60) pauses just before the
    /// move, so a test can kill the process there. On failure nothing was moved; the
    /// temporary file stays for the caller to `discard` (or keep).
    public func commit(to target: String, mode: mode_t, replacing: Bool = true, holdBeforeRename: Double = 0) throws(CommitFailure) {
        guard descriptor >= 0 else { throw .write(SystemError("write", path: path, errno: EBADF)) }
        if fchmod(descriptor, mode) != 0 { throw .write(SystemError("chmod", path: path)) }
        if fsync(descriptor) != 0 { throw .write(SystemError("fsync", path: path)) }
        close()
        if holdBeforeRename > 0 { usleep(useconds_t(min(holdBeforeRename, 60) * 1_000_000)) }
        if replacing {
            try rename(to: target)
        } else if link(EscapedBytes.cString(path), EscapedBytes.cString(target)) == 0 {
            unlink(EscapedBytes.cString(path))
        } else {
            if currentErrno() == EEXIST || FileIO.nameExists(target) { throw .exists }
            try rename(to: target)
        }
        committed = true
        let directory = open(EscapedBytes.cString(FileIO.directoryName(target)), O_RDONLY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            closeDescriptor(directory)
        }
    }

    private func rename(to target: String) throws(CommitFailure) {
        if renameFile(path, target) != 0 {
            throw .rename(SystemError("rename", path: target))
        }
    }

    /// Closes the file, keeping it (a download kept to be resumed).
    public func close() {
        guard descriptor >= 0 else { return }
        closeDescriptor(descriptor)
        descriptor = -1
    }

    /// Closes and removes the temporary file, unless it was committed. Idempotent.
    public func discard() {
        close()
        if !committed { unlink(EscapedBytes.cString(path)) }
        committed = true
    }
}

private func closeDescriptor(_ descriptor: Int32) { _ = close(descriptor) }

private func renameFile(_ from: String, _ to: String) -> Int32 { rename(EscapedBytes.cString(from), EscapedBytes.cString(to)) }
