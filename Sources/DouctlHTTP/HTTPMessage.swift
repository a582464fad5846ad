import DouctlSystem

/// One header line. Order and repeats are kept, because some servers care and users read them.
public struct HTTPHeader: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

extension Array where Element == HTTPHeader {
    /// The first value of `name`, compared case-insensitively.
    public func value(of name: String) -> String? {
        first { HTTPHeader.sameName($0.name, name) }?.value
    }

    /// Adds or replaces a header (case-insensitive name).
    public mutating func set(_ name: String, _ value: String) {
        removeAll { HTTPHeader.sameName($0.name, name) }
        append(HTTPHeader(name, value))
    }
}

extension HTTPHeader {
    /// `a.lowercased() == b.lowercased()`, compared byte by byte when both are ASCII (as
    /// header names are), where the two answers are the same: lowercasing allocated two
    /// strings per header looked at, each lookup of a small GET (issue 44).
    static func sameName(_ a: String, _ b: String) -> Bool {
        var left = a, right = b
        let ascii = left.withUTF8 { l in right.withUTF8 { r in asciiEqualIgnoringCase(l, r) } }
        return ascii ?? (a.lowercased() == b.lowercased())
    }

    /// Whether `left` and `right` are equal but for ASCII case; nil when either is not ASCII.
    private static func asciiEqualIgnoringCase(_ left: UnsafeBufferPointer<UInt8>, _ right: UnsafeBufferPointer<UInt8>) -> Bool? {
        guard HTTPSyntax.isASCII(left), HTTPSyntax.isASCII(right) else { return nil }
        guard left.count == right.count else { return false }
        for index in 0..<left.count where HTTPSyntax.asciiLowercase(left[index]) != HTTPSyntax.asciiLowercase(right[index]) { return false }
        return true
    }
}

/// What to send. A body is described, not opened, so the same request can be sent again
/// (a retry, or the replay after a token refresh re-reads the files from disk).
public struct HTTPRequest: Sendable, Equatable {
    public var method: String
    public var url: String
    public var headers: [HTTPHeader]
    public var body: RequestBody
    /// Values this request carries that must never be logged or recorded, wherever they
    /// appear (an API key in a header or query parameter of the API's choosing).
    public var secrets: [String] = []
    /// Ask for a compressed reply (Accept-Encoding: every encoding libcurl decodes, as
    /// curl --compressed): the body arrives decoded, and every bound on a reply's size
    /// applies to the decoded bytes. For replies a person or a script reads, not for files
    /// downloaded as they are.
    public var acceptsCompression = false
    /// Where the body is saved (a download's file): --dry-run's curl line adds `-o NAME`.
    public var savedAs: String?

    public init(method: String = "GET", url: String, headers: [HTTPHeader] = [], body: RequestBody = .none) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// GET, HEAD, PUT, DELETE and OPTIONS may be repeated without changing the outcome (RFC 9110 §9.2.2).
    public var isIdempotent: Bool {
        ["GET", "HEAD", "PUT", "DELETE", "OPTIONS"].contains(method.uppercased())
    }
}

/// A request body. `.segments` has a known length, so it goes out with `Content-Length`
/// and is streamed from disk; only `.stream` (a pipe) falls back to chunked encoding.
public enum RequestBody: Sendable, Equatable {
    case none
    case bytes([UInt8])
    case segments([BodySegment])
    /// `prefix` (bytes already read from it, e.g. to see whether it is JSON), then the file
    /// descriptor to its end; the length is unknown, so the body is chunked. Cannot be replayed.
    case stream(fileDescriptor: Int32, prefix: [UInt8] = [])

    /// Bytes the body will have, when known in advance.
    public var length: Int64? {
        switch self {
        case .none: return 0
        case .bytes(let bytes): return Int64(bytes.count)
        case .segments(let segments): return segments.reduce(0) { $0 + $1.length }
        case .stream: return nil
        }
    }

    public var isReplayable: Bool {
        if case .stream = self { return false }
        return true
    }
}

/// A piece of a body: bytes in memory, or a whole file read at send time.
public enum BodySegment: Sendable, Equatable {
    case bytes([UInt8])
    /// `length` is what the file measured when the body was built; a file that changes size
    /// before it is sent fails the request instead of sending a body that breaks its framing.
    case file(path: String, length: Int64)

    public var length: Int64 {
        switch self {
        case .bytes(let bytes): return Int64(bytes.count)
        case .file(_, let length): return length
        }
    }
}

/// The status line and headers of a reply.
public struct HTTPResponseHead: Sendable, Equatable {
    public var version: String
    public var status: Int
    public var reason: String
    public var headers: [HTTPHeader]
    /// The URL that answered: the request's, or the last redirect's target.
    public var url: String?

