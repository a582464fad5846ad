#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CJQ
import DouctlArguments
import DouctlCore
import DouctlSystem
import Synchronization

/// `--jq EXPR`: the document stage of the output wing. The documents a command prints (a
/// reply, a walk's items as NDJSON lines, --slurp's array, a batch's result lines) go
/// through jq's own engine (the system's libjq, loaded at run time; see CJQ) instead of to
/// stdout; heads (`-i`, `-I`) and error bodies never do (`Output`). Each value is filtered as
/// soon as it is whole, so a walk is filtered item by item at flat memory. A string result
/// is printed as its text, any other as compact JSON, each on its own line: in a pipe, what
/// `douctl ... | jq -rc EXPR` prints, byte for byte. On a terminal, server text is escaped
/// as everywhere else: a string as a view shows it (`TerminalText.shown`), JSON as JSON on
/// a terminal spells it (`JSONColorizer`).
///
/// The program runs on a thread of its own (CJQ's threaded mode), beside the command, as jq
/// runs beside douctl in a pipe: the command queues its documents (at most 64 KiB waits, as
/// in a pipe) and goes on fetching and parsing while the thread filters. Its results go to
/// stdout's own buffer (the one buffer of the run's output), written in 4 KiB blocks as jq's
/// stdio writes them in a pipe, each line at once on a terminal. In the caller's thread,
/// the same work took 1.04–1.19x the pipe's wall time on two cores.
///
/// libjq cannot be interrupted. When the run is stopped (--max-time, Ctrl-C, SIGTERM) while
/// the command waits for the thread, the thread is given a quarter of a second to finish what
/// was queued, then abandoned: it prints nothing more, and the process exits under it.
final class JQFilter: @unchecked Sendable {
    private let filter: OpaquePointer
    /// Why the filter stopped: the program failed (exit 9), or its input was not JSON (8).
    private(set) var problem: DouctlError?
    /// How the filter's part of the run ended.
    enum Ending {
        /// All went well, or the reader of stdout went away (stdout says which).
        case done
        /// The program failed, or its input was not JSON.
        case failed(DouctlError)
        /// The run was stopped while the filter ran; `stdoutFree`: the filter's thread will
        /// never write again (else it is blocked writing, and stdout is its own).
        case stopped(stdoutFree: Bool)
    }

    private var ending: Ending?
    /// Set once the filter stopped taking input (a failure, a stop, or stdout's failure):
    /// read from any thread.
    private let stoppedFlag = Atomic<Bool>(false)
    private var started = false
    /// The program runs on its own thread (else, with no thread to be had, in the caller's).
    private var threaded = false
    /// Where results go, and how (set by `Output`).
    private var stdout: OutputStream?
    private var escapes = false
    private let cancellation: Cancellation
    /// jq's one-line messages (compile and run-time errors), allocated once.
    private let message = UnsafeMutablePointer<CChar>.allocate(capacity: 512)
    /// What a pipe's reader gets at a time, as jq's stdio writes.
    static let block = 4096

    /// `--arg NAME VALUE` binds $NAME to a string; `--argjson NAME JSON` to a JSON value.
    struct Variable {
        var name: String
        var value: String
        var json: Bool
    }

