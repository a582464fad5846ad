import DouctlServer

/// One request while it is being handled: lazily parsed body fields, what to record, extra
/// reply headers. Used by one thread only.
final class Exchange {
    let request: HTTPServerRequest
    let route: Route
    /// Added to whatever reply is sent (rate-limit headers).
    var extraHeaders: [(String, String)] = []
    private var parsedFields: [(name: String, value: String)]?
    private(set) var recordedForm: [(name: String, value: String)] = []
    var recordedParts: [RecordedPart] = []
    /// Set once a handler has consumed the body itself (the status upload).
    var bodyHandled = false

    /// Form fields beyond this are not read (the server's body-size limit guards the rest).
    static let formLimit = 1 << 20
    /// Part content one request may hold in memory, all parts together: its text fields and the
    /// recorded copies of small files. A text field past it is refused (413); a file part past
    /// it is still read (to disk or discarded) but recorded by size only.
    static let keptPartBytesPerRequest = 4 << 20
    /// Part content held so far.
    private var keptPartBytes = 0

    init(request: HTTPServerRequest, route: Route) {
        self.request = request
        self.route = route
    }

    /// "GET /v2/user/~me", the `request` member of Douban errors.
    /// (A HEAD is labelled GET: its body is the GET's, never sent, so Content-Length matches.)
    var requestLabel: String { "\(request.method) \(request.path)" }

    var isMultipart: Bool { request.mediaType?.hasPrefix("multipart/") ?? false }

    var isFormEncoded: Bool {
        guard let mediaType = request.mediaType else { return true }  // no type: try it as a form
        return mediaType == "application/x-www-form-urlencoded"
    }

    func query(_ name: String) -> String? { request.queryValue(name) }

    /// The body's fields: an urlencoded form, or the text parts of a multipart body (file parts
    /// are recorded and skipped). Read once, on first use.
    func fields() throws -> [(name: String, value: String)] {
        if let parsedFields { return parsedFields }
        var fields: [(name: String, value: String)] = []
        if isMultipart {
            bodyHandled = true
            guard let reader = MultipartReader(body: request.body, contentType: request.headers["Content-Type"] ?? "") else {
                throw DoubanError.unknown("multipart body without a boundary")
            }
            do {
                while let part = try reader.nextPart() {
                    let bytes = try keep(part)
                    if part.filename == nil, let name = part.name, let bytes {
                        fields.append((name: name, value: String(decoding: bytes, as: UTF8.self)))
                    }
                }
            } catch {
                // Past a limit the client gets its 413 after sending the rest (read and dropped,
                // in constant memory), as for a form too large, rather than a reset mid-send.
                let refusal = (error as? DoubanError) ?? (error as? HTTPServerError).map(DoubanError.forMultipart)
                if let refusal, refusal.status == 413 {
                    _ = try? request.body.drain()
                    throw refusal
                }
                throw DoubanError.unknown("malformed multipart body")
            }
        } else if isFormEncoded && !request.body.isComplete {
            bodyHandled = true
            do {
                fields = FormURLEncoded.parse(try request.body.readAll(limit: Exchange.formLimit))
            } catch {
                _ = try? request.body.drain()
                throw DoubanError.bodyTooLarge
            }
            recordedForm = fields
        }
        parsedFields = fields
        return fields
    }

    /// The first body field `name`.
    func field(_ name: String) throws -> String? {
        try fields().first { $0.name == name }?.value
    }

    /// Reads a part to its end and records it; returns its content when it is kept (at most
    /// `formLimit` bytes, within the request's `keptPartBytesPerRequest`). A text field that
    /// fits `formLimit` but not what is left of the request's budget is refused with 413.
    func keep(_ part: MultipartPart) throws -> [UInt8]? {
        let allowance = min(Exchange.formLimit, Exchange.keptPartBytesPerRequest - keptPartBytes)
        let (bytes, size) = try Exchange.consume(part, keeping: allowance)
        keptPartBytes += bytes?.count ?? 0
        recordedParts.append(RecordedPart(name: part.name, filename: part.filename, contentType: part.contentType,
                                          size: size, bytes: bytes))
        if bytes == nil && part.filename == nil && size <= Int64(Exchange.formLimit) {
            throw DoubanError(status: 413, code: 999, name: "unknow_v2_error",
                              detail: "multipart fields larger than \(Exchange.keptPartBytesPerRequest >> 20) MiB in all")
        }
        return bytes
    }

    /// Reads a part to its end, keeping at most `limit` bytes (nil when it was longer).
    static func consume(_ part: MultipartPart, keeping limit: Int) throws -> (bytes: [UInt8]?, size: Int64) {
        var kept: [UInt8]? = []
        var size: Int64 = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = try part.read(into: buffer)
            if count == 0 { break }
            size += Int64(count)
            if kept != nil {
                if kept!.count + count > limit {
                    kept = nil
                } else {
                    kept!.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                }
            }
        }
        return (kept, size)
    }

    /// Reads whatever of the body no handler read, so the record shows what the client sent
    /// (fields, parts, size). Errors are left for the server to diagnose.
    func finishBody() {
        guard !request.body.isComplete else { return }
        if !bodyHandled && (isMultipart || (isFormEncoded && request.body.contentLength.map { $0 <= Int64(Exchange.formLimit) } ?? true)) {
            _ = try? fields()
        }
        if !request.body.isComplete { _ = try? request.body.drain() }
    }

    func record(status: Int) -> RecordedRequest {
        RecordedRequest(method: request.sentMethod, path: request.path, rawTarget: request.target, query: request.query,
                        headers: request.headers.map { (name: $0.name, value: $0.value) },
                        contentType: request.headers["Content-Type"], contentLength: request.contentLength,
                        isChunked: request.isChunked, bodySize: request.body.bytesRead, form: recordedForm,
                        parts: recordedParts, status: status)
    }
}
