#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// The one owner of what a run shows: stdout (JSON documents and lines, views, raw bytes,
/// the sink of `download -o -`), stderr (through `Printer`: errors, warnings, notes,
/// progress, the rate-limit countdown) and the facts about the terminal they decide by.
/// Commands say what to show; this decides how, from the global options, the command's
/// `OutputPresentation` and `TerminalFacts` read once at start. It also owns the end of
/// the run's output (`finish`): `--jq`'s last word, the flush, and the rule that a reader
/// who went away is exit 141.
///
/// `--jq` is its document stage (`filter`): the documents a command prints (JSON, NDJSON
/// lines, batch lines, bytes of a reply or a download to stdout) go through it; the heads of
/// `-i`/`-I`, error bodies and douctl's own terminal graphics never do. While the filter
/// runs, its thread is stdout's only writer.
final class Output: @unchecked Sendable {
    /// The descriptors' facts, as the run started (or as a test says).
    let terminal: TerminalFacts
    let presentation: OutputPresentation
    /// The one writer of lines on stderr.
    let printer: Printer
    /// stdout, buffered (the run's one output buffer, `--jq`'s results included); written
    /// only from here and the wing's own types (`StreamingReply`, `BatchReport`, the walk).
    let stdout: OutputStream
    /// `--jq`: the stage documents go through; nil: straight to stdout.
    let filter: JQFilter?
    let stderr: OutputStream
    /// The global options, which say how output is shown (`--color`, `--pretty`,
    /// `--compact`, `--error-format`, `--error-body`).
    private let globals: GlobalOptionValues
    private let environment: [String: String]
    /// The time a view measures "3 minutes ago" from.
    private let clock: RunClock
    /// Serializes the writes of `writeNow` and `lineNow`, which come from several threads.
    private let writing = LockedValue(())

    init(stdout: OutputStream, stderr: OutputStream, terminal: TerminalFacts, globals: GlobalOptionValues,
         presentation: OutputPresentation = OutputPresentation(), environment: [String: String], clock: RunClock = .system,
         filter: JQFilter? = nil, sentSecrets: SentSecrets = SentSecrets()) {
        self.clock = clock
        self.stdout = stdout
        self.filter = filter
        filter?.connect(to: stdout, terminal: terminal.stdoutIsTerminal)
        self.stderr = stderr
        self.terminal = terminal
        self.globals = globals
        self.presentation = presentation
        self.environment = environment
        printer = Printer(stderr: stderr, isTerminal: terminal.stderrIsTerminal,
                          color: ColorChoice.enabled(globals.color, isTerminal: terminal.stderrIsTerminal, environment: environment),
                          sentSecrets: sentSecrets)
    }

    /// The run's registry of secrets sent, which every line on stderr is scrubbed with
    /// (`Printer`); the session's requests register in it (`RequestSettings.sentSecrets`).
    var sentSecrets: SentSecrets { printer.sentSecrets }

    /// The same output with another stdout (`--dry-run` discards the command's own; it
    /// never takes --jq).
    func replacingStdout(with stream: OutputStream) -> Output {
        Output(stdout: stream, stderr: stderr, terminal: terminal, globals: globals, presentation: presentation,
               environment: environment, clock: clock, sentSecrets: sentSecrets)
    }

    // MARK: - how stdout is shown

    /// A person reads stdout: a terminal that no `--jq` stage reads first.
    var stdoutIsTerminal: Bool { filter == nil && stdout.isTerminal }

    /// JSON pretty on a terminal, compact in a pipe, unless --pretty/--compact say.
    var prettyJSON: Bool { globals.prettyJSON(isTerminal: stdoutIsTerminal) }

    /// True when stdout gets a view rather than JSON: a terminal, unless --json,
    /// --format json, --pretty or --compact asks for JSON (or --format text asks for a view).
    var wantsView: Bool {
        guard let view = presentation.view else { return false }
        if view.json { return false }
        if let format = view.format { return format == .text }
        if globals.pretty || globals.compact { return false }
        return stdoutIsTerminal
    }

    /// Whether stdout gets colour (`--color`, `NO_COLOR`, a terminal); never into `--jq`.
    var colorsStdout: Bool {
        if filter != nil { return false }
        return ColorChoice.enabled(globals.color, isTerminal: stdoutIsTerminal, environment: environment)
    }

