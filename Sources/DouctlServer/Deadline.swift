#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A point on the monotonic clock. Timeouts are deadlines, not per-call durations, so a client
/// that trickles one byte a second cannot stretch a 30-second header timeout forever.
struct Deadline: Sendable, Comparable {
    /// Nanoseconds on CLOCK_MONOTONIC; `UInt64.max` means "never".
    let uptimeNanoseconds: UInt64

    static let never = Deadline(uptimeNanoseconds: .max)

    static var now: Deadline {
        var spec = timespec(tv_sec: 0, tv_nsec: 0)
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Deadline(uptimeNanoseconds: UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec))
    }

    /// `seconds` from now. Non-positive or NaN durations mean "already passed"; absurdly large
    /// ones (more than ten years) mean "never", so configuration values cannot overflow.
    static func after(seconds: Double) -> Deadline {
        guard seconds > 0 else { return now }
        guard seconds < 315_360_000 else { return .never }
        return Deadline(uptimeNanoseconds: now.uptimeNanoseconds &+ UInt64(seconds * 1_000_000_000))
    }

    var hasPassed: Bool { self != .never && Deadline.now >= self }

    /// What is left, in whole milliseconds rounded up, for `poll(2)`; -1 means "wait forever".
    var pollTimeout: Int32 {
        if self == .never { return -1 }
        let current = Deadline.now.uptimeNanoseconds
        guard uptimeNanoseconds > current else { return 0 }
        let milliseconds = (uptimeNanoseconds - current + 999_999) / 1_000_000
        return milliseconds > UInt64(Int32.max) ? Int32.max : Int32(milliseconds)
    }

    /// The same instant as a CLOCK_MONOTONIC timespec, for `pthread_cond_timedwait`.
    var monotonicTimespec: timespec {
        let nanoseconds = self == .never ? UInt64(Int32.max) * 1_000_000_000 : uptimeNanoseconds
        #if canImport(Glibc)
        return Glibc.timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        #else
        return Darwin.timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        #endif
    }

    static func < (lhs: Deadline, rhs: Deadline) -> Bool { lhs.uptimeNanoseconds < rhs.uptimeNanoseconds }
}
