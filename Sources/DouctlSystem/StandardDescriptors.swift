#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Descriptors 0, 1 and 2 as douctl's first act: any that is closed (`>&-`, `2>&-`, a
/// careless supervisor) is filled with /dev/null, as OpenSSH does. Otherwise the next file
/// or socket douctl opens would take its number, and the JSON and error lines meant for
/// stdout and stderr would land inside a downloaded file or a request.
///
/// /dev/null is opened read-only, so writing to a stdout that was closed still fails (EBADF),
/// as it does for coreutils: douctl reports a write error instead of losing its output
/// and exiting 0.
public enum StandardDescriptors {
    /// Returns false when a closed descriptor could not be filled (no /dev/null).
    @discardableResult
    public static func ensureOpen() -> Bool {
        for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) == -1 && currentErrno() == EBADF {
            // open returns the lowest free number: this one, since those below are open.
            let opened = open("/dev/null", O_RDONLY)
            if opened < 0 { return false }
            if opened != fd {
                _ = dup2(opened, fd)
                close(opened)
            }
        }
        return true
    }
}
