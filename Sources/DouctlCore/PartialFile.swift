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
    private var fd: Int32
    private(set) var size: Int64
    /// The reply's ETag (strong) or Last-Modified: kept beside a partial that is kept, so
    /// resuming can send `If-Range` and never splice two versions of a file together.
    var validator: String?
    private var validatorPath: String { path + "-validator" }

    /// Opens (creating) the temp file and locks it. With `keep` false an old partial is
    /// emptied first; with `keep` true its bytes stay, to be resumed.
    init(path: String, keep: Bool) throws(DouctlError) {
        self.path = path
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o666)
        if fd < 0 { throw .localInput("cannot create \(path) (\(SystemError("open", path: path).reason))") }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            close(fd)
            throw .localInput("\(path) is being written by another download")
        }
        var info = stat()
        if fstat(fd, &info) != 0 || (info.st_mode & S_IFMT) != S_IFREG {
            close(fd)
            throw .localInput("\(path) is not a regular file")
        }
        size = Int64(info.st_size)
        if !keep { try truncate(to: 0) }
        lseek(fd, off_t(size), SEEK_SET)
    }

    deinit { closeFile() }

    /// The validator saved with this partial by an earlier run, if any.
    func savedValidator() -> String? {
        guard let bytes = try? FileIO.readFile(validatorPath), bytes.count < 1024 else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        // Bytes, not Characters: "\r\n" is one Character, which contains("\r") misses.
        return text.isEmpty || !HTTPSyntax.isFieldValue(text) ? nil : text
    }

    /// Keeps the partial for `--continue`: saves (or forgets) its validator, closes it.
    func keep() {
        if let validator, !validator.isEmpty {
            try? AtomicFile.write(Array(validator.utf8), to: validatorPath, mode: 0o644)
        } else {
            unlink(validatorPath)
        }
        closeFile()
    }

    func truncate(to length: Int64) throws(DouctlError) {
        if ftruncate(fd, off_t(length)) != 0 {
            throw .localInput("cannot write \(path) (\(SystemError("ftruncate", path: path).reason))")
        }
        lseek(fd, off_t(length), SEEK_SET)
        size = length
    }

    /// Appends; a failure (disk full) is returned, not thrown, so a C callback can report it.
    func append(_ bytes: UnsafeRawBufferPointer) -> DouctlError? {
        do {
            try FileIO.writeAll(fd, bytes)
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

    /// Flushes to disk and moves the file to `destination`. Without `overwrite`, an existing
    /// destination is never replaced: the hard link that creates the name fails instead.
    func commit(to destination: String, overwrite: Bool) throws(DouctlError) {
        if fsync(fd) != 0 { throw .localInput("cannot write \(path) (\(SystemError("fsync", path: path).reason))") }
        if overwrite {
            if rename(path, destination) != 0 {
                throw .localInput("cannot move the download to \(destination) (\(SystemError("rename", path: destination).reason))")
            }
        } else if link(path, destination) == 0 {
            unlink(path)
            unlink(validatorPath)
        } else {
            let error = SystemError("link", path: destination)
            if error.errno == EEXIST { throw Self.exists(destination) }
            // Filesystems without hard links: check, then rename (not atomic, still no silent clobber).
            guard !FileIO.fileExists(destination) else { throw Self.exists(destination) }
            if rename(path, destination) != 0 {
                throw .localInput("cannot move the download to \(destination) (\(SystemError("rename", path: destination).reason))")
            }
        }
        unlink(validatorPath)
        let directory = open(FileIO.directoryName(destination), O_RDONLY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
        closeFile()
    }

    /// Deletes the temp file (a failed download without --continue).
    func remove() {
        unlink(path)
        unlink(validatorPath)
        closeFile()
    }

    func closeFile() {
        guard fd >= 0 else { return }
        close(fd)
        fd = -1
    }

    static func exists(_ path: String) -> DouctlError {
        .localInput("\(path) already exists; not overwriting it (use --force to replace it)")
    }
}
