import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// How a run's output ends: an API error's body where `--error-body` says, the error line,
/// `--jq`'s last word, and what a failed stdout means. The only place that decides exit
/// 141 (the reader went away) and exit 3 (stdout could not be written).
extension Output {
    // MARK: - error replies

    /// `--error-body`, else (for `api`) stdout on a terminal and stderr in a pipe: an error
    /// never puts a document on a script's stdout unless asked.
    var errorBodyDestination: ErrorBodyDestination {
        if let chosen = errorBodyChoice { return chosen }
        guard presentation.showsErrorBodies else { return .none }
        return stdoutIsTerminal ? .stdout : .stderr
    }

    /// The stream `--error-body` names, or nil for none.
    private var errorBodyStream: OutputStream? {
        switch errorBodyDestination {
        case .stdout: return stdout
        case .stderr: return stderr
        case .none: return nil
        }
    }

    /// The status line and headers of an error reply (`-i`), where its body goes.
    func errorHead(_ head: HTTPResponseHead) {
        guard let stream = errorBodyStream else { return }
        if stream === stderr {
            printer.write(Array(APIOutput.headText(head, forPerson: true).utf8))
        } else {
            stream.write(APIOutput.headText(head))
        }
    }

    /// The reply body of an API error where `--error-body` says: as received with --raw,
    /// else as JSON (pretty on a terminal); a body that is not JSON only with --raw.
    func errorBody(of error: DouctlError) {
        guard case .api(let apiError) = error, let body = apiError.body, !body.isEmpty, let stream = errorBodyStream else { return }
        var bytes: [UInt8]
        if presentation.rawErrorBodies {
            bytes = body
        } else if let json = try? JSONParser.parse(body) {
            bytes = json.serialized(prettyErrorBody(on: stream) ? .pretty : .compact)
            // For a person (stderr, or a terminal): what the terminal would obey is spelt as
            // a JSON escape, the same value to a reader (TerminalText).
            if stream === stderr || stream.isTerminal { bytes = JSONColorizer.colorize(bytes, colors: false) }
        } else {
            return
        }
        if bytes.last != 0x0A { bytes.append(0x0A) }
        if stream === stderr {
            printer.write(bytes)
        } else {
            stream.write(bytes)
            stream.flush()
        }
    }

    /// One line (or one JSON object) on stderr for the error that ended the run, after
    /// its reply's body.
    func reportFailure(_ error: DouctlError) {
        errorBody(of: error)
        report(error, about: nil)
    }

    // MARK: - the end of the run

    /// The exit status of a run that ended with `outcome`: `--jq` finishes (its own
    /// failure comes first), stdout is flushed, a failed stdout decides (141 for a reader
    /// that went away, quietly; 3 for any other write error), then a stop (its reason's
    /// code: `--max-time` 7 with its line, Ctrl-C 130), then the command's own status or
    /// error (reported here).
    func finish(_ outcome: Result<ExitStatus, DouctlError>, cancellation: Cancellation) -> Int32 {
        var outcome = outcome
        if let filter {
            // The end of `--jq`'s input. After a command that failed, what was queued is
            // filtered and printed, and the filter's own failure (if it stopped the command)
            // comes first.
            let failed: Bool
            if case .failure = outcome { failed = true } else { failed = false }
            switch filter.finish(complete: !failed) {
            case .done:
                break
            case .failed(let problem):
                stdout.flush()
                reportFailure(problem)
                return ExitStatus(problem).rawValue
            case .stopped(let stdoutFree):
                // The run was stopped while the program ran: the stop decides the exit, as
                // below. A filter's thread still inside a write keeps stdout.
                if !stdoutFree { stdout.relinquish() }
                outcome = .failure(.interrupted)
            }
        }
        stdout.flush()
        if let status = outputFailure() { return status.rawValue }
        switch outcome {
        case .failure(let error):
            let reported = error.withStopReason(of: cancellation)
            reportFailure(reported)
            return ExitStatus(reported).rawValue
        case .success(let status):
            guard status == .interrupted || cancellation.isRequested else { return status.rawValue }
            // The command unwound from a stop: the run's reason says how it ends.
            let stop = DouctlError.stopped(cancellation.stopReason)
            if stop.stopReason != .interrupt { reportFailure(stop) }
            return ExitStatus(stop).rawValue
        }
    }

    /// A write to stdout that failed. The reader going away (EPIPE: `| head -n 3`) ends
    /// the run quietly with 141, the status of a tool killed by SIGPIPE (gh's, and what
    /// the shell reports for coreutils); any other failure (a full disk, a stdout closed
    /// with `>&-`) is an error, as for coreutils: one line, exit 3.
    private func outputFailure() -> ExitStatus? {
        guard stdout.failed else { return nil }
        if stdout.readerClosed { return .outputClosed }
        let reason = stdout.failure?.reason ?? "unknown error"
        let error = DouctlError.localInput("write error on standard output (\(reason))")
        report(error, about: nil)
        return ExitStatus(error)
    }
}
