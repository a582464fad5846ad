import DouctlHTTP
import DouctlSystem

/// The one writer of a run's lines for a person on stderr: error lines, warnings, notes,
/// `-v` logs, the cache's notes and the rate-limit countdown all come through it, each
/// whole, from any thread (upload workers log too). While a progress display is live, a
/// line goes through the display, which clears its live lines, writes the line and draws
/// them again below it — so progress never erases a line and a line never splits a bar.
/// Data for stdout goes through the same display when stdout is that terminal
/// (`BatchReport`), so on one screen nothing overwrites anything else.
final class Printer: @unchecked Sendable {
    let stderr: OutputStream
    private let stderrFD: Int32
    /// stderr is a terminal (`TerminalFacts`).
    let isTerminal: Bool
    /// Whether douctl's own lead words are coloured (a terminal, no NO_COLOR, `--color`).
    let color: Bool
    /// The live progress display, if any (`startProgress`).
    private let display = LockedValue<ProgressDisplay?>(nil)
    /// Serializes writes to stderr made outside a display.
    private let lock = LockedValue(())
    /// What the run has sent as a secret (`RequestSettings.sentSecrets`): masked in every
    /// line and byte written here, whoever wrote it — douctl's own words never repeat a
    /// token, password or client secret a server echoed back.
    let sentSecrets: SentSecrets

    init(stderr: OutputStream, isTerminal: Bool = false, color: Bool = false, sentSecrets: SentSecrets = SentSecrets()) {
        self.stderr = stderr
        stderrFD = stderr.fileDescriptor
        self.isTerminal = isTerminal
        self.color = color
        self.sentSecrets = sentSecrets
    }

    /// How douctl marks a line of its own: the lead words of an error or a warning, or a
    /// whole heading. The colour is added here, after the text went through `TerminalText`,
    /// so the only escape sequences on a line are douctl's.
    enum Style {
        case plain
        /// "douctl:" in red.
        case error
        /// "douctl: warning:" in yellow.
        case warning
        /// The whole line bold.
        case heading
    }

    /// One line on stderr (the newline is added). Whatever `text` quotes — a server's
    /// message, a header, a file name — reaches the terminal only through
    /// `TerminalText.escaped`: no control, C1 or bidi character passes; newlines stay.
    /// Every secret the run sent is masked first (`sentSecrets`).
    func line(_ text: String, style: Style = .plain) {
        // A command-line byte that was not UTF-8 (EscapedBytes) shows as \xff.
        let safe = EscapedBytes.shown(TerminalText.escaped(sentSecrets.scrub(text), keepingNewlines: true))
        emit(Array((String(styled(safe, style)) + "\n").utf8))
    }

    private func styled(_ text: String, _ style: Style) -> String {
        guard color else { return text }
        switch style {
        case .plain: return text
        case .heading: return "\u{1B}[1m" + text + "\u{1B}[0m"
        case .error: return Self.colorLead(text, "douctl:", code: "31")
        case .warning: return Self.colorLead(text, "douctl: warning:", code: "33")
        }
    }

    private static func colorLead(_ text: String, _ lead: String, code: String) -> String {
        guard text.hasPrefix(bytes: lead) else { return text }
        return "\u{1B}[\(code)m\(lead)\u{1B}[0m" + text.droppingASCII(lead.utf8.count)
    }

    /// Bytes on stderr as they are (the countdown's carriage returns, an error body), never
    /// split; every secret the run sent masked.
    func write(_ bytes: [UInt8]) {
        emit(sentSecrets.scrub(bytes))
    }

    private func emit(_ bytes: [UInt8]) {
        if let live = display.value {
            try? live.emit(bytes, to: stderrFD)
        } else {
            lock.withLock { _ in _ = try? FileIO.writeAll(stderrFD, bytes) }
        }
    }

    /// A progress display on stderr for `mode`, which lines go through from now on; nil
    /// when there is none. The rule (gh's, and one line more): `never` draws nothing; on
    /// a terminal, the display redraws its rows in place — unless stdout feeds another
    /// program (`| jq`), which may be writing to the same screen: then `auto` draws
    /// nothing live (the finished lines still come, whole) and `always` one line, redrawn
    /// on its own row, so nothing another program printed is ever erased. Without a
    /// terminal, `always` prints plain lines.
    func startProgress(_ mode: ProgressMode, stdoutFeedsProgram: Bool, columns: Int?) -> ProgressDisplay? {
        let style: ProgressDisplay.Style
        switch (mode, isTerminal, stdoutFeedsProgram) {
        case (.never, _, _), (.auto, false, _): return nil
        case (.auto, true, true): style = .finishedLinesOnly
        case (.always, true, true): style = .oneLine
        case (_, true, false): style = .redrawInPlace
        case (.always, false, _): style = .plainLines
        }
        let progress = ProgressDisplay(fd: stderrFD, style: style, columns: columns)
        display.withLock { $0 = progress }
        return progress
    }
}
