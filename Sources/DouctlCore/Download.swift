#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlHTTP
import DouctlSystem

/// Where a download goes.
public enum DownloadTarget: Sendable, Equatable {
    /// `-o FILE`: exactly this path.
    case file(String)
    /// `-o -`: the body to stdout, as it arrives (no temp file, no resume).
    case standardOutput
    /// `-d DIR`: a name from the reply or the URL (`DownloadNaming`), in DIR.
    case directory(String)
}

public struct DownloadOptions: Sendable, Equatable {
    public var target: DownloadTarget
    /// `--continue`: keep a failed download's temp file, and resume one with `Range`.
    public var resume: Bool
    /// `--force`: replace an existing file.
    public var overwrite: Bool
    /// `--compressed` (as curl's): ask for every encoding libcurl decodes and write the
    /// decoded bytes. Never resumed with Range: a range of the encoded representation cannot
    /// be appended to decoded bytes, so a broken transfer starts over and keeps nothing.
    public var compressed: Bool
    /// How `.standardOutput` writes: through the command's output, which owns stdout
    /// (its buffer, `--jq`, and what a reader that went away means); nil on success.
    public var writeStandardOutput: @Sendable (UnsafeRawBufferPointer) -> SystemError? = { bytes in
        do { try FileIO.writeAll(STDOUT_FILENO, bytes) } catch { return error as? SystemError ?? SystemError("write", errno: EIO) }
        return nil
    }

    /// What the user asked for; where stdout's bytes go is no option of theirs.
    public static func == (lhs: DownloadOptions, rhs: DownloadOptions) -> Bool {
        lhs.target == rhs.target && lhs.resume == rhs.resume && lhs.overwrite == rhs.overwrite && lhs.compressed == rhs.compressed
    }

    public init(target: DownloadTarget, resume: Bool = false, overwrite: Bool = false, compressed: Bool = false) {
        self.target = target
        self.resume = resume
        self.overwrite = overwrite
        self.compressed = compressed
    }

    /// With `--compressed`, the transport's decompression bound applies
    /// (`HTTPResponse.decodedRatioLimit`, `decodedFloor`): a bomb is refused (exit 8).
    public static let decodedRatioLimit = HTTPResponse.decodedRatioLimit
    public static let decodedFloor = HTTPResponse.decodedFloor

}

/// A finished download.
public struct DownloadedFile: Sendable, Equatable {
    public var url: String
    /// The file written ("-" for stdout).
    public var path: String
    /// The whole file's size (resumed bytes included).
    public var bytes: Int64
    public var mediaType: String
    /// Lowercase hex SHA-256 of the whole file.
    public var sha256: String
    /// Bytes that were already on disk from an earlier run.
    public var resumedFrom: Int64
    /// `--continue` found the file at the destination already whole (a 416 naming its
    /// size): nothing was fetched and the file was left as it was.
    public var alreadyComplete: Bool = false
}

/// A download that broke off (the network, a timeout, Ctrl-C) and left what it received in
/// its temp file, for `--continue` to resume.
public struct KeptPartial: Sendable, Equatable {
    /// The temp file (`DIR/.NAME.HASH.douctl-part`).
    public var path: String
    public var bytes: Int64
}

/// One file download: GET the URL (a path is relative to the profile's api_base; the token
/// goes only to the API's own origin), stream the body into a temp file beside the
/// destination while hashing it, then rename it into place. Memory stays flat whatever the
/// size. A retry after a broken transfer asks for the rest (`Range`, `If-Range`) when the
/// reply named a validator. When the download breaks off for good (the network, a timeout,
/// Ctrl-C) what arrived stays in the temp file, which `--continue` resumes the same way;
/// after any other failure it is removed. The final name never holds a partial file.
public struct Download {
    public let client: APIClient
    public let source: String
    public let options: DownloadOptions

    public init(client: APIClient, source: String, options: DownloadOptions) {
        self.client = client
        self.source = source
        self.options = options
    }

    /// The absolute URL `source` names.
    public var url: String { client.profile.url(for: source) }

