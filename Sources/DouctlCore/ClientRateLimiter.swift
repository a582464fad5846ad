import DouctlJSON
import DouctlSystem

/// `rate_limit` (HAccess's queue control): a quota of requests per window shared by every
/// douctl process of a profile — `upload --parallel`, loops in scripts — through a small
/// state file of recent send times, changed only under an flock. A request that would go
/// over waits until the oldest one in the window ages out.
public struct ClientRateLimiter: Sendable {
    public let quota: RateQuota
    let directory: ConfigDirectory
    let statePath: String
    let lockPath: String

    public init(quota: RateQuota, directory: ConfigDirectory, profile: String) {
        self.quota = quota
        self.directory = directory
        statePath = directory.path + "/.ratelimit-\(profile).json"
        lockPath = directory.path + "/.ratelimit-\(profile).lock"
    }

    /// Blocks until one more request fits the quota, and counts it. `wait` sleeps
    /// (interruptibly) and returns false when the command is being stopped.
    public func acquire(now: () -> Double = Timestamp.now, wait: (Double) -> Bool) throws(DouctlError) {
        try directory.ensureExists()
        while true {
            let delay = try reserve(now: now())
            guard let delay else { return }
            if !wait(delay) { throw .interrupted }
        }
    }

    /// Records a send at `now` and returns nil when the quota allows it; otherwise the
    /// seconds until it will.
    func reserve(now: Double) throws(DouctlError) -> Double? {
        let lock: FileLock
        do { lock = try FileLock(path: lockPath) } catch { throw .localInput("cannot lock \(lockPath) (\(error))") }
        defer { lock.unlock() }
        // A damaged state file only costs the memory of recent sends: start over.
        let recorded = ((try? directory.readJSONFile(statePath))??["sent"]?.arrayValue ?? []).compactMap(\.doubleValue)
        var sent = recorded.filter { $0 > now - quota.seconds && $0 <= now + 1 }.sorted()
        if sent.count >= quota.count {
            let oldest = sent[sent.count - quota.count]
            return max(oldest + quota.seconds - now, 0.01)
        }
        sent.append(now)
        let numbers: [JSON] = sent.map { .number(String(format6($0))) }
        try directory.writeJSONFile(.object(JSONObject([("sent", .array(numbers))])), to: statePath)
        return nil
    }

    /// Seconds with millisecond precision, as JSON number text.
    private func format6(_ value: Double) -> String {
        let milliseconds = Int64((value * 1000).rounded())
        let fraction = milliseconds % 1000
        return "\(milliseconds / 1000).\(fraction < 10 ? "00" : fraction < 100 ? "0" : "")\(fraction)"
    }
}
