#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlCore
import DouctlHTTP
import DouctlSystem

/// Everything douctl takes from its process, passed in so the whole CLI can run inside
/// tests with other descriptors and variables.
public struct ProcessContext: Sendable {
    public var arguments: [String]
    public var environment: [String: String]
    public var standardInput: Int32
    /// Descriptor 0 was closed when douctl started (it holds /dev/null now): what must come
    /// from standard input is refused, not sent empty.
    public var standardInputClosed = false
    public var standardOutput: Int32
    public var standardError: Int32
    /// The transport requests go through: libcurl, or in tests a scripted one.
    public var makeTransport: TransportFactory = HTTPClient.transport
    /// What stops the run: the process's (Ctrl-C, SIGTERM, `--max-time`), or in tests one
    /// of their own, requested from another thread without signals.
    public var cancellation: Cancellation = .process
    /// Wall time and waits (the rate-limit countdown, the device flow's polling): the
    /// system's, or in tests a virtual clock whose waits take no time.
    public var clock: RunClock = .system
    /// Which of the three descriptors are terminals and how wide: nil asks the kernel
    /// (`TerminalFacts.probe`); tests pass their own, so views and progress run in process.
    public var terminal: TerminalFacts?
    /// The most pages a walk (`--all`, `--paginate`) fetches before it stops with exit 8:
    /// 100,000 (`Paginator.defaultMaximumPages`), or in tests a few, so reaching it takes
    /// five requests. (It was the hidden variable DOUCTL_MAX_PAGES: a limit any shell
    /// could lower unseen, which no page documented.)
    public var pageCap: Int = Paginator.defaultMaximumPages
    /// Where a `.douctl` file that picks the profile is looked for, upward: nil for the
    /// process's working directory; tests give their own directory.
    public var workingDirectory: String?

    public init(arguments: [String], environment: [String: String], standardInput: Int32 = 0, standardOutput: Int32 = 1, standardError: Int32 = 2) {
        self.arguments = arguments
        self.environment = environment
        self.standardInput = standardInput
        self.standardOutput = standardOutput
        self.standardError = standardError
    }

    /// This process: argv without the program name (bytes that are not UTF-8 escaped, not
    /// replaced: `EscapedBytes`), and `environ`.
    public static func current() -> ProcessContext {
        var variables: [String: String] = [:]
        var count = 0
        while environ[count] != nil { count += 1 }
        // Sized once: growing one entry at a time rehashed the table nine times.
        variables.reserveCapacity(count)
        var pointer = environ
        // Bytes, not Characters: splitting at "=" by grapheme took ~0.1 ms of a small
        // request's start-up with a shell's worth of variables (perf, issue 23).
        while let entry = pointer.pointee {
            let length = strlen(entry)
            entry.withMemoryRebound(to: UInt8.self, capacity: length) { bytes in
                let text = UnsafeBufferPointer(start: bytes, count: length)
                if let equals = text.firstIndex(of: UInt8(ascii: "=")) {
                    variables[String(decoding: text[..<equals], as: UTF8.self)] = String(decoding: text[(equals + 1)...], as: UTF8.self)
                }
            }
            pointer += 1
        }
        var process = ProcessContext(arguments: EscapedBytes.commandLineArguments(), environment: variables)
        process.standardInputClosed = StandardDescriptors.wasClosed(0)
        return process
    }
}