    /// Compiles `program`. A program that does not compile, an `--argjson` that is not
    /// JSON, or no libjq: a usage error (exit 2), before anything is sent. `cancellation`
    /// ends any wait for the filter's thread.
    init(_ program: String, variables: [Variable], cancellation: Cancellation) throws(DouctlError) {
        self.cancellation = cancellation
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
            message.deallocate()
            let reason = Self.text(error)
            if cjq_load() != 0 {
                throw .usage("--jq needs jq's library, libjq: \(reason); install it (Debian, Ubuntu: libjq1; it comes with jq) or set DOUCTL_LIBJQ to its path")
            }
            throw .usage(reason.hasPrefix("invalid JSON for --argjson") ? reason : "invalid --jq program: \(reason)")
        }
        filter = compiled
    }

    deinit {
        // A filter whose thread was abandoned belongs to that thread (it frees it).
        if case .stopped = ending {} else { cjq_filter_free(filter) }
        message.deallocate()
    }

    /// Results go to `stdout`, escaped for a person when `terminal` (its descriptor is one).
    func connect(to stdout: OutputStream, terminal: Bool) {
        self.stdout = stdout
        escapes = terminal
    }

    /// Every refusal of `--jq` and its variables, the one place they are checked: at parse
    /// time, with the command's own options (exit 2 with the usage line, before anything is
    /// read or sent). --jq filters documents, so it refuses what prints none (`--dry-run`'s
    /// request lines) and what the command says it cannot filter (`api --raw`, `-i`, `-I`,
    /// `-o FILE`: `OutputPresentation.unfilterable`).
    static func checkOptions(_ globals: GlobalOptionValues, presentation: OutputPresentation) throws(OptionError) {
        guard globals.jq != nil else {
            if !globals.jqStrings.isEmpty || !globals.jqJSON.isEmpty {
                throw OptionError("--arg and --argjson bind variables of --jq's program; give --jq EXPR")
            }
            return
        }
        if globals.dryRun { throw OptionError("--jq cannot be combined with --dry-run (it prints requests, not replies)") }
        if let option = presentation.unfilterable {
            throw OptionError("--jq cannot be combined with \(option) (it filters the JSON douctl prints)")
        }
    }

    /// `--arg NAME VALUE` and `--argjson NAME JSON` (the parser took them as pairs, and
    /// `GlobalOptionValues.validate` checked the names).
    static func variables(strings: [(name: String, value: String)], json: [(name: String, value: String)]) -> [Variable] {
        strings.map { Variable(name: $0.name, value: $0.value, json: false) }
            + json.map { Variable(name: $0.name, value: $0.value, json: true) }
    }

    /// True once the filter takes no more input.
    var stopped: Bool { stoppedFlag.load(ordering: .acquiring) }

    /// The next bytes of the documents; false once the filter stopped (it keeps why).
    func take(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard ending == nil, !stopped else { return false }
        if !started {
            started = true
            threaded = cjq_filter_start_thread(filter, Self.emit, Self.stop, Unmanaged.passUnretained(self).toOpaque()) == 0
        }
        message[0] = 0
        let status = cjq_filter_feed(filter, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count, 0,
                                     Self.emit, Unmanaged.passUnretained(self).toOpaque(), message, 512)
        return note(status)
    }

    /// The end of the documents: `complete` when the command finished them (a value left
    /// unfinished is then an input error), else (it failed part-way) what was queued is
    /// filtered and printed. Waits for the thread, unless the run is stopped.
    func finish(complete: Bool) -> Ending {
        if let ending { return ending }
        guard started else { return .done }  // no document: nothing to filter
        message[0] = 0
        let status: Int32
        if threaded {
            status = cjq_filter_end(filter, complete ? 1 : 0, message, 512)
        } else {
            status = complete ? cjq_filter_feed(filter, nil, 0, 1, Self.emit, Unmanaged.passUnretained(self).toOpaque(), message, 512) : CJQ_OK
        }
        note(status)
        return ending ?? .done
    }

    /// Keeps why the filter stopped; true when it goes on.
    @discardableResult
    private func note(_ status: Int32) -> Bool {
        switch status {
        case CJQ_OK: return true
        case CJQ_RUNTIME_ERROR: problem = .filter(Self.text(message))
        case CJQ_INPUT_ERROR: problem = .badReply("--jq: the output to filter is not JSON (\(Self.text(message)))")
        case CJQ_CANCELLED: ending = .stopped(stdoutFree: true)
        case CJQ_CANCELLED_BUSY: ending = .stopped(stdoutFree: false)
        default: break  // stdout failed; it keeps why
        }
        if ending == nil { ending = problem.map { .failed($0) } ?? .done }
        stoppedFlag.store(true, ordering: .releasing)
        return false
    }

    /// A result, from the filter's thread: into stdout's buffer, escaped on a terminal;
    /// out in blocks (each line on a terminal).
    private static let emit: cjq_emit = { context, bytes, count, isString in
        guard let context else { return 0 }
        let stage = Unmanaged<JQFilter>.fromOpaque(context).takeUnretainedValue()
        guard let stdout = stage.stdout else { return 0 }
        let result = UnsafeRawBufferPointer(start: bytes, count: count)
        if stage.escapes {
            var line = isString != 0
                ? Array(TerminalText.shown(String(decoding: result, as: UTF8.self)).utf8)
                : JSONColorizer.colorize(Array(result), colors: false)
            line.append(0x0A)
            stdout.write(line)
            stdout.flush()
        } else {
            stdout.write(result)
            stdout.write(newline)
            if stdout.bufferedCount >= block { stdout.flush() }
        }
        return stdout.failed ? 0 : 1
    }

    private static let newline: [UInt8] = [0x0A]

    /// Asked while the command waits for the filter's thread.
    private static let stop: cjq_stop = { context in
        guard let context else { return 0 }
        return Unmanaged<JQFilter>.fromOpaque(context).takeUnretainedValue().cancellation.isRequested ? 1 : 0
    }

    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func text(_ pointer: UnsafeMutablePointer<CChar>) -> String {
        text(Array(UnsafeBufferPointer(start: pointer, count: 512)))
    }
}