    /// `progress(bytesSoFar, totalOrZero)` counts resumed bytes too; `kept` hears of a temp
    /// file left for `--continue` when the download fails.
    public func run(progress: @escaping (Int64, Int64) -> Void = { _, _ in },
                    kept: (KeptPartial) -> Void = { _ in }) throws(DouctlError) -> DownloadedFile {
        let url = self.url
        guard !Self.hasOtherScheme(source), url.hasPrefix("http://") || url.hasPrefix("https://") else {
            throw .usage("cannot download '\(source)': only http:// and https:// URLs, or a path under the API")
        }
        if !client.sendsRequests {
            // The request is only printed: nothing touches the disk. It is the one a download
            // sends (Accept: */*, no JSON asked for), with curl's -o naming the file.
            var request = APIRequest(path: url, headers: [HTTPHeader("Accept", "*/*")], sendsToken: client.profile.isOwnOrigin(url))
            request.acceptsCompression = options.compressed
            request.savedAs = Self.dryRunName(options.target, url: url)
            _ = try client.exchange(request)
            return DownloadedFile(url: url, path: "", bytes: 0, mediaType: "", sha256: "", resumedFrom: 0)
        }
        let directory: String
        var destination: String?
        switch options.target {
        case .file(let path):
            // A device, FIFO or open descriptor (-o /dev/null, /dev/stdout, >(…)) is written
            // into as it is, never replaced (OutputPath); there is nothing there to resume.
            if case .stream(let fd, _) = try Self.outputPath(path) {
                defer { close(fd) }
                return try toStream({ bytes in
                    do { try FileIO.writeAll(fd, bytes) } catch { return error as? SystemError ?? SystemError("write", errno: EIO) }
                    return nil
                }, named: path, url: url, progress: progress)
            }
            directory = FileIO.directoryName(path)
            destination = path
            // --force cannot replace a directory: say what was meant.
            if (try? FileIO.status(path))?.isDirectory == true { throw .localInput("\(path) is a directory; use -d \(path)") }
            if !options.overwrite, !options.resume, FileIO.nameExists(path) { throw PartialFile.exists(path) }
            guard (try? FileIO.status(directory))?.isDirectory == true else {
                throw .localInput("cannot write \(path): no such directory \(directory)")
            }
        case .directory(let path):
            directory = path
            try Self.prepareDirectory(path)
            // --continue, like curl -C - -O: a file under the URL's own name is resumed.
            if options.resume, let name = DownloadNaming.name(url: url) {
                let candidate = directory == "." ? name : (directory.hasSuffix("/") ? directory + name : directory + "/" + name)
                if FileIO.nameExists(candidate) { destination = candidate }
            }
        case .standardOutput:
            return try toStream(options.writeStandardOutput, named: "-", url: url, progress: progress)
        }
        // --continue with a file already at the destination (from curl, a browser, an earlier
        // run): its bytes seed the temp file, and the finished file replaces it by rename.
        let existing = options.resume ? destination.flatMap { FileIO.nameExists($0) ? $0 : nil } : nil
        let partial = try PartialFile(path: Self.partialPath(url: url, destination: destination, directory: directory), keep: options.resume)
        do {
            if let existing, partial.size == 0 { try partial.seed(from: existing) }
            return try transfer(url: url, into: partial, directory: directory, fixedDestination: destination,
                                resumingExisting: existing != nil, progress: progress)
        } catch {
            // Broken off (or any failure with --continue): what arrived stays to be resumed.
            // Decoded bytes (--compressed) cannot be resumed: they go.
            if partial.size > 0 && !options.compressed && (options.resume || Self.leavesResumablePartial(error)) {
                partial.keep()
                kept(KeptPartial(path: partial.path, bytes: partial.size))
            } else {
                partial.remove()
            }
            throw Self.hinted(error)
        }
    }

    /// A failure after which the bytes received are still good to resume: the network or
    /// the server broke the transfer off, it timed out, or it was interrupted. Not a local
    /// failure (a full disk, a name that exists): then the temp file goes.
    static func leavesResumablePartial(_ error: DouctlError) -> Bool {
        switch error {
        case .transport(.timedOut), .transport(.connectionLost), .transport(.stopped(.interrupt, _)), .transport(.stopped(.deadline, _)),
             .transport(.malformedReply), .transport(.tls), .badReply:
            return true
        default:
            return false
        }
    }

    // MARK: - to a file