    /// Colour on stderr (errors, warnings).
    var colorsStderr: Bool { printer.color }

    var wantsJSONErrors: Bool { globals.errorFormat == .json }

    /// `--error-body` as given; nil: the command's default (`errorBodyDestination`).
    var errorBodyChoice: ErrorBodyDestination? { globals.errorBody }

    /// An error body pretty on a terminal, unless --pretty/--compact say.
    func prettyErrorBody(on stream: OutputStream) -> Bool { globals.prettyJSON(isTerminal: stream.isTerminal) }

    /// What a view is drawn with: the terminal's width, the time, colours and widths.
    var viewContext: ViewContext {
        ViewContext(width: terminal.stdoutColumns ?? 80, now: clock.now(),
                    style: TextStyle(enabled: colorsStdout, widths: DisplayWidth.Model(environment: environment)))
    }

    // MARK: - stdout

    /// Document bytes: through `--jq` when given, else to stdout.
    func writeDocument(_ bytes: UnsafeRawBufferPointer) {
        if let filter {
            _ = filter.take(bytes)
        } else {
            stdout.write(bytes)
        }
    }

    func writeDocument(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { writeDocument($0) }
    }

    /// Documents cannot go out any more: stdout failed (the reader went away), or the
    /// `--jq` filter stopped (its program failed, or the run was stopped while it ran).
    var documentsStopped: Bool { filter?.stopped ?? stdout.failed }

    /// One JSON document, pretty on a terminal unless told otherwise.
    func json(_ json: JSON) {
        var bytes = colored(json.serialized(prettyJSON ? .pretty : .compact))
        bytes.append(0x0A)
        writeDocument(bytes)
    }

    /// One NDJSON line (streams are always compact, one value per line), flushed.
    func jsonLine(_ json: JSON) {
        var bytes = colored(json.serialized(.compact))
        bytes.append(0x0A)
        writeDocument(bytes)
        flush()
    }

    /// The view of `json` on a terminal, else (or when the view does not fit the reply) JSON.
    func document(_ json: JSON, view: HumanView) {
        if wantsView, let lines = view.document(TerminalText.shown(json), viewContext) {
            viewLines(lines)
        } else {
            self.json(json)
        }
    }

    /// Lines of a view, flushed.
    func viewLines(_ lines: [String]) {
        var text = lines.joined(separator: "\n")
        if !text.isEmpty || !lines.isEmpty { text += "\n" }
        writeDocument(Array(text.utf8))
        flush()
    }

    /// JSON bytes already serialized (a reply reformatted without a tree), and a newline.
    func jsonBytes(_ bytes: [UInt8]) {
        writeDocument(colored(bytes))
        writeDocument([0x0A])
    }

    /// JSON text as stdout should get it: coloured like jq's when colour is on, and with
    /// terminal controls escaped on a terminal (`JSONColorizer`); as it is in a pipe.
    func colored(_ bytes: [UInt8]) -> [UInt8] {
        let colors = colorsStdout
        return colors || stdoutIsTerminal ? JSONColorizer.colorize(bytes, colors: colors) : bytes
    }

    /// Bytes as they are (`--raw`, a reply that is not JSON, a completion script): a document.
    func write(_ bytes: [UInt8]) { writeDocument(bytes) }

    func write(_ bytes: UnsafeRawBufferPointer) { writeDocument(bytes) }

    func write(_ text: String) { writeDocument(Array(text.utf8)) }

    /// A line of data (a value a script reads: a token, a config value, a URL).
    func line(_ text: String) { writeDocument(Array((text + "\n").utf8)) }

    /// douctl's own terminal graphics (an inline picture's escape sequences), drawn now.
    /// Only ever called when stdout is a terminal that draws them (`InlineImages`).
    func draw(_ sequence: [UInt8]) {
        stdout.write(sequence)
        stdout.flush()
    }

    /// Whole bytes of data out at once, from any thread (a batch's result lines as they
    /// come in). When a live progress display shares stdout's terminal, they go through it,
    /// which clears its rows, writes them and draws the rows again below.
    func writeNow(_ bytes: [UInt8], through display: ProgressDisplay? = nil) {
        writing.withLock { _ in
            if let filter {
                _ = bytes.withUnsafeBytes { filter.take($0) }
                return
            }
            guard let display, stdoutIsTerminal else {
                stdout.write(bytes)
                return stdout.flush()
            }
            stdout.flush()
            do { try display.emit(bytes, to: stdout.fileDescriptor) } catch {
                stdout.markFailed(error as? SystemError ?? SystemError("write", errno: EIO))
            }
        }
    }

