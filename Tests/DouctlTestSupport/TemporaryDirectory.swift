#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem
import Foundation
import Testing

/// A fresh private directory under the temporary directory (mkdtemp), removed with its
/// contents on deinit. Immutable, so server handlers may capture it.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init(prefix: String = "douctl-test") throws {
        path = try Self.create(prefix: prefix)
    }

    deinit { ScratchDirectory.remove(path) }

    /// A directory that lives as long as the test process (for config directories a child
    /// douctl keeps using), removed when the process exits.
    public static func make(prefix: String) -> String {
        do {
            let path = try create(prefix: prefix)
            leftovers.withLock { paths in
                if paths.isEmpty { atexit { TemporaryDirectory.removeLeftovers() } }
                paths.append(path)
            }
            return path
        } catch {
            Issue.record("cannot create a temporary directory: \(error)")
            return NSTemporaryDirectory() + "/\(prefix)-unavailable"
        }
    }

    /// A file with these bytes, named `name`, in a directory of its own (see `make`).
    public static func file(named name: String, bytes: [UInt8]) throws -> String {
        let path = make(prefix: "douctl-file") + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    private static func create(prefix: String) throws -> String {
        try ScratchDirectory.create(prefix: prefix, in: NSTemporaryDirectory())
    }

    private static let leftovers = LockedValue<[String]>([])

    private static func removeLeftovers() {
        for path in leftovers.value {
            ScratchDirectory.remove(path)
        }
    }
}
