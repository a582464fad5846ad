/// Why a request produced no usable reply. Each case is one kind of failure a user can act on;
/// the command layer maps them to exit codes (design §7).
public enum TransportError: Error, Equatable, Sendable {
    /// libcurl could not be loaded (not installed, wrong architecture).
    case libraryUnavailable(String)
    /// The URL or an option was rejected before anything was sent.
    case invalidRequest(String)
    /// No connection: refused, DNS failure, unreachable proxy.
    case cannotConnect(String)
    /// Nothing moved for the whole timeout.
    case timedOut(String)
    /// The connection broke during the exchange (reset, closed mid-reply, nothing received).
    case connectionLost(String)
    /// A file of the request body could not be read, or changed size while being sent.
    case bodyFile(String)
    /// The response sink refused more bytes (e.g. stdout was closed).
    case outputFailed(String)
    /// Ctrl-C.
    case interrupted

    public var message: String {
        switch self {
        case .libraryUnavailable(let detail): return detail
        case .invalidRequest(let detail): return "invalid request: \(detail)"
        case .cannotConnect(let detail): return "cannot connect: \(detail)"
        case .timedOut(let detail): return "timed out: \(detail)"
        case .connectionLost(let detail): return "connection lost: \(detail)"
        case .bodyFile(let detail): return detail
        case .outputFailed(let detail): return "cannot write output: \(detail)"
        case .interrupted: return "interrupted"
        }
    }

    /// True when the request certainly never reached the server, so even a POST may be sent again.
    var neverReachedServer: Bool {
        if case .cannotConnect = self { return true }
        return false
    }
}
