#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem

/// Streams the parts of a `multipart/*` request body (RFC 2046 §5.1, RFC 7578) out of a rolling
/// buffer of fixed size, so a multi-gigabyte file part goes to disk in constant memory.
///
/// Delimiters are found with `memchr` for CR and `memcmp` for the rest, never byte by byte. The
/// body is read as if it began with CRLF, so the first boundary (which has no CRLF before it)
/// and all later ones match the same `CRLF--boundary`. A match counts only when followed by
/// `--` or optional spaces and a line break; anything else (`--boundaryX`) is content.
public final class MultipartReader {
    /// The boundary from the Content-Type, unquoted.
    public let boundary: String

    private let body: HTTPRequestBody
    private let delimiter: [UInt8]
    /// The same bytes at a stable address, for `memcmp`.
    private let delimiterBytes: UnsafeMutableRawPointer
    private let buffer: UnsafeMutableRawPointer
    private let capacity: Int
    private var start = 0
    private var end = 0
    private var bodyEnded = false
    /// Bytes at `start` already known to be content (so small reads do not rescan).
    private var knownContent = 0
    /// `start` is at a delimiter that has been verified.
    private var atDelimiter = false
    private var finished = false
    /// Bumped for each part; a part whose number is not current reads nothing.
    private(set) var currentPartNumber = 0
    /// Parts begun so far, and the bytes of their header sections together.
    private var partCount = 0
    private var partHeaderBytes = 0
    private let maxParts: Int

    /// Part header sections beyond this are malformed: headers are small, and unbounded ones
    /// would be a way to make the server buffer without limit.
    static let maxPartHeaderBytes = 16 * 1024
    /// Parts in one body beyond this are refused (`HTTPServerError.multipartTooLarge`), before
    /// the extra part's headers are read: each part costs its reader's caller a record, so an
    /// unbounded count (10^6 one-byte parts are 59 MB) would be unbounded memory. 1,000 is
    /// Go's `mime/multipart` default and Werkzeug's `max_form_parts`.
    public static let defaultMaxParts = 1000
    /// The header sections of all parts together beyond this are refused the same way.
    public static let maxTotalPartHeaderBytes = 1 << 20
    /// Spaces allowed between a boundary and its line break ("transport padding").
    private static let maxPadding = 256

    /// Nil when `contentType` is not `multipart/…` or has no usable boundary (1 to 200 bytes).
    public convenience init?(body: HTTPRequestBody, contentType: String, maxParts: Int = MultipartReader.defaultMaxParts) {
        self.init(body: body, contentType: contentType, bufferSize: 256 * 1024, maxParts: maxParts)
    }

    init?(body: HTTPRequestBody, contentType: String, bufferSize: Int, maxParts: Int = MultipartReader.defaultMaxParts) {
        let parsed = HeaderValueWithParameters(parsing: contentType)
        guard HTTPSyntax.asciiLowercased(parsed.value).hasPrefix("multipart/"),
              let boundary = parsed.parameter("boundary"), (1...200).contains(boundary.utf8.count) else { return nil }
        self.boundary = boundary
        self.body = body
        self.maxParts = max(maxParts, 1)
        delimiter = Array("\r\n--\(boundary)".utf8)
        delimiterBytes = .allocate(byteCount: delimiter.count, alignment: 1)
        delimiterBytes.copyMemory(from: delimiter, byteCount: delimiter.count)
        capacity = max(bufferSize, delimiter.count + Self.maxPadding + 64)
        buffer = .allocate(byteCount: capacity, alignment: 16)
        buffer.storeBytes(of: UInt8(ascii: "\r"), as: UInt8.self)
        buffer.storeBytes(of: UInt8(ascii: "\n"), toByteOffset: 1, as: UInt8.self)
        end = 2
    }

    deinit {
        buffer.deallocate()
        delimiterBytes.deallocate()
    }

    /// The next part, or nil after the closing boundary. Skips whatever of the previous part
    /// (or the preamble) was not read. Throws `HTTPServerError.malformed` on a truncated or
    /// broken body.
    public func nextPart() throws -> MultipartPart? {
        try advanceToNextPart()
    }

    private func advanceToNextPart() throws(HTTPServerError) -> MultipartPart? {
        if finished { return nil }
        currentPartNumber += 1
        while try availableContent() > 0 { consume(knownContent) }
        guard case .valid(let isFinal, let length) = delimiterEnding(at: start + delimiter.count) else {
            throw .malformed("multipart delimiter vanished")  // unreachable: availableContent verified it
        }
        start += delimiter.count + length
        atDelimiter = false
        if isFinal {
            finished = true
            return nil
        }
        partCount += 1
        if partCount > maxParts {
            finished = true
            throw .multipartTooLarge("more than \(maxParts) parts in a multipart body")
        }
        let headers = try readPartHeaders()
        return MultipartPart(reader: self, number: currentPartNumber, headers: headers)
    }

