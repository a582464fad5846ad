import DouctlCore
import DouctlHTTP
import DouctlJSON

/// `api --follow`: an event stream (text/event-stream, NDJSON) read as EventSource reads
/// it — when the connection drops or the server ends it, douctl waits the server's
/// `retry:` (3 s unless it said) and connects again, sending the last `id:` as
/// Last-Event-ID, until a 204, an error status, --max-time, Ctrl-C or the reader going away.
enum APIEvents {
    static let discussion = """
        A text/event-stream reply is printed event by event as it arrives, one JSON line
        each: {"event": TYPE (message unless named), "id": the last id or null, "data":
        the data parsed when it is JSON, else its text}; NDJSON (application/x-ndjson,
        application/jsonl) line by line. --jq runs on each event; memory holds one event.
        --follow reconnects a stream that drops or ends, after the server's retry: (3 s
        unless it said), sending Last-Event-ID; it stops at a 204 (the server's "no
        more"), an error status, --max-time (exit 7) or Ctrl-C (130). A quiet stream
        (under 100 bytes a second for --timeout seconds, 30 by default) counts as
        dropped: raise --timeout for streams that stay quiet longer.
        """

    static let defaultRetry = 3.0

    static func follow(_ request: APIRequest, options: APICommand.APIOptions, client: APIClient, context: CommandContext) throws(DouctlError) -> ExitStatus {
        var lastID: String?
        var retry = defaultRetry
        var connections = 0
        while true {
            connections += 1
            var attempt = request
            if let lastID {
                attempt.headers.removeAll { $0.name.lowercased() == "last-event-id" }
                attempt.headers.append(HTTPHeader("Last-Event-ID", lastID))
            }
            let printer = StreamingReply(output: context.output, raw: options.raw, include: options.include, showsBytes: options.output == "-")
            printer.decode = { (reply: HTTPResponse) throws(DouctlError) in _ = try client.decode(reply, for: attempt, parsesArrays: false) }
            var dropped: DouctlError?
            do throws(DouctlError) {
                let response = try client.stream(attempt, restart: { printer.restart() }, head: { printer.head($0) }, sink: { printer.take($0) })
                if !(200..<300).contains(response.status) {
                    _ = try client.decode(response, for: attempt)
                    throw .badReply("the server answered HTTP \(response.status)", httpStatus: response.status)
                }
                // 204: the server says there is nothing more (the EventSource rule).
                if response.status == 204 { return .success }
                guard printer.events != nil else {
                    // Not a stream: printed as api prints any reply, once.
                    if let held = try printer.finish(response.head) {
                        let reply = try client.decode(held, for: attempt, parsesArrays: false)
                        context.output.reply(held, payload: reply.payload, raw: options.raw, withHead: false, showsBytes: options.output == "-")
                    }
                    return .success
                }
                _ = try printer.finish(response.head)
            } catch .transport(.outputFailed(let detail)) {
                if let problem = printer.problem { throw problem }
                throw context.output.readerClosed ? .stopped(.readerClosed) : .transport(.outputFailed(detail))
            } catch {
                guard error.stopReason == nil, case .transport(let failure) = error, failure.isDrop else { throw error }
                dropped = error
            }
            if let stream = printer.events {
                lastID = stream.lastEventID ?? lastID
                if let milliseconds = stream.retry { retry = Double(milliseconds) / 1000 }
            }
            let why = dropped.map { "the stream dropped (\($0.message))" } ?? "the stream ended"
            context.output.note("douctl: \(why); connecting again in \(retry < 1 ? "\(Int(retry * 1000)) ms" : Timestamp.duration(retry))\(lastID.map { " from event \($0)" } ?? "") (connection \(connections + 1))")
            context.sleep(retry)
            if context.process.cancellation.isRequested { throw .interrupted }
        }
    }
}

extension TransportError {
    /// A connection that broke or went quiet: what --follow connects again after.
    var isDrop: Bool {
        switch self {
        case .connectionLost, .timedOut, .cannotConnect, .malformedReply: return true
        default: return false
        }
    }
}