    private func transfer(url: String, into partial: PartialFile, directory: String, fixedDestination: String?,
                          resumingExisting: Bool, progress: @escaping (Int64, Int64) -> Void) throws(DouctlError) -> DownloadedFile {
        var reception: Reception
        var outcome: (response: HTTPResponse, completeAlready: Bool)
        while true {
            reception = try Reception(partial: partial, destination: fixedDestination, compressed: options.compressed)
            do throws(DouctlError) {
                outcome = try receive(url: url, reception: reception, directory: directory, progress: progress)
                break
            } catch {
                // The server's 206 does not continue the file we have the start of (another
                // version, another range): start over with the whole file, never splice.
                guard reception.resumedFrom > 0, reception.resumeRefused else { throw error }
                try partial.truncate(to: 0)
            }
        }
        let (response, completeAlready) = outcome

        let finalPath: String
        if let destination = reception.destination {
            finalPath = destination
        } else {
            finalPath = try checkedDestination(response.head, url: url, directory: directory)
        }
        if completeAlready && partial.seededFrom != nil {
            // The file at the destination is whole: leave it exactly as it is. (A partial of
            // an earlier run that is whole still replaces the file there, below.)
            let size = partial.size
            partial.remove()
            return DownloadedFile(url: url, path: finalPath, bytes: size,
                                  mediaType: Self.mediaType(reported: nil, prefix: reception.prefix, path: finalPath),
                                  sha256: Digest.hex(reception.hasher.finalize()), resumedFrom: size, alreadyComplete: true)
        }
        try partial.commit(to: finalPath, overwrite: options.overwrite || resumingExisting)
        let mediaType = completeAlready ? nil : response.head.mediaType
        return DownloadedFile(
            url: url, path: finalPath, bytes: partial.size,
            mediaType: Self.mediaType(reported: mediaType, prefix: reception.prefix, path: finalPath),
            sha256: Digest.hex(reception.hasher.finalize()),
            resumedFrom: completeAlready ? reception.resumedFrom : reception.keptFromEarlierRun)
    }

    /// One request: the rest of the partial (`Range`, `If-Range`), or the whole file.
    private func receive(url: String, reception: Reception, directory: String,
                         progress: @escaping (Int64, Int64) -> Void) throws(DouctlError) -> (response: HTTPResponse, completeAlready: Bool) {
        var request = APIRequest(path: url, headers: [HTTPHeader("Accept", "*/*")], sendsToken: client.profile.isOwnOrigin(url))
        // A .gz file stays a .gz file: no Accept-Encoding, the bytes as served, unless
        // --compressed asks for the decoded bytes (then never a Range: see DownloadOptions).
        request.acceptsCompression = options.compressed
        if reception.resumedFrom > 0 {
            request.headers.append(HTTPHeader("Range", "bytes=\(reception.resumedFrom)-"))
            // The rest only if the file is still the one we have the start of; else all of it.
            if let validator = reception.partial.savedValidator() {
                request.headers.append(HTTPHeader("If-Range", validator))
                reception.sentValidator = validator
            }
        }
        let response = try stream(request, into: reception, url: url, directory: directory, progress: progress)
        return (response, try checkReply(response, to: request, reception: reception))
    }

    /// Streams the reply's body into the partial file. A local failure (the disk, a
    /// destination that exists) stops the transfer and is what is thrown.
    private func stream(_ request: APIRequest, into reception: Reception, url: String, directory: String,
                        progress: @escaping (Int64, Int64) -> Void) throws(DouctlError) -> HTTPResponse {
        let response: HTTPResponse
        do throws(DouctlError) {
            response = try client.stream(request, progress: { transfer in
                let start = reception.startedAt
                progress(start + transfer.downloaded, transfer.downloadTotal > 0 ? start + transfer.downloadTotal : 0)
            }, resume: reception.restartOrResume, head: { head in
                reception.sawHead = true
                reception.partial.validator = Self.validator(head)
                reception.acceptsRanges = head.header("Accept-Ranges")?.lowercased() != "none"
                do throws(DouctlError) {
                    try self.restartAtZeroIfNeeded(head, reception)
                    if reception.destination == nil {
                        reception.destination = try self.checkedDestination(head, url: url, directory: directory)
                    }
                } catch {
                    reception.failure = error
                }
            }, sink: reception.append)
        } catch {
            throw reception.failure ?? error
        }
        if let failure = reception.failure { throw failure }
        return response
    }

