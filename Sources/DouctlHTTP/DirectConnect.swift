#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem

/// A TCP connection to a plain-http origin for a request douctl carries itself
/// (`SocketExchange`, issue 44.4), opened the way libcurl opens one so that nothing a user
/// sees changes: the same `-v` lines and messages, "localhost" answered without asking the
/// resolver (libcurl ≥ 7.78), the families raced 200 ms apart (happy eyeballs), TCP_NODELAY.
/// A name is resolved on a thread of its own: getaddrinfo cannot be interrupted, so a stop or
/// the time limit leaves it behind, as libcurl's threaded resolver does.
enum DirectConnect {
    enum Outcome {
        case connected(Int32, address: String)
        case failed(TransportError)
        case stopped
    }

    /// One address to try, as the socket calls want it and as `-v` shows it.
    struct Address {
        var family: Int32
        var storage = sockaddr_storage()
        var length: socklen_t
        var text: String

        /// `socketAddress` (a sockaddr_in or sockaddr_in6) copied in whole.
        init<SocketAddress>(family: Int32, _ socketAddress: SocketAddress, text: String) {
            self.family = family
            length = socklen_t(MemoryLayout<SocketAddress>.size)
            self.text = text
            withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: socketAddress) { raw.copyMemory(from: $0) } }
        }

        init(family: Int32, length: socklen_t, text: String) {
            self.family = family
            self.length = length
            self.text = text
        }

        /// libcurl's "Trying" form: an IPv6 address in brackets.
        var shown: String { family == AF_INET6 ? "[\(text)]" : text }
    }

    /// How long the first family has alone before the other starts (libcurl's
    /// CURLOPT_HAPPY_EYEBALLS_TIMEOUT_MS default).
    static let happyEyeballsDelay = 0.2

    /// Connects to `host:port` within `timeout` seconds. `shouldStop` is asked every 50 ms
    /// (Ctrl-C, `--max-time`); `text` gets libcurl's `-v` lines.
    static func open(host: String, port: UInt16, timeout: Double, shouldStop: () -> Bool, text: (String) -> Void) -> Outcome {
        let started = currentUnixTime()
        let name = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let addresses: [Address]
        // A failure's message is also a -v line, as libcurl's are.
        switch resolve(name, port: port, deadline: started + timeout, shouldStop: shouldStop) {
        case .found(let found): addresses = found
        case .notFound:
            let message = "Could not resolve host: \(TerminalText.escaped(name))"
            text(message)
            return .failed(.cannotConnect(message))
        case .timedOut:
            let message = "Resolving timed out after \(milliseconds(since: started)) milliseconds"
            text(message)
            return .failed(.timedOut(message))
        case .stopped: return .stopped
        }
        return connect(to: addresses, name: name, port: port, started: started, timeout: timeout, shouldStop: shouldStop, text: text)
    }

    // MARK: - resolving

    enum Resolution {
        case found([Address])
        case notFound
        case timedOut
        case stopped
    }

    /// A literal address as itself; "localhost" (and names under it) as 127.0.0.1 then ::1,
    /// without the resolver, as libcurl does; any other name through getaddrinfo.
    static func resolve(_ name: String, port: UInt16, deadline: Double, shouldStop: () -> Bool) -> Resolution {
        if let literal = literal(name, port: port) { return .found([literal]) }
        let lowered = HTTPSyntax.lowercased(Substring(name))
        if lowered == "localhost" || lowered.hasSuffix(".localhost") {
            return .found([literal("127.0.0.1", port: port), literal("::1", port: port)].compactMap { $0 })
        }
        return lookUp(name, port: port, deadline: deadline, shouldStop: shouldStop)
    }

    /// An IPv4 or IPv6 literal (no zone: a scoped address goes through libcurl).
    static func literal(_ name: String, port: UInt16) -> Address? {
        var v4 = in_addr()
        if inet_pton(AF_INET, name, &v4) == 1 {
            var socketAddress = sockaddr_in()
            socketAddress.sin_family = sa_family_t(AF_INET)
            socketAddress.sin_port = port.bigEndian
            socketAddress.sin_addr = v4
            return Address(family: AF_INET, socketAddress, text: name)
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, name, &v6) == 1 {
            var socketAddress = sockaddr_in6()
            socketAddress.sin6_family = sa_family_t(AF_INET6)
            socketAddress.sin6_port = port.bigEndian
            socketAddress.sin6_addr = v6
            return Address(family: AF_INET6, socketAddress, text: name)
        }
        return nil
    }

    /// What the resolver thread hands back. It and the waiting side share it; the last one to
    /// let go closes the wake-up sockets, so the thread never writes to a closed one.
    private final class Lookup: @unchecked Sendable {
        let answer = LockedValue<[Address]?>(nil)
        var wake: (read: Int32, write: Int32) = (-1, -1)
        deinit {
            if wake.read >= 0 { close(wake.read) }
            if wake.write >= 0 { close(wake.write) }
        }
    }

    private static func lookUp(_ name: String, port: UInt16, deadline: Double, shouldStop: () -> Bool) -> Resolution {
        let lookup = Lookup()
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else { return .notFound }
        lookup.wake = (ends[0], ends[1])
        do {
            try startDetachedThread(stackSize: 256 * 1024) {
                let found = addresses(of: name, port: port)
                lookup.answer.withLock { $0 = found }
                var byte: UInt8 = 1
                _ = send(lookup.wake.write, &byte, 1, Int32(MSG_NOSIGNAL))
            }
        } catch {
            return .notFound
        }
        while true {
            if shouldStop() { return .stopped }
            let left = deadline - currentUnixTime()
            if left <= 0 { return .timedOut }
            var ready = pollfd(fd: lookup.wake.read, events: Int16(POLLIN), revents: 0)
            _ = poll(&ready, 1, Int32(max(1, min(50, (left * 1000).rounded(.up)))))
            if ready.revents != 0 { break }
        }
        let found = lookup.answer.withLock { $0 } ?? []
        return found.isEmpty ? .notFound : .found(found)
    }

    /// getaddrinfo's answer, in its order (the system's preference, RFC 6724).
    private static func addresses(of name: String, port: UInt16) -> [Address] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(name, String(port), &hints, &list) == 0 else { return [] }
        defer { freeaddrinfo(list) }
        var found: [Address] = []
        var entry = list
        while let current = entry?.pointee {
            entry = current.ai_next
            guard let socketAddress = current.ai_addr, current.ai_family == AF_INET || current.ai_family == AF_INET6,
                  Int(current.ai_addrlen) <= MemoryLayout<sockaddr_storage>.size else { continue }
            var address = Address(family: current.ai_family, length: current.ai_addrlen, text: "")
            withUnsafeMutableBytes(of: &address.storage) { raw in
                raw.copyMemory(from: UnsafeRawBufferPointer(start: socketAddress, count: Int(current.ai_addrlen)))
            }
            address.text = numericText(address)
            if !found.contains(where: { $0.text == address.text && $0.family == address.family }) { found.append(address) }
        }
        return found
    }

    private static func numericText(_ address: Address) -> String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        var storage = address.storage
        let shown: UnsafePointer<CChar>? = withUnsafeBytes(of: &storage) { raw in
            if address.family == AF_INET6 {
                return raw.baseAddress.map { inet_ntop(AF_INET6, $0 + 8, &text, socklen_t(text.count)) } ?? nil
            }
            return raw.baseAddress.map { inet_ntop(AF_INET, $0 + 4, &text, socklen_t(text.count)) } ?? nil
        }
        guard shown != nil else { return "?" }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    // MARK: - connecting

    private struct Attempt {
        var fd: Int32
        var address: Address
    }

    /// The first family's addresses one after another, the other family's from 200 ms on (or
    /// at once when the first has none left); the first to connect wins.
    static func connect(
        to addresses: [Address], name: String, port: UInt16, started: Double, timeout: Double,
        shouldStop: () -> Bool, text: (String) -> Void
    ) -> Outcome {
        guard let firstFamily = addresses.first?.family else {
            return .failed(.cannotConnect("Could not resolve host: \(TerminalText.escaped(name))"))
        }
        var queues = [addresses.filter { $0.family == firstFamily }, addresses.filter { $0.family != firstFamily }]
        var inFlight: [[Attempt]] = [[], []]
        var secondStarted = false
        let deadline = started + timeout
        func closeAll() {
            for attempts in inFlight { for attempt in attempts { close(attempt.fd) } }
            inFlight = [[], []]
        }
        /// Starts the next address of `family`; false when it has none left.
        func startNext(_ family: Int) -> Bool {
            while !queues[family].isEmpty {
                let address = queues[family].removeFirst()
                text("  Trying \(address.shown):\(port)...")
                let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
                guard fd >= 0 else {
                    text("Could not set up a socket for \(address.text): \(SystemError("socket").reason)")
                    continue
                }
                var on: Int32 = 1
                _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
                var storage = address.storage
                let result = withUnsafePointer(to: &storage) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, address.length) }
                }
                if result == 0 || errno == EINPROGRESS || errno == EINTR {
                    inFlight[family].append(Attempt(fd: fd, address: address))
                    return true
                }
                text("connect to \(address.text) port \(port) failed: \(SystemError("connect").reason)")
                close(fd)
            }
            return false
        }
        _ = startNext(0)
        while true {
            if !secondStarted && (currentUnixTime() - started >= happyEyeballsDelay || (inFlight[0].isEmpty && queues[0].isEmpty)) {
                secondStarted = true
                _ = startNext(1)
            }
            if inFlight[0].isEmpty && inFlight[1].isEmpty && queues[0].isEmpty && (secondStarted && queues[1].isEmpty) {
                let message = "Failed to connect to \(TerminalText.escaped(name)) port \(port) after \(milliseconds(since: started)) ms: Couldn't connect to server"
                text(message)
                return .failed(.cannotConnect(message))
            }
            if shouldStop() {
                closeAll()
                return .stopped
            }
            let now = currentUnixTime()
            if now >= deadline {
                closeAll()
                let message = "Failed to connect to \(TerminalText.escaped(name)) port \(port) after \(milliseconds(since: started)) ms: Timeout was reached"
                text(message)
                return .failed(.timedOut(message))
            }
            var watched: [pollfd] = []
            for attempts in inFlight { for attempt in attempts { watched.append(pollfd(fd: attempt.fd, events: Int16(POLLOUT), revents: 0)) } }
            var wait = min(0.05, deadline - now)
            if !secondStarted { wait = min(wait, started + happyEyeballsDelay - now) }
            if watched.isEmpty {
                // Nothing in flight in the first family and the second waits its turn.
                if !secondStarted { secondStarted = true; _ = startNext(1) }
                continue
            }
            _ = poll(&watched, nfds_t(watched.count), Int32(max(1, (wait * 1000).rounded(.up))))
            for entry in watched where entry.revents != 0 {
                for family in 0..<2 {
                    guard let index = inFlight[family].firstIndex(where: { $0.fd == entry.fd }) else { continue }
                    let attempt = inFlight[family].remove(at: index)
                    var problem: Int32 = 0
                    var size = socklen_t(MemoryLayout<Int32>.size)
                    if getsockopt(attempt.fd, SOL_SOCKET, SO_ERROR, &problem, &size) != 0 { problem = errno }
                    if problem == 0 {
                        closeAll()
                        return .connected(attempt.fd, address: attempt.address.text)
                    }
                    text("connect to \(attempt.address.text) port \(port) failed: \(SystemError("connect", errno: problem).reason)")
                    close(attempt.fd)
                    _ = startNext(family)
                }
            }
        }
    }

    private static func milliseconds(since started: Double) -> Int {
        max(0, Int(((currentUnixTime() - started) * 1000).rounded(.down)))
    }
}
