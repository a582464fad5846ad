import Foundation
import Testing

/// External tools some tests run (shells, formatters, curl, python3, openssl, …).
///
/// A test that needs one calls `try Tools.require("name")` first. When the tool is not on
/// PATH the test is skipped with a message naming it, so `swift test` passes on a machine
/// with only Swift and libcurl; with `DOUCTL_REQUIRE_TOOLS=1` (set by .ci/run, which
/// installs them) a missing tool fails the test instead. Shared by every test target
/// (the DouctlTestSupport target).
public enum Tools {
    /// True when a missing tool must fail the test (CI), not skip it.
    public static var areRequired: Bool { ProcessInfo.processInfo.environment["DOUCTL_REQUIRE_TOOLS"] == "1" }

    /// The tool's path on PATH, or nil.
    public static func find(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = directory + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// The tool's path; otherwise skips the test (or fails it under DOUCTL_REQUIRE_TOOLS=1).
    @discardableResult
    public static func require(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        if let path = find(name) { return path }
        if areRequired {
            Issue.record("\(name) is not installed, and DOUCTL_REQUIRE_TOOLS=1 makes a missing tool a failure", sourceLocation: sourceLocation)
            throw Missing(name: name)
        }
        try Test.cancel("skipped: needs \(name), which is not installed", sourceLocation: sourceLocation)
    }

    public struct Missing: Error, CustomStringConvertible {
        public var name: String
        public var description: String { "\(name) is not installed" }
    }
}

extension Tools {
    /// The directories a shared library is looked for in (the loader's usual ones).
    static let libraryDirectories = ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                                     "/lib64", "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib"]

    /// A shared library a test needs (`libzstd.so.1`): its path; otherwise skips the test naming
    /// it (or fails it under DOUCTL_REQUIRE_TOOLS=1, where scripts/install-test-tools.sh
    /// installs it).
    @discardableResult
    public static func requireLibrary(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        for directory in libraryDirectories where FileManager.default.fileExists(atPath: directory + "/" + name) {
            return directory + "/" + name
        }
        if areRequired {
            Issue.record("the library \(name) is not installed, and DOUCTL_REQUIRE_TOOLS=1 makes a missing tool a failure", sourceLocation: sourceLocation)
            throw Missing(name: name)
        }
        try Test.cancel("skipped: needs the library \(name), which is not installed", sourceLocation: sourceLocation)
    }
}
