#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem

/// A download's temp file (`.NAME.HASH.douctl-part` beside the destination): opened under an
/// exclusive `flock`, so two downloads never write the same one, written by appending, then
/// either renamed into place or removed. The final name is only ever created by that rename.
final class PartialFile {
    let path: String
    /// The temp file, committed into place by the one file committer.
    private let staged: StagedFile
    private var fd: Int32 { staged.descriptor }
    private(set) var size: Int64
    /// The reply's strong ETag, or its Last-Modified when that is strong (`Download.validator`): kept beside a partial that is kept, so
    /// resuming can send `If-Range` and never splice two versions of a file together.
    var validator: String?
    /// The file at the destination whose bytes began this partial (`seed(from:)`).
    private(set) var seededFrom: String?
    private var validatorPath: String { path + "-validator" }

    /// Opens (creating) the temp file and locks it. With `keep` false an old partial is
    /// emptied first; with `keep` true its bytes stay, to be resumed.
    ///
    /// The name is predictable (so `--continue` finds it again), so it is never trusted: a new
    /// one is created with `O_EXCL | O_NOFOLLOW`, mode 0600; an existing one is used only when
    /// it is a regular file of ours with no other hard link. A symbolic link, a FIFO, a
    /// directory or a hard link planted there is refused, and left as it is.
    init(path: String, keep: Bool) throws(DouctlError) {
        self.path = path
        let fd = try Self.openOwnRegularFile(path)
        staged = StagedFile(adopting: fd, path: path)
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            staged.close()
            throw .localInput("\(path) is being written by another download")
        }
        var info = stat()
        if fstat(fd, &info) != 0 {
            staged.close()
            throw .localInput("cannot use \(path) (\(SystemError("fstat", path: path).reason))")
        }
        size = Int64(info.st_size)
        if !keep { try truncate(to: 0) }
        lseek(fd, off_t(size), SEEK_SET)
    }

    /// Creates `path` exclusively, or opens the one there if it is safe to write: a regular
    /// file, owned by us, with one link, and the same file after opening as before.
    static func openOwnRegularFile(_ path: String) throws(DouctlError) -> Int32 {
        for _ in 0..<3 {
            let created = open(EscapedBytes.cString(path), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if created >= 0 { return created }
            let error = SystemError("open", path: path)
            guard error.errno == EEXIST else {
                if error.errno == ELOOP { throw notFollowing(path) }
                throw .localInput("cannot create \(path) (\(error.reason))")
            }
            var before = stat()
            if lstat(EscapedBytes.cString(path), &before) != 0 {
                if currentErrno() == ENOENT { continue }  // removed meanwhile: create it
                throw .localInput("cannot use \(path) (\(SystemError("lstat", path: path).reason))")
            }
            try checkOwnRegularFile(before, path)
            // O_NONBLOCK: should a FIFO be swapped in after the lstat, opening it never waits.
            let existing = open(EscapedBytes.cString(path), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            if existing < 0 {
                let error = SystemError("open", path: path)
                if error.errno == ENOENT { continue }
                if error.errno == ELOOP { throw notFollowing(path) }
                throw .localInput("cannot use \(path) (\(error.reason))")
            }
            var after = stat()
            do throws(DouctlError) {
                guard fstat(existing, &after) == 0 else { throw .localInput("cannot use \(path) (\(SystemError("fstat", path: path).reason))") }
                try checkOwnRegularFile(after, path)
                guard after.st_dev == before.st_dev, after.st_ino == before.st_ino else {
                    throw .localInput("\(path) was replaced while douctl opened it; not using it (run again)")
                }
            } catch {
                close(existing)
                throw error
            }
            let flags = fcntl(existing, F_GETFL)
            if flags >= 0 { _ = fcntl(existing, F_SETFL, flags & ~O_NONBLOCK) }
            return existing
        }
        throw .localInput("cannot create \(path) (it keeps appearing and disappearing)")
    }

    private static func checkOwnRegularFile(_ info: stat, _ path: String) throws(DouctlError) {
        let type = info.st_mode & S_IFMT
        if type == S_IFLNK { throw notFollowing(path) }
        guard type == S_IFREG else {
            throw .localInput("\(path) is not a regular file; not using it as the download's temp file (remove it and run again)")
        }
        let owner = geteuid()
        guard info.st_uid == owner else {
            throw .localInput("\(path) is owned by another user (uid \(info.st_uid), not \(owner)); not using it (remove it and run again)")
        }
        guard info.st_nlink == 1 else {
            throw .localInput("\(path) has another hard link; not writing through it (remove it and run again)")
        }
    }

    private static func notFollowing(_ path: String) -> DouctlError {
        .localInput("\(path) is a symbolic link; not following it (remove it and run again)")
    }

    /// The mode a new file gets from `open(…, 0666)` under the process's umask: what the
    /// finished download is given (the temp file itself is 0600 until then).
    static let finishedMode: mode_t = {
        let mask = umask(0o077)
        umask(mask)
        return 0o666 & ~mask
    }()

    deinit { closeFile() }

    /// The validator saved with this partial by an earlier run, if any.
    func savedValidator() -> String? {
        // Read like the partial itself: never through a link, only a small file of ours.
        let fd = open(EscapedBytes.cString(validatorPath), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == geteuid(), info.st_size < 1024,
              let bytes = try? FileIO.readAll(fd) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        // Bytes, not Characters: "\r\n" is one Character, which contains("\r") misses.
        return text.isEmpty || !HTTPSyntax.isFieldValue(text) ? nil : text
    }

    /// Keeps the partial for `--continue`: saves (or forgets) its validator, closes it.
    func keep() {
        if let validator, !validator.isEmpty {
            try? AtomicFile.write(Array(validator.utf8), to: validatorPath, mode: 0o600)
        } else {
            unlink(EscapedBytes.cString(validatorPath))
        }
        closeFile()
    }

    /// Copies the file at `source` (the destination, with `--continue`) into this empty
    /// partial, so the download resumes from its size while `source` stays as it is until the
    /// finished file replaces it. `source` must be a regular file: a link is never followed.
    func seed(from source: String) throws(DouctlError) {
        let input = open(EscapedBytes.cString(source), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard input >= 0 else {
            let error = SystemError("open", path: source)
            if error.errno == ELOOP {
                throw .localInput("\(source) is a symbolic link; not resuming through it (remove it, or use --force without --continue)")
            }
            throw .localInput("cannot resume \(source) (\(error.reason))")
        }
        defer { close(input) }
        var info = stat()
        guard fstat(input, &info) == 0 else { throw .localInput("cannot resume \(source) (\(SystemError("fstat", path: source).reason))") }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw .localInput("\(source) is not a regular file; not resuming it")
        }
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count < 0 && currentErrno() == EINTR { continue }
            if count < 0 { throw .localInput("cannot read \(source) (\(SystemError("read", path: source).reason))") }
            if count == 0 { break }
            if let failure = buffer.withUnsafeBytes({ append(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }) { throw failure }
        }
        seededFrom = source
    }

    func truncate(to length: Int64) throws(DouctlError) {
        do { try staged.truncate(to: length) } catch {
            throw .localInput("cannot write \(path) (\(error.reason))")
        }
        size = length
    }

    /// Appends; a failure (disk full) is returned, not thrown, so a C callback can report it.
    func append(_ bytes: UnsafeRawBufferPointer) -> DouctlError? {
        do throws(SystemError) {
            try staged.append(bytes)
        } catch {
            return .localInput("cannot write \(path) (\(error))")
        }
        size += Int64(bytes.count)
        return nil
    }

    /// Feeds the bytes already in the file to `hasher` (a resumed download hashes them first),
    /// 256 KiB at a time.
    func hashExisting(into hasher: inout SHA256) throws(DouctlError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        var offset: Int64 = 0
        var prefix: [UInt8] = []
        while offset < size {
            let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, min($0.count, Int(size - offset)), off_t(offset)) }
            if count < 0 && currentErrno() == EINTR { continue }
            if count <= 0 { throw .localInput("cannot read \(path) (\(SystemError("read", path: path).reason))") }
            buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            if prefix.count < 16 { prefix += buffer[0..<min(count, 16 - prefix.count)] }
            offset += Int64(count)
        }
        return prefix
    }

    /// Flushes to disk and moves the file to `destination` (`StagedFile.commit`). Without
    /// `overwrite`, an existing destination is never replaced: the hard link that creates
    /// the name fails instead. rename and link act on the names themselves: a link at the
    /// destination is replaced (with --force) or refused, never written through.
    func commit(to destination: String, overwrite: Bool) throws(DouctlError) {
        do throws(StagedFile.CommitFailure) {
            try staged.commit(to: destination, mode: Self.finishedMode, replacing: overwrite)
        } catch {
            switch error {
            case .write(let failure): throw .localInput("cannot write \(path) (\(failure.reason))")
            case .exists: throw Self.exists(destination)
            case .rename(let failure): throw .localInput("cannot move the download to \(destination) (\(failure.reason))")
            }
        }
        unlink(EscapedBytes.cString(validatorPath))
    }

    /// Deletes the temp file (a failed download without --continue).
    func remove() {
        unlink(EscapedBytes.cString(path))
        unlink(EscapedBytes.cString(validatorPath))
        closeFile()
    }

    func closeFile() {
        staged.close()
    }

    static func exists(_ path: String) -> DouctlError {
        .localInput("\(path) already exists; not overwriting it (use --force to replace it)")
    }
}
