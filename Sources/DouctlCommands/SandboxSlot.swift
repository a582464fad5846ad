#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlCore
import DouctlSystem

/// Which profiles a running `douctl sandbox` owns on a config directory, so two sandboxes on
/// one directory never fight over them (issue 20).
///
/// Slot 1 is the profiles `sandbox` and `coding-sandbox`; slot N ≥ 2 is `sandbox-N` and
/// `coding-sandbox-N`. A sandbox holds its slot's lock file (`.sandbox.lock`,
/// `.sandbox-N.lock`, an advisory `flock`) for as long as it runs, and takes the lowest slot
/// whose lock is free, so a lock held means a live sandbox; the kernel lets go of it when the
/// process ends however it ends. The first sandbox keeps today's behaviour: it writes
/// `sandbox` and `coding-sandbox` and leaves them when it stops (with `--data` a restart at
/// the same port finds its logins again). A later one leaves them to the live first one and
/// writes its own numbered profiles, which it removes (with their stored tokens) when it
/// stops, so no profile is left pointing at a port nobody serves.
struct SandboxSlot {
    /// More sandboxes than this on one config directory is surely a runaway script.
    static let maxSlots = 99

    let number: Int
    private let lock: FileLock

    var doubanProfile: String { number == 1 ? "sandbox" : "sandbox-\(number)" }
    var codingProfile: String { number == 1 ? "coding-sandbox" : "coding-sandbox-\(number)" }
    var profiles: [String] { [doubanProfile, codingProfile] }

    static func lockPath(_ directory: ConfigDirectory, slot: Int) -> String {
        directory.path + (slot == 1 ? "/.sandbox.lock" : "/.sandbox-\(slot).lock")
    }

    /// The lowest free slot, its lock held until `release()` (or the process ends).
    static func claim(in directory: ConfigDirectory) throws(DouctlError) -> SandboxSlot {
        try directory.ensureExists()
        for number in 1...maxSlots {
            let path = lockPath(directory, slot: number)
            do {
                return SandboxSlot(number: number, lock: try FileLock(path: path, wait: false))
            } catch let error as SystemError where error.errno == EWOULDBLOCK {
                continue
            } catch {
                throw .localInput("cannot lock \(path) (\(error))")
            }
        }
        throw .localInput("cannot start the sandbox (\(maxSlots) sandboxes already run on the config directory \(directory.path))")
    }

    /// Called once this sandbox no longer serves: a numbered slot's profiles go (when they
    /// still point at `base`), with their tokens; then the slot is free.
    func release(base: String, context: CommandContext) {
        defer { lock.unlock() }
        guard number > 1 else { return }
        let removed: [String] = (try? context.session.updateConfig { (config: inout ConfigFile) in
            let mine = profiles.filter { config.profile(named: $0)?[.apiBase] == .text(base) }
            for name in mine { config.setProfile(name, nil) }
            if let current = config.defaultProfile, mine.contains(current) { config.defaultProfile = nil }
            return mine
        }) ?? []
        guard let store = try? context.session.credentialStore() else { return }
        for name in removed { _ = try? store.update(name) { (entry: inout Credential?) in entry = nil } }
    }
}
