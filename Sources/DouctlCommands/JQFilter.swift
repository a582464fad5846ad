#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CJQ
import DouctlCore
import DouctlSystem

/// `--jq EXPR`: what a command prints to stdout goes through jq's own engine (the system's
/// libjq, loaded at run time; see CJQ) instead of to the descriptor. The output is a stream
/// of JSON texts (one document, or a walk's NDJSON lines, or --slurp's array); each value is
/// filtered as soon as it is whole, so a walk is filtered item by item at flat memory. A
/// string result is printed as its text, any other as compact JSON, each on its own line:
/// what `douctl ... | jq -rc EXPR` prints, byte for byte.
///
/// The program runs on a thread of its own (CJQ's threaded mode), beside the command, as jq
/// runs beside douctl in a pipe: the command queues its output (at most 64 KiB waits, as in a pipe) and
/// goes on fetching and parsing while the thread filters and writes the results. In the
/// caller's thread, the same work took 1.04–1.19x the pipe's wall time on two cores.
final class JQFilter: OutputStage {
    private let filter: OpaquePointer
    /// Why the output stopped: the program failed (exit 9), or the output was not JSON (8).
    private(set) var problem: DouctlError?
    private var out: OutputStream?
    /// Results not yet passed to the descriptor. The command flushes stdout after each
    /// NDJSON line; passing each result on at once cost a write(2) per item (100,000 on a
    /// 100-page walk of 1,000 items). So results are held until a block is full, as jq's
    /// own stdio holds them when its stdout is not a terminal (on one, each goes at once),
    /// and always released when the input ends or the filter stops.
    private var pending: [UInt8] = []
    private var holdsBlocks: Bool?
    /// The program runs on its own thread (see the type's comment).
    private var threaded = false
    static let block = 4096
    /// jq's one-line messages (compile and run-time errors), allocated once.
    private let message = UnsafeMutablePointer<CChar>.allocate(capacity: 512)

    /// `--arg NAME VALUE` binds $NAME to a string; `--argjson NAME JSON` to a JSON value.
    struct Variable {
        var name: String
        var value: String
        var json: Bool
    }

    /// Compiles `program`. A program that does not compile, an `--argjson` that is not
    /// JSON, or no libjq: a usage error (exit 2), before anything is sent.
    init(_ program: String, variables: [Variable]) throws(DouctlError) {
        var error = [CChar](repeating: 0, count: 512)
        let names = variables.map { strdup($0.name) }
        let values = variables.map { strdup($0.value) }
        defer { (names + values).forEach { free($0) } }
        let flags = variables.map { Int32($0.json ? 1 : 0) }
        let compiled: OpaquePointer? = names.map { UnsafePointer($0) }.withUnsafeBufferPointer { namePointers in
            values.map { UnsafePointer($0) }.withUnsafeBufferPointer { valuePointers in
                flags.withUnsafeBufferPointer { flagPointer in
                    error.withUnsafeMutableBufferPointer { buffer in
                        cjq_filter_new(program, Int32(variables.count), namePointers.baseAddress, valuePointers.baseAddress,
                                       flagPointer.baseAddress, buffer.baseAddress, buffer.count)
                    }
                }
            }
        }
        guard let compiled else {
            let reason = Self.text(error)
            if cjq_load() != 0 {
                throw .usage("--jq needs jq's library, libjq: \(reason); install it (Debian, Ubuntu: libjq1; it comes with jq) or set DOUCTL_LIBJQ to its path")
            }
            throw .usage(reason.hasPrefix("invalid JSON for --argjson") ? reason : "invalid --jq program: \(reason)")
        }
        filter = compiled
    }

    deinit {
        cjq_filter_free(filter)
        message.deallocate()
    }

    /// Passes what the filter printed so far on to `out` (its buffer; the command's flush
    /// writes it), when the command failed after printing: on its thread, the input queued
    /// so far is filtered and written (an unfinished value is no error then).
    func release(into out: OutputStream) {
        if threaded {
            threaded = false
            note(cjq_filter_end(filter, 0, message, 512), out: out)
        }
        guard !pending.isEmpty else { return }
        pending.withUnsafeBytes { out.writeThrough($0) }
        pending.removeAll(keepingCapacity: true)
    }

    /// `--arg NAME VALUE` and `--argjson NAME JSON` (the parser took them as pairs, and
    /// `GlobalOptionValues.validate` checked the names).
    static func variables(strings: [(name: String, value: String)], json: [(name: String, value: String)]) -> [Variable] {
        strings.map { Variable(name: $0.name, value: $0.value, json: false) }
            + json.map { Variable(name: $0.name, value: $0.value, json: true) }
    }

    func take(_ bytes: UnsafeRawBufferPointer, into out: OutputStream) -> Bool {
        feed(bytes, last: false, into: out)
    }

    /// The end of the output: a value left unfinished is an error; nil when all went well.
    func finish(into out: OutputStream) -> DouctlError? {
        guard problem == nil, !out.failed else { return problem }
        _ = feed(UnsafeRawBufferPointer(start: nil, count: 0), last: true, into: out)
        return problem
    }

    private func feed(_ bytes: UnsafeRawBufferPointer, last: Bool, into out: OutputStream) -> Bool {
        self.out = out
        message[0] = 0
        if holdsBlocks == nil {
            let holds = !Terminal.isTerminal(out.fileDescriptor)
            holdsBlocks = holds
            out.flush()
            // Else (no thread to be had) the filter runs here, as before.
            threaded = cjq_filter_start_thread(filter, out.fileDescriptor, holds ? 0 : 1) == 0
        }
        if last { threaded = false }  // cjq_filter_feed ends the thread
        let context = Unmanaged.passUnretained(self).toOpaque()
        let status = cjq_filter_feed(filter, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count, last ? 1 : 0, { context, bytes, count in
            guard let context, let bytes else { return 0 }
            let stage = Unmanaged<JQFilter>.fromOpaque(context).takeUnretainedValue()
            stage.pending.append(contentsOf: UnsafeRawBufferPointer(start: bytes, count: count))
            return stage.out?.failed == true ? 0 : 1
        }, context, message, 512)
        if status != CJQ_OK || last || holdsBlocks != true || pending.count >= Self.block { release(into: out) }
        return note(status, out: out)
    }

    /// Keeps why the filter stopped (`problem`, or stdout's failure); true when it goes on.
    @discardableResult
    private func note(_ status: Int32, out: OutputStream) -> Bool {
        switch status {
        case CJQ_OK: return !out.failed
        case CJQ_RUNTIME_ERROR: if problem == nil { problem = .filter(Self.text(message)) }
        case CJQ_INPUT_ERROR: if problem == nil { problem = .badReply("--jq: the output to filter is not JSON (\(Self.text(message)))") }
        default:
            // stdout failed (on the filter's thread: its errno); Douctl.main reports that.
            let code = cjq_filter_write_errno(filter)
            if code != 0 { out.markFailed(SystemError("write", errno: code)) }
        }
        return false
    }

    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func text(_ pointer: UnsafeMutablePointer<CChar>) -> String {
        text(Array(UnsafeBufferPointer(start: pointer, count: 512)))
    }
}
