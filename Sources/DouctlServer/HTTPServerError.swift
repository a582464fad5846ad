#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Everything the server, a request body or a multipart reader can fail with. `Equatable` so tests
/// and handlers compare values instead of matching strings.
public enum HTTPServerError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The body (or a `readAll` result) is larger than the limit that applies to it.
    case bodyTooLarge
    /// A multipart body has more parts, or more part headers in all, than its reader accepts;
    /// the reason says which limit. A handler answers it (the sandbox: 413).
    case multipartTooLarge(String)
    /// The bytes broke the protocol: bad chunk framing, a bad multipart body, a bad header line.
    case malformed(String)
    /// The peer closed or reset the connection before the exchange was complete.
    case connectionClosed
    /// The peer sent or accepted nothing for longer than the configured timeout.
    case timedOut
    /// `HTTPResponseBodyWriter.abortConnection()` was called: the server resets the connection.
    case connectionAborted
    /// A `.stream` body with a declared length tried to write more than it declared.
    case responseBodyOverflow
    /// `host` is not an address the server can bind (IPv4, IPv6 or "localhost").
    case invalidAddress(String)
    /// A system call failed while setting the server up (socket, bind, listen, thread creation).
    case system(operation: String, errno: Int32)
    /// `start()` was called twice, or after `stop()`.
    case notStartable

    public var description: String {
        switch self {
        case .bodyTooLarge: return "request body too large"
        case .multipartTooLarge(let detail): return detail
        case .malformed(let detail): return "malformed request: \(detail)"
        case .connectionClosed: return "connection closed by peer"
        case .timedOut: return "connection timed out"
        case .connectionAborted: return "connection aborted"
        case .responseBodyOverflow: return "response body longer than its declared length"
        case .invalidAddress(let host): return "cannot bind to address \(host)"
        case .system(let operation, let errno): return "\(operation): \(String(cString: strerror(errno)))"
        case .notStartable: return "server already started or stopped"
        }
    }
}