    public init(version: String = "HTTP/1.1", status: Int, reason: String = "", headers: [HTTPHeader] = [], url: String? = nil) {
        self.version = version
        self.status = status
        self.reason = reason
        self.headers = headers
        self.url = url
    }

    public func header(_ name: String) -> String? { headers.value(of: name) }

    /// The media type without parameters, lowercased: "application/json".
    public var mediaType: String? {
        guard var value = header("Content-Type") else { return nil }
        // ASCII, as media types are: bytes, the same answer as the Character-wise way below
        // (which took a small GET ~25 K instructions; issue 44). nil: not ASCII.
        let ascii: String?? = value.withUTF8 { bytes in
            guard HTTPSyntax.isASCII(bytes) else { return nil }
            // The first piece between semicolons that is not empty, trimmed of spaces and tabs.
            var start = 0
            while start < bytes.count, bytes[start] == UInt8(ascii: ";") { start += 1 }
            guard start < bytes.count else { return .some(nil) }
            var end = start
            while end < bytes.count, bytes[end] != UInt8(ascii: ";") { end += 1 }
            while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
            while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
            return .some(HTTPSyntax.asciiLowercased(UnsafeBufferPointer(rebasing: bytes[start..<end])))
        }
        if let ascii { return ascii }
        return value.split(separator: ";").first.map { $0.trimmingCharacters(in: " \t").lowercased() }
    }
}

/// A reply whose body was collected in memory.
public struct HTTPResponse: Sendable, Equatable {
    public var head: HTTPResponseHead
    public var body: [UInt8]

    /// The largest successful reply body held in memory whole (64 MiB): one page of a walk,
    /// a reply to unwrap from an envelope. A larger one is `.replyTooLarge` (exit 8), never
    /// an allocation the server sized. `api` streams what it can instead of holding it.
    public static let maximumBodyBytes = 64 << 20
    /// How much of an error reply, a redirect's body or any body thrown away is read (64
    /// KiB): enough for the error line's quote; the rest is never read.
    public static let maximumErrorBodyBytes = 64 << 10

    /// A reply asked for compressed (`HTTPRequest.acceptsCompression`) that decodes to more
    /// than this many times the bytes that came over the wire (once past `decodedFloor`) is
    /// refused as a decompression bomb (exit 8), wherever it goes (stdout, a file, memory):
    /// ordinary JSON and text gzip 5–20×, a bomb of zeros ~1,000× (gzip) and far more (zstd,
    /// brotli). It bounds what a hostile server can make douctl write.
    public static let decodedRatioLimit: Int64 = 200
    /// Up to this many decoded bytes, any ratio is fine (64 MiB, the held-reply bound).
    public static let decodedFloor: Int64 = 64 << 20

    /// The bound's words when `decoded` bytes came of `onTheWire` bytes received, nil
    /// while they are within it.
    public static func decompressionBomb(decoded: Int64, onTheWire: Int64) -> String? {
        guard decoded > decodedFloor, decoded > decodedRatioLimit * max(onTheWire, 1) else { return nil }
        return "the reply decodes to more than \(decodedRatioLimit) times the \(onTheWire) bytes received (past \(decodedFloor >> 20) MiB): refused as a decompression bomb"
    }

    public init(head: HTTPResponseHead, body: [UInt8]) {
        self.head = head
        self.body = body
    }

    public var status: Int { head.status }
}

/// Bytes moved so far in one transfer, for progress displays.
public struct TransferProgress: Sendable, Equatable {
    public var uploaded: Int64
    public var uploadTotal: Int64
    public var downloaded: Int64
    public var downloadTotal: Int64

    public init(uploaded: Int64 = 0, uploadTotal: Int64 = 0, downloaded: Int64 = 0, downloadTotal: Int64 = 0) {
        self.uploaded = uploaded
        self.uploadTotal = uploadTotal
        self.downloaded = downloaded
        self.downloadTotal = downloadTotal
    }
}


/// A reply body kept in memory up to a cap: what a bounded read holds, and whether it
/// stopped at the cap (the rest is never read, so a server cannot size our memory).
public struct CappedBody: Sendable {
    public private(set) var bytes: [UInt8] = []
    /// True once a chunk went past the cap; what fitted was kept.
    public private(set) var wasCut = false

    public init() {}

    /// Keeps `chunk` up to `cap` bytes in all; false (stop reading) when it went past.
    public mutating func take(_ chunk: UnsafeRawBufferPointer, cap: Int) -> Bool {
        if chunk.count > cap - bytes.count {
            bytes.append(contentsOf: chunk.prefix(max(0, cap - bytes.count)))
            wasCut = true
            return false
        }
        bytes.append(contentsOf: chunk)
        return true
    }

    public mutating func removeAll() {
        bytes.removeAll()
        wasCut = false
    }
}
