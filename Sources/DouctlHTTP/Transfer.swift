import CCurl
import DouctlSystem

/// The state of one libcurl transfer, reached from libcurl's C callbacks through their
/// context pointer. It parses reply heads, routes body bytes, reports progress and
/// notices Ctrl-C.
final class Transfer {
    let reader: BodyReader
    private let sink: (UnsafeRawBufferPointer) -> Bool
    private let progress: ((TransferProgress) -> Void)?
    private let isCancelled: () -> Bool
    private let log: ((String) -> Void)?
    /// The request's own credentials (`Redaction.credentials(of:)`), masked in every line logged.
    private let secrets: [String]
    /// Decides, when the first body byte of the final reply arrives, whether the body goes
    /// to the sink now or is held back (a reply we may retry must not reach the output).
    private let holdBody: (HTTPResponseHead) -> Bool
    /// Told the final reply's head just before its first body byte goes to the sink.
    private let headReady: ((HTTPResponseHead) -> Void)?

    private var partialHead: HTTPResponseHead?
    private(set) var head: HTTPResponseHead?
    private var bodyDecision: Bool?          // true → holding
    private(set) var heldBody: [UInt8] = []
    /// True when a held body (a redirect's, a reply that may be retried) reached
    /// `HTTPResponse.maximumErrorBodyBytes` and the transfer stopped reading it there.
    private(set) var heldBodyCut = false
    private(set) var deliveredBytes: Int64 = 0
    private(set) var wasCancelled = false
    private(set) var sinkRefused = false
    /// Why the transfer itself stopped the reply (a bound it enforces), thrown as
    /// `TransportError.stopped`.
    private(set) var stop: StopReason?
    /// The reply was asked for compressed: its decoded bytes are bounded against the bytes
    /// that came over the wire (`HTTPResponse.decompressionBomb`).
    private let boundsDecoding: Bool
    /// Body bytes received over the wire so far (encoded): libcurl's download counter, read
    /// when the bound is near (its progress callback may not have run yet on a fast link).
    var bytesOnTheWire: () -> Int64 = { 0 }
    /// Why the reply's framing cannot be trusted (two different Content-Length values, RFC
    /// 9112 §6.3): the transfer stops at its head. libcurl would read up to the larger one.
    private(set) var framingError: String?
    /// The Content-Length of the reply being read (per status line: interim replies and
    /// redirect hops have their own).
    private var contentLength: String?
    /// `-v`: the request body's description, logged after the request head.
    private var requestBodySummary: [String]?
    private let bodyLimit: Int
    private var replyPreview: [UInt8] = []
    private var replyBytes: Int64 = 0
    let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: 256)

    init(
        body: RequestBody,
        sink: @escaping (UnsafeRawBufferPointer) -> Bool,
        progress: ((TransferProgress) -> Void)?,
        isCancelled: @escaping () -> Bool,
        log: ((String) -> Void)?,
        holdBody: @escaping (HTTPResponseHead) -> Bool,
        headReady: ((HTTPResponseHead) -> Void)? = nil,
        requestBodySummary: [String]? = nil,
        bodyLimit: Int = 4096,
        secrets: [String] = [],
        boundsDecoding: Bool = false
    ) {
        self.secrets = secrets
        self.boundsDecoding = boundsDecoding
        reader = BodyReader(body)
        self.requestBodySummary = requestBodySummary
        self.bodyLimit = bodyLimit
        self.sink = sink
        self.progress = progress
        self.isCancelled = isCancelled
        self.log = log
        self.holdBody = holdBody
        self.headReady = headReady
        errorBuffer.initialize(repeating: 0, count: 256)
    }

    deinit { errorBuffer.deallocate() }

    var errorText: String { String(cString: errorBuffer) }

    // MARK: callbacks

    /// False stops the transfer (see `framingError`).
    fileprivate func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let line = Self.lines(bytes).first ?? ""
        if line.hasPrefix(bytes: "HTTP/") {
            contentLength = nil
            // A new status line: a 1xx interim reply or a redirect hop came before.
            let parts = line.utf8.split(separator: 0x20, maxSplits: 2, omittingEmptySubsequences: true).map(Substring.init)
            let status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            let reason = parts.count > 2 ? String(parts[2]) : ""
            partialHead = HTTPResponseHead(version: parts.first.map(String.init) ?? "HTTP/1.1", status: status, reason: reason)
        } else if line.isEmpty {
            if let partialHead, partialHead.status >= 200 || partialHead.status == 0 { head = partialHead }
        } else if let colon = line.firstIndex(ofASCII: ":") {
            let name = String(line[..<colon])
            let value = String(HTTPSyntax.trimmingWhitespace(line[line.index(afterASCII: colon)...]))
            partialHead?.headers.append(HTTPHeader(name, value))
            if HTTPSyntax.caseInsensitiveEquals(name, "Content-Length") {
                // A list of one value repeated ("5, 5") is that value (RFC 9110 §8.6).
                for length in value.utf8.split(separator: UInt8(ascii: ",")).map({ String(HTTPSyntax.trimmingWhitespace(Substring($0))) }) {
                    if let earlier = contentLength, earlier != length {
                        framingError = "two different Content-Length values (\(earlier) and \(length))"
                        return false
                    }
                    contentLength = length
                }
            }
        }
        return true
    }

    fileprivate func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if log != nil {
            if replyPreview.count < bodyLimit { replyPreview.append(contentsOf: bytes.prefix(bodyLimit - replyPreview.count)) }
            replyBytes += Int64(bytes.count)
        }
        if bodyDecision == nil {
            if head == nil { head = partialHead }
            bodyDecision = head.map(holdBody) ?? false
            if bodyDecision == false, let head { headReady?(head) }
        }
        if bodyDecision == true {
            let room = HTTPResponse.maximumErrorBodyBytes - heldBody.count
            if bytes.count > room {
                // The rest of a body thrown away or quoted is never read (a 5 GiB 503).
                heldBody.append(contentsOf: bytes.prefix(max(0, room)))
                heldBodyCut = true
                return false
            }
            heldBody.append(contentsOf: bytes)
            return true
        }
        let decoded = deliveredBytes + Int64(bytes.count)
        if boundsDecoding, decoded > HTTPResponse.decodedFloor, let problem = HTTPResponse.decompressionBomb(decoded: decoded, onTheWire: bytesOnTheWire()) {
            stop = .refused(problem)
            return false
        }
        deliveredBytes += Int64(bytes.count)
        if !sink(bytes) {
            sinkRefused = true
            return false
        }
        return true
    }

    fileprivate func reportProgress(_ now: TransferProgress) -> Bool {
        if isCancelled() {
            wasCancelled = true
            return false
        }
        progress?(now)
        return true
    }

    fileprivate func debug(kind: Int32, _ bytes: UnsafeRawBufferPointer) {
        guard log != nil else { return }
        let prefix: String
        switch kind {
        case CCURLINFO_TEXT: prefix = "* "
        case CCURLINFO_HEADER_IN: prefix = "< "
        case CCURLINFO_HEADER_OUT: prefix = "> "
        // Body bytes (and TLS records) are not logged as they pass: `finishLog` shows the
        // reply's preview once, and the request's summary follows its head, both via `emit`.
        default: return
        }
        let lines = Self.lines(bytes)
        for line in lines {
            if kind == CCURLINFO_TEXT && (line.isEmpty || Redaction.isPointerNoise(line)) { continue }
            emit(prefix, line, kind == CCURLINFO_TEXT ? .text : .header)
        }
        // After the request's head (not a proxy CONNECT's), what its body holds.
        if kind == CCURLINFO_HEADER_OUT, let summary = requestBodySummary, lines.first?.hasPrefix("CONNECT ") == false {
            requestBodySummary = nil
            for line in summary { emit("> ", line, .body) }
        }
    }

    /// `-v`: the reply body (what arrived of it), once the transfer has ended.
    func finishLog() {
        guard log != nil, replyBytes > 0 else { return }
        for line in VerboseBody.reply(replyPreview, total: replyBytes, contentType: head?.header("Content-Type") ?? partialHead?.header("Content-Type"), limit: bodyLimit) {
            emit("< ", line, .body)
        }
    }

    /// The one way a line of this transfer reaches the `-v` log: through `Redaction.redactLogLine`.
    private func emit(_ prefix: String, _ line: String, _ kind: Redaction.LogLine) {
        log?(prefix + Redaction.redactLogLine(line, kind, secrets: secrets))
    }

    /// Splits on LF at the byte level, dropping a CR before it. (In Swift, "\r\n" is one
    /// Character, so splitting a String on "\n" would not split CRLF lines at all.)
    static func lines(_ bytes: UnsafeRawBufferPointer) -> [String] {
        var lines: [String] = []
        var start = 0
        for index in 0..<bytes.count where bytes[index] == 0x0A {
            let end = index > start && bytes[index - 1] == 0x0D ? index - 1 : index
            lines.append(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self))
            start = index + 1
        }
        if start < bytes.count {
            var end = bytes.count
            if bytes[end - 1] == 0x0D { end -= 1 }
            lines.append(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self))
        }
        return lines
    }
}

