#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a path the user names for output (`api -o`, `download -o`) is, decided in one place.
///
/// A regular file (or no file yet) is replaced atomically: a temp file beside it, renamed
/// over it. Anything else that exists — a character or block device (`/dev/null`,
/// `/dev/tty`), a FIFO (`mkfifo`, `>(process substitution)`), a socket, an open descriptor
/// named as `/dev/stdout`, `/dev/fd/N` or `/proc/self/fd/N` — is opened and written into as
/// it is, with no temp file and no rename, as `curl -o` does. Renaming over such a path
/// replaced the system's `/dev/null` with a regular file when run as root.
///
/// Links: the path's symbolic links are followed to decide which case applies. A link to a
/// device, FIFO or descriptor is written through (that is what `/dev/stdout` is); a link to a
/// regular file is itself replaced by the new file, and the file it pointed to is never
/// written (the rename acts on the name the user gave).
public enum OutputPath {
    /// Replace atomically through a temp file.
    case replaceFile
    /// Write into this descriptor (owned by the caller, close-on-exec); `description` says
    /// what it is, for messages.
    case stream(fd: Int32, description: String)

    /// Decides what `path` is and, for a stream, opens it. Throws when an existing
    /// non-regular path cannot be opened for writing (EACCES, ENXIO: a socket with no
    /// reader), with the system's reason.
    public static func resolve(_ path: String) throws(SystemError) -> OutputPath {
        if let inherited = inheritedDescriptor(path) {
            let copy = fcntl(inherited, F_DUPFD_CLOEXEC, 3)
            guard copy >= 0 else { throw SystemError("open", path: path) }
            return .stream(fd: copy, description: path)
        }
        var info = stat()
        // stat follows links: /dev/stdout → /proc/self/fd/1 → the pipe.
        guard stat(EscapedBytes.cString(path), &info) == 0 else { return .replaceFile }
        let kind = info.st_mode & S_IFMT
        if kind == S_IFREG || kind == S_IFDIR { return .replaceFile }
        let fd = open(EscapedBytes.cString(path), O_WRONLY | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { throw SystemError("open", path: path) }
        let description: String
        switch kind {
        case S_IFCHR: description = "a character device"
        case S_IFBLK: description = "a block device"
        case S_IFIFO: description = "a FIFO"
        case S_IFSOCK: description = "a socket"
        default: description = "a special file"
        }
        return .stream(fd: fd, description: description)
    }

    /// The open descriptor `path` names directly: `/dev/stdout` (1), `/dev/stderr` (2),
    /// `/dev/fd/N`, `/proc/self/fd/N`. Duplicating it reaches what the shell gave us even
    /// where opening the name again cannot (a socket; a pipe's end after `<&-` games).
    public static func inheritedDescriptor(_ path: String) -> Int32? {
        let number: Substring
        switch path {
        case "/dev/stdout": return isOpen(1) ? 1 : nil
        case "/dev/stderr": return isOpen(2) ? 2 : nil
        case _ where path.hasPrefix("/dev/fd/"): number = path.dropFirst("/dev/fd/".count)
        case _ where path.hasPrefix("/proc/self/fd/"): number = path.dropFirst("/proc/self/fd/".count)
        default: return nil
        }
        guard !number.isEmpty, number.utf8.count <= 9, number.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let fd = Int32(number), isOpen(fd) else { return nil }
        // Only a descriptor opened for writing.
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, flags & O_ACCMODE != O_RDONLY else { return nil }
        return fd
    }

    /// Whether `path` is a name for this process's standard output (`/dev/stdout`,
    /// `/dev/fd/1`, `/proc/self/fd/1`), which a command may treat as `-`.
    public static func namesStandardOutput(_ path: String) -> Bool {
        path == "/dev/stdout" || path == "/dev/fd/1" || path == "/proc/self/fd/1"
    }

    private static func isOpen(_ fd: Int32) -> Bool {
        fcntl(fd, F_GETFD) >= 0
    }
}
