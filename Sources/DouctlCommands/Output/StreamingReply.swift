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

/// Where a streamed reply (`api`) goes: straight to stdout (--raw, and a body that is not
/// JSON: `passthrough`, escaped or not shown on a terminal, see `TerminalBody`), through the
/// incremental reformatter (a JSON array), or into memory up to the bound (anything else).
final class StreamingReply {
    enum Mode { case undecided, raw, reformat(JSONStreamReformatter), hold, passthrough, events }
    let output: Output
    /// --raw: the bytes as received; --include: the head first.
    let raw: Bool
    let include: Bool
    var mode: Mode
    var held: [UInt8] = []
    var delivered = 0
    var problem: DouctlError?
    var status = 200
    var headPrinted = false
    /// jq's colours on a terminal, fed chunk by chunk as the reformatter writes.
    var colorizer: JSONColorizer?
    /// A Coding-style envelope being unwrapped as it arrives (see `unwrapEnvelope`), and
    /// how a reply is decoded to find the error it carries.
    var unwrapper: EnvelopeStreamUnwrapper?
    var responseHead: HTTPResponseHead?
    var decode: (HTTPResponse) throws(DouctlError) -> Void = { _ throws(DouctlError) in }
    /// On a person's terminal (not with `-o -`): binary bodies are not shown, text that is
    /// not JSON is escaped (`TerminalBody`).
    let guardsTerminal: Bool
    /// The line shown instead of a binary body the transfer was stopped for.
    var refusedBinary: String?
    private var escaper: TerminalBody.Escaper?
    private var rawChecked = false
    /// An event stream (text/event-stream, NDJSON) printed an event a line as it arrives.
    private(set) var events: EventStream?
    /// The caller ends every transfer with `endTransfer`, so a JSON array may be reformatted
    /// on a thread of its own beside the receive (`ReformatPipeline`).
    var pipelines = false
    private var pipeline: ReformatPipeline?

    init(output: Output, raw: Bool, include: Bool, showsBytes: Bool = false) {
        self.output = output
        self.raw = raw
        self.include = include
        guardsTerminal = output.stdoutIsTerminal && !showsBytes
        mode = raw ? .raw : .undecided
    }

    func head(_ head: HTTPResponseHead) {
        status = head.status
        responseHead = head
        if include {
            output.head(head)
            headPrinted = true
        }
    }

    /// A retry may start over only while nothing reached stdout.
    func restart() -> Bool {
        // A malformed reply found on the pipeline's thread is not retried (it would not
        // have been read past, had it been found here).
        guard endTransfer() == nil, delivered == 0 else { return false }
        held.removeAll()
        if case .reformat = mode { mode = .undecided }
        if case .passthrough = mode { (mode, escaper) = (.undecided, nil) }
        if unwrapper != nil { (unwrapper, mode) = (nil, .undecided) }
        if events != nil { (events, mode) = (nil, .undecided) }
        return true
    }