    /// Whether the reply leaves a whole file in the partial; true when it was whole already
    /// (a 416 for exactly the bytes we have: the last run stopped before the rename). An
    /// error status, a short body, or a partial that does not fit the server's file throws.
    private func checkReply(_ response: HTTPResponse, to request: APIRequest, reception: Reception) throws(DouctlError) -> Bool {
        let head = response.head
        let resumedFrom = reception.resumedFrom
        if head.status == 416, resumedFrom > 0, let length = Self.completeLength(head) {
            guard length == resumedFrom else {
                // The partial does not fit the server's file: it is no use to anyone.
                try reception.partial.truncate(to: 0)
                if let existing = reception.partial.seededFrom {
                    throw .badReply("the server's file is \(length) bytes, \(existing) has \(resumedFrom); not resuming it (use --force without --continue to fetch it whole)", httpStatus: 416)
                }
                throw .badReply("the server's file is \(length) bytes, the partial download had \(resumedFrom); removed it, run again", httpStatus: 416)
            }
            return true
        }
        if head.status == 416, resumedFrom > 0 {
            try reception.partial.truncate(to: 0)
            let what = reception.partial.seededFrom ?? "the partial download"
            throw .badReply("the server refused bytes=\(resumedFrom)- (HTTP 416) without saying the file's length; not resuming \(what) (use --force without --continue to fetch it whole)", httpStatus: 416)
        }
        if !(200..<300).contains(head.status) {
            _ = try client.decode(response, for: request)
            throw .badReply("the server answered HTTP \(head.status) without a file", httpStatus: head.status)
        }
        if !reception.sawHead {
            try restartAtZeroIfNeeded(head, reception)  // no body at all: an empty file
        }
        let received = reception.partial.size - reception.startedAt
        let ranged = head.status == 206 ? head.header("Content-Range").flatMap(ContentRange.init) : nil
        // Content-Length counts the encoded bytes (libcurl checks those); the file holds
        // them decoded.
        if !Self.wasDecoded(head, compressed: options.compressed),
           let length = Self.contentLength(head) ?? ranged.map({ $0.last - $0.first + 1 }), received != length {
            throw .badReply("the download ended after \(received) of \(length) bytes")
        }
        return false
    }

    /// A 200 to a Range request: the server sends the whole file, so start again at zero.
    private func restartAtZeroIfNeeded(_ head: HTTPResponseHead, _ reception: Reception) throws(DouctlError) {
        try reception.start(at: startingOffset(head, reception))
    }

    /// 206 with the `Content-Range` we asked for, and the validator we sent, continues the
    /// file; 200 (the server ignored Range, or If-Range said the file changed) starts again at
    /// zero. Any other 206 is refused; when it answered a resume, the download starts over.
    private func startingOffset(_ head: HTTPResponseHead, _ reception: Reception) throws(DouctlError) -> Int64 {
        guard head.status == 206 else { return 0 }
        if let problem = Self.rangeProblem(head, resumedFrom: reception.resumedFrom, validator: reception.sentValidator) {
            if reception.resumedFrom > 0 { reception.resumeRefused = true }
            throw .badReply("the server sent a partial reply that does not continue the download (\(problem))", httpStatus: 206)
        }
        return reception.resumedFrom
    }

    /// Why a 206 does not carry bytes `resumedFrom`… to the end of the file that `validator`
    /// names (RFC 9110 §14.4, §15.3.7), or nil when it does.
    static func rangeProblem(_ head: HTTPResponseHead, resumedFrom: Int64, validator: String?) -> String? {
        guard let raw = head.header("Content-Range") else { return "no Content-Range" }
        guard let range = ContentRange(raw) else { return "Content-Range: \(raw)" }
        if range.first != resumedFrom { return "Content-Range: \(raw), asked for bytes=\(resumedFrom)-" }
        if let total = range.total, range.last != total - 1 { return "Content-Range: \(raw), not up to the end" }
        if let length = contentLength(head), length != range.last - range.first + 1 {
            return "Content-Range: \(raw) with Content-Length: \(length)"
        }
        if let validator {
            let isETag = validator.hasPrefix("\"")
            let sent = head.header(isETag ? "ETag" : "Last-Modified")
            if sent != validator { return "\(isETag ? "ETag" : "Last-Modified") \(sent ?? "missing"), asked for \(validator)" }
        }
        return nil
    }

