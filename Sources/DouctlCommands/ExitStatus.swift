import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// douctl's exit codes, as the man page's EXIT STATUS lists them. The only place errors
/// become numbers.
public enum ExitStatus: Int32, Sendable, CaseIterable {
    case success = 0
    case apiError = 1
    case usage = 2
    case localInput = 3
    case authentication = 4
    case notFound = 5
    case rateLimited = 6
    case network = 7
    case badReply = 8
    /// `--jq`'s program failed at run time (a compile error is a usage error, 2).
    case filterFailed = 9
    /// A GraphQL reply with data and errors: the data was printed, the errors said on stderr.
    case partial = 10
    /// `sandbox --verify`: the live API's replies drifted from the recording.
    case drift = 11
    case interrupted = 130
    /// The reader of stdout went away (`| head`): 128 + SIGPIPE, as a shell reports a tool
    /// killed by SIGPIPE (gh, coreutils). Quiet: nothing is wrong but that nobody reads.
    case outputClosed = 141

    public init(_ error: DouctlError) {
        switch error {
        case .usage, .unsupported: self = .usage
        case .localInput, .badConfig: self = .localInput
        case .authentication: self = .authentication
        case .api(let apiError):
            switch apiError.kind {
            case .general: self = .apiError
            case .authentication, .permission: self = .authentication
            case .notFound: self = .notFound
            case .rateLimited: self = .rateLimited
            }
        case .transport(let transportError):
            switch transportError {
            case .stopped(let reason, _): self = ExitStatus(reason)
            case .bodyFile: self = .localInput
            case .outputFailed: self = .apiError
            case .malformedReply, .replyTooLarge: self = .badReply
            default: self = .network
            }
        case .badReply: self = .badReply
        case .notCached: self = .notFound
        case .filter: self = .filterFailed
        }
    }

    /// Why a run stopped, as its exit: Ctrl-C 130, `--max-time` a timeout (7), the reader
    /// gone 141, a bound that refused the reply 8 (a reply douctl cannot use).
    public init(_ stop: StopReason) {
        switch stop {
        case .interrupt: self = .interrupted
        case .deadline: self = .network
        case .readerClosed: self = .outputClosed
        case .refused: self = .badReply
        }
    }

    /// What each code means, for help and the man page.
    public var meaning: String {
        switch self {
        case .success: return "success"
        case .apiError: return "the API answered with an error not listed below"
        case .usage: return "usage error (unknown command or flag, missing or malformed argument, options that do not go together: refused before anything is read or sent)"
        case .localInput: return "local input or output error (file missing or unreadable, bad config file, a write to standard output failed)"
        case .authentication: return "authentication needed, refused, or expired beyond refresh; or permission denied (HTTP 403: the credential is fine but may not do this)"
        case .notFound: return "not found (with --cache-only: not in the cache, nothing was sent)"
        case .rateLimited: return "rate limited, after retries"
        case .network: return "network error (connect, DNS, TLS, timeout)"
        case .badReply: return "the reply could not be understood (not JSON where JSON was due, truncated)"
        case .filterFailed: return "the --jq program failed on a value (error(...), a type error such as .a.b on a number): what came before it was printed (a program that does not compile is 2)"
        case .partial: return "the GraphQL API answered with data and errors (a partial result): the data was printed on stdout, the errors (messages and paths) on stderr; errors without data are 1"
        case .drift: return "sandbox verify: a live reply drifted from the recording (status, fields added or gone, types)"
        case .interrupted: return "interrupted"
        case .outputClosed: return "standard output was closed by its reader (e.g. | head); douctl stopped quietly, fetching nothing more"
        }
    }

    /// When several things ran (uploads, deletes), the exit code reports the worst outcome:
    /// the highest code, except that success never hides a failure.
    public static func worst(_ statuses: [ExitStatus]) -> ExitStatus {
        statuses.max { $0.rawValue < $1.rawValue } ?? .success
    }
}

/// How errors are shown on stderr: one line, or one JSON object (`--error-format json`).
public enum ErrorFormat: String, Sendable {
    case text
    case json
}

enum ErrorReport {
    /// `text` on one line: line breaks and every other character a terminal would act on
    /// written as escapes (\n, \r, \x1B, \u009B, \u202E), by `TerminalText`. Tabs stay. A
    /// byte of the command line that was not UTF-8 (`EscapedBytes`) shows as \xff.
    static func escapingControls(_ text: String) -> String {
        EscapedBytes.shown(TerminalText.escaped(text))
    }

    /// The JSON object of `--error-format json`: error, exit, http_status, code, request.
    static func json(_ error: DouctlError) -> JSONObject {
        var object = JSONObject()
        object["error"] = .string(EscapedBytes.shown(error.message))
        object["exit"] = .int(ExitStatus(error).rawValue)
        if case .api(let apiError) = error {
            object["http_status"] = .int(apiError.httpStatus)
            object["code"] = apiError.code.map(JSON.string) ?? .null
            object["message"] = .string(apiError.message)
            if !apiError.messageKeys.isEmpty { object["keys"] = .array(apiError.messageKeys.map(JSON.string)) }
            object["request"] = apiError.request.map(JSON.string) ?? .null
        } else {
            if case .badReply(_, let status?) = error {
                object["http_status"] = .int(status)
            } else {
                object["http_status"] = .null
            }
            object["code"] = .null
            object["request"] = .null
        }
        return object
    }

    /// The one line an error prints on stderr: `douctl: what (detail)`, or with
    /// `--error-format json` the object above. `item` names the file or id of a command
    /// that reports several (upload, shuo delete); a file error that names its file
    /// already ("cannot read a.png: …") is not prefixed with it again. `usage`, the
    /// command's usage line, follows a mistake the parser found (a line of its own, or the
    /// object's "usage").
    /// Uncoloured: `Printer.line(_:style: .error)` colours the lead word on a terminal.
    static func line(_ error: DouctlError, item: String? = nil, usage: String? = nil, json: Bool) -> String {
        if json {
            var object = self.json(error)
            if let item { object["item"] = .string(item) }
            if let usage { object["usage"] = .string(usage) }
            return JSON.object(object).text(.compact)
        }
        let prefix = "douctl:"
        // One line, whatever the message quotes (a user's -H with a line break, a server's
        // text with escape sequences).
        let message = escapingControls(error.message)
        var line = "\(prefix) \(message)"
        if let item, !(ExitStatus(error) == .localInput && message.containsBytes(item)) {
            line = "\(prefix) \(item): \(message)"
        }
        if let usage { line += "\n" + usage }
        return line
    }
}
