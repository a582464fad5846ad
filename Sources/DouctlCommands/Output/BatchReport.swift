#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlCore
import DouctlJSON
import DouctlSystem

/// What `upload` and `download` print as their results come in, in order: one JSON line
/// per item, and for a failure its error line on stderr unless a progress display shows
/// it (or the lines themselves are on stderr). It keeps each item's exit status, for the
/// worst one.
final class BatchReport: Sendable {
    let display: ProgressDisplay?
    /// Where the JSON lines go; nil prints none (a download to stdout).
    private let linesFD: Int32?
    private let printer: Printer
    private let printsErrorLines: Bool
    private let errorFormatJSON: Bool
    private let statuses = LockedValue<[ExitStatus]>([])
    /// The first failed write of a JSON line (see `passOutputFailure`).
    private let outputFailure = LockedValue<SystemError?>(nil)
    private let stdoutFD: Int32
    /// The lines go to a terminal the progress display draws on: they go through it.
    private let linesSharesTerminal: Bool

    /// For a person at a terminal: "VERB NAME" lines instead of JSON (failures are told on stderr).
    private let textVerb: String?
    private let style: TextStyle
    /// The run's stop request: an item it stopped says "interrupted" only when Ctrl-C did.
    private let cancellation: Cancellation

    init(_ context: CommandContext, display: ProgressDisplay?, linesFD: Int32?, textVerb: String? = nil) {
        self.textVerb = textVerb
        cancellation = context.cancellation
        style = TextStyle(enabled: context.colorsStdout)
        self.display = display
        self.linesFD = linesFD
        printer = context.printer
        stdoutFD = context.stdout.fileDescriptor
        printsErrorLines = display == nil && linesFD != context.stderr.fileDescriptor
        errorFormatJSON = context.wantsJSONErrors
        linesSharesTerminal = linesFD.map(Terminal.isTerminal) ?? false
    }

    /// The exit status of the whole batch.
    var worst: ExitStatus { ExitStatus.worst(statuses.value) }

    func succeeded(_ index: Int, line: JSONObject, name: String, bytes: Int64, seconds: Double) {
        statuses.withLock { $0.append(.success) }
        // The done line counts what the bar counted (a multipart body is a little larger than its file).
        let shown = display?.shownBytes(index) ?? bytes
        display?.finished(index, summary: "\(ProgressDisplay.fit(name, 24))  done, \(ProgressDisplay.bytes(shown)) in \(Timestamp.duration(seconds))")
        if let textVerb {
            write(Array("\(textVerb) \(style.bold(TerminalText.escaped(name)))\n".utf8))
        } else {
            print(line)
        }
    }

    /// `{KEY: VALUE, "ok": false, "error", "exit"}` (then `more`), and the error line naming `item`.
    func failed(_ index: Int, _ failure: DouctlError, key: (String, String), item: String, name: String,
                more: [(String, JSON)] = []) {
        let stopped = ExitStatus(failure) == .interrupted
        // Stopped by --max-time: a timeout (exit 7), as the command's own exit says.
        let error = stopped ? Douctl.maxTimeError(cancellation) ?? failure : failure
        let status = ExitStatus(error)
        statuses.withLock { $0.append(status) }
        display?.finished(index, summary: "\(ProgressDisplay.fit(name, 24))  failed: \(error.message)")
        // A stopped item's line would repeat the command's own (interrupted, or --max-time).
        if printsErrorLines && !stopped {
            printer.line(ErrorReport.line(error, item: item, json: errorFormatJSON), style: .error)
        }
        // As text, a failure is told once: by its error line or the progress display.
        if textVerb == nil {
            print(JSONObject([(key.0, .string(key.1)), ("ok", false), ("error", .string(error.message)), ("exit", .int(status.rawValue))] + more))
        }
    }

    private func print(_ line: JSONObject) {
        var bytes = JSON.object(line).serialized(.compact)
        bytes.append(0x0A)
        write(bytes)
    }

    private func write(_ bytes: [UInt8]) {
        guard let linesFD else { return }
        do {
            if let display, linesSharesTerminal {
                try display.emit(bytes, to: linesFD)
            } else {
                try FileIO.writeAll(linesFD, bytes)
            }
        } catch {
            let failure = error as? SystemError ?? SystemError("write", errno: EIO)
            outputFailure.withLock { if $0 == nil { $0 = failure } }
        }
    }

    /// A JSON line that could not be written to stdout is a write error, never silent:
    /// marks `stdout` failed, for `Douctl.main` to report.
    func passOutputFailure(to stdout: OutputStream) {
        guard linesFD == stdoutFD, let failure = outputFailure.value else { return }
        stdout.markFailed(failure)
    }
}