    // MARK: Content

    /// The count of content bytes at `start`; 0 when the current part (or preamble) has ended.
    func availableContent() throws(HTTPServerError) -> Int {
        if knownContent > 0 { return knownContent }
        if atDelimiter || finished { return 0 }
        while true {
            switch scan() {
            case .content(let count):
                knownContent = count
                return count
            case .delimiter:
                atDelimiter = true
                return 0
            case .needMore:
                try fill()
            }
        }
    }

    /// The content bytes counted by the last `availableContent()`, in place.
    var contentBytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: buffer + start, count: knownContent)
    }

    func consume(_ count: Int) {
        let taken = min(count, knownContent)
        start += taken
        knownContent -= taken
    }

    func readContent(into destination: UnsafeMutableRawBufferPointer) throws(HTTPServerError) -> Int {
        guard let target = destination.baseAddress, destination.count > 0 else { return 0 }
        let available = try availableContent()
        let taken = min(available, destination.count)
        if taken > 0 {
            target.copyMemory(from: buffer + start, byteCount: taken)
            consume(taken)
        }
        return taken
    }

    private enum ScanResult {
        case content(Int)
        case delimiter
        case needMore
    }

    private func scan() -> ScanResult {
        var position = start
        let delimiterLength = delimiter.count
        while position < end {
            guard let found = memchr(buffer + position, 0x0D, end - position) else { break }
            let candidate = found - buffer
            let comparable = min(end - candidate, delimiterLength)
            guard memcmp(buffer + candidate, delimiterBytes, comparable) == 0 else {
                position = candidate + 1
                continue
            }
            let ending: DelimiterEnding = comparable < delimiterLength ? .needMore : delimiterEnding(at: candidate + delimiterLength)
            switch ending {
            case .valid:
                return candidate > start ? .content(candidate - start) : .delimiter
            case .invalid:
                position = candidate + 1
            case .needMore:
                // Perhaps a delimiter: hand out what precedes it, then read on.
                return candidate > start ? .content(candidate - start) : .needMore
            }
        }
        return end > start ? .content(end - start) : .needMore
    }

    private enum DelimiterEnding {
        case valid(isFinal: Bool, length: Int)
        case invalid
        case needMore
    }

    /// What follows a delimiter match at `index`: `--` (the close delimiter), or optional
    /// spaces and tabs, then CRLF or LF.
    private func delimiterEnding(at index: Int) -> DelimiterEnding {
        guard index + 2 <= end else { return .needMore }
        if byte(at: index) == UInt8(ascii: "-") && byte(at: index + 1) == UInt8(ascii: "-") {
            return .valid(isFinal: true, length: 2)
        }
        var position = index
        while position < end, byte(at: position) == UInt8(ascii: " ") || byte(at: position) == UInt8(ascii: "\t") {
            position += 1
            if position - index > Self.maxPadding { return .invalid }
        }
        guard position < end else { return .needMore }
        switch byte(at: position) {
        case UInt8(ascii: "\n"):
            return .valid(isFinal: false, length: position + 1 - index)
        case UInt8(ascii: "\r"):
            guard position + 1 < end else { return .needMore }
            return byte(at: position + 1) == UInt8(ascii: "\n") ? .valid(isFinal: false, length: position + 2 - index) : .invalid
        default:
            return .invalid
        }
    }

    private func byte(at index: Int) -> UInt8 { buffer.load(fromByteOffset: index, as: UInt8.self) }

    /// Moves pending bytes to the front and reads more of the body after them.
    private func fill() throws(HTTPServerError) {
        if bodyEnded { throw .malformed("truncated multipart body") }
        if start > 0 {
            if end > start { memmove(buffer, buffer + start, end - start) }
            end -= start
            start = 0
        }
        guard end < capacity else { throw .malformed("multipart line too long") }
        let count = try body.readContent(into: UnsafeMutableRawBufferPointer(start: buffer + end, count: capacity - end))
        if count == 0 { bodyEnded = true }
        end += count
    }

    // MARK: Part headers

    private func readPartHeaders() throws(HTTPServerError) -> HTTPHeaders {
        var headers = HTTPHeaders()
        var total = 0
        while true {
            guard let found = memchr(buffer + start, 0x0A, end - start) else {
                if end - start > Self.maxPartHeaderBytes - total { throw .malformed("multipart part headers too large") }
                try fill()
                continue
            }
            let lineFeed = found - buffer
            var lineEnd = lineFeed
            if lineEnd > start && byte(at: lineEnd - 1) == 0x0D { lineEnd -= 1 }
            let line = [UInt8](UnsafeRawBufferPointer(start: buffer + start, count: lineEnd - start))
            total += lineFeed + 1 - start
            partHeaderBytes += lineFeed + 1 - start
            start = lineFeed + 1
            if total > Self.maxPartHeaderBytes { throw .malformed("multipart part headers too large") }
            if partHeaderBytes > Self.maxTotalPartHeaderBytes {
                finished = true
                throw .multipartTooLarge("multipart part headers larger than \(Self.maxTotalPartHeaderBytes >> 20) MiB in all")
            }
            if line.isEmpty { return headers }
            do throws(RequestRejection) {
                let field = try RequestParser.parseFieldLine(line[...])
                headers.add(field.name, field.value)
            } catch {
                throw .malformed("invalid multipart part header: \(error.reason)")
            }
        }
    }
}

