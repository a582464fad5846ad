/// One request as the sandbox saw it, for tests to assert on what a client sent.
public struct RecordedRequest: Sendable {
    public var method: String
    /// The percent-decoded path, e.g. `/shuo/v2/statuses/`.
    public var path: String
    /// The request-target as sent, e.g. `/shuo/v2/statuses/home_timeline?count=20`.
    public var rawTarget: String
    public var query: [(name: String, value: String)]
    public var headers: [(name: String, value: String)]
    public var contentType: String?
    public var contentLength: Int64?
    public var isChunked: Bool
    /// Body bytes received (after chunked decoding).
    public var bodySize: Int64
    /// Fields of an `application/x-www-form-urlencoded` body.
    public var form: [(name: String, value: String)]
    /// Parts of a `multipart/form-data` body.
    public var parts: [RecordedPart]
    /// The status the sandbox answered with (also when a fault then cut the reply short).
    public var status: Int

    /// The first header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.name.lowercased() == lowered }?.value
    }

    public func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }

    public func formValue(_ name: String) -> String? {
        form.first { $0.name == name }?.value
    }

    public func part(_ name: String) -> RecordedPart? {
        parts.first { $0.name == name }
    }
}

/// One part of a multipart body.
public struct RecordedPart: Sendable {
    public var name: String?
    public var filename: String?
    public var contentType: String?
    public var size: Int64
    /// The content, kept when it is at most `RecordedPart.keptBytesLimit` (1 MiB).
    public var bytes: [UInt8]?

    public static let keptBytesLimit = 1 << 20

    public var text: String? { bytes.map { String(decoding: $0, as: UTF8.self) } }
}

/// The most recent requests, oldest first, bounded by count and by the body bytes they keep,
/// so a long-running sandbox that takes many uploads does not grow without bound.
struct RequestJournal: Sendable {
    static let capacity = 5000
    /// Body bytes (and part records) kept across all entries; past it the oldest entries go.
    static let keptBytesBudget = 32 << 20
    private(set) var entries: [RecordedRequest] = []
    private var keptBytes = 0

    /// Trims in batches (the count may run a fifth over before it is cut back to `capacity`),
    /// so an append is cheap; the newest entry is always kept.
    mutating func append(_ entry: RecordedRequest) {
        entries.append(entry)
        keptBytes += Self.keptBytes(of: entry)
        var dropping = entries.count > Self.capacity + Self.capacity / 5 ? entries.count - Self.capacity : 0
        var droppedBytes = entries[..<dropping].reduce(0) { $0 + Self.keptBytes(of: $1) }
        while keptBytes - droppedBytes > Self.keptBytesBudget && dropping < entries.count - 1 {
            droppedBytes += Self.keptBytes(of: entries[dropping])
            dropping += 1
        }
        if dropping > 0 {
            entries.removeFirst(dropping)
            keptBytes -= droppedBytes
        }
    }

    /// What an entry holds, roughly: kept part bodies, and for every part its record and
    /// names, so a request of many tiny parts counts for what it costs.
    private static func keptBytes(of entry: RecordedRequest) -> Int {
        entry.parts.reduce(0) { total, part in
            total + partOverhead + (part.bytes?.count ?? 0) + (part.name?.utf8.count ?? 0)
                + (part.filename?.utf8.count ?? 0) + (part.contentType?.utf8.count ?? 0)
        }
    }

    /// A part record's own size and its allocations' headers.
    static let partOverhead = 128

    /// The last `capacity` entries.
    var recent: [RecordedRequest] {
        entries.count > Self.capacity ? Array(entries.suffix(Self.capacity)) : entries
    }

    mutating func clear() {
        entries.removeAll()
        keptBytes = 0
    }
}
