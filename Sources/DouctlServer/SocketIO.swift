#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem

/// The few socket calls the server makes, each retrying EINTR and turning failures into
/// `HTTPServerError`. Sockets stay blocking: reads wait in `poll(2)` with a deadline (so a silent
/// peer times out and `shutdown(2)` from `stop()` wakes them); writes are bounded by SO_SNDTIMEO
/// and use MSG_NOSIGNAL, so a vanished peer is an error, never a SIGPIPE.
enum SocketIO {
    #if canImport(Glibc)
    static let noSignal = Int32(MSG_NOSIGNAL)
    static let moreComing = Int32(MSG_MORE)
    #else
    static let noSignal: Int32 = 0  // Darwin: SO_NOSIGPIPE is set on the socket instead.
    static let moreComing: Int32 = 0
    #endif

    /// Receives up to `count` bytes; 0 means the peer closed its side.
    static func receive(_ fd: Int32, into pointer: UnsafeMutableRawPointer, count: Int,
                        deadline: Deadline) throws(HTTPServerError) -> Int {
        while true {
            let received = recv(fd, pointer, count, Int32(MSG_DONTWAIT))
            if received >= 0 { return received }
            switch currentErrno() {
            case EINTR:
                continue
            case EAGAIN, EWOULDBLOCK:
                if !waitUntilReadable(fd, deadline: deadline) { throw .timedOut }
            default:
                throw .connectionClosed
            }
        }
    }

    /// Waits for input, end of input or an error on `fd`. False when the deadline passed first.
    static func waitUntilReadable(_ fd: Int32, deadline: Deadline) -> Bool {
        while true {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, deadline.pollTimeout)
            if ready > 0 { return true }
            if ready == 0 { return false }
            if currentErrno() != EINTR { return true }  // let the following recv report the error
        }
    }

    /// Sends every byte. `more` tells the kernel further bytes follow at once (MSG_MORE), so a
    /// response head and a small body leave in one segment.
    static func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, more: Bool = false) throws(HTTPServerError) {
        guard var pointer = bytes.baseAddress else { return }
        var remaining = bytes.count
        let flags = noSignal | (more ? moreComing : 0)
        while remaining > 0 {
            let sent = send(fd, pointer, remaining, flags)
            if sent < 0 {
                switch currentErrno() {
                case EINTR: continue
                case EAGAIN, EWOULDBLOCK: throw .timedOut  // SO_SNDTIMEO expired: the peer stopped reading
                default: throw .connectionClosed
                }
            }
            remaining -= sent
            pointer += sent
        }
    }

    /// Per-connection options: no Nagle delay (keep-alive replies are written in pieces) and a
    /// bound on how long a write may block on a peer that does not read.
    static func configureConnection(_ fd: Int32, sendTimeout seconds: Double) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        #if canImport(Darwin)
        setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        var timeout = timeval()
        if seconds > 0 && seconds < 315_360_000 {
            timeout.tv_sec = .init(seconds)
            timeout.tv_usec = .init((seconds - Double(Int(seconds))) * 1_000_000)
        }
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Makes the coming `close` send RST instead of FIN: the "connection reset" fault.
    static func resetOnClose(_ fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }

    /// A graceful ("lingering") close, minus the close itself: send FIN, then read and discard
    /// what the peer still sends, until it closes or `seconds` pass. Closing with unread input
    /// makes the kernel send RST, which can destroy the reply the peer has not read yet (for
    /// example a 413 sent while the client is still uploading).
    static func shutdownAndDiscardInput(_ fd: Int32, seconds: Double) {
        shutdown(fd, Int32(SHUT_WR))
        let deadline = Deadline.after(seconds: seconds)
        withUnsafeTemporaryAllocation(byteCount: 16 * 1024, alignment: 16) { scratch in
            guard let base = scratch.baseAddress else { return }
            while true {
                guard let received = try? receive(fd, into: base, count: scratch.count, deadline: deadline),
                      received > 0 else { return }
            }
        }
    }
}
