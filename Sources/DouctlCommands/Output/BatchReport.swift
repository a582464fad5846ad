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
    /// Where the JSON (or text) lines go.
    enum Lines: Sendable, Equatable {
        /// stdout, the usual place (through `--jq` when given).
        case standardOutput
        /// stderr: `shuo get --save-images`, whose stdout is the status; these lines take
        /// the place of the error lines.
        case standardError
        /// None: a download to stdout, whose bytes are the output.
        case none
    }

    let display: ProgressDisplay?
    private let lines: Lines
    private let output: Output
    private let printsErrorLines: Bool
    private let statuses = LockedValue<[ExitStatus]>([])

    /// For a person at a terminal: "VERB NAME" lines instead of JSON (failures are told on stderr).
    private let textVerb: String?
    private let style: TextStyle
    /// The run's stop request: an item it stopped says "interrupted" only when Ctrl-C did.
    private let cancellation: Cancellation

    init(_ output: Output, cancellation: Cancellation, display: ProgressDisplay?, lines: Lines, textVerb: String? = nil) {
        self.textVerb = textVerb
        self.cancellation = cancellation
        self.output = output
        style = TextStyle(enabled: output.colorsStdout)
        self.display = display
        self.lines = lines
        printsErrorLines = display == nil && lines != .standardError
        output.flush()
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
        // Stopped by --max-time: a timeout (exit 7), as the command's own exit says.
        let error = failure.withStopReason(of: cancellation)
        let stopped = error.stopReason?.stopsTheRun == true
        let status = ExitStatus(error)
        statuses.withLock { $0.append(status) }
        // douctl's own words, here too without a secret the run sent (`SentSecrets`).
        let message = output.sentSecrets.scrub(error.message)
        display?.finished(index, summary: "\(ProgressDisplay.fit(name, 24))  failed: \(message)")
        // A stopped item's line would repeat the command's own (interrupted, or --max-time).
        if printsErrorLines && !stopped {
            output.report(error, about: item)
        }
        // As text, a failure is told once: by its error line or the progress display.
        if textVerb == nil {
            print(JSONObject([(key.0, .string(key.1)), ("ok", false), ("error", .string(message)), ("exit", .int(status.rawValue))] + more))
        }
    }

    private func print(_ line: JSONObject) {
        var bytes = JSON.object(line).serialized(.compact)
        bytes.append(0x0A)
        write(bytes)
    }

    private func write(_ bytes: [UInt8]) {
        switch lines {
        case .none:
            return
        case .standardError:
            output.printer.write(bytes)
        case .standardOutput:
            output.writeNow(bytes, through: display)
        }
    }
}
