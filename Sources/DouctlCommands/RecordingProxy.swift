import DouctlCore
import DouctlHTTP
import DouctlSandbox
import DouctlSystem

/// `douctl sandbox --proxy-to URL --record DIR`: a reverse proxy on loopback (as WireMock's
/// record mode) that sends what other clients ask on to the real API with douctl's own
/// transport and records each exchange, scrubbed as any `--record` (the client's
/// Authorization, cookies and API keys included), for `--replay` to serve later.
enum RecordingProxy {
    static func run(upstream: String, options: SandboxCommand.Options, context: CommandContext) throws(DouctlError) -> ExitStatus {
        guard let directory = options.record else {
            throw .usage("--proxy-to needs --record DIR (or --record x.har): the proxy is there to record")
        }
        let recorder = ExchangeRecorder(directory: directory)
        guard let parts = URLParts(upstream), parts.scheme == "http" || parts.scheme == "https" else {
            throw .usage("invalid value '\(upstream)' for --proxy-to: expected an http or https URL such as https://api.example.com")
        }
        let base = upstream.hasSuffix("/") ? String(upstream.dropLast()) : upstream
        let printer = context.output.printer
        let say: @Sendable (String) -> Void = { line in printer.line(line) }
        let log: (@Sendable (String) -> Void)? = options.quiet ? nil : say
        let requests = context.session.settings.requests
        // The run's network settings (--cacert, --proxy, -k, the profile's) where they resolve.
        var configuration = (try? context.session.httpConfiguration())
            ?? HTTPClientConfiguration(timeout: requests.timeout, userAgent: requests.userAgent, cancellation: requests.cancellation)
        configuration.maxRedirects = 0  // the client sees redirects and follows them itself
        configuration.retry.maxAttempts = 1
        let makeTransport = requests.makeTransport
        let frozen = configuration
        let server: ForwardingServer
        do {
            server = try ForwardingServer(host: options.host, port: UInt16(clamping: options.port), log: log) { exchange in
                forward(exchange, base: base, transport: makeTransport(frozen), recorder: recorder)
            }
            try server.start()
        } catch {
            throw .localInput("cannot start the recording proxy (\(error))")
        }
        defer { server.stop() }
        context.output.line(server.baseURL)
        context.output.flush()
        log?("douctl sandbox proxying \(server.baseURL) to \(Redaction.redactURL(base)), recording to \(recorder.directory). Ctrl-C stops it.")
        while !context.cancellation.isRequested { context.sleep(0.1) }
        server.stop()
        context.cancellation.reset()
        return .success
    }

    /// Sends one exchange upstream and records it. The client's Accept-Encoding is not
    /// passed on, so the reply comes back as the bytes a replay can serve.
    static func forward(_ exchange: ForwardingServer.Exchange, base: String, transport: any HTTPTransport,
                        recorder: ExchangeRecorder) -> Result<ForwardingServer.Answer, SandboxError> {
        let headers = exchange.headers.filter { HTTPSyntax.asciiLowercased($0.name) != "accept-encoding" }.map { HTTPHeader($0.name, $0.value) }
        let hasBody = !exchange.body.isEmpty || ["POST", "PUT", "PATCH"].contains(exchange.method)
        let request = HTTPRequest(method: exchange.method, url: base + exchange.target, headers: headers,
                                  body: hasBody ? .bytes(exchange.body) : .none)
        let response: HTTPResponse
        do {
            response = try transport.fetch(request, errorLimit: HTTPResponse.maximumBodyBytes)
        } catch {
            return .failure(SandboxError("\(exchange.method) \(Redaction.redactURL(base + exchange.target)): \(error)"))
        }
        do { try recorder.record(request, response) } catch {
            return .failure(SandboxError("the reply came but could not be recorded: \(error)"))
        }
        return .success(ForwardingServer.Answer(status: response.status, headers: response.head.headers.map { ($0.name, $0.value) },
                                                body: response.body))
    }
}
