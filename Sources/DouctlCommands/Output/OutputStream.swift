#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem
import Synchronization

/// A byte stream to a file descriptor, buffered so big outputs take few write(2) calls.
/// After a write fails (a closed pipe, a full disk), later writes are dropped, `failed` is
/// set and `failure` keeps why; `Douctl.main` reports it (a write error is never silent).
public final class OutputStream {
    public let fileDescriptor: Int32
    /// The descriptor is a terminal (as `TerminalFacts` says).
    public let isTerminal: Bool
    private var buffer: [UInt8] = []
    private let bufferLimit: Int
    public private(set) var failed = false
    /// The first failed write's error.
    public private(set) var failure: SystemError?
    /// Given up to a thread that may still be writing (`relinquish`): this side writes nothing.
    private let relinquished = Atomic<Bool>(false)

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

    /// Bytes not yet written to the descriptor.
    public var bufferedCount: Int { buffer.count }

    /// This side never touches the stream again: another thread (an abandoned `--jq`
    /// filter's) may be inside a write to it. Later writes and flushes from here are no-ops.
    public func relinquish() { relinquished.store(true, ordering: .releasing) }

    public func write(_ bytes: UnsafeRawBufferPointer) {
        guard !relinquished.load(ordering: .acquiring) else { return }
        if buffer.count + bytes.count > bufferLimit {
            if !grewPipe { growPipe() }
            flush()
        }
        if bytes.count >= bufferLimit {
            writeNow(bytes)
        } else {
            buffer.append(contentsOf: bytes)
        }
    }

    /// Bytes out now, after what is buffered, without a copy into the buffer (a download's
    /// chunks to stdout, a reformatted reply's blocks from its writer thread). A big one
    /// grows a pipe as a full buffer does: through a pipe the reformat pipeline's writer
    /// and the reader otherwise take turns at every 64 KiB (measured: half the context
    /// switches and 5-10 % less CPU for 1 GiB of `--compact` into `wc -c`).
    public func writeUnbuffered(_ bytes: UnsafeRawBufferPointer) {
        guard !relinquished.load(ordering: .acquiring) else { return }
        if !grewPipe && bytes.count >= 64 * 1024 { growPipe() }
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

    /// Whether `growPipe` has been tried (once, at the first full buffer: small outputs never pay).
    private var grewPipe = false

    /// A big output to a pipe: the pipe grown to 1 MiB (Linux's default is 64 KiB, and
    /// `/proc/sys/fs/pipe-max-size` is 1 MiB by default), so that writer and reader take
    /// turns four times less often than at each 256 KiB write. The reader loses nothing;
    /// where the kernel refuses (a per-user limit reached), the pipe stays as it was.
    private func growPipe() {
        grewPipe = true
        #if os(Linux)
        var info = stat()
        guard fstat(fileDescriptor, &info) == 0, info.st_mode & S_IFMT == S_IFIFO else { return }
        let setPipeSize: Int32 = 1031  // F_SETPIPE_SZ
        _ = fcntl(fileDescriptor, setPipeSize, Int32(1 << 20))
        #endif
    }

    public func flush() {
        guard !relinquished.load(ordering: .acquiring), !buffer.isEmpty else { return }
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
