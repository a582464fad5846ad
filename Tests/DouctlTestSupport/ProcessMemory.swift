#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem
import Testing

/// The memory of another process, for checks that something stays flat. Measured in a
/// process of its own, not the test runner's, whose peak is whatever any test running
/// beside it touched. A figure that cannot be read fails the test; it never passes as 0.
public enum ProcessMemory {
    /// Skips the test where peak RSS is not readable per process (it comes from /proc, Linux only).
    public static func requireSupport(sourceLocation: SourceLocation = #_sourceLocation) throws {
        #if os(Linux)
        return
        #else
        try Test.cancel("skipped: a process's peak RSS is read from /proc/PID/status, which only Linux has", sourceLocation: sourceLocation)
        #endif
    }

    /// The peak resident set size (VmHWM) of process `pid`, in KiB.
    public static func peakKiB(of pid: Int32) throws -> Int {
        try field("VmHWM", of: pid)
    }

    /// A KiB field of /proc/PID/status (VmHWM, VmRSS).
    public static func field(_ name: String, of pid: Int32) throws -> Int {
        let path = "/proc/\(pid)/status"
        let bytes: [UInt8]
        do {
            bytes = try FileIO.readFile(path)
        } catch {
            throw TestFailure("cannot read \(path) for \(name): \(error)")
        }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix(name + ":") {
            let value = trimmingSpaces(line.dropFirst(name.count + 1)).split(separator: " ").first
            guard let value, let kibibytes = Int(value) else { break }
            return kibibytes
        }
        throw TestFailure("\(path) has no readable \(name) line")
    }
}
