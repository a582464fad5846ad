#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem
import DouctlTestSupport
import Foundation

/// A raw TCP listener on 127.0.0.1 that reads each request's head and then lets `reply`
/// write whatever bytes it likes, however slowly: for replies no real HTTP server sends
/// (no status line, HTTP/0.9, a bad Content-Length, a body trickling 2 bytes a second).
final class HostileListener: @unchecked Sendable {
    let port: UInt16
    private let fd: Int32
    private let requests = LockedValue(0)
    private let stopped = LockedValue(false)
    private let receivedHeads = LockedValue<[String]>([])

    var baseURL: String { "http://127.0.0.1:\(port)" }
    /// Request heads read so far.
    var requestCount: Int { requests.value }
    var isStopped: Bool { stopped.value }
    /// The request heads read so far, in order, as text.
    var heads: [String] { receivedHeads.value }

    /// `reply` gets the connection and writes the reply; the connection is closed after it.
    init(reply: @escaping @Sendable (_ connection: Int32, _ listener: HostileListener) -> Void) throws {
        let (listening, port) = try listenOnLoopback()
        fd = listening
        self.port = port
        Thread.detachNewThread { [self] in
            while !isStopped {
                let connection = accept(listening, nil, nil)
                if connection < 0 { if isStopped { return }; continue }
                Thread.detachNewThread { [self] in
                    defer { close(connection) }
                    guard readHead(connection) else { return }
                    requests.withLock { $0 += 1 }
                    reply(connection, self)
                }
            }
        }
    }

    deinit { stop() }

    func stop() {
        guard !stopped.withLock({ let was = $0; $0 = true; return was }) else { return }
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }

    /// Reads up to the blank line that ends a request head.
    private func readHead(_ connection: Int32) -> Bool {
        var received: [UInt8] = []
        var byte: UInt8 = 0
        while !received.suffix(4).elementsEqual([13, 10, 13, 10]) {
            guard read(connection, &byte, 1) == 1 else { return false }
            received.append(byte)
        }
        receivedHeads.withLock { $0.append(String(decoding: received, as: UTF8.self)) }
        return true
    }

    /// Writes `text`; false once the peer has gone.
    @discardableResult
    static func send(_ connection: Int32, _ text: String) -> Bool {
        (try? LoopbackSocket.sendAll(connection, Array(text.utf8))) != nil
    }
}
