import DouctlJSON
import DouctlSystem

/// A streamed JSON reply reformatted on a thread of its own while the transfer receives
/// the next bytes: libcurl's write callback only copies each chunk into a `BlockHandoff`
/// (a few fixed blocks, so memory stays flat) and the pipeline's thread feeds them, in
/// order and as they came, to the reformatter, whose output goes to stdout. On a machine
/// with a second core the receive (system time) and the reformat (user time) overlap
/// instead of taking turns.
///
/// What the reply's reader sees does not change: the reformatter gets the same chunks in
/// the same order, so the output, and the output before an error, are the synchronous
/// path's. The thread stops at a malformed byte or a failed write to stdout (a reader that
/// went away); the next `put` then returns false and the transfer stops, as the
/// synchronous sink's refusal stops it. `end` (every way a transfer ends goes through it)
/// lets the thread finish what it was given and waits for it, so nothing writes to stdout
/// behind the caller's back once it returns: after a stop (Ctrl-C, `--max-time`) at most
/// `blocks` blocks are left, a few milliseconds of work.
final class ReformatPipeline: @unchecked Sendable {
    /// Four blocks of 256 KiB, the size libcurl is asked to deliver (`HTTPClient`'s
    /// CURLOPT_BUFFERSIZE): one chunk, one block.
    static let blocks = 4
    static let blockSize = 256 * 1024

    private let handoff: BlockHandoff
    private let reformatter: JSONStreamReformatter
    /// Whether stdout can take no more (read on the pipeline's thread, the only one that
    /// writes to stdout while the pipeline runs).
    private let stopped: () -> Bool
    private var thread: JoinableThread?
    /// The reformatter's error, set on the pipeline's thread and read after it is joined.
    private var failure: JSONParseError?

    /// Nil when no thread can be started (the caller then reformats on its own thread).
    init?(reformatter: JSONStreamReformatter, blocks: Int = ReformatPipeline.blocks, blockSize: Int = ReformatPipeline.blockSize,
          stopped: @escaping () -> Bool) {
        handoff = BlockHandoff(blocks: blocks, blockSize: blockSize)
        self.reformatter = reformatter
        self.stopped = stopped
        do {
            thread = try JoinableThread { [self] in run() }
        } catch {
            return nil
        }
    }

    private func run() {
        while handoff.take({ block in
            do throws(JSONParseError) {
                try reformatter.feed(block)
            } catch {
                failure = error
                return false
            }
            return !stopped()
        }) {}
    }

    /// Hands the next bytes of the reply to the thread. False once it has stopped (a
    /// malformed reply, or stdout gone): the transfer should stop.
    func put(_ chunk: UnsafeRawBufferPointer) -> Bool {
        handoff.put(chunk)
    }

    /// No more bytes: waits for the thread to reformat what it holds and end. Returns the
    /// reformatter's error, if it met one. Calling it again returns the same.
    func end() -> JSONParseError? {
        if let thread {
            handoff.close()
            thread.join()
            self.thread = nil
        }
        return failure
    }
}
