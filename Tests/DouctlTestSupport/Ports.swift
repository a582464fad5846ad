#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TCP port on 127.0.0.1 that refuses every connection for as long as the tests run: a
/// socket bound to it and never listening (the kernel answers RST), kept open so no other
/// test's server can take the port meanwhile, as one could take an `unusedPort()`. (Not
/// SO_REUSEADDR: on Linux that would let another such socket bind the port too.)
public func refusingPort() -> UInt16 {
    guard let (_, port) = try? boundToLoopback(reusable: false) else { return 9 }
    return port  // the socket stays open: the port stays ours
}

/// A TCP port on 127.0.0.1 with nothing listening, free to bind (for a server a test starts
/// on it): one the kernel just handed out, closed again. For "connection refused", use
/// `refusingPort()`, which no other test can take meanwhile.
public func unusedPort() -> UInt16 {
    guard let (fd, port) = try? listenOnLoopback(backlog: 1) else { return 9 }
    close(fd)
    return port
}

/// A listening TCP socket on 127.0.0.1 at a free port, for the suite's raw listeners that
/// decide every byte of a reply themselves.
public func listenOnLoopback(backlog: Int32 = 16) throws -> (fd: Int32, port: UInt16) {
    let (fd, port) = try boundToLoopback(reusable: true)
    guard listen(fd, backlog) == 0 else { close(fd); throw TestFailure("listen on 127.0.0.1 failed (errno \(errno))") }
    return (fd, port)
}

/// A TCP socket bound to 127.0.0.1 at a port the kernel picks, and that port.
private func boundToLoopback(reusable: Bool) throws -> (fd: Int32, port: UInt16) {
    #if canImport(Glibc)
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
    let fd = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    guard fd >= 0 else { throw TestFailure("socket failed (errno \(errno))") }
    if reusable {
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
        }
    }
    guard bound else { close(fd); throw TestFailure("bind on 127.0.0.1 failed (errno \(errno))") }
    return (fd, UInt16(bigEndian: address.sin_port))
}
