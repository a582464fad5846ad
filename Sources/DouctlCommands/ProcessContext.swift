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
    public var makeTransport: TransportFactory = { HTTPClient($0) }
    /// What stops the run: the process's (Ctrl-C, SIGTERM, `--max-time`), or in tests one
    /// of their own, requested from another thread without signals.
    public var cancellation: Cancellation = .process
    /// Wall time and waits (the rate-limit countdown, the device flow's polling): the
    /// system's, or in tests a virtual clock whose waits take no time.
    public var clock: RunClock = .system
    /// The most pages a walk (`--all`, `--paginate`) fetches before it stops with exit 8:
    /// 100,000 (`Paginator.defaultMaximumPages`), or in tests a few, so reaching it takes
    /// five requests. (It was the hidden variable DOUCTL_MAX_PAGES: a limit any shell
    /// could lower unseen, which no page documented.)
    public var pageCap: Int = Paginator.defaultMaximumPages

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

/// A step between a command's output and its descriptor (`--jq`).
public protocol OutputStage: AnyObject {
    /// Takes the next bytes the command wrote, writing its own output through
    /// `out.writeThrough`; false stops the output (the stage keeps why).
    func take(_ bytes: UnsafeRawBufferPointer, into out: OutputStream) -> Bool
}

/// A byte stream to a file descriptor, buffered so big outputs take few write(2) calls.
/// After a write fails (a closed pipe, a full disk), later writes are dropped, `failed` is
/// set and `failure` keeps why; `Douctl.main` reports it (a write error is never silent).
public final class OutputStream {
    public let fileDescriptor: Int32
    /// False once a stage (`--jq`) reads the command's output instead of a person.
    public private(set) var isTerminal: Bool
    /// What the command's writes go through before the descriptor (`--jq`'s filter); nil:
    /// straight to it. The stage writes its own output with `writeThrough`.
    public var stage: OutputStage? {
        didSet { if stage != nil { isTerminal = false } }
    }
    private var buffer: [UInt8] = []
    private let bufferLimit: Int
    public private(set) var failed = false
    /// The first failed write's error.
    public private(set) var failure: SystemError?

    /// True when the reader went away (EPIPE: `| head` has all it wants).
    public var readerClosed: Bool { failure?.errno == EPIPE }

    public init(fileDescriptor: Int32, bufferLimit: Int = 256 * 1024) {
        self.fileDescriptor = fileDescriptor
        self.bufferLimit = bufferLimit
        isTerminal = Terminal.isTerminal(fileDescriptor)
        buffer.reserveCapacity(min(bufferLimit, 64 * 1024))
    }

    deinit { flush() }

    public func write(_ bytes: UnsafeRawBufferPointer) {
        guard let stage else { return writeThrough(bytes) }
        guard !failed else { return }
        // A stage that stops (the program failed) keeps why; later writes are dropped.
        // What it printed before it stopped still goes out.
        if !stage.take(bytes, into: self) {
            flush()
            failed = true
        }
    }

    /// Writes to the descriptor (buffered), past any stage.
    public func writeThrough(_ bytes: UnsafeRawBufferPointer) {
        if buffer.count + bytes.count > bufferLimit { flush() }
        if bytes.count >= bufferLimit {
            writeNow(bytes)
        } else {
            buffer.append(contentsOf: bytes)
        }
    }

    public func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { write($0) }
    }

    public func write(_ text: String) {
        var text = text
        text.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    public func line(_ text: String) {
        write(text + "\n")
    }

    /// Records a write to this descriptor that failed elsewhere (a batch's JSON lines).
    public func markFailed(_ error: SystemError) {
        guard !failed else { return }
        failed = true
        failure = error
    }

    public func flush() {
        guard !buffer.isEmpty else { return }
        buffer.withUnsafeBytes { writeNow($0) }
        buffer.removeAll(keepingCapacity: true)
    }

    private func writeNow(_ bytes: UnsafeRawBufferPointer) {
        guard !failed else { return }
        do {
            try FileIO.writeAll(fileDescriptor, bytes)
        } catch {
            failed = true
            failure = error as? SystemError ?? SystemError("write", errno: EIO)
        }
    }
}
