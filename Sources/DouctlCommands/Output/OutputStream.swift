#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem

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

    /// `isTerminal`: what `TerminalFacts` says of the descriptor (nil: ask the kernel).
    public init(fileDescriptor: Int32, bufferLimit: Int = 256 * 1024, isTerminal: Bool? = nil) {
        self.fileDescriptor = fileDescriptor
        self.bufferLimit = bufferLimit
        self.isTerminal = isTerminal ?? Terminal.isTerminal(fileDescriptor)
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

    /// Bytes out now, after what is buffered, without a copy into the buffer (a download's
    /// chunks to stdout); through the stage when there is one.
    public func writeUnbuffered(_ bytes: UnsafeRawBufferPointer) {
        guard stage == nil else {
            write(bytes)
            return flush()
        }
        flush()
        writeNow(bytes)
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