    func take(_ chunk: UnsafeRawBufferPointer) -> Bool {
        if case .undecided = mode, (200..<300).contains(status), let kind = EventStream.kind(of: responseHead?.mediaType) {
            mode = .events
            events = EventStream(kind: kind)
        }
        if case .undecided = mode {
            guard let first = chunk.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) else {
                return hold(chunk)
            }
            // An array is never an envelope: it streams. Anything else is held, to be
            // unwrapped or checked whole.
            if first == UInt8(ascii: "[") && held.count < 4096 {
                if !startReformatting() { return false }
            } else if Self.isNotJSON(first: first, mediaType: responseHead?.mediaType) {
                // Text, an image, any body that is not JSON: as it comes, never held.
                return startPassthrough(chunk)
            } else {
                mode = .hold
                if first == UInt8(ascii: "{") { unwrapper = EnvelopeStreamUnwrapper(rule: ReplyDecoder.envelopeStreamRule, output: .reformat(output.prettyJSON ? .pretty : .compact), emit: emitter()) }
            }
        }
        switch mode {
        case .raw:
            if guardsTerminal && !rawChecked {
                rawChecked = true
                if TerminalBody.isBinary(mediaType: responseHead?.mediaType, prefix: chunk.prefix(8192)) {
                    return refuseBinary()
                }
            }
            delivered += chunk.count
            output.writeDocument(chunk)
            return !output.documentsStopped
        case .passthrough:
            return pass(chunk)
        case .events:
            return feedEvents(chunk)
        case .reformat(let reformatter):
            return reformat(chunk, with: reformatter)
        case .hold, .undecided:
            return hold(chunk)
        }
    }

    /// A body that cannot be JSON: one whose media type is given and does not say JSON (and
    /// that does not begin like an object, an array or a string), or whose first byte no
    /// JSON value begins with. (One that may be JSON is held, and
    /// streams as it is once past `objectStreamingThreshold` if it does not begin with {.)
    static func isNotJSON(first: UInt8, mediaType: String?) -> Bool {
        if first == UInt8(ascii: "{") || first == UInt8(ascii: "[") || first == UInt8(ascii: "\"") { return false }
        if mediaType?.lowercased().containsBytes("json") == true { return false }
        if mediaType != nil { return true }
        return !(first == UInt8(ascii: "\"") || first == UInt8(ascii: "-") || (0x30...0x39).contains(first)
                 || first == UInt8(ascii: "t") || first == UInt8(ascii: "f") || first == UInt8(ascii: "n"))
    }

    /// From here on the body goes to stdout as it arrives, what was held first; on a
    /// terminal a binary body is refused here, before a byte of it is written.
    private func startPassthrough(_ chunk: UnsafeRawBufferPointer) -> Bool {
        mode = .passthrough
        let before = held
        held = []
        if guardsTerminal {
            if TerminalBody.isBinary(mediaType: responseHead?.mediaType, prefix: before + Array(chunk.prefix(8192))) {
                return refuseBinary()
            }
            escaper = TerminalBody.Escaper()
        }
        return (before.isEmpty || before.withUnsafeBytes { pass($0) }) && pass(chunk)
    }

    private func refuseBinary() -> Bool {
        let size = responseHead?.header("Content-Length").flatMap { Int($0) }
        refusedBinary = TerminalBody.notShown(mediaType: responseHead?.mediaType, size: size)
        return false
    }

    private func pass(_ chunk: UnsafeRawBufferPointer) -> Bool {
        delivered += chunk.count
        if var escaper {
            output.writeDocument(escaper.feed(chunk))
            self.escaper = escaper
        } else {
            output.writeDocument(chunk)
        }
        return !output.documentsStopped
    }

    /// One event (or NDJSON line) a compact JSON line, flushed as it arrives (through
    /// --jq when asked); its text is JSON-escaped, so nothing in it reaches a terminal raw.
    private func emitEvent(_ event: JSON) -> Bool {
        delivered += 1
        output.jsonLine(event)
        return !output.documentsStopped
    }

    private func feedEvents(_ chunk: UnsafeRawBufferPointer) -> Bool {
        guard var stream = events else { return false }
        defer { events = stream }
        do throws(EventStream.Problem) {
            return try stream.feed(chunk, emit: emitEvent) && !output.documentsStopped
        } catch {
            problem = .badReply("the event stream cannot be read: \(error.message)", httpStatus: status)
            return false
        }
    }

    /// From here on the reply goes through the incremental reformatter, what was held first.
    private func startReformatting() -> Bool {
        let format: JSONFormat = output.prettyJSON ? .pretty : .compact
        let reformatter: JSONStreamReformatter
        // On threads of its own only where nothing but the reformatter writes to stdout
        // while the transfer runs: no --jq stage, no colours or terminal, no head printed.
        if pipelines && output.filter == nil && !output.stdoutIsTerminal && !output.colorsStdout && !include {
            let pipeline = ReformatPipeline(stdout: output.stdout)
            reformatter = JSONStreamReformatter(format: format) { [unowned self] bytes in
                delivered += bytes.count
                pipeline.write(bytes)
            }
            if pipeline.start(reformatter) { self.pipeline = pipeline }
        } else {
            reformatter = JSONStreamReformatter(format: format, emit: emitter())
        }
        mode = .reformat(reformatter)
        let before = held
        held = []
        if let pipeline { return before.isEmpty || before.withUnsafeBytes { pipeline.put($0) } }
        return before.isEmpty || before.withUnsafeBytes { feed($0, to: reformatter) }
    }

    /// The transfer has ended (any way: done, failed, stopped) or starts over: a reply
    /// being reformatted on its own thread is finished there and the thread waited for, so
    /// from here on only this thread writes to stdout; its error, if it met one, is the
    /// reply's problem. Later bytes (a resumed transfer's) are reformatted on this thread.
    /// Returns the thread's error, as the problem (nil when it met none).
    @discardableResult
    func endTransfer() -> DouctlError? {
        guard let pipeline else { return nil }
        self.pipeline = nil
        guard let error = pipeline.end(), problem == nil else { return nil }
        problem = notJSON(error)
        return problem
    }

    /// Where reformatted JSON goes: stdout, through jq's colours on a terminal.
    private func emitter() -> (UnsafeRawBufferPointer) -> Void {
        let output = output
        // On a terminal even without colours: the colorizer also escapes what the
        // terminal would obey (TerminalText).
        if output.stdoutIsTerminal || output.colorsStdout { colorizer = JSONColorizer(colors: output.colorsStdout) }
        return { [unowned self] bytes in
            delivered += bytes.count
            if var colorizer {
                output.writeDocument(colorizer.feed(Array(bytes)))
                self.colorizer = colorizer
            } else {
                output.writeDocument(bytes)
            }
        }
    }

    /// An object is held so that an envelope can be unwrapped and an error found; past
    /// this size one that does not begin like an envelope is a resource, and streams.
    static let objectStreamingThreshold = 1 << 20

    /// The first member name of a held object, once it has arrived whole.
    private func heldFirstKey() -> String? {
        var index = held.startIndex
        func skipSpace() { while index < held.endIndex, [0x20, 0x0A, 0x0D, 0x09].contains(held[index]) { index += 1 } }
        skipSpace()
        guard index < held.endIndex, held[index] == UInt8(ascii: "{") else { return nil }
        index += 1
        skipSpace()
        guard index < held.endIndex, held[index] == UInt8(ascii: "\"") else { return nil }
        let start = index + 1
        var end = start
        while end < held.endIndex, end - start < 64 {
            if held[end] == UInt8(ascii: "\\") { return nil }  // an escaped name is no envelope key
            if held[end] == UInt8(ascii: "\"") { return String(decoding: held[start..<end], as: UTF8.self) }
            end += 1
        }
        return end - start >= 64 ? "" : nil
    }

    private func hold(_ chunk: UnsafeRawBufferPointer) -> Bool {
        if let unwrapper, let taken = unwrapEnvelope(chunk, unwrapper) { return taken }
        if case .hold = mode, held.count + chunk.count > Self.objectStreamingThreshold,
           let key = heldFirstKey(), !ReplyDecoder.mayBeEnvelope(firstKey: key), !raw {
            guard startReformatting() else { return false }
            if case .reformat(let reformatter) = mode { return reformat(chunk, with: reformatter) }
        }
        // Held as it may be JSON (no media type, or one that says JSON, and a first byte a
        // JSON scalar may begin with); past the threshold it is a body to stream as it is.
        if case .hold = mode, unwrapper == nil, held.count + chunk.count > Self.objectStreamingThreshold,
           let first = held.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }), first != UInt8(ascii: "{"),
           responseHead?.mediaType?.lowercased().containsBytes("json") != true {
            return startPassthrough(chunk)
        }
        guard chunk.count <= HTTPResponse.maximumBodyBytes - held.count else {
            if unwrapper?.dataBeforeCode == true {
                problem = .transport(.replyTooLarge("the reply is an envelope larger than \(HTTPResponse.maximumBodyBytes >> 20) MiB whose data comes before its code, so it is held to be unwrapped and cannot be; --raw prints any size"))
                return false
            }
            problem = .transport(.replyTooLarge("the reply is larger than \(HTTPResponse.maximumBodyBytes >> 20) MiB and is not a JSON array, so it cannot be printed as a stream; --raw prints any size"))
            return false
        }
        held.append(contentsOf: chunk)
        return true
    }

    /// The next bytes of a reply being reformatted: to the pipeline's thread, or reformatted
    /// here. False stops the transfer.
    private func reformat(_ chunk: UnsafeRawBufferPointer, with reformatter: JSONStreamReformatter) -> Bool {
        if let pipeline { return pipeline.put(chunk) }
        return feed(chunk, to: reformatter) && !output.documentsStopped
    }

    private func feed(_ bytes: UnsafeRawBufferPointer, to reformatter: JSONStreamReformatter) -> Bool {
        do throws(JSONParseError) {
            try reformatter.feed(bytes)
            return true
        } catch {
            problem = notJSON(error)
            return false
        }
    }

    /// Feeds a reply that began with "{" to the unwrapper: once a success status has come
    /// before the data, the data streams (nothing more is held); after an error status the
    /// reply is held only to 64 KiB, then reported from what came whole. Nil: hold the
    /// chunk as before (undecided, or data before the status: up to 64 MiB).
    private func unwrapEnvelope(_ chunk: UnsafeRawBufferPointer, _ unwrapper: EnvelopeStreamUnwrapper) -> Bool? {
        do throws(EnvelopeStreamUnwrapper.Failure) { try unwrapper.feed(chunk) } catch {
            problem = envelopeProblem(error)
            return false
        }
        switch unwrapper.decision {
        case .streaming:
            held = []
            return !output.documentsStopped
        case .failing where held.count + chunk.count > HTTPResponse.maximumErrorBodyBytes:
            held.append(contentsOf: chunk.prefix(HTTPResponse.maximumErrorBodyBytes - held.count))
            do throws(DouctlError) {
                try decode(HTTPResponse(head: responseHead ?? HTTPResponseHead(status: status), body: unwrapper.remainder))
                problem = .transport(.replyTooLarge("the reply is an error envelope larger than \(HTTPResponse.maximumErrorBodyBytes >> 10) KiB"))
            } catch {
                if case .api(var apiError) = error { apiError.body = held; problem = .api(apiError) } else { problem = error }
            }
            return false
        case .failing, .holding, .undecided:
            if unwrapper.decision == .holding && !unwrapper.dataBeforeCode { self.unwrapper = nil }
            return nil
        }
    }

    private func envelopeProblem(_ failure: EnvelopeStreamUnwrapper.Failure) -> DouctlError {
        switch failure {
        case .malformed(let error): return notJSON(error)
        case .ambiguous(let text): return .badReply("the reply is not a valid envelope (HTTP \(status): \(text))", httpStatus: status)
        }
    }

    private func notJSON(_ error: JSONParseError) -> DouctlError {
        .badReply("the reply is not valid JSON (HTTP \(status): \(error.description))", httpStatus: status)
    }

    /// After a successful transfer: ends the stream, or hands back the held reply.
    func finish(_ head: HTTPResponseHead) throws(DouctlError) -> HTTPResponse? {
        endTransfer()
        if let problem { throw problem }  // a sink's refusal the transport did not act on
        switch mode {
        case .raw:
            return nil
        case .passthrough:
            if var escaper { output.writeDocument(escaper.finish()) }
            return nil
        case .events:
            do throws(EventStream.Problem) { try events?.finish(emit: emitEvent) } catch { throw .badReply("the event stream broke off: \(error.message)", httpStatus: status) }
            return nil
        case .reformat(let reformatter):
            do throws(JSONParseError) {
                try reformatter.finish()
            } catch {
                throw notJSON(error)
            }
            if var colorizer { output.writeDocument(colorizer.finish()) }
            output.writeDocument([0x0A])
            return nil
        case .hold, .undecided:
            if let unwrapper, case .streaming = unwrapper.decision {
                do throws(EnvelopeStreamUnwrapper.Failure) { try unwrapper.finish() } catch { throw envelopeProblem(error) }
                if var colorizer { output.writeDocument(colorizer.finish()) }
                output.writeDocument([0x0A])
                // A status member after the data may still make the reply an error.
                try decode(HTTPResponse(head: head, body: unwrapper.remainder))
                return nil
            }
            return HTTPResponse(head: head, body: held)
        }
    }
}
