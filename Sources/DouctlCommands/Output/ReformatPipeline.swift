import DouctlJSON
import DouctlSystem

/// A streamed JSON reply reformatted on a thread of its own, and its output written to
/// stdout by a third, while the transfer receives the next bytes: libcurl's write callback
/// only copies each chunk into a `BlockHandoff` (a few fixed blocks, so memory stays flat),
/// gathered into full blocks (libcurl hands over what one read returned, often a few KiB,
/// and each block handed over may wake the other thread), the reformat thread feeds them,
/// in order, to the reformatter, whose
/// output is gathered into large blocks of a second handoff, and the writer thread writes
/// those. On a machine with a second core the receive and the writes (system time) overlap
/// with the reformat (user time) instead of taking turns.
///
/// What the reply's reader sees does not change: the reformatter gets the same bytes in
/// the same order, cut elsewhere (its output does not depend on where its input is cut),
/// and its output goes out in the same order, so the output, and the output before an
/// error, are the synchronous path's. The reformat thread stops at a malformed
/// byte, the writer at a failed write (a reader that went away: nothing more is written);
/// each refuses its input, so the next `put` returns false and the transfer stops, as the
/// synchronous sink's refusal stops it. `end` (every way a transfer ends goes through it)
/// lets both threads finish what they were given and waits for them, so nothing writes to
/// stdout behind the caller's back once it returns: after a stop (Ctrl-C, `--max-time`) at
/// most a few blocks are left, milliseconds of work.
final class ReformatPipeline: @unchecked Sendable {
    /// Blocks of 256 KiB, the most libcurl is asked to deliver at once (`HTTPClient`'s
    /// CURLOPT_BUFFERSIZE) and the size of stdout's own buffer; eight on each side (4 MiB
    /// in all), so the reformat thread, the one whose time is the transfer's, finds work
    /// waiting and room to put it when the receiver or the writer is scheduled late. With
    /// two a side it stalled on them: 1 GiB `--compact | wc -c` took 1.28 s against
    /// eight's 1.06 s (curl 1.07 s) on the 2-core machine with load ~3.
    static let blocks = 8
    static let blockSize = 256 * 1024

    private let input: BlockHandoff
    private let output: BlockHandoff
    private let stdout: OutputStream
    private var reformatThread: JoinableThread?
    private var writeThread: JoinableThread?
    /// What the reformat thread feeds (set by `start`, before the thread begins).
    private var reformatter: JSONStreamReformatter?
    /// True until both threads run, and again once `end` has waited for them: `write`
    /// then goes to stdout on the caller's thread.
    private var direct = true
    /// The reformatter's error, set on the reformat thread and read after it is joined.
    private var failure: JSONParseError?

    init(stdout: OutputStream, blocks: Int = ReformatPipeline.blocks, blockSize: Int = ReformatPipeline.blockSize) {
        input = BlockHandoff(blocks: blocks, blockSize: blockSize)
        output = BlockHandoff(blocks: blocks, blockSize: blockSize)
        self.stdout = stdout
    }

    /// Where the reformatter's output goes (its `emit`): gathered for the writer thread
    /// while the pipeline runs, else straight to stdout.
    func write(_ bytes: UnsafeRawBufferPointer) {
        if direct {
            stdout.write(bytes)
        } else {
            _ = output.append(bytes)
        }
    }

    /// Starts the threads, feeding `reformatter` (whose `emit` is `write`). False when the
    /// system cannot start them: the caller reformats on its own thread.
    func start(_ reformatter: JSONStreamReformatter) -> Bool {
        self.reformatter = reformatter
        direct = false
        do {
            writeThread = try JoinableThread { [self] in
                while output.take({ block in
                    stdout.writeUnbuffered(block)
                    return !stdout.failed
                }) {}
            }
        } catch {
            direct = true
            return false
        }
        do {
            reformatThread = try JoinableThread { [self] in
                while input.take({ block in
                    do throws(JSONParseError) {
                        try self.reformatter?.feed(block)
                    } catch {
                        failure = error
                        return false
                    }
                    return !output.isRefused
                }) {}
            }
        } catch {
            output.close()
            writeThread?.join()
            writeThread = nil
            direct = true
            return false
        }
        return true
    }

    /// Hands the next bytes of the reply to the reformat thread. False once the pipeline
    /// has stopped (a malformed reply, or stdout gone): the transfer should stop.
    func put(_ chunk: UnsafeRawBufferPointer) -> Bool {
        input.append(chunk) && !output.isRefused
    }

    /// No more bytes: waits for the threads to reformat and write what they hold, and end.
    /// Returns the reformatter's error, if it met one. Calling it again returns the same.
    func end() -> JSONParseError? {
        if let reformatThread {
            input.close()
            reformatThread.join()
            self.reformatThread = nil
        }
        if let writeThread {
            output.close()
            writeThread.join()
            self.writeThread = nil
        }
        direct = true
        // The reformatter's `emit` holds this pipeline: let go of it, so neither is kept.
        reformatter = nil
        return failure
    }
}