// MARK: - C entry points. They cannot capture; the Transfer comes in as the context pointer.

private func transfer(_ context: UnsafeMutableRawPointer?) -> Transfer? {
    context.map { Unmanaged<Transfer>.fromOpaque($0).takeUnretainedValue() }
}

let readCallback: ccurl_data_callback = { data, size, count, context in
    guard let transfer = transfer(context), let data else { return Int(CCURL_READFUNC_ABORT) }
    let buffer = UnsafeMutableRawBufferPointer(start: data, count: size * count)
    guard let read = transfer.reader.read(into: buffer) else { return Int(CCURL_READFUNC_ABORT) }
    return read
}

let writeCallback: ccurl_data_callback = { data, size, count, context in
    guard let transfer = transfer(context) else { return 0 }
    let total = size * count
    return transfer.receiveBody(UnsafeRawBufferPointer(start: data, count: total)) ? total : 0
}

let headerCallback: ccurl_data_callback = { data, size, count, context in
    guard let transfer = transfer(context) else { return 0 }
    let total = size * count
    return transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: total)) ? total : 0
}

let progressCallback: ccurl_progress_callback = { context, downloadTotal, downloadNow, uploadTotal, uploadNow in
    guard let transfer = transfer(context) else { return 1 }
    let progress = TransferProgress(uploaded: uploadNow, uploadTotal: uploadTotal, downloaded: downloadNow, downloadTotal: downloadTotal)
    return transfer.reportProgress(progress) ? 0 : 1
}

let seekCallback: ccurl_seek_callback = { context, offset, origin in
    guard let transfer = transfer(context), offset == 0, origin == 0 /* SEEK_SET */ else {
        return CCURL_SEEKFUNC_CANTSEEK
    }
    return transfer.reader.rewind() ? CCURL_SEEKFUNC_OK : CCURL_SEEKFUNC_CANTSEEK
}

let debugCallback: ccurl_debug_callback = { _, kind, data, size, context in
    guard let transfer = transfer(context) else { return 0 }
    transfer.debug(kind: kind, UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
