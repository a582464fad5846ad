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