    /// The final path for a reply in directory mode, refusing one that exists (unless --force).
    private func checkedDestination(_ head: HTTPResponseHead, url: String, directory: String) throws(DouctlError) -> String {
        let name = DownloadNaming.name(contentDisposition: head.header("Content-Disposition"), url: url)
        let path = directory == "." ? name : (directory.hasSuffix("/") ? directory + name : directory + "/" + name)
        if !options.overwrite, FileIO.nameExists(path) { throw PartialFile.exists(path) }
        return path
    }

    // MARK: - to stdout, a device or a pipe

    private static func outputPath(_ path: String) throws(DouctlError) -> OutputPath {
        do { return try OutputPath.resolve(path) } catch {
            throw .localInput("cannot write \(path) (\(error.reason))")
        }
    }

    /// The body into `fd` as it arrives: no temp file, no resume. `name` is "-" for stdout.
    private func toStream(_ write: @escaping (UnsafeRawBufferPointer) -> SystemError?, named name: String, url: String, progress: @escaping (Int64, Int64) -> Void) throws(DouctlError) -> DownloadedFile {
        var hasher = SHA256()
        var prefix: [UInt8] = []
        var bytes: Int64 = 0
        var failure: DouctlError?
        var request = APIRequest(path: url, headers: [HTTPHeader("Accept", "*/*")], sendsToken: client.profile.isOwnOrigin(url))
        request.acceptsCompression = options.compressed
        let response: HTTPResponse
        do throws(DouctlError) {
            response = try client.stream(request, progress: { transfer in
                progress(transfer.downloaded, transfer.downloadTotal)
            }, head: { _ in }, sink: { chunk in
                if let error = write(chunk) {
                    // A file -o named fails as api -o's does (exit 3); stdout as any output (exit 1).
                    failure = name == "-" ? .transport(.outputFailed("standard output (\(error))")) : .localInput("cannot write \(name) (\(error))")
                    return false
                }
                hasher.update(chunk)
                if prefix.count < 16 { prefix += chunk.prefix(16 - prefix.count) }
                bytes += Int64(chunk.count)
                return true
            })
        } catch {
            throw failure ?? Self.hinted(error)
        }
        if let failure { throw failure }
        if !(200..<300).contains(response.head.status) {
            _ = try client.decode(response, for: request)
            throw .badReply("the server answered HTTP \(response.head.status) without a file", httpStatus: response.head.status)
        }
        return DownloadedFile(url: url, path: name, bytes: bytes, mediaType: Self.mediaType(reported: response.head.mediaType, prefix: prefix, path: nil),
                              sha256: Digest.hex(hasher.finalize()), resumedFrom: 0)
    }

    // MARK: - helpers

    /// The file --dry-run's curl line names: -o FILE, or the URL's name in -d DIR.
    static func dryRunName(_ target: DownloadTarget, url: String) -> String? {
        switch target {
        case .file(let path): return path
        case .standardOutput: return nil
        case .directory(let directory):
            guard let name = DownloadNaming.name(url: url) else { return nil }
            return directory == "." ? name : (directory.hasSuffix("/") ? directory + name : directory + "/" + name)
        }
    }

    /// The body was decoded by libcurl: `--compressed` asked, and the reply names a
    /// Content-Encoding (libcurl refuses one it cannot decode, exit 8).
    static func wasDecoded(_ head: HTTPResponseHead, compressed: Bool) -> Bool {
        guard compressed, let encoding = head.header("Content-Encoding")?.trimmingCharacters(in: " \t").lowercased() else { return false }
        return !encoding.isEmpty && encoding != "identity"
    }

    /// The transport's refusal of a decompression bomb (`HTTPResponse.decompressionBomb`),
    /// with what a download can do instead.
    static func hinted(_ error: DouctlError) -> DouctlError {
        guard case .refused = error.stopReason else { return error }
        return error.annotated("without --compressed the file is saved as served")
    }

