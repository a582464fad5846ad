import DouctlHTTP
import DouctlSystem

/// Every way a douctl command can fail. The command layer's `ExitStatus` gives each error
/// its exit code, in one place: most cases by the case alone, `.api` by its `APIError.kind`
/// and `.transport` by its `TransportError` (each case below names its codes). The core
/// only says what happened.
public enum DouctlError: Error, Equatable, Sendable {
    /// A command-line mistake found after parsing (e.g. an `api` PATH libcurl refuses, or a question
    /// answered no). Exit 2.
    case usage(String)
    /// The profile's API style has no such operation (e.g. reshare on Coding). Exit 2.
    case unsupported(String)
    /// A local file is missing, unreadable or unsuitable. Exit 3.
    case localInput(String)
    /// config.json or credentials.json is unreadable or malformed. Exit 3.
    case badConfig(path: String, detail: String)
    /// No credentials, or the server refused them beyond what a refresh can fix. Exit 4.
    case authentication(String)
    /// The API answered with an error. Exit 1, 4, 5 or 6 by `APIError.kind` (4 for both
    /// authentication and permission).
    case api(APIError)
    /// The request got no usable reply. Exit 7; 3 when a file of the body could not be
    /// read, 8 for a reply malformed or too large at the HTTP level, 1 when the reply could
    /// not be written out; a stop (`.stopped`) by its reason: 130 Ctrl-C, 7 `--max-time`,
    /// 141 the reader gone, 8 a bound that refused the reply.
    case transport(TransportError)
    /// The reply was not what the API promises (not JSON, truncated). Exit 8.
    case badReply(String, httpStatus: Int? = nil)
    /// `--cache-only` found no stored reply; nothing was sent. Exit 5 (not found: not in
    /// the cache), never a network error, since nothing was contacted.
    case notCached(String)
    /// `--jq`'s program failed on a value (`error("x")`, `.a.b` on a number): jq's message.
    /// Exit 9.
    case filter(String)

    /// The run (or one transfer) stopped, and why (`StopReason`): every layer says a stop
    /// this way, so one place (`ExitStatus`) gives it its code.
    public static func stopped(_ reason: StopReason) -> DouctlError { .transport(.stopped(reason)) }

    /// Ctrl-C (or code that wants everything to stop): exit 130, unless the run's own
    /// reason says otherwise (`Output.finish`).
    public static var interrupted: DouctlError { .stopped(.interrupt) }

    /// Why the run stopped, when this error is a stop.
    public var stopReason: StopReason? {
        if case .transport(.stopped(let reason, _)) = self { return reason }
        return nil
    }

    /// This error, with a stop that was noticed without its reason (`.interrupted`, thrown
    /// by a wait that saw only that the run is cancelled) given the run's: the one rule
    /// that turns the run's stop into the error it reports (the deadline wins).
    public func withStopReason(of cancellation: Cancellation) -> DouctlError {
        guard stopReason == .interrupt, let reason = cancellation.reason, reason != .interrupt else { return self }
        return .stopped(reason)
    }

    /// The one error every command gives when a profile has no login: it names the
    /// profile and the exact command that fixes it.
    public static func notLoggedIn(_ profile: String) -> DouctlError {
        .authentication("not logged in to \(profile); run: \(loginCommand(profile))")
    }

    /// `notLoggedIn` for a resolved profile: a Douban profile without a client_id cannot log
    /// in with a browser (Douban admits no new apps), so the advice also names the ways in
    /// that work on a fresh install.
    public static func notLoggedIn(_ profile: ResolvedProfile) -> DouctlError {
        guard profile.lacksAnApp else { return notLoggedIn(profile.name) }
        return .authentication("not logged in to \(profile.name), and it has no client_id (Douban admits no new apps); \(firstSteps)")
    }

    /// Where a fresh install can start: what the README's first steps show.
    public static let firstSteps = "try douctl demo (a local sandbox, every step shown), douctl sandbox (log in to it with --profile sandbox), or your own API: douctl profile add NAME --api-base URL"

    /// The command that logs in to `profile` (always with `--profile`, so it can be pasted
    /// whatever the default profile is).
    public static func loginCommand(_ profile: String) -> String {
        "douctl auth login --profile \(profile)"
    }

    /// The same error with `note` added to its message (where a walk stopped, say),
    /// keeping its kind and so its exit code.
    public func annotated(_ note: String) -> DouctlError {
        switch self {
        case .usage(let text): return .usage("\(text) (\(note))")
        case .unsupported(let text): return .unsupported("\(text) (\(note))")
        case .localInput(let text): return .localInput("\(text) (\(note))")
        case .badConfig(let path, let detail): return .badConfig(path: path, detail: "\(detail); \(note)")
        case .authentication(let text): return .authentication("\(text) (\(note))")
        case .api(var error):
            error.hint = error.hint.map { "\($0); \(note)" } ?? note
            return .api(error)
        case .transport(let error): return .transport(error.annotated(note))
        case .badReply(let text, let status): return .badReply("\(text) (\(note))", httpStatus: status)
        case .notCached(let text): return .notCached("\(text) (\(note))")
        case .filter(let text): return .filter("\(text) (\(note))")
        }
    }

