import DouctlSystem

/// Where `--dry-run` writes each request, as a curl command line, and the User-Agent the
/// line sends (the one douctl would).
public struct DryRunPrinter: Sendable {
    /// What the token becomes in printed commands: the shell fills it in from the variable.
    public static let tokenPlaceholder = "$DOUCTL_TOKEN"
    public let userAgent: String
    public let write: @Sendable (String) -> Void

    public init(userAgent: String, write: @escaping @Sendable (String) -> Void) {
        self.userAgent = userAgent
        self.write = write
    }
}

/// `--dry-run` as a transport: each request is written as a curl command line a shell can
/// run (`CurlCommand`) instead of being sent, and answered with a stand-in success —
/// `[]` for a GET (a walk stops after its first page), `{}` for anything else — so the
/// command goes on where it can. A step that needs what a real reply would say (a picture
/// URL to post) finds it missing and stops with `.badReply`.
///
/// The client sends `DryRunPrinter.tokenPlaceholder` as its token (see
/// `SessionSettings.printingRequests`), so the printed line carries `$DOUCTL_TOKEN`, which
/// the shell fills in; nothing here knows about tokens beyond that name.
public final class DryRunTransport: HTTPTransport, Sendable {
    public let printer: DryRunPrinter

    public init(_ printer: DryRunPrinter) {
        self.printer = printer
    }

    /// Nothing goes out: every reply is a stand-in.
    public var sendsRequests: Bool { false }

    public func send(
        _ request: HTTPRequest,
        progress: ((TransferProgress) -> Void)?,
        restartSink: (() -> SinkRestart)?,
        head: ((HTTPResponseHead) -> Void)?,
        sink: (UnsafeRawBufferPointer) -> Bool
    ) throws(TransportError) -> HTTPResponseHead {
        printer.write(commandLine(request))
        let reply = HTTPResponseHead(status: 200, reason: "OK", headers: [HTTPHeader("Content-Type", "application/json")])
        head?(reply)
        let body = Array((request.method.uppercased() == "GET" ? "[]" : "{}").utf8)
        _ = body.withUnsafeBytes { sink($0) }
        return reply
    }

    /// The curl command line for `request`, as printed.
    public func commandLine(_ request: HTTPRequest) -> String {
        let placeholder = DryRunPrinter.tokenPlaceholder
        var request = request
        // In a query the placeholder was percent-encoded; the shell must see the variable.
        request.url = request.url.replacingAll("%24" + placeholder.dropFirst(), with: placeholder)
        return CurlCommand.render(request, userAgent: printer.userAgent, placeholders: [placeholder])
    }
}