    /// True for `ftp://…`, `file://…` and the like: a URL, but not one douctl fetches
    /// (rather than a path under the API).
    public static func hasOtherScheme(_ source: String) -> Bool {
        guard let colon = source.firstRange(ofBytes: "://") else { return false }
        let scheme = source[..<colon.lowerBound].lowercased()
        let isScheme = !scheme.isEmpty && scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
        return isScheme && scheme != "http" && scheme != "https"
    }

    /// `DIR/.NAME.HASH.douctl-part`: named after the destination (or the URL), with a hash of
    /// the URL so two URLs ending in the same name never share one, and found again by
    /// `--continue` for the same URL.
    static func partialPath(url: String, destination: String?, directory: String) -> String {
        let name = destination.map(FileIO.baseName) ?? DownloadNaming.name(url: url) ?? DownloadNaming.fallback
        let tag = Digest.hex(Array(Digest.sha256(Array(url.utf8)).prefix(4)))
        let dir = directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        return "\(dir.isEmpty ? "/" : dir)/.\(DownloadNaming.shortened(name)).\(tag).douctl-part"
    }

    /// Creates `-d DIR` when missing (with its parents); an existing non-directory is an error.
    static func prepareDirectory(_ path: String) throws(DouctlError) {
        if let status = try? FileIO.status(path) {
            guard status.isDirectory else { throw .localInput("\(path) is not a directory") }
            return
        }
        do { try FileIO.makeDirectory(path, mode: 0o755) } catch {
            throw .localInput("cannot create directory \(path) (\(error))")
        }
    }

    /// The reply's type, unless it is missing or generic; then the bytes' own, then the name's.
    static func mediaType(reported: String?, prefix: [UInt8], path: String?) -> String {
        if let reported, !reported.isEmpty, reported != MediaType.fallback { return reported }
        return MediaType.sniff(prefix) ?? path.flatMap(MediaType.fromExtension) ?? reported ?? MediaType.fallback
    }

    /// What `If-Range` may carry (RFC 9110 §13.1.5): a strong ETag first; else a
    /// Last-Modified date only when it is strong (§8.8.2.2): at least one second before the
    /// reply's Date, so no second version can share it. A date any younger (a file written
    /// this second; Apache then sends a weak ETag too) is no validator: a server compares it
    /// as not matching and sends the whole file again, so the download starts over itself.
    static func validator(_ head: HTTPResponseHead) -> String? {
        if let etag = head.header("ETag")?.trimmingCharacters(in: " \t"), etag.hasPrefix("\"") { return etag }
        guard let date = head.header("Last-Modified")?.trimmingCharacters(in: " \t"), !date.isEmpty,
              let modified = HTTPDate.parse(date),
              let served = head.header("Date").flatMap({ HTTPDate.parse($0.trimmingCharacters(in: " \t")) }),
              served - modified >= 1 else { return nil }
        return date
    }

    static func contentLength(_ head: HTTPResponseHead) -> Int64? {
        head.header("Content-Length").flatMap { Int64($0.trimmingCharacters(in: " \t")) }
    }

    /// N of `Content-Range: bytes N-M/T`.
    static func contentRangeStart(_ head: HTTPResponseHead) -> Int64? {
        head.header("Content-Range").flatMap(ContentRange.init)?.first
    }

    /// T of `Content-Range: bytes */T` (a 416's way of saying how long the file is).
    static func completeLength(_ head: HTTPResponseHead) -> Int64? {
        guard let value = head.header("Content-Range"), let slash = value.lastIndex(of: "/") else { return nil }
        return Int64(value[value.index(after: slash)...].trimmingCharacters(in: " \t"))
    }
}