    /// A whole line of data, out at once, from any thread (`--dry-run`'s request lines,
    /// which parallel uploads print as they go).
    func lineNow(_ text: String) { writeNow(Array((text + "\n").utf8)) }

    /// Everything written so far, out (before a child process or a long wait). With
    /// `--jq`, the filter's thread writes its results as they come.
    func flush() { if filter == nil { stdout.flush() } }

    /// The reader of stdout went away (`| head`): whatever else fails after it is not news.
    /// (While a `--jq` filter runs, its thread owns stdout: asked once it stopped.)
    var readerClosed: Bool { (filter?.stopped ?? true) && stdout.readerClosed }

    /// What stops a run whose stdout failed: its reader gone (a stop, `.readerClosed`:
    /// quiet, 141), else a failed write (`finish` says which, in one place).
    var stdoutFailure: DouctlError {
        readerClosed ? .stopped(.readerClosed) : .transport(.outputFailed("standard output"))
    }

    /// stdout as a sink for bytes arriving from elsewhere (`download -o -`): written through
    /// the same stream, so a closed reader is seen, and said, in one place (`finish`).
    func sink(_ bytes: UnsafeRawBufferPointer) -> SystemError? {
        if let filter { return filter.take(bytes) ? nil : SystemError("write", errno: EIO) }
        stdout.writeUnbuffered(bytes)
        return stdout.failed ? stdout.failure ?? SystemError("write", errno: EIO) : nil
    }

    /// The descriptor a child process writes to in douctl's place (the demo's steps),
    /// everything buffered flushed first.
    func handOver() -> Int32 {
        stdout.flush()
        return stdout.fileDescriptor
    }

    // MARK: - stderr

    /// The descriptor a child process writes its own errors to (the demo's steps).
    var stderrDescriptor: Int32 { stderr.fileDescriptor }

    /// A line for a person, on stderr.
    func note(_ text: String) { printer.line(text) }

    func warn(_ text: String) { printer.line(Self.warning(text), style: .warning) }

    static func warning(_ text: String) -> String { "douctl: warning: " + text }

    /// A question on stderr, the answer typed after it on the same line.
    func prompt(_ text: String) {
        printer.write(Array(TerminalText.escaped(text).utf8))
    }

    /// An error about one of several items (a file, an id), then the run goes on. Once the
    /// reader of stdout went away, a write that failed for it is no error to tell.
    func report(_ error: DouctlError, about item: String?) {
        if readerClosed, case .transport(.outputFailed) = error { return }
        if error.stopReason == .readerClosed { return }
        printer.line(ErrorReport.line(error, item: item, json: wantsJSONErrors), style: .error)
    }

    /// `--progress WHEN` of upload, download and api (see `Printer.startProgress`).
    func progress(_ mode: ProgressMode) -> ProgressDisplay? {
        printer.startProgress(mode, stdoutFeedsProgram: terminal.stdoutFeedsProgram && !terminal.stdoutIsTerminal,
                              columns: terminal.stderrColumns)
    }

    /// `--wait-on-rate-limit`'s wait: a countdown on a terminal, one line otherwise. False
    /// when the run was stopped while waiting.
    func waitOutRateLimit(seconds: Double, reason: String, clock: RunClock, cancellation: Cancellation, quiet: Bool = false) -> Bool {
        let total = Int(seconds.rounded(.up))
        if quiet {
            clock.sleep(seconds, cancellation)
        } else if terminal.stderrIsTerminal {
            for left in stride(from: total, to: 0, by: -1) {
                printer.write(Array("\r\u{1B}[2Kdouctl: rate limited (\(TerminalText.escaped(reason))); going on in \(left)s".utf8))
                clock.sleep(min(1, seconds - Double(total - left)), cancellation)
                if cancellation.isRequested { break }
            }
            printer.write(Array("\r\u{1B}[2K".utf8))
        } else {
            printer.line("douctl: rate limited (\(reason)); waiting \(total)s")
            clock.sleep(seconds, cancellation)
        }
        return !cancellation.isRequested
    }
}

/// Where an API error reply's body goes (`--error-body`).
enum ErrorBodyDestination: String, Sendable { case stdout, stderr, none }
