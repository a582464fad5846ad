#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem

/// Turns a request into a response. Runs on the connection's own thread, so it may block (read a
/// large body, sleep for a fault) without holding up other connections.
public typealias HTTPHandler = @Sendable (HTTPServerRequest) -> HTTPServerResponse

extension HTTPServer {
    /// `handler`, answering HEAD for every resource it answers GET for (RFC 9110 §9.3.2: the
    /// same status and headers, no body): a HEAD reaches it as a GET (`sentMethod` says
    /// HEAD), and the connection, which knows the request was a HEAD, sends the head only,
    /// with the Content-Length of the body it leaves out. Handlers need no HEAD routes.
    public static func answeringHEAD(_ handler: @escaping HTTPHandler) -> HTTPHandler {
        { request in handler(request.asGETWhenHEAD) }
    }
}

/// A small HTTP/1.1 server for loopback use: the `douctl sandbox`, the OAuth redirect listener,
/// and test servers. One thread per connection (blocking I/O would starve Dispatch's shared
/// pool); every limit a peer could push on is bounded (`HTTPServerLimits`).
///
/// Dropping the last reference stops the server.
public final class HTTPServer: @unchecked Sendable {
    private enum State {
        case created
        case running
        case stopping
        case stopped
    }

    public let host: String
    /// The bound port (a free one when 0 was asked for).
    public let port: UInt16
    /// "http://127.0.0.1:PORT" (or "http://[::1]:PORT"): where a client on this machine reaches
    /// the server, also when it listens on every address.
    public let baseURL: String
    public let limits: HTTPServerLimits

    private let handler: HTTPHandler
    private let listener: Listener
    private let connections: ConnectionRegistry
    private let lifecycle = ConditionLock()
    private var state = State.created  // guarded by `lifecycle`
    private var acceptThread: JoinableThread?  // guarded by `lifecycle`

    /// Binds and listens at once (so `port` is known), but serves nothing until `start()`.
    /// `host` is an IPv4 or IPv6 literal, or "localhost".
    public init(host: String = "127.0.0.1", port: UInt16 = 0, limits: HTTPServerLimits = HTTPServerLimits(),
                handler: @escaping HTTPHandler) throws {
        // Writes use MSG_NOSIGNAL, but a peer that vanishes must never kill the process.
        signal(SIGPIPE, SIG_IGN)
        listener = try Listener(host: host, port: port)
        self.host = host
        self.port = listener.port
        self.limits = limits
        self.handler = handler
        connections = ConnectionRegistry(maxConnections: limits.maxConnections)
        let anyAddress = host == "0.0.0.0" || host == "::" || host == "[::]"
        let clientHost = listener.isIPv6 ? (anyAddress ? "[::1]" : "[\(host.trimmingBrackets)]")
                                         : (anyAddress || host == "localhost" ? "127.0.0.1" : host)
        baseURL = "http://\(clientHost):\(listener.port)"
    }

    deinit {
        stop()
    }

    /// Starts accepting connections on a thread of its own.
    public func start() throws {
        try lifecycle.withLock {
            guard state == .created else { throw HTTPServerError.notStartable }
            let listener = self.listener
            let connections = self.connections
            let limits = self.limits
            let handler = self.handler
            do {
                acceptThread = try JoinableThread {
                    Self.acceptConnections(listener: listener, connections: connections, limits: limits, handler: handler)
                }
            } catch let error as SystemError {
                throw HTTPServerError.system(operation: "pthread_create", errno: error.errno)
            }
            state = .running
        }
    }

    /// Stops accepting, closes idle connections at once, lets running handlers send their reply
    /// (for at most `limits.stopGracePeriod` seconds), and joins the threads. Idempotent; a
    /// second caller waits for the first to finish. A handler may call it: its own reply still
    /// goes out, after which its connection closes.
    public func stop() {
        let isFirstCaller = lifecycle.withLock {
            guard state == .created || state == .running else { return false }
            state = .stopping
            return true
        }
        guard isFirstCaller else {
            waitUntilStopped()
            return
        }
        connections.beginStopping()
        listener.shutdown()  // wakes the thread blocked in accept()
        lifecycle.withLock { acceptThread }?.join()
        listener.close()
        connections.shutDownAll(gracePeriod: limits.stopGracePeriod)
        lifecycle.withLock {
            state = .stopped
            lifecycle.broadcast()
        }
    }

    /// Blocks until `stop()` has completed (`douctl sandbox` serves until interrupted this way).
    public func waitUntilStopped() {
        lifecycle.withLock {
            _ = lifecycle.wait(until: .never) { state != .stopped }
        }
    }

    /// Connections being served right now (for tests and diagnostics).
    public var openConnectionCount: Int { connections.openCount }
    /// Every connection accepted so far (see `ConnectionRegistry.admittedCount`).
    public var acceptedConnectionCount: Int { connections.admittedCount }

    /// Handlers may recurse (JSON encoders do); stack is reserved address space, not memory.
    private static let connectionStackSize = 4 << 20

    private static func acceptConnections(listener: Listener, connections: ConnectionRegistry,
                                          limits: HTTPServerLimits, handler: @escaping HTTPHandler) {
        while !connections.isStopping {
            switch listener.accept() {
            case .connection(let fd, let address, let port):
                connections.joinFinishedThreads()
                serve(fd: fd, address: address, port: port, connections: connections, limits: limits, handler: handler)
            case .retry:
                continue
            case .retryLater:
                usleep(20_000)
            case .closed:
                return
            }
        }
    }

    private static func serve(fd: Int32, address: String, port: UInt16, connections: ConnectionRegistry,
                              limits: HTTPServerLimits, handler: @escaping HTTPHandler) {
        switch connections.admit(fd: fd) {
        case .stopping:
            close(fd)
        case .busy:
            let reply = Array("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
            reply.withUnsafeBytes { _ = send(fd, $0.baseAddress, $0.count, SocketIO.noSignal | Int32(MSG_DONTWAIT)) }
            close(fd)
        case .admitted(let id):
            SocketIO.configureConnection(fd, sendTimeout: limits.ioTimeout)
            let connection = Connection(fd: fd, remoteAddress: address, remotePort: port, limits: limits,
                                        handler: handler, isStopping: { connections.isStopping })
            do {
                let thread = try JoinableThread(stackSize: Self.connectionStackSize) {
                    connections.markRunning(id)
                    connection.run()
                    connections.finish(id)
                }
                connections.attach(thread, to: id)
            } catch {
                connections.finish(id, threadStarted: false)
            }
        }
    }
}

extension String {
    fileprivate var trimmingBrackets: String {
        hasPrefix("[") && hasSuffix("]") ? String(dropFirst().dropLast()) : self
    }
}
