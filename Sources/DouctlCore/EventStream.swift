import DouctlHTTP
import DouctlJSON

/// A reply that is a stream of events, read as it arrives in bounded memory:
/// `text/event-stream` (Server-Sent Events, as the HTML standard parses them) or NDJSON
/// (`application/x-ndjson`, `application/jsonl`, `application/json-seq`): one value a line.
public struct EventStream: Sendable {
    public enum Kind: Sendable, Equatable { case serverSentEvents, lines }

    /// The kind a media type names; nil for any other reply.
    public static func kind(of mediaType: String?) -> Kind? {
        guard let type = mediaType?.lowercased() else { return nil }
        if type.containsBytes("text/event-stream") { return .serverSentEvents }
        if type.containsBytes("ndjson") || type.containsBytes("jsonl") || type.containsBytes("json-seq") || type.containsBytes("x-json-stream") { return .lines }
        return nil
    }

    public struct Problem: Error, Equatable, Sendable { public var message: String }

    public let kind: Kind
    /// A line (or an event's data) longer than this is refused: memory stays bounded
    /// however the server writes.
    public var maximumLine = HTTPResponse.maximumBodyBytes
    /// The last `id:` seen (sent back as Last-Event-ID when reconnecting).
    public private(set) var lastEventID: String?
    /// The server's `retry:` in milliseconds.
    public private(set) var retry: Int?
    /// Events (or lines) handed over.
    public private(set) var count = 0

    private var line: [UInt8] = []
    private var afterCR = false
    private var data: [UInt8] = []
    private var hasData = false
    private var eventType: String?

    public init(kind: Kind) {
        self.kind = kind
    }

    /// Feeds bytes; `emit` gets each event as a JSON value and returns false to stop.
    /// Returns false when `emit` did.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, emit: (JSON) -> Bool) throws(Problem) -> Bool {
        for byte in bytes {
            if afterCR {
                afterCR = false
                if byte == 0x0A { continue }
            }
            if byte == 0x0A || (byte == 0x0D && kind == .serverSentEvents) {
                afterCR = byte == 0x0D
                let ended = line
                line.removeAll(keepingCapacity: true)
                if try !handle(ended, emit: emit) { return false }
                continue
            }
            guard line.count < maximumLine else {
                throw Problem(message: "a line of the stream is longer than \(maximumLine >> 20) MiB")
            }
            line.append(byte)
        }
        return true
    }

    /// The end of the stream: a last line without its line break is read (NDJSON); an
    /// event not ended by a blank line is dropped, as the standard says.
    public mutating func finish(emit: (JSON) -> Bool) throws(Problem) {
        if kind == .lines, !line.isEmpty {
            let last = line
            line = []
            _ = try handle(last, emit: emit)
        }
        line = []
        data = []
        hasData = false
        eventType = nil
    }

    private mutating func handle(_ line: [UInt8], emit: (JSON) -> Bool) throws(Problem) -> Bool {
        switch kind {
        case .lines:
            var text = line[...]
            // RFC 7464 json-seq begins each record with RS.
            while let first = text.first, first == 0x1E || first == 0x20 || first == 0x09 || first == 0x0D { text = text.dropFirst() }
            while let last = text.last, last == 0x20 || last == 0x09 || last == 0x0D { text = text.dropLast() }
            if text.isEmpty { return true }
            let value: JSON
            do { value = try JSONParser.parse(Array(text)) } catch {
                throw Problem(message: "line \(count + 1) of the stream is not JSON (\(error.description))")
            }
            count += 1
            return emit(value)
        case .serverSentEvents:
            if line.isEmpty { return dispatch(emit) }
            if line.first == UInt8(ascii: ":") { return true }  // a comment (keep-alive)
            let colon = line.firstIndex(of: UInt8(ascii: ":"))
            let field = String(decoding: line[..<(colon ?? line.endIndex)], as: UTF8.self)
            var value = colon.map { line[($0 + 1)...] } ?? []
            if value.first == 0x20 { value = value.dropFirst() }
            switch field {
            case "data":
                guard data.count + value.count < maximumLine else {
                    throw Problem(message: "an event of the stream is longer than \(maximumLine >> 20) MiB")
                }
                if hasData { data.append(0x0A) }
                data += value
                hasData = true
            case "event":
                eventType = String(decoding: value, as: UTF8.self)
            case "id":
                if !value.contains(0) { lastEventID = String(decoding: value, as: UTF8.self) }
            case "retry":
                if !value.isEmpty, value.allSatisfy({ (0x30...0x39).contains($0) }), let milliseconds = Int(String(decoding: value, as: UTF8.self)) {
                    retry = milliseconds
                }
            default:
                break
            }
            return true
        }
    }

    /// A blank line ends an event: `{"event", "id", "data"}`, data parsed when it is JSON.
    private mutating func dispatch(_ emit: (JSON) -> Bool) -> Bool {
        defer {
            data.removeAll(keepingCapacity: data.count < 1 << 16)
            hasData = false
            eventType = nil
        }
        guard hasData else { return true }
        var event = JSONObject()
        event["event"] = .string(eventType.flatMap { $0.isEmpty ? nil : $0 } ?? "message")
        event["id"] = lastEventID.map(JSON.string) ?? .null
        let parsed = data.isEmpty ? nil : try? JSONParser.parse(data)
        event["data"] = parsed ?? .string(String(decoding: data, as: UTF8.self))
        count += 1
        return emit(.object(event))
    }
}
