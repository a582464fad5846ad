import Foundation
import Testing

/// Processes queued on a file lock: how a test holds every racer at the same point before
/// letting them go (credentials refresh races).
public enum LockWaiters {
    /// How many processes wait for the flock on `path` (Linux /proc/locks marks them "->"),
    /// once `count` do or `timeout` passes.
    public static func count(on path: String, reaching count: Int, timeout: Double) throws -> Int {
        var info = stat()
        try #require(stat(path, &info) == 0)
        let suffix = ":\(info.st_ino) "
        let deadline = Date().addingTimeInterval(timeout)
        var waiters = 0
        repeat {
            let locks = (try? String(contentsOfFile: "/proc/locks", encoding: .utf8)) ?? ""
            waiters = locks.split(separator: "\n").filter { $0.contains("->") && $0.contains("FLOCK") && $0.contains(suffix) }.count
            if waiters >= count { return waiters }
            Thread.sleep(forTimeInterval: 0.05)
        } while Date() < deadline
        return waiters
    }
}
