#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem

/// What douctl knows of the screen it runs on, decided once at start: which descriptors
/// are terminals, how wide, and whether stdout feeds another program. Every view, colour
/// and progress decision reads these, never `isatty` at the point of use, so a test can
/// hand in a terminal of 60 columns and watch the view in process (gh's `iostreams.Test`).
public struct TerminalFacts: Sendable, Equatable {
    public var stdinIsTerminal: Bool
    public var stdoutIsTerminal: Bool
    public var stderrIsTerminal: Bool
    /// Columns of stdout's terminal; nil when it is not one.
    public var stdoutColumns: Int?
    /// Columns of stderr's terminal; nil when it is not one.
    public var stderrColumns: Int?
    /// stdout is a pipe or a socket: another program reads it, and may well write to the
    /// same screen as our stderr (`douctl upload … | jq`). A file or a device is not.
    public var stdoutFeedsProgram: Bool

    public init(stdinIsTerminal: Bool = false, stdoutIsTerminal: Bool = false, stderrIsTerminal: Bool = false,
                stdoutColumns: Int? = nil, stderrColumns: Int? = nil, stdoutFeedsProgram: Bool = false) {
        self.stdinIsTerminal = stdinIsTerminal
        self.stdoutIsTerminal = stdoutIsTerminal
        self.stderrIsTerminal = stderrIsTerminal
        self.stdoutColumns = stdoutColumns
        self.stderrColumns = stderrColumns
        self.stdoutFeedsProgram = stdoutFeedsProgram
    }

    /// A person at a terminal of `columns` on all three descriptors (for tests).
    public static func terminal(columns: Int = 80) -> TerminalFacts {
        TerminalFacts(stdinIsTerminal: true, stdoutIsTerminal: true, stderrIsTerminal: true,
                      stdoutColumns: columns, stderrColumns: columns)
    }

    /// The kernel's answers for these descriptors (whether stdout and stderr are terminals,
    /// when already asked, is not asked again).
    public static func probe(standardInput: Int32, standardOutput: Int32, standardError: Int32,
                             stdoutIsTerminal: Bool? = nil, stderrIsTerminal: Bool? = nil) -> TerminalFacts {
        var info = stat()
        let kind = fstat(standardOutput, &info) == 0 ? info.st_mode & S_IFMT : 0
        let stdoutIsTerminal = stdoutIsTerminal ?? Terminal.isTerminal(standardOutput)
        let stderrIsTerminal = stderrIsTerminal ?? Terminal.isTerminal(standardError)
        return TerminalFacts(
            stdinIsTerminal: Terminal.isTerminal(standardInput),
            stdoutIsTerminal: stdoutIsTerminal,
            stderrIsTerminal: stderrIsTerminal,
            stdoutColumns: stdoutIsTerminal ? Terminal.width(standardOutput) : nil,
            stderrColumns: stderrIsTerminal ? Terminal.width(standardError) : nil,
            stdoutFeedsProgram: kind == S_IFIFO || kind == S_IFSOCK)
    }
}
