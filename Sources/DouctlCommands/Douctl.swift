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
    static func parse(_ argv: [String]) throws(UsageError) -> (ParseOutcome, CommandSpec) {
        let path = ArgumentParser(root: tree.spec).commandPath(argv)
        let partial = tree.spec(along: path)
        if let outcome = try? ArgumentParser(root: partial).parse(argv), outcome.commandPath.map({ $0 == path }) ?? true {
            return (outcome, partial)
        }
        let full = rootSpec
        return (try ArgumentParser(root: full).parse(argv), full)
    }

    public static func main(_ process: ProcessContext) -> Int32 {
        let stdout = OutputStream(fileDescriptor: process.standardOutput)
        let stderr = OutputStream(fileDescriptor: process.standardError, bufferLimit: 0)
        defer {
            stdout.flush()
            stderr.flush()
        }
        let outcome: ParseOutcome
        let specs: CommandSpec
        do {
            (outcome, specs) = try parse(process.arguments)
        } catch {
            reportUsage(error, process: process, stderr: stderr)
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
            } catch {
                reportUsage(UsageError(error.message, path: parsed.path), process: process, stderr: stderr)
                return ExitStatus.usage.rawValue
            }
            // --jq compiles before anything is read or sent; a program that does not compile
            // is a usage error.
            do throws(DouctlError) {
                if let filter = try jqFilter(globals) { stdout.stage = filter }
            } catch {
                reportUsage(UsageError(error.message, path: parsed.path), process: process, stderr: stderr)
                return ExitStatus.usage.rawValue
            }
            if let seconds = globals.maxTime { process.cancellation.expire(after: seconds) }
            if globals.dryRun {
                return dryRun(prepared.run, path: parsed.path, globals: globals, presentation: prepared.presentation, process: process, stdout: stdout, stderr: stderr)
            }
            let context = CommandContext(globals: globals, presentation: prepared.presentation, process: process, stdout: stdout, stderr: stderr)
            return execute(prepared.run, in: context)
        }
    }

    /// `--jq EXPR` compiled with its `--arg` and `--argjson` variables; nil without --jq.
    private static func jqFilter(_ globals: GlobalOptionValues) throws(DouctlError) -> JQFilter? {
        guard let program = globals.jq else {
            if !globals.jqStrings.isEmpty || !globals.jqJSON.isEmpty { throw .usage("--arg and --argjson bind variables of --jq's program; give --jq EXPR") }
            return nil
        }
        if globals.dryRun { throw .usage("--jq cannot be combined with --dry-run (it prints requests, not replies)") }
        return try JQFilter(program, variables: JQFilter.variables(strings: globals.jqStrings, json: globals.jqJSON))
    }

    /// The end of `--jq`'s input: what the filter says went wrong, if anything. After a
    /// command that failed, the filter's own failure (if it stopped the command) comes first.
    private static func finishFilter(_ stdout: OutputStream, failed: Bool) -> DouctlError? {
        guard let filter = stdout.stage as? JQFilter else { return nil }
        if failed {
            filter.release(into: stdout)  // what it printed before the command failed
            return filter.problem
        }
        return filter.finish(into: stdout)
    }

    /// Runs the command and turns how it ended into the exit status: its own, an error's
    /// (reported), a failed stdout's, Ctrl-C's (130) or `--max-time`'s (7).
    private static func execute(_ run: (CommandContext) throws(DouctlError) -> ExitStatus, in context: CommandContext) -> Int32 {
        let stdout = context.stdout
        let cancellation = context.process.cancellation
        let status: ExitStatus
        do {
            status = try run(context)
        } catch {
            if let problem = finishFilter(stdout, failed: true) {
                stdout.flush()
                report(problem, context: context)
                return ExitStatus(problem).rawValue
            }
            stdout.flush()
            if let failed = outputFailure(stdout, context: context) { return failed }
            let reported = ExitStatus(error) == .interrupted ? maxTimeError(cancellation) ?? error : error
            report(reported, context: context)
            return ExitStatus(reported).rawValue
        }
        if let problem = finishFilter(stdout, failed: false) {
            stdout.flush()
            report(problem, context: context)
            return ExitStatus(problem).rawValue
        }
        stdout.flush()
        if let failed = outputFailure(stdout, context: context) { return failed }
        if status == .interrupted || cancellation.isRequested, let timedOut = maxTimeError(cancellation) {
            report(timedOut, context: context)
            return ExitStatus.network.rawValue
        }
        if cancellation.isRequested { return ExitStatus.interrupted.rawValue }
        return status.rawValue
    }

    /// What `--max-time` running out is: a timeout (exit 7), however the command unwound;
    /// nil while the budget lasts.
    static func maxTimeError(_ cancellation: Cancellation) -> DouctlError? {
        cancellation.deadlineMessage.map { .transport(.timedOut($0)) }
    }

    /// A write to stdout that failed. The reader going away (EPIPE: `| head -n 3`) ends
    /// the run quietly with 141, the status of a tool killed by SIGPIPE (gh's, and what
    /// the shell reports for coreutils); any other failure (a full disk, a stdout closed
    /// with `>&-`) is an error, as for coreutils: one line, exit 3.
    private static func outputFailure(_ stdout: OutputStream, context: CommandContext) -> Int32? {
        guard stdout.failed else { return nil }
        if stdout.readerClosed { return ExitStatus.outputClosed.rawValue }
        let reason = stdout.failure?.reason ?? "unknown error"
        let error = DouctlError.localInput("write error on standard output (\(reason))")
        context.report(error, about: nil)
        return ExitStatus(error).rawValue
    }

    /// `--dry-run`: the command runs against no network and no token store; each request
    /// it would send goes to stdout as a curl command line, and the command's own output
    /// is discarded. A step that needs a real reply (a picture URL to post) ends the run.
    private static func dryRun(_ run: (CommandContext) throws(DouctlError) -> ExitStatus, path: [String], globals: GlobalOptionValues, presentation: OutputPresentation, process: ProcessContext, stdout: OutputStream, stderr: OutputStream) -> Int32 {
        let discard = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { if discard >= 0 { close(discard) } }
        let out = stdout.fileDescriptor
        let printer = DryRunPrinter(userAgent: "douctl/\(version)") { line in _ = try? FileIO.writeAll(out, line + "\n") }
        let context = CommandContext(globals: globals, presentation: presentation, process: process, stdout: OutputStream(fileDescriptor: discard), stderr: stderr, dryRun: printer)
        guard let command = path.first, ["api", "user", "shuo", "upload", "download"].contains(command) else {
            let error = DouctlError.usage("--dry-run works with the commands that call the API (api, user, shuo, upload, download)")
            report(error, context: context)
            return ExitStatus(error).rawValue
        }
        do {
            _ = try run(context)
        } catch .badReply {
            context.printer.line("douctl: dry run: the next request depends on the reply to the one above; stopping there")
        } catch {
            report(error, context: context)
            return ExitStatus(error).rawValue
        }
        return ExitStatus.success.rawValue
    }

    static var rootEpilogue: String {
        var text = "EXIT STATUS\n"
        for status in ExitStatus.allCases {
            let code = String(status.rawValue)
            text += "  " + code + String(repeating: " ", count: 5 - code.count) + status.meaning + "\n"
        }
        return text
    }

    /// One line (or one JSON object) on stderr for an error.
    static func report(_ error: DouctlError, context: CommandContext) {
        context.printErrorBody(of: error)
        context.report(error, about: nil)
    }

    private static func reportUsage(_ error: UsageError, process: ProcessContext, stderr: OutputStream) {
        let usage = HelpRenderer(root: rootSpec).usageLine(error.path)
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
