import DouctlJSON

/// What one douctl run left behind: its exit status and both streams, whether it ran as a
/// child process or in-process.
public struct CommandResult: CustomStringConvertible {
    public var status: Int32
    public var stdout: [UInt8]
    public var stderrBytes: [UInt8]

    public init(status: Int32, stdout: [UInt8], stderrBytes: [UInt8]) {
        self.status = status
        self.stdout = stdout
        self.stderrBytes = stderrBytes
    }

    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    public var stderr: String { String(decoding: stderrBytes, as: UTF8.self) }

    /// The error line: the last line of stderr (`api` puts an error reply's body before
    /// it when stdout is not a terminal).
    public var errorLine: String {
        var text = Substring(stderr)
        while text.last == "\n" || text.last == "\r" { text.removeLast() }
        while text.first == "\n" || text.first == "\r" { text.removeFirst() }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        return lines.last { $0.hasPrefix("douctl:") } ?? lines.last ?? ""
    }

    public func json() throws -> JSON { try JSONParser.parse(stdout) }

    /// stdout as NDJSON.
    public func lines() throws -> [JSON] {
        try stdoutText.split(separator: "\n").map { try JSONParser.parse(String($0)) }
    }

    public var description: String { "exit \(status)\n--- stdout\n\(stdoutText)\n--- stderr\n\(stderr)" }
}
