#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlServer
import DouctlSystem

/// Blocking TCP to 127.0.0.1, for test clients that decide every byte themselves.
public enum LoopbackSocket {
    /// A socket connected to 127.0.0.1:`port`. `receiveTimeout` (and `sendTimeout`, when
    /// given) bound every read (write), so a server bug fails a test instead of hanging it.
    public static func connect(port: UInt16, receiveTimeout: Double, sendTimeout: Double? = nil) throws -> Int32 {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw SystemError("socket") }
        setTimeout(fd, SO_RCVTIMEO, receiveTimeout)
        if let sendTimeout { setTimeout(fd, SO_SNDTIMEO, sendTimeout) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                #if canImport(Glibc)
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                #else
                Darwin.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                #endif
            }
        }
        if connected != 0 {
            let error = SystemError("connect")
            close(fd)
            throw error
        }
        return fd
    }

    private static func setTimeout(_ fd: Int32, _ option: Int32, _ seconds: Double) {
        let whole = Int(seconds)
        var time = timeval(tv_sec: whole, tv_usec: .init((seconds - Double(whole)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, option, &time, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Writes all of `bytes`, retrying after signals; SIGPIPE never fires (a closed peer is an error).
    public static func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            #if canImport(Glibc)
            let sent = Glibc.send(fd, base + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            #else
            let sent = Darwin.send(fd, base + offset, bytes.count - offset, 0)
            #endif
            if sent < 0 {
                if currentErrno() == EINTR { continue }
                throw SystemError("send")
            }
            offset += sent
        }
    }

    public static func sendAll(_ fd: Int32, _ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try sendAll(fd, $0) }
    }
}

/// A response as the raw client parsed it.
public struct RawReply {
    public var status: Int
    public var reason: String
    public var headers: HTTPHeaders
    public var body: [UInt8]
    public var text: String { String(decoding: body, as: UTF8.self) }
}

/// A test client on a bare socket, so tests decide every byte that goes out (malformed heads,
/// pipelining, partial sends) and see every byte that comes back.
public final class RawClient {
    public let fd: Int32
    private var pending: [UInt8] = []

    /// `receiveTimeout` bounds every read, so a server bug fails a test instead of hanging it.
    public init(port: UInt16, receiveTimeout: Double = 10, sendTimeout: Double? = nil) throws {
        fd = try LoopbackSocket.connect(port: port, receiveTimeout: receiveTimeout, sendTimeout: sendTimeout)
    }

    deinit { close(fd) }

    public func send(_ bytes: [UInt8]) throws { try LoopbackSocket.sendAll(fd, bytes) }

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    public func shutdownWrite() {
        #if canImport(Glibc)
        shutdown(fd, Int32(SHUT_WR))
        #else
        shutdown(fd, SHUT_WR)
        #endif
    }

    /// Reads more bytes into `pending`: `.data`, or why there were none.
    private enum Receive { case data, end, reset, failed(Int32) }

    private func receive() -> Receive {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let received = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if received > 0 {
                pending.append(contentsOf: chunk[..<received])
                return .data
            }
            if received == 0 { return .end }
            let error = currentErrno()
            if error == EINTR { continue }
            return error == ECONNRESET ? .reset : .failed(error)
        }
    }

    /// Reads more bytes into `pending`; false at end of input, on reset or on timeout.
    @discardableResult
    private func receiveMore() -> Bool {
        if case .data = receive() { return true }
        return false
    }

    /// True when the server has sent something (or closed) that has not been read yet.
    public func hasInputWaiting() -> Bool {
        if !pending.isEmpty { return true }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) > 0
    }

    /// Waits until at least `count` bytes have arrived (left unread); false if they never do.
    public func waitForBytes(_ count: Int) -> Bool {
        while pending.count < count {
            guard receiveMore() else { return false }
        }
        return true
    }

    /// Everything until the server closes (or resets, or the receive timeout passes).
    public func readToEnd() -> [UInt8] {
        while receiveMore() {}
        defer { pending.removeAll() }
        return pending
    }

    /// Everything until the server closes the connection, and whether it reset it rather
    /// than closing it; a timeout or another receive error throws.
    public func readUntilClosed() throws -> (bytes: [UInt8], wasReset: Bool) {
        while true {
            switch receive() {
            case .data: continue
            case .end:
                defer { pending.removeAll() }
                return (pending, false)
            case .reset:
                defer { pending.removeAll() }
                return (pending, true)
            case .failed(let error):
                throw TestFailure("receive failed: \(SystemError("recv", errno: error)) after \(pending.count) bytes")
            }
        }
    }

    /// True when the server has closed the connection: a read sees end of input (or a reset)
    /// rather than data or a timeout. Pending unread bytes count as "not closed".
    public func isClosedByServer() -> Bool {
        guard pending.isEmpty else { return false }
        var byte: UInt8 = 0
        while true {
            let received = recv(fd, &byte, 1, 0)
            if received < 0 && currentErrno() == EINTR { continue }
            if received == 0 { return true }
            if received < 0 { return currentErrno() == ECONNRESET }
            pending.append(byte)
            return false
        }
    }

    private func readLine() throws -> String {
        while true {
            if let lineFeed = pending.firstIndex(of: UInt8(ascii: "\n")) {
                var line = pending[..<lineFeed]
                if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
                let text = String(decoding: line, as: UTF8.self)
                pending.removeSubrange(...lineFeed)
                return text
            }
            guard receiveMore() else { throw TestFailure("connection ended inside a line: \(String(decoding: pending, as: UTF8.self))") }
        }
    }

    private func readExactly(_ count: Int) throws -> [UInt8] {
        while pending.count < count {
            guard receiveMore() else { throw TestFailure("connection ended after \(pending.count) of \(count) bytes") }
        }
        defer { pending.removeSubrange(..<count) }
        return Array(pending[..<count])
    }

    /// Reads one response, framed as HTTP/1.1 says (Content-Length, chunked, or until close).
    /// Interim 1xx responses are returned like any other; call again for the final one.
    public func readResponse(forHEAD: Bool = false) throws -> RawReply {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw TestFailure("bad status line: \(statusLine)")
        }
        var headers = HTTPHeaders()
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { throw TestFailure("bad header line: \(line)") }
            headers.add(String(line[..<colon]), trimmingSpaces(line[line.index(after: colon)...]))
        }
        var reply = RawReply(status: status, reason: parts.count > 2 ? String(parts[2]) : "", headers: headers, body: [])
        if forHEAD || status < 200 || status == 204 || status == 304 { return reply }
        if headers["Transfer-Encoding"]?.lowercased() == "chunked" {
            while true {
                let sizeLine = try readLine()
                guard let size = Int(trimmingSpaces(sizeLine.split(separator: ";", omittingEmptySubsequences: false)[0]), radix: 16) else {
                    throw TestFailure("bad chunk size line: \(sizeLine)")
                }
                if size == 0 {
                    while try !readLine().isEmpty {}
                    return reply
                }
                reply.body += try readExactly(size)
                guard try readLine().isEmpty else { throw TestFailure("chunk not followed by CRLF") }
            }
        } else if let length = headers["Content-Length"].flatMap({ Int($0) }) {
            reply.body = try readExactly(length)
        } else {
            reply.body = readToEnd()
        }
        return reply
    }

    /// Reads the response body as far as it goes, for replies the server cuts short.
    public func readPartialResponse() -> (head: String, body: [UInt8]) {
        let all = readToEnd()
        let separator = Array("\r\n\r\n".utf8)
        guard let index = (0..<max(0, all.count - 3)).first(where: { all[$0..<($0 + 4)].elementsEqual(separator) }) else {
            return (String(decoding: all, as: UTF8.self), [])
        }
        return (String(decoding: all[..<index], as: UTF8.self), Array(all[(index + 4)...]))
    }
}

/// `text` without leading and trailing spaces and tabs (header values, chunk sizes).
public func trimmingSpaces<Text: StringProtocol>(_ text: Text) -> String {
    var text = Substring(text)
    while text.first == " " || text.first == "\t" { text.removeFirst() }
    while text.last == " " || text.last == "\t" { text.removeLast() }
    return String(text)
}