/// One download's bytes on their way into its partial file: the running hash, the first
/// bytes (which name the media type), where this attempt began, and where the file goes.
/// Its methods are what `APIClient.stream` calls back.
private final class Reception {
    let partial: PartialFile
    /// Where the request asks the file to continue (`Range: bytes=N-`), 0 for all of it:
    /// the bytes of an earlier run (`--continue`), then those a broken attempt left.
    private(set) var resumedFrom: Int64
    /// Of the bytes in the partial, those an earlier run left (`"resumed_from"`).
    private(set) var keptFromEarlierRun: Int64
    /// The hash of the bytes before `startedAt`, for a retry that starts again after them.
    private var hashedExisting: SHA256
    var hasher: SHA256
    var prefix: [UInt8]
    /// Where this attempt's bytes begin: `resumedFrom`, or 0 when the server sends it all.
    private(set) var startedAt: Int64
    /// The `If-Range` validator this attempt sent, which a 206 must carry.
    var sentValidator: String?
    /// A 206 that does not continue the partial: the download starts over.
    var resumeRefused = false
    /// The reply did not say `Accept-Ranges: none`.
    var acceptsRanges = true
    /// `-o FILE`, or the name the reply's head chose.
    var destination: String?
    var sawHead = false
    /// What went wrong locally while bytes arrived; it ends the transfer.
    var failure: DouctlError?
    /// `--compressed`: the body arrives decoded, so it is never resumed with Range (the
    /// transport bounds its size: `HTTPResponse.decompressionBomb`).
    let compressed: Bool

    init(partial: PartialFile, destination: String?, compressed: Bool = false) throws(DouctlError) {
        self.compressed = compressed
        var hasher = SHA256()
        resumedFrom = partial.size
        keptFromEarlierRun = partial.size
        prefix = resumedFrom > 0 ? try partial.hashExisting(into: &hasher) : []
        self.partial = partial
        self.destination = destination
        hashedExisting = hasher
        self.hasher = hasher
        startedAt = resumedFrom
    }

    /// Takes the body from `offset` on; at 0 what the partial held is dropped.
    func start(at offset: Int64) throws(DouctlError) {
        startedAt = offset
        if startedAt == 0 { keptFromEarlierRun = 0 }
        if startedAt == 0 && partial.size > 0 {
            try partial.truncate(to: 0)
            hasher = SHA256()
            prefix = []
        }
    }

    /// Before a retry of a broken attempt: when its reply named a validator (a strong ETag
    /// or Last-Modified), what arrived is kept and the retry asks for the rest with
    /// `Range` and `If-Range`, its reply checked as `--continue` checks one (a 206 must
    /// carry that validator and continue exactly here, a 200 starts over); otherwise the
    /// retry begins again where this attempt began.
    func restartOrResume() -> SinkRestart {
        if failure == nil, !compressed, acceptsRanges, let validator = partial.validator, partial.size > startedAt {
            resumedFrom = partial.size
            startedAt = partial.size
            sentValidator = validator
            hashedExisting = hasher
            return .resuming([HTTPHeader("Range", "bytes=\(resumedFrom)-"), HTTPHeader("If-Range", validator)])
        }
        return restart() ? .fromStart : .refused
    }

    /// A retry after a broken attempt begins again where this attempt began.
    func restart() -> Bool {
        do throws(DouctlError) { try partial.truncate(to: startedAt) } catch { return false }
        hasher = startedAt == 0 ? SHA256() : hashedExisting
        if startedAt == 0 { prefix = [] }
        return true
    }

    func append(_ chunk: UnsafeRawBufferPointer) -> Bool {
        guard failure == nil else { return false }
        if let error = partial.append(chunk) {
            failure = error
            return false
        }
        hasher.update(chunk)
        if prefix.count < 16 { prefix += chunk.prefix(16 - prefix.count) }
        return true
    }
}

/// `Content-Range: bytes FIRST-LAST/TOTAL` (TOTAL may be `*`), checked: FIRST ≤ LAST, and
/// LAST < TOTAL when the total is known.
struct ContentRange: Equatable {
    var first: Int64
    var last: Int64
    var total: Int64?

    init?(_ value: String) {
        let text = value.trimmingCharacters(in: " \t")
        guard text.lowercased().hasPrefix("bytes ") else { return nil }
        let parts = text.dropFirst(6).trimmingCharacters(in: " ").split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let bounds = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Self.number(bounds[0]), let last = Self.number(bounds[1]), first <= last else { return nil }
        self.first = first
        self.last = last
        if parts[1] == "*" {
            total = nil
        } else {
            guard let total = Self.number(parts[1]), last < total else { return nil }
            self.total = total
        }
    }

    private static func number(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(text)
    }
}
