#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem
import DouctlTestSupport
import Foundation

/// A raw TCP listener on 127.0.0.1 that keeps every byte each connection sent, exactly as it
/// arrived, so a test can prove what did NOT arrive (a second header line, a smuggled second
/// request). It answers the first request head of a connection (and its Content-Length body)
/// with `reply(n)` for the n-th connection and `Connection: close`, then reads on until the
/// client closes: anything the client sent after the first request is kept too.
final class ByteRecorder: @unchecked Sendable {
    let port: UInt16
    private let listener: Int32
    private let done = LockedValue<[[UInt8]]>([])
    private let accepted = LockedValue(0)
    private let reply: @Sendable (Int) -> String

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// What every finished connection sent, in the order they were accepted.
    var connections: [[UInt8]] { done.value }
    /// Connections accepted so far (finished or not).
    var acceptedCount: Int { accepted.value }

    init(reply: @escaping @Sendable (Int) -> String = { _ in ByteRecorder.ok("{}") }) throws {
        self.reply = reply
        (listener, port) = try listenOnLoopback()
        let listener = self.listener
        let thread = Thread { [listener, done, accepted, reply] in
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 {
                    if errno == EINTR { continue }
                    return
                }
                let number = accepted.withLock { count -> Int in count += 1; return count }
                let worker = Thread {
                    let bytes = Self.serve(client, reply: reply(number))
                    done.withLock { $0.append(bytes) }
                }
                worker.start()
            }
        }
        thread.start()
    }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    static func ok(_ json: String, headers: [String] = []) -> String {
        (["HTTP/1.1 200 OK", "Content-Type: application/json", "Content-Length: \(json.utf8.count)", "Connection: close"] + headers)
            .joined(separator: "\r\n") + "\r\n\r\n" + json
    }

    /// Waits (generously: the machine is shared) until `count` connections have finished.
    func waitForConnections(_ count: Int, timeout: Double = 60) throws -> [[UInt8]] {
        let deadline = Date().addingTimeInterval(timeout)
        while done.value.count < count {
            if Date() > deadline { throw TestFailure("only \(done.value.count) of \(count) connections finished") }
            usleep(10_000)
        }
        return done.value
    }

    private static func serve(_ fd: Int32, reply: String) -> [UInt8] {
        defer { close(fd) }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        func readMore() -> Bool {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { return true }
            guard count > 0 else { return false }
            received += chunk.prefix(count)
            return true
        }
        let separator: [UInt8] = [13, 10, 13, 10]
        var headEnd: Int?
        while headEnd == nil {
            headEnd = received.firstRange(of: separator)?.upperBound
            if headEnd == nil, !readMore() { return received }
        }
        guard let headEnd else { return received }
        let head = String(decoding: received[..<headEnd], as: UTF8.self).lowercased()
        let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        while received.count < headEnd + length, readMore() {}
        let answer = Array(reply.utf8)
        _ = answer.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        // Keep reading until the client closes: a smuggled request would show up here.
        while readMore() {}
        return received
    }
}

extension Array where Element == UInt8 {
    /// The bytes as text with CR and LF kept, for `contains` checks on raw wire bytes.
    var wireText: String { String(decoding: self, as: UTF8.self) }

    /// How many times `needle` occurs (byte for byte, so "\r\n" is two bytes, not one Character).
    func occurrences(of needle: String) -> Int {
        let pattern = Array(needle.utf8)
        guard !pattern.isEmpty, count >= pattern.count else { return 0 }
        var found = 0
        var index = 0
        while index + pattern.count <= count {
            if self[index..<(index + pattern.count)].elementsEqual(pattern) { found += 1; index += pattern.count } else { index += 1 }
        }
        return found
    }
}