    /// The one-line text after "douctl: ".
    public var message: String {
        switch self {
        case .usage(let text), .unsupported(let text), .localInput(let text), .authentication(let text), .badReply(let text, _),
             .notCached(let text):
            return text
        case .badConfig(let path, let detail):
            return "bad configuration file \(path) (\(detail))"
        case .api(let error):
            return error.summary
        case .transport(let error):
            return error.message
        case .filter(let text):
            return "--jq: " + text
        }
    }
}

/// An error reply from the API, from any of the envelope dialects.
public struct APIError: Equatable, Sendable {
    public enum Kind: Sendable, Equatable {
        case general
        /// The credential is missing, refused or expired (HTTP 401, a style's token codes).
        case authentication
        /// The credential is fine but may not do this (HTTP 403, Douban's need_permission):
        /// logging in again does not help. Exit 4, as authentication, with its own words.
        case permission
        case notFound
        case rateLimited
    }

    public var kind: Kind
    public var httpStatus: Int
    /// The API's own code (Douban 1001, Coding 907, OpenAPI "InvalidParameter").
    public var code: String?
    /// Douban's symbolic msg ("uri_not_found"), or the joined texts of a Coding msg object.
    public var message: String
    /// Coding's machine-readable msg keys ("j_captcha_error"), kept for scripts.
    public var messageKeys: [String]
    /// Douban's "request" field: "GET /shuo/v2/statuses/1".
    public var request: String?
    /// A hint for the user, e.g. how to pass a captcha.
    public var hint: String?
    /// The error reply's body as received, for `--error-body` (not part of the error's
    /// identity: two errors that say the same thing are equal whatever their bytes).
    public var body: [UInt8]?

    public init(kind: Kind, httpStatus: Int, code: String? = nil, message: String, messageKeys: [String] = [], request: String? = nil, hint: String? = nil) {
        self.kind = kind
        self.httpStatus = httpStatus
        self.code = code
        self.message = message
        self.messageKeys = messageKeys
        self.request = request
        self.hint = hint
    }

    public static func == (lhs: APIError, rhs: APIError) -> Bool {
        lhs.kind == rhs.kind && lhs.httpStatus == rhs.httpStatus && lhs.code == rhs.code && lhs.message == rhs.message
            && lhs.messageKeys == rhs.messageKeys && lhs.request == rhs.request && lhs.hint == rhs.hint
    }

    /// "not found (uri_not_found, code 1001, GET /shuo/v2/statuses/1)".
    public var summary: String {
        let what: String
        switch kind {
        case .general: what = "the API answered HTTP \(httpStatus)"
        case .authentication: what = "authentication failed"
        case .permission: what = "permission denied"
        case .notFound: what = "not found"
        case .rateLimited: what = "rate limited"
        }
        var details: [String] = []
        if !message.isEmpty { details.append(message) }
        if let code { details.append("code \(code)") }
        if let request { details.append(request) }
        var text = details.isEmpty ? what : "\(what) (\(details.joined(separator: ", ")))"
        if let hint { text += "; \(hint)" }
        return text
    }
}

extension TransportError {
    /// Whether the network (or the server) failed, rather than Ctrl-C or a local file of the
    /// request body: only then may a cached reply stand in for the answer.
    var cameFromTheNetwork: Bool {
        switch self {
        case .stopped, .bodyFile: return false
        default: return true
        }
    }

    /// The same failure with `note` added to its detail.
    func annotated(_ note: String) -> TransportError {
        switch self {
        case .libraryUnavailable(let detail): return .libraryUnavailable("\(detail) (\(note))")
        case .invalidRequest(let detail): return .invalidRequest("\(detail) (\(note))")
        case .cannotConnect(let detail): return .cannotConnect("\(detail) (\(note))")
        case .timedOut(let detail): return .timedOut("\(detail) (\(note))")
        case .connectionLost(let detail): return .connectionLost("\(detail) (\(note))")
        case .bodyFile(let detail): return .bodyFile("\(detail) (\(note))")
        case .outputFailed(let detail): return .outputFailed("\(detail) (\(note))")
        case .malformedReply(let detail): return .malformedReply("\(detail) (\(note))")
        case .replyTooLarge(let detail): return .replyTooLarge("\(detail) (\(note))")
        case .tls(let failure, let host, let detail): return .tls(failure, host: host, detail: "\(detail) (\(note))")
        case .redirect(let detail): return .redirect("\(detail) (\(note))")
        case .proxyRefused: return self
        // Ctrl-C and a reader gone say nothing more; a deadline or a bound says where.
        case .stopped(.interrupt, _), .stopped(.readerClosed, _): return self
        case .stopped(let reason, let detail): return .stopped(reason, detail: detail.isEmpty ? note : "\(detail); \(note)")
        }
    }
}