/// One part of a multipart body. Its content is read from the body as it is consumed; it can
/// be read only until `nextPart()` is called again.
public final class MultipartPart {
    public let headers: HTTPHeaders
    /// The `name` of Content-Disposition: the form field.
    public let name: String?
    /// The `filename` (or a decodable `filename*`) of Content-Disposition, when the part is a file.
    public let filename: String?
    /// The part's Content-Type, when given (RFC 7578 defaults it to text/plain).
    public let contentType: String?

    private let reader: MultipartReader
    private let number: Int

    init(reader: MultipartReader, number: Int, headers: HTTPHeaders) {
        self.reader = reader
        self.number = number
        self.headers = headers
        contentType = headers["Content-Type"]
        if let disposition = headers["Content-Disposition"] {
            let parsed = HeaderValueWithParameters(parsing: disposition)
            name = parsed.parameter("name").map(FormDataNames.decodeBrowserEscapes)
            filename = parsed.parameter("filename*").flatMap(PercentEncoding.decodeExtendedValue)
                ?? parsed.parameter("filename").map(FormDataNames.decodeBrowserEscapes)
        } else {
            name = nil
            filename = nil
        }
    }

    private var isCurrent: Bool { reader.currentPartNumber == number }

    /// Reads up to `buffer.count` bytes of the part's content; 0 at its end.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard isCurrent else { return 0 }
        return try reader.readContent(into: buffer)
    }

    /// The whole (rest of the) content; throws `HTTPServerError.bodyTooLarge` beyond `limit`.
    public func readAll(limit: Int) throws -> [UInt8] {
        var result: [UInt8] = []
        guard isCurrent else { return result }
        while true {
            let available = try reader.availableContent()
            if available == 0 { return result }
            if available > limit - result.count { throw HTTPServerError.bodyTooLarge }
            result.append(contentsOf: reader.contentBytes)
            reader.consume(available)
        }
    }

    /// The content as UTF-8 text (at most `limit` bytes), for ordinary form fields.
    public func readText(limit: Int = 1 << 20) throws -> String {
        String(decoding: try readAll(limit: limit), as: UTF8.self)
    }

    /// Streams the (rest of the) content to `fd` straight from the reader's buffer and returns
    /// its size. Write failures throw `SystemError`.
    public func write(toFileDescriptor fd: Int32) throws -> Int64 {
        var total: Int64 = 0
        guard isCurrent else { return total }
        while try reader.availableContent() > 0 {
            let content = reader.contentBytes
            try FileIO.writeAll(fd, content)
            reader.consume(content.count)
            total += Int64(content.count)
        }
        return total
    }
}

/// Names and file names of multipart/form-data parts (RFC 7578 §4.2).
enum FormDataNames {
    /// Browsers (per the HTML standard) and curl 7.81+ write `"`, CR and LF in names as `%22`,
    /// `%0D`, `%0A`; only those three are decoded, since a `%` itself is not escaped and
    /// "100%.txt" must stay as it is.
    static func decodeBrowserEscapes(_ text: String) -> String {
        guard text.contains("%") else { return text }
        var result: [UInt8] = []
        let bytes = Array(text.utf8)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
               let high = PercentEncoding.hexValue(bytes[index + 1]), let low = PercentEncoding.hexValue(bytes[index + 2]) {
                let decoded = high << 4 | low
                if decoded == 0x22 || decoded == 0x0D || decoded == 0x0A {
                    result.append(decoded)
                    index += 3
                    continue
                }
            }
            result.append(bytes[index])
            index += 1
        }
        return String(decoding: result, as: UTF8.self)
    }
}
