#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Small, allocation-conscious helpers over file descriptors.
public enum FileIO {
    /// A pipe whose two ends are close-on-exec from the moment they exist, so a child that
    /// another thread spawns meanwhile never inherits them (it would hold the write end
    /// open: the reader never sees the end). A child meant to have an end gets it by dup2,
    /// which clears the flag on the copy. pipe2(2) where the C library has it (glibc,
    /// musl, the BSDs), looked up at run time since Swift's Glibc module hides GNU names;
    /// otherwise pipe(2) then fcntl, which leaves the short window pipe2 closes.
    public static func makePipe() throws(SystemError) -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        if let pipe2 = Self.pipe2 {
            guard pipe2(&ends, O_CLOEXEC) == 0 else { throw SystemError("pipe") }
        } else {
            guard pipe(&ends) == 0 else { throw SystemError("pipe") }
            for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        }
        return (ends[0], ends[1])
    }

    private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
    private static let pipe2: Pipe2? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pipe2").map { unsafeBitCast($0, to: Pipe2.self) }

    /// Writes every byte, retrying on short writes and EINTR.
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws {
        guard var base = bytes.baseAddress else { return }
        var remaining = bytes.count
        while remaining > 0 {
            let written = write(fd, base, remaining)
            if written < 0 {
                if currentErrno() == EINTR { continue }
                throw SystemError("write")
            }
            remaining -= written
            base = base.advanced(by: written)
        }
    }

    public static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { (buffer) in try writeAll(fd, buffer) }
    }

    public static func writeAll(_ fd: Int32, _ text: String) throws {
        var text = text
        try text.withUTF8 { (buffer) in try writeAll(fd, UnsafeRawBufferPointer(buffer)) }
    }

    /// Reads everything until end of file.
    ///
    /// Reads into one scratch buffer and appends what arrived: appending a run of zeros to read
    /// into instead costs a generic call per byte in unoptimized builds, which under
    /// ThreadSanitizer turned each credentials read of a parallel upload into seconds.
    public static func readAll(_ fd: Int32, sizeHint: Int = 0) throws -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(max(sizeHint, 4096))
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
        defer { chunk.deallocate() }
        while true {
            let got = read(fd, chunk.baseAddress, chunk.count)
            if got < 0 {
                if currentErrno() == EINTR { continue }
                throw SystemError("read")
            }
            if got == 0 { return result }
            result.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[..<got]))
        }
    }

    /// Reads `fd` to its end, waiting at most 0.1 s at a time so that `cancellation`
    /// (Ctrl-C, `--max-time`) is seen while a slow writer keeps a pipe open. Nil when it
    /// was requested before the end.
    public static func readAll(_ fd: Int32, stoppingAt cancellation: Cancellation) throws -> [UInt8]? {
        var result: [UInt8] = []
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
        defer { chunk.deallocate() }
        while true {
            guard let got = try readSome(fd, into: chunk, stoppingAt: cancellation) else { return nil }
            if got == 0 { return result }
            result.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[..<got]))
        }
    }

    /// One read(2) of what is there (0 at the end), after waiting for it in steps of 0.1 s
    /// while `cancellation` is not requested; nil once it is.
    public static func readSome(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, stoppingAt cancellation: Cancellation) throws -> Int? {
        while true {
            if cancellation.isRequested { return nil }
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let polled = poll(&ready, 1, 100)
            if polled < 0 {
                if currentErrno() == EINTR { continue }
                throw SystemError("poll")
            }
            if polled == 0 { continue }
            let got = read(fd, buffer.baseAddress, buffer.count)
            if got < 0 {
                let error = currentErrno()
                if error == EINTR || error == EAGAIN { continue }
                throw SystemError("read")
            }
            return got
        }
    }

    /// Reads a whole file. A missing file is a `SystemError` whose `isNotFound` is true.
    public static func readFile(_ path: String) throws -> [UInt8] {
        let fd = open(EscapedBytes.cString(path), O_RDONLY | O_CLOEXEC)
        if fd < 0 { throw SystemError("open", path: path) }
        defer { close(fd) }
        var info = stat()
        let size = fstat(fd, &info) == 0 ? Int(info.st_size) : 0
        do {
            return try readAll(fd, sizeHint: size + 1)
        } catch let error as SystemError {
            throw SystemError("read", path: path, errno: error.errno)
        }
    }

    /// Facts about a path without following nothing fancy: `stat(2)`.
    public static func status(_ path: String) throws -> FileStatus {
        var info = stat()
        if stat(EscapedBytes.cString(path), &info) != 0 { throw SystemError("stat", path: path) }
        return FileStatus(info)
    }

    /// Facts about the path itself, not what a symbolic link points to: `lstat(2)`.
    public static func linkStatus(_ path: String) throws -> FileStatus {
        var info = stat()
        if lstat(EscapedBytes.cString(path), &info) != 0 { throw SystemError("lstat", path: path) }
        return FileStatus(info)
    }

    public static func fileExists(_ path: String) -> Bool {
        var info = stat()
        return stat(EscapedBytes.cString(path), &info) == 0
    }

    /// Whether anything has this name, a dangling symbolic link included (`lstat(2)`).
    public static func nameExists(_ path: String) -> Bool {
        var info = stat()
        return lstat(EscapedBytes.cString(path), &info) == 0
    }

    /// Creates `path` and its parents with `mode` where missing; tightens the last one to `mode`.
    public static func makeDirectory(_ path: String, mode: mode_t) throws {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(EscapedBytes.cString(prefix), mode) != 0 && currentErrno() != EEXIST {
                throw SystemError("mkdir", path: prefix)
            }
        }
        var info = stat()
        if stat(EscapedBytes.cString(path), &info) == 0, info.st_mode & 0o777 != mode {
            if chmod(EscapedBytes.cString(path), mode) != 0 { throw SystemError("chmod", path: path) }
        }
    }

    public static func removeFile(_ path: String) throws {
        if unlink(EscapedBytes.cString(path)) != 0 && currentErrno() != ENOENT { throw SystemError("unlink", path: path) }
    }

    /// The directory part of a path ("." when there is none).
    public static func directoryName(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }

    /// The last component of a path.
    public static func baseName(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }
}

/// The parts of `struct stat` douctl cares about.
public struct FileStatus: Sendable, Equatable {
    public let size: Int64
    public let mode: UInt32
    public let isRegularFile: Bool
    public let isDirectory: Bool
    public let isSymbolicLink: Bool
    /// The owner's user id.
    public let ownerID: UInt32

    init(_ info: stat) {
        size = Int64(info.st_size)
        mode = UInt32(info.st_mode) & 0o7777
        isRegularFile = (info.st_mode & S_IFMT) == S_IFREG
        isDirectory = (info.st_mode & S_IFMT) == S_IFDIR
        isSymbolicLink = (info.st_mode & S_IFMT) == S_IFLNK
        ownerID = UInt32(info.st_uid)
    }
}

extension FileIO {
    /// The names in a directory (not "." or ".."), in no particular order.
    public static func listDirectory(_ path: String) throws -> [String] {
        guard let handle = opendir(EscapedBytes.cString(path)) else { throw SystemError("opendir", path: path) }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { EscapedBytes.string(Array($0.prefix { $0 != 0 })) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
