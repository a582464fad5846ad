import DouctlArguments
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlCore
import DouctlSystem

/// Upload progress on stderr: one line per running upload (bytes, percent, rate, ETA),
/// redrawn in place on a terminal; a plain final line per finished file. Without a
/// terminal (only with `--progress always`) it prints plain lines, at most one a second
/// per file. When stdout feeds another program that may share the screen, it never moves
/// the cursor up: one line for everything, or only the finished lines (`Style`). It owns the terminal while it runs: a result line for stdout goes through
/// `emit`, which clears the live lines, writes the result, and draws them again below it,
/// so neither overwrites the other. Widths are display widths (中文 takes two columns).
final class ProgressDisplay: Sendable {
    private struct Entry {
        var name: String
        var sent: Int64 = 0
        var total: Int64 = 0
        var started: Double
        var lastPlainLine: Double = 0
        var printedComplete = false
    }

    private struct State {
        var running: [Int: Entry] = [:]
        var finishedLines: [String] = []
        var liveLines = 0
        var lastDraw: Double = 0
    }

    /// How the display draws (chosen by `Printer.startProgress`).
    enum Style: Sendable, Equatable {
        /// A row per running transfer, redrawn in place (the cursor moves up over them).
        case redrawInPlace
        /// One row for all running transfers, redrawn with a carriage return only.
        case oneLine
        /// Nothing live: each finished transfer's line, whole.
        case finishedLinesOnly
        /// No terminal: plain lines, at most one a second per transfer.
        case plainLines
    }

    private let fd: Int32
    let style: Style
    private var redrawsInPlace: Bool { style == .redrawInPlace }
    /// Draws live rows (in place, or the one row): what `stop` and `emit` clear and redraw.
    private var drawsLive: Bool { style == .redrawInPlace || style == .oneLine }
    private let width: Int
    private let state = LockedValue(State())

    init(fd: Int32, style: Style, columns: Int?) {
        self.fd = fd
        self.style = style
        width = columns ?? 100
    }

    func started(_ index: Int, name: String) {
        // Callers may say "started" on every callback before the first byte: keep the entry.
        state.withLock { state in
            if state.running[index] == nil { state.running[index] = Entry(name: TerminalText.escaped(name), started: Timestamp.now()) }
        }
    }

    func update(_ index: Int, sent: Int64, total: Int64) {
        let now = Timestamp.now()
        state.withLock { state in
            guard var entry = state.running[index] else { return }
            entry.sent = sent
            entry.total = total
            // Plain lines: at most one a second, and the complete count once, so the last
            // figure shown is the one the done line repeats.
            let complete = total > 0 && sent >= total && !entry.printedComplete
            if style == .plainLines, now - entry.lastPlainLine >= 1 || complete {
                entry.lastPlainLine = now
                if complete { entry.printedComplete = true }
                write(line(for: entry, now: now) + "\n")
            }
            state.running[index] = entry
            if drawsLive, now - state.lastDraw >= 0.1 {
                state.lastDraw = now
                draw(&state, now: now)
            }
        }
    }

    /// The bytes the bar showed last for `index`, so the done line says the same.
    func shownBytes(_ index: Int) -> Int64? {
        state.withLock { state in state.running[index].flatMap { $0.sent > 0 ? $0.sent : nil } }
    }

    /// Writes `bytes` (whole lines) to `fd` — stdout, when it is this terminal too — with
    /// the live lines cleared first and drawn again after, under the display's lock.
    func emit(_ bytes: [UInt8], to fd: Int32) throws {
        try state.withLock { state in
            if style == .oneLine && state.liveLines > 0 {
                write("\r\u{1B}[2K")
                state.liveLines = 0
            }
            if redrawsInPlace && state.liveLines > 0 {
                write("\u{1B}[\(state.liveLines)F\u{1B}[J")
                state.liveLines = 0
            }
            if redrawsInPlace && !state.finishedLines.isEmpty {
                write(state.finishedLines.map { "\u{1B}[2K" + $0 + "\n" }.joined())
                state.finishedLines = []
            }
            defer { if drawsLive { draw(&state, now: Timestamp.now()) } }
            try FileIO.writeAll(fd, bytes)
        }
    }

    func finished(_ index: Int, summary: String) {
        // A summary quotes file names and error messages: one line, nothing a terminal obeys.
        let summary = TerminalText.escaped(summary)
        state.withLock { state in
            state.running[index] = nil
            switch style {
            case .redrawInPlace, .oneLine:
                state.finishedLines.append(summary)
                draw(&state, now: Timestamp.now())
            case .finishedLinesOnly, .plainLines:
                write(summary + "\n")
            }
        }
    }

