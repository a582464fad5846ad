#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlJSON
import DouctlSystem

/// The state file (`DIR/state.json`) and the pictures beside it (`DIR/pictures/`).
///
/// Saved with `AtomicFile` (temp file, fsync, rename) after each change; concurrent changes
/// coalesce into one write. A file that cannot be read back is reported and left untouched.
final class StateStore: Sendable {
    static let format = "douctl-sandbox-state"
    static let version = 1

    let directory: String
    var statePath: String { directory + "/state.json" }
    var pictureDirectory: String { directory + "/pictures" }
    /// Serializes writers; holds the generation last written.
    private let writer = LockedValue<UInt64>(0)

    /// Held for the store's lifetime: two sandboxes on one directory would overwrite each
    /// other's state, so the second one is refused.
    private let ownership: FileLock

    init(directory: String) throws {
        self.directory = directory
        do {
            try FileIO.makeDirectory(directory, mode: 0o700)
            try FileIO.makeDirectory(directory + "/pictures", mode: 0o700)
        } catch {
            throw SandboxError("cannot use data directory \(directory): \(error)")
        }
        do {
            ownership = try FileLock(path: directory + "/.lock", wait: false)
        } catch let error as SystemError where error.errno == EWOULDBLOCK {
            throw SandboxError("another sandbox is using the data directory \(directory)")
        } catch {
            throw SandboxError("cannot lock the data directory \(directory): \(error)")
        }
    }

    /// The saved state, or nil when there is none yet.
    func load() throws -> SandboxState? {
        let bytes: [UInt8]
        do {
            bytes = try FileIO.readFile(statePath)
        } catch let error as SystemError where error.isNotFound {
            return nil
        } catch {
            throw SandboxError("cannot read the sandbox state \(statePath): \(error)")
        }
        do {
            let json = try JSONParser.parse(bytes)
            return try StateCoding.decode(json)
        } catch let error as JSONParseError {
            throw SandboxError("the sandbox state \(statePath) is corrupt (\(error)); move it away or fix it, it was left untouched")
        } catch let error as StateCoding.Failure {
            throw SandboxError("the sandbox state \(statePath) is corrupt (\(error.reason)); move it away or fix it, it was left untouched")
        }
    }

    /// Writes the state if it changed since the last write. `snapshot` is called under the state
    /// lock and must be cheap (a copy-on-write copy); encoding happens outside it.
    func save(snapshot: () -> SandboxState) throws {
        try writer.withLock { written throws in
            let state = snapshot()
            guard state.generation != written else { return }
            let bytes = StateCoding.encode(state).serialized(.compact)
            try AtomicFile.write(bytes + [UInt8(ascii: "\n")], to: statePath, mode: 0o600)
            written = state.generation
        }
    }
}
