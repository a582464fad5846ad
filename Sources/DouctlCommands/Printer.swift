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
    /// The live progress display, if any (`startProgress`).
    private let display = LockedValue<ProgressDisplay?>(nil)
    /// Serializes writes to stderr made outside a display.
    private let lock = LockedValue(())

    init(stderr: OutputStream) {
        self.stderr = stderr
        stderrFD = stderr.fileDescriptor
    }

    /// One line on stderr (the newline is added).
    func line(_ text: String) {
        write(Array((text + "\n").utf8))
    }

    /// Bytes on stderr as they are (the countdown's carriage returns), never split.
    func write(_ bytes: [UInt8]) {
        if let live = display.value {
            try? live.emit(bytes, to: stderrFD)
        } else {
            lock.withLock { _ in _ = try? FileIO.writeAll(stderrFD, bytes) }
        }
    }

    /// A progress display on stderr for `mode` (see `ProgressMode`), which lines go
    /// through from now on; nil when the mode says none.
    func startProgress(_ mode: ProgressMode) -> ProgressDisplay? {
        guard mode == .always || (mode == .auto && stderr.isTerminal) else { return nil }
        let progress = ProgressDisplay(fd: stderrFD, redrawsInPlace: stderr.isTerminal)
        display.withLock { $0 = progress }
        return progress
    }
}
