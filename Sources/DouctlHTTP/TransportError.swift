import DouctlSystem

/// Why a request produced no usable reply. Each case is one kind of failure a user can act on;
/// the command layer maps them to exit codes (7, but a stop's by its reason: `ExitStatus`).
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
    /// The server answered, but not in HTTP: a malformed status line, HTTP/0.9, a bad
    /// Content-Length, an undecodable Content-Encoding (design: exit 8, not 7).
    case malformedReply(String)
    /// A reply body larger than douctl holds in memory (`HTTPResponse.maximumBodyBytes`;
    /// design: exit 8, a reply douctl cannot use, not a network failure).
    case replyTooLarge(String)
    /// The TLS connection to `host` could not be set up or was refused (design: exit 7).
    case tls(TLSFailure, host: String, detail: String)
    /// A redirect douctl will not follow: too many, or from https to plain http.
    case redirect(String)
    /// The proxy answered 407 (Proxy Authentication Required): it refused the credentials
    /// of the proxy URL, or none were given. Sent once: the same credentials cannot pass.
    case proxyRefused(host: String)
    /// The transfer was stopped, and why: Ctrl-C, `--max-time`, the output's reader gone,
    /// a bound that refused the reply (`StopReason`). Thrown once, where the stop is seen;
    /// `detail` says where it struck (a walk's page).
    case stopped(StopReason, detail: String = "")

    /// Ctrl-C: `.stopped(.interrupt)`.
    public static var interrupted: TransportError { .stopped(.interrupt) }

    public var message: String {
        switch self {
        case .libraryUnavailable(let detail): return detail
        case .invalidRequest(let detail): return "invalid request: \(detail)"
        case .cannotConnect(let detail): return "cannot connect: \(detail)"
        case .timedOut(let detail): return "timed out: \(detail)"
        case .connectionLost(let detail): return "connection lost: \(detail)"
        case .bodyFile(let detail): return detail
        case .outputFailed(let detail): return "cannot write output: \(detail)"
        case .malformedReply(let detail): return "the reply is not valid HTTP: \(detail)"
        case .replyTooLarge(let detail): return detail
        case .tls(let failure, let host, let detail): return failure.message(host: host, detail: detail)
        case .redirect(let detail): return detail
        case .proxyRefused(let host):
            return "the proxy refused the credentials (HTTP 407 on the way to \(host)); give them in the proxy URL: http://USER:PASSWORD@HOST:PORT"
        case .stopped(let reason, let detail): return detail.isEmpty ? reason.message : "\(reason.message) (\(detail))"
        }
    }

    /// True for a failure that may pass if the request is sent again (no connection, a
    /// timeout, a broken connection); not for TLS, a refused redirect or a local file.
    public var isTransient: Bool {
        switch self {
        case .cannotConnect, .timedOut, .connectionLost: return true
        default: return false
        }
    }

    /// True when the request certainly never reached the server, so even a POST may be sent again.
    var neverReachedServer: Bool {
        if case .cannotConnect = self { return true }
        return false
    }
}

/// Each way TLS can fail that a user fixes differently.
public enum TLSFailure: String, Sendable, Equatable {
    /// The chain does not end at a CA we trust (self-signed, private CA).
    case untrusted
    /// The certificate is valid but names another host.
    case hostMismatch
    /// The certificate (or one in its chain) has expired or is not valid yet.
    case expired
    /// The handshake failed for another reason (no common cipher, an alert such as
    /// handshake_failure): the message says what the handshake said, nothing more.
    case handshake
    /// No TLS version both sides speak (douctl's lowest is TLS 1.2).
    case protocolVersion
    /// The peer did not answer in TLS at all (plain HTTP behind an https:// URL).
    case notTLS
    /// The server wants a client certificate, or refused the one we sent.
    case clientCertificateRefused
    /// Our own client certificate or key could not be used (wrong format, key mismatch).
    case clientCertificate
    /// The CA bundle or directory could not be read.
    case caFile

    func message(host: String, detail: String) -> String {
        switch self {
        case .untrusted:
            return "TLS: the certificate of \(host) is not trusted (\(detail)); to trust its CA, pass --cacert FILE (or --capath DIR), or set the profile key ca_bundle"
        case .hostMismatch:
            return "TLS: the certificate of \(host) is for another host name (\(detail))"
        case .expired:
            return "TLS: the certificate of \(host) has expired or is not yet valid (\(detail))"
        case .handshake:
            return "TLS handshake with \(host) failed (\(detail))"
        case .protocolVersion:
            return "TLS handshake with \(host) failed (\(detail)): no TLS version in common; douctl needs TLS 1.2 or later"
        case .notTLS:
            return "TLS handshake with \(host) failed (\(detail)): the server did not answer in TLS; if it speaks plain HTTP, use an http:// URL"
        case .clientCertificateRefused:
            return "TLS: \(host) refused the client certificate or requires one (\(detail)); pass --cert FILE --key FILE, or set the profile keys client_cert and client_key"
        case .clientCertificate:
            return "TLS: cannot use the client certificate for \(host) (\(detail))"
        case .caFile:
            return "TLS: cannot use the CA certificates for \(host) (\(detail))"
        }
    }
}
