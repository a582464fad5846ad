#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlArguments
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// The douctl program: parse, dispatch, report. `main.swift` only calls `Douctl.main`.
public enum Douctl {
    public static let version = "0.1.0"

    static let tree = CommandTree.root

    /// The whole command tree as data (for completions, the man page and tests).
    public static var rootSpec: CommandSpec { tree.fullSpec }

    /// The specs one command line needs: options built along its path only (see
    /// `Command.spec(along:)`), or, if the parser reads the line otherwise, the whole tree.
    static func parse(_ argv: [String], tree: Command = tree) throws(UsageError) -> (ParseOutcome, CommandSpec) {
        let path = ArgumentParser(root: tree.spec).commandPath(argv)
        let partial = tree.spec(along: path)
        if let outcome = try? ArgumentParser(root: partial).parse(argv), outcome.commandPath.map({ $0 == path }) ?? true {
            return (outcome, partial)
        }
        let full = tree.fullSpec
        return (try ArgumentParser(root: full).parse(argv), full)
    }

    public static func main(_ given: ProcessContext) -> Int32 {
        // A first word that is a profile with an API description: its operations are
        // commands too, run as that profile (OpenAPICommands); any other line parses the
        // built-in tree only.
        var process = given
        let described = OpenAPICommands.tree(for: process)
        if let described { process.arguments = described.arguments }
        let tree = described?.tree ?? Self.tree
        // Help, --version and usage errors need no more of the terminal than isatty; the
        // rest of its facts are read once a command is to run (`TerminalFacts.probe`).
        let stdout = OutputStream(fileDescriptor: process.standardOutput, isTerminal: process.terminal?.stdoutIsTerminal)
        let stderr = OutputStream(fileDescriptor: process.standardError, bufferLimit: 0, isTerminal: process.terminal?.stderrIsTerminal)
        defer {
            stdout.flush()
            stderr.flush()
        }
        let outcome: ParseOutcome
        let specs: CommandSpec
        do {
            (outcome, specs) = try parse(process.arguments, tree: tree)
        } catch {
            reportUsage(error, process: process, stderr: stderr, root: described == nil ? rootSpec : tree.fullSpec)
            return ExitStatus.usage.rawValue
        }
        switch outcome {
        case .version:
            stdout.line("douctl \(version)")
            return ExitStatus.success.rawValue
        case .help(let path):
            stdout.write(HelpRenderer(root: specs, rootEpilogue: rootEpilogue).help(path))
            return ExitStatus.success.rawValue
        case .run(let parsed):
            guard let prepare = tree.find(parsed.path)?.prepare else {
                stdout.write(HelpRenderer(root: specs).help(parsed.path))
                return ExitStatus.success.rawValue
            }
            let prepared: PreparedRun
            let globals: GlobalOptionValues
            do throws(OptionError) {
                prepared = try prepare(parsed)
                globals = try GlobalOptionValues.bind(parsed)
                try JQFilter.checkOptions(globals, presentation: prepared.presentation)
            } catch {
                reportUsage(UsageError(error.message, path: parsed.path), process: process, stderr: stderr, root: specs)
                return ExitStatus.usage.rawValue
            }
            let terminal = process.terminal ?? .probe(standardInput: process.standardInput, standardOutput: process.standardOutput,
                                                      standardError: process.standardError, stdoutIsTerminal: stdout.isTerminal,
                                                      stderrIsTerminal: stderr.isTerminal)
            // --jq compiles before anything is read or sent; a program that does not compile
            // is a usage error.
            let filter: JQFilter?
            do throws(DouctlError) {
                filter = try globals.jq.map { program throws(DouctlError) in
                    try JQFilter(program, variables: JQFilter.variables(strings: globals.jqStrings, json: globals.jqJSON),
                                 cancellation: process.cancellation)
                }
            } catch {
                reportUsage(UsageError(error.message, path: parsed.path), process: process, stderr: stderr, root: specs)
                return ExitStatus.usage.rawValue
            }
            if let seconds = globals.maxTime { process.cancellation.expire(after: seconds, clock: process.clock) }
            let output = Output(stdout: stdout, stderr: stderr, terminal: terminal, globals: globals,
                                presentation: prepared.presentation, environment: process.environment, clock: process.clock,
                                filter: filter)
            if globals.dryRun {
                return dryRun(prepared.run, globals: globals, output: output, process: process)
            }
            let context = CommandContext(globals: globals, output: output, process: process)
            return execute(prepared.run, in: context)
        }
    }

    /// Runs the command; the output turns how it ended into the exit status (`Output.finish`).
    private static func execute(_ run: (CommandContext) throws(DouctlError) -> ExitStatus, in context: CommandContext) -> Int32 {
        let outcome: Result<ExitStatus, DouctlError>
        do throws(DouctlError) {
            outcome = .success(try run(context))
        } catch {
            outcome = .failure(error)
        }
        return context.output.finish(outcome, cancellation: context.cancellation)
    }

    /// `--dry-run` (which the parser takes only for a command that calls the API, see
    /// `Command.callingAPI`): the command runs against no network and no token store; each
    /// request it would send goes to stdout as a curl command line, and the command's own
    /// output is discarded. A step that needs a real reply (a picture URL to post) ends the run.
    private static func dryRun(_ run: (CommandContext) throws(DouctlError) -> ExitStatus, globals: GlobalOptionValues, output: Output, process: ProcessContext) -> Int32 {
        let discard = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { if discard >= 0 { close(discard) } }
        // The request lines are the run's output: through stdout's owner, so a reader that
        // goes away is 141 here too.
        let printer = DryRunPrinter(userAgent: "douctl/\(version)") { line in output.lineNow(line) }
        let discarding = output.replacingStdout(with: OutputStream(fileDescriptor: discard, isTerminal: false))
        let context = CommandContext(globals: globals, output: discarding, process: process, dryRun: printer)
        let outcome: Result<ExitStatus, DouctlError>
        do throws(DouctlError) {
            _ = try run(context)
            outcome = .success(.success)
        } catch .badReply {
            discarding.note("douctl: dry run: the next request depends on the reply to the one above; stopping there")
            outcome = .success(.success)
        } catch {
            outcome = .failure(error)
        }
        return output.finish(outcome, cancellation: process.cancellation)
    }

    static var rootEpilogue: String {
        var text = "EXIT STATUS\n"
        for status in ExitStatus.allCases {
            let code = String(status.rawValue)
            text += "  " + code + String(repeating: " ", count: 5 - code.count) + status.meaning + "\n"
        }
        return text
    }

    private static func reportUsage(_ error: UsageError, process: ProcessContext, stderr: OutputStream, root: CommandSpec = rootSpec) {
        let usage = HelpRenderer(root: root).usageLine(error.path)
        let arguments = process.arguments
        let wantsJSON = arguments.contains("--error-format=json")
            || zip(arguments, arguments.dropFirst()).contains { $0 == "--error-format" && $1 == "json" }
        // Plain, like the usage line under it.
        stderr.line(ErrorReport.line(.usage(error.message), usage: usage, json: wantsJSON))
    }
}

extension ParseOutcome {
    /// The command the outcome is about (nil: `--version`, which any path may ask for: an
    /// option of a command off the path would have failed the parse instead).
    var commandPath: [String]? {
        switch self {
        case .run(let parsed): return parsed.path
        case .help(let path): return path
        case .version: return nil
        }
    }
}
