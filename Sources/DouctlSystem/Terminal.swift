#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Questions about the terminal, answered by the kernel.
public enum Terminal {
    public static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }

    /// Columns of the terminal on `fd`, or nil when it is not one.
    public static func width(_ fd: Int32) -> Int? {
        var size = winsize()
        #if canImport(Glibc)
        let request = UInt(TIOCGWINSZ)
        #else
        let request = TIOCGWINSZ
        #endif
        guard ioctl(fd, request, &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }

    /// Reads one line from the terminal with echo off (for passwords). Falls back to a plain
    /// line read when `fd` is not a terminal (scripts piping the secret in).
    public static func readSecretLine(_ fd: Int32) -> String? {
        var saved = termios()
        let isTTY = tcgetattr(fd, &saved) == 0
        if isTTY {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(fd, TCSAFLUSH, &quiet)
        }
        defer { if isTTY { tcsetattr(fd, TCSAFLUSH, &saved) } }
        return readLine(fd)
    }

    /// Reads one line (without the newline) byte by byte, so nothing after it is consumed.
    public static func readLine(_ fd: Int32) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let got = read(fd, &byte, 1)
            if got < 0 && currentErrno() == EINTR {
                if Cancellation.process.isRequested { return nil } // Ctrl-C at a prompt (EINTR: a signal came)
                continue
            }
            if got <= 0 { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            if byte == UInt8(ascii: "\n") { break }
            bytes.append(byte)
        }
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }
}