    /// Clears the live lines (before the final report).
    func stop() {
        state.withLock { state in
            state.running = [:]
            if drawsLive { draw(&state, now: Timestamp.now()) }
        }
    }

    private func draw(_ state: inout State, now: Double) {
        if style == .oneLine { return drawOneLine(&state, now: now) }
        var text = ""
        if state.liveLines > 0 { text += "\u{1B}[\(state.liveLines)F" } // to the start of the first live line
        for line in state.finishedLines { text += "\u{1B}[2K" + line + "\n" }
        state.finishedLines = []
        let live = state.running.sorted { $0.key < $1.key }.map { line(for: $0.value, now: now) }
        for line in live { text += "\u{1B}[2K" + line + "\n" }
        text += "\u{1B}[J"
        state.liveLines = live.count
        write(text)
    }

    /// The `oneLine` style: the row the cursor is on is cleared and drawn again (`\r`, never
    /// up), finished lines printed whole before it, every running transfer summed in it.
    private func drawOneLine(_ state: inout State, now: Double) {
        var text = state.liveLines > 0 ? "\r\u{1B}[2K" : ""
        for line in state.finishedLines { text += line + "\n" }
        state.finishedLines = []
        let running = state.running.sorted { $0.key < $1.key }.map(\.value)
        if let first = running.first {
            var sum = first
            if running.count > 1 {
                sum.name = "\(running.count) files"
                sum.sent = running.reduce(0) { $0 + $1.sent }
                sum.total = running.contains { $0.total <= 0 } ? 0 : running.reduce(0) { $0 + $1.total }
                sum.started = running.map(\.started).min() ?? first.started
            }
            text += line(for: sum, now: now)
            state.liveLines = 1
        } else {
            state.liveLines = 0
        }
        write(text)
    }

    private func line(for entry: Entry, now: Double) -> String {
        let elapsed = max(now - entry.started, 0.001)
        let rate = Double(entry.sent) / elapsed
        var pieces = [Self.bytes(entry.sent)]
        if entry.total > 0 {
            pieces[0] += " / \(Self.bytes(entry.total))"
            pieces.append("\(Int(Double(entry.sent) * 100 / Double(entry.total)))%")
        }
        pieces.append("\(Self.bytes(Int64(rate)))/s")
        if entry.total > 0, rate > 0, entry.sent < entry.total {
            pieces.append("ETA \(Self.clock(Double(entry.total - entry.sent) / rate))")
        }
        return Self.layout(name: entry.name, pieces: pieces, width: width - 1)
    }

    /// One line within `width` columns that never cuts a figure in half: the least
    /// important pieces (ETA, then rate, then percent) go first, then the name shrinks
    /// (24 columns at most, 8 at least).
    static func layout(name: String, pieces: [String], width: Int) -> String {
        var pieces = pieces
        while pieces.count > 1, 8 + 2 + DisplayWidth.of(pieces.joined(separator: "  ")) > width {
            pieces.removeLast()
        }
        let rest = pieces.joined(separator: "  ")
        return "\(fit(name, max(8, min(24, width - 2 - DisplayWidth.of(rest)))))  \(rest)"
    }

    private func write(_ text: String) {
        try? FileIO.writeAll(fd, text)
    }

    static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        if unit == 0 { return "\(count) B" }
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) \(units[unit])"
    }

    static func clock(_ seconds: Double) -> String {
        let total = Int(seconds.rounded(.up))
        return total >= 3600 ? "\(total / 3600)h\(total % 3600 / 60)m" : "\(total / 60):\(total % 60 < 10 ? "0" : "")\(total % 60)"
    }

    /// The file's base name in exactly `width` columns: padded, or cut from the front
    /// ("…的照片.jpg") by display width, so columns line up with 中文 names too.
    static func fit(_ name: String, _ width: Int) -> String {
        DisplayWidth.pad(FileIO.baseName(name), to: width)
    }
}

/// `--progress WHEN` of upload, download and api.
enum ProgressMode: String, Sendable {
    case auto, always, never

    static func option(help: String) -> OptionSpec {
        OptionSpec("progress", value: ValueSpec("WHEN", kind: .choice(["auto", "always", "never"]), default: "auto"), help: help)
    }
}
