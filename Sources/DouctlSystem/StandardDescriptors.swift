#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Descriptors 0, 1 and 2 as douctl's first act: any that is closed (`>&-`, `2>&-`, a
/// careless supervisor) is filled with /dev/null, as OpenSSH does. Otherwise the next file
/// or socket douctl opens would take its number, and the JSON and error lines meant for
/// stdout and stderr would land inside a downloaded file or a request.
///
/// /dev/null is opened read-only, so writing to a stdout that was closed still fails (EBADF),
/// as it does for coreutils: douctl reports a write error instead of losing its output
/// and exiting 0.
///
/// Which of them were closed is remembered: a body that must come from standard input
/// (`api --input -`, `-F KEY=@-`, `--attach KEY=-`, `shuo post -`) is then refused, not
/// read from /dev/null and sent empty.
public enum StandardDescriptors {
    /// Bit `fd` set: descriptor `fd` (0, 1 or 2) was closed when douctl started.
    private static let closedBits = Atomic<Int>(0)

    /// True when descriptor `fd` (0, 1 or 2) was closed when `ensureOpen` ran, and now
    /// holds /dev/null.
    public static func wasClosed(_ fd: Int32) -> Bool {
        (0...2).contains(fd) && closedBits.load(ordering: .relaxed) & (1 << Int(fd)) != 0
    }

    /// Returns false when a closed descriptor could not be filled (no /dev/null).
    @discardableResult
    public static func ensureOpen() -> Bool {
        for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) == -1 && currentErrno() == EBADF {
            // open returns the lowest free number: this one, since those below are open.
            let opened = open("/dev/null", O_RDONLY)
            if opened < 0 { return false }
            closedBits.bitwiseOr(1 << Int(fd), ordering: .relaxed)
            if opened != fd {
                _ = dup2(opened, fd)
                close(opened)
            }
        }
        return true
    }
}
