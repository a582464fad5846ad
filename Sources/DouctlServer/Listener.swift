#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem

/// The listening socket. Bound in `init` so the port is known before anything is served (tests
/// and `douctl sandbox` print the URL first); `shutdown()` wakes a thread blocked in `accept`.
final class Listener: @unchecked Sendable {
    enum Accepted {
        case connection(fd: Int32, address: String, port: UInt16)
        /// A transient failure (aborted handshake, interrupted call): try again at once.
        case retry
        /// Out of descriptors or memory: try again after a pause rather than spin.
        case retryLater
        /// The listener was shut down.
        case closed
    }

    let fd: Int32
    let port: UInt16
    let isIPv6: Bool

    init(host: String, port requestedPort: UInt16) throws(HTTPServerError) {
        let address = try SocketAddress(host: host, port: requestedPort)
        isIPv6 = address.isIPv6
        #if canImport(Glibc)
        let socketType = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        #else
        let socketType = SOCK_STREAM
        #endif
        let listening = socket(isIPv6 ? AF_INET6 : AF_INET, socketType, 0)
        guard listening >= 0 else { throw .system(operation: "socket", errno: currentErrno()) }
        var one: Int32 = 1
        setsockopt(listening, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = address.withSockaddr { bind(listening, $0, $1) }
        guard bound == 0, listen(listening, SOMAXCONN) == 0 else {
            let error = HTTPServerError.system(operation: bound == 0 ? "listen" : "bind \(host):\(requestedPort)",
                                               errno: currentErrno())
            closeDescriptor(listening)
            throw error
        }
        guard let boundPort = SocketAddress.localPort(of: listening) else {
            let error = HTTPServerError.system(operation: "getsockname", errno: currentErrno())
            closeDescriptor(listening)
            throw error
        }
        fd = listening
        port = boundPort
    }

    func accept() -> Accepted {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let client = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Self.acceptCloseOnExec(fd, $0, &length) }
        }
        if client < 0 {
            switch currentErrno() {
            case EINTR, ECONNABORTED, EPROTO, EAGAIN, EPERM,
                 // Network errors already pending on the new socket (accept(2), "Error handling").
                 ENETDOWN, ENOPROTOOPT, EHOSTDOWN, ENONET, EHOSTUNREACH, EOPNOTSUPP, ENETUNREACH:
                return .retry
            case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                return .retryLater
            default:
                return .closed  // EINVAL after shutdown(), EBADF after close()
            }
        }
        let peer = SocketAddress.describe(storage)
        return .connection(fd: client, address: peer.address, port: peer.port)
    }

    func shutdown() {
        shutdownSocket(fd)
    }

    func close() {
        closeDescriptor(fd)
    }

    private typealias Accept4 = @convention(c) (Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?, Int32) -> Int32

    /// glibc's `accept4` is not in the Swift Glibc module (it is a GNU extension), but it is in
    /// libc: look it up once. It sets close-on-exec atomically, so a browser spawned by
    /// `douctl auth login` cannot inherit a connection socket.
    private static let accept4: Accept4? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "accept4") else { return nil }
        return unsafeBitCast(symbol, to: Accept4.self)
    }()

    private static func acceptCloseOnExec(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>,
                                          _ length: UnsafeMutablePointer<socklen_t>) -> Int32 {
        #if canImport(Glibc)
        if let accept4 { return accept4(fd, address, length, Int32(SOCK_CLOEXEC.rawValue)) }
        #endif
        let client = acceptPlain(fd, address, length)
        if client >= 0 { _ = fcntl(client, F_SETFD, FD_CLOEXEC) }
        return client
    }
}

/// An IPv4 or IPv6 socket address parsed from a literal host (or "localhost"): the server binds
/// to loopback or "any", never to a name that would need DNS.
struct SocketAddress {
    private var storage = sockaddr_storage()
    let isIPv6: Bool

    init(host: String, port: UInt16) throws(HTTPServerError) {
        var literal = host
        if literal == "localhost" { literal = "127.0.0.1" }
        if literal.hasPrefix("["), literal.hasSuffix("]") { literal = String(literal.dropFirst().dropLast()) }
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET, literal, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            isIPv6 = false
            withUnsafeMutableBytes(of: &storage) { target in
                withUnsafeBytes(of: v4) { target.copyMemory(from: $0) }
            }
        } else if inet_pton(AF_INET6, literal, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            isIPv6 = true
            withUnsafeMutableBytes(of: &storage) { target in
                withUnsafeBytes(of: v6) { target.copyMemory(from: $0) }
            }
        } else {
            throw .invalidAddress(host)
        }
    }

    func withSockaddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        let length = socklen_t(isIPv6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
        return withUnsafePointer(to: storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }

    static func localPort(of fd: Int32) -> UInt16? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return result == 0 ? describe(storage).port : nil
    }

    /// The numeric address and port of a peer or local socket address.
    static func describe(_ storage: sockaddr_storage) -> (address: String, port: UInt16) {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(storage.ss_family) {
        case AF_INET:
            var v4 = withUnsafeBytes(of: storage) { $0.loadUnaligned(as: sockaddr_in.self) }
            inet_ntop(AF_INET, &v4.sin_addr, &text, socklen_t(text.count))
            return (String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
                    UInt16(bigEndian: v4.sin_port))
        case AF_INET6:
            var v6 = withUnsafeBytes(of: storage) { $0.loadUnaligned(as: sockaddr_in6.self) }
            inet_ntop(AF_INET6, &v6.sin6_addr, &text, socklen_t(text.count))
            return (String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
                    UInt16(bigEndian: v6.sin6_port))
        default:
            return ("", 0)
        }
    }
}

// Free functions, so the `Listener` methods of the same names do not shadow the system calls.
private func shutdownSocket(_ fd: Int32) { _ = shutdown(fd, Int32(SHUT_RDWR)) }
private func closeDescriptor(_ fd: Int32) { _ = close(fd) }
private func acceptPlain(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>,
                         _ length: UnsafeMutablePointer<socklen_t>) -> Int32 {
    accept(fd, address, length)
}
