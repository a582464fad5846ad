#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system call: what we were doing, and `strerror(errno)`.
public struct SystemError: Error, Equatable, CustomStringConvertible, Sendable {
    public let operation: String
    public let path: String?
    public let errno: Int32

    public init(_ operation: String, path: String? = nil, errno: Int32 = currentErrno()) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }

    public var reason: String { String(cString: strerror(errno)) }

    public var description: String {
        if let path { return "\(operation) \(path): \(reason)" }
        return "\(operation): \(reason)"
    }

    /// True when the failure means "no such file or directory".
    public var isNotFound: Bool { errno == ENOENT }
}

/// `errno` of the calling thread.
public func currentErrno() -> Int32 {
    #if canImport(Glibc)
    return Glibc.errno
    #else
    return Darwin.errno
    #endif
}
