#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlArguments
import DouctlCore
import DouctlHTTP
import DouctlSystem

/// `api -o FILE` and `api -I`: the reply streamed to a file, or only its head, as curl and
/// xh do. Kept apart from the printing of `api`'s usual JSON output.
enum APIOutput {
    /// Runs the request when `-o FILE` or `-I` asks for one of these outputs; nil otherwise.
    /// Neither goes with --paginate (`APIOptions.validate()` has refused that), nor is asked
    /// under --dry-run (`APICommand.send` prints the request instead).
    static func run(_ request: APIRequest, options: APICommand.APIOptions, client: APIClient, context: CommandContext) throws(DouctlError) -> ExitStatus? {
        guard options.head || options.outputFile != nil else { return nil }
        if options.head { return try head(request, output: options.outputFile, replacing: options.force, client: client, context: context) }
        guard let output = options.outputFile else { return nil }
        return try toFile(output, include: options.include, replacing: options.force, request: request, client: client, context: context)
    }

    /// `-o FILE` (not `-`): the reply's body, as received, streamed into a temp file beside
    /// FILE and renamed over it once the whole body has arrived. An error reply (or a failed
    /// or interrupted transfer) leaves FILE as it was and no temp file.
    static func toFile(_ path: String, include includeHead: Bool, replacing: Bool, request: APIRequest, client: APIClient, context: CommandContext) throws(DouctlError) -> ExitStatus {
        let file = try OutputFile(for: path, replacing: replacing)
        var failure: DouctlError?
        let response: HTTPResponse
        do throws(DouctlError) {
            response = try client.stream(request, restart: {
                failure == nil && file.truncate()
            }, head: { head in
                if includeHead, failure == nil, let error = file.write(Array(headText(head).utf8)) { failure = error }
            }, sink: { chunk in
                guard failure == nil else { return false }
                if let error = file.write(chunk) {
                    failure = error
                    return false
                }
                return true
            })
        } catch {
            throw failure ?? error
        }
        if let failure { throw failure }
        if !(200..<300).contains(response.status) {
            // The error body goes where --error-body says, never into FILE.
            if includeHead { context.output.errorHead(response.head) }
            _ = try client.decode(response, for: request)
            throw .badReply("the server answered HTTP \(response.status)", httpStatus: response.status)
        }
        try file.commit()
        return .success
    }

    /// `-I/--head`: sends HEAD and prints the status line and headers as `--include` does
    /// (into `output` with `-o FILE`); the exit code follows the status (404 → 5, 401 → 4,
    /// 5xx → 1).
    static func head(_ request: APIRequest, output: String?, replacing: Bool, client: APIClient, context: CommandContext) throws(DouctlError) -> ExitStatus {
        var request = request
        request.method = "HEAD"
        let response = try client.exchange(request)
        let text = headText(response.head)
        if let path = output {
            let file = try OutputFile(for: path, replacing: replacing)
            if let error = file.write(Array(text.utf8)) { throw error }
            try file.commit()
        } else {
            context.output.headText(text)
        }
        if !(200..<400).contains(response.status) {
            _ = try client.decode(response, for: request)
            throw .badReply("the server answered HTTP \(response.status)", httpStatus: response.status)
        }
        return .success
    }

    /// The status line and headers, CRLF-terminated, then a blank line (curl -i's form).
    /// `forPerson`: what a server wrote in them escaped (`TerminalText`), for stderr.
    static func headText(_ head: HTTPResponseHead, forPerson: Bool = false) -> String {
        let shown: (String) -> String = forPerson ? { TerminalText.escaped($0) } : { $0 }
        var text = "\(head.version) \(head.status)"
        if !head.reason.isEmpty { text += " \(shown(head.reason))" }
        text += "\r\n"
        for header in head.headers { text += "\(shown(header.name)): \(shown(header.value))\r\n" }
        return text + "\r\n"
    }
}

/// Where `-o FILE` writes, as `OutputPath` decides. A regular file (or a new name) gets a temp
/// file (`.NAME.tmp-PID-RANDOM`, created exclusively, 0600, never through a link) beside
/// `path`, renamed over it by `commit` after an fsync and removed otherwise; the finished
/// file gets 0666 less the umask, as `curl -o` gives it. A device, FIFO or open descriptor
/// (`/dev/null`, `/dev/stdout`, `>(…)`) is written into directly, as curl does: nothing is
/// renamed over it, so an error reply or Ctrl-C leaves what was already written there.
final class OutputFile {
    let path: String
    /// The temp file (`StagedFile`); nil when writing straight into a device, FIFO or descriptor.
    private let staged: StagedFile?
    /// The device, FIFO or descriptor written into directly, or -1.
    private var stream: Int32 = -1
    /// Bytes written so far, so a retry can start over only where nothing went out yet.
    private var written = 0

    /// The temp file's name; nil when writing straight into a device, FIFO or descriptor.
    var temporary: String? { staged?.path }

    /// `-o ''` names no file; refused as the options are bound (`APIOptions.validate()`), and here again.
    static func checkName(_ path: String) throws(DouctlError) {
        guard !path.isEmpty else { throw .usage("invalid value '' for -o: expected a file name or -") }
    }

    /// `replacing` (--force): an existing file is replaced; without it, refused before
    /// anything is sent, as `download -o` refuses it.
    private let replacing: Bool

    init(for path: String, replacing: Bool) throws(DouctlError) {
        try Self.checkName(path)
        self.path = path
        self.replacing = replacing
        let destination: OutputPath
        do { destination = try OutputPath.resolve(path) } catch {
            throw .localInput("cannot write \(path) (\(error.reason))")
        }
        if case .stream(let fd, _) = destination {
            stream = fd
            staged = nil
            return
        }
        let directory = FileIO.directoryName(path)
        guard (try? FileIO.status(directory))?.isDirectory == true else {
            throw .localInput("cannot write \(path): no such directory \(directory)")
        }
        if let status = try? FileIO.status(path), status.isDirectory {
            throw .localInput("cannot write \(path): it is a directory")
        }
        if !replacing, FileIO.nameExists(path) { throw Self.exists(path) }
        do { staged = try StagedFile(beside: path) } catch {
            throw .localInput("cannot write \(path) (\(error.reason))")
        }
    }

    deinit { discard() }

    /// Appends; a failure (disk full) is returned, for a C callback to stop the transfer.
    func write(_ bytes: UnsafeRawBufferPointer) -> DouctlError? {
        do throws(SystemError) {
            if let staged {
                try staged.append(bytes)
            } else {
                do { try FileIO.writeAll(stream, bytes) } catch let error as SystemError { throw error } catch {
                    throw SystemError("write", path: path, errno: EIO)
                }
            }
        } catch {
            return .localInput("cannot write \(path) (\(error))")
        }
        written += bytes.count
        return nil
    }

    func write(_ bytes: [UInt8]) -> DouctlError? {
        bytes.withUnsafeBytes { write($0) }
    }

    /// Empties the file, for a retry that starts the body over. A device or pipe cannot take
    /// back what it was given: a retry there is possible only before the first byte.
    func truncate() -> Bool {
        guard let staged else { return written == 0 }
        return (try? staged.truncate(to: 0)) != nil
    }

    /// Renames the temp file over `path` (`StagedFile.commit`), with 0666 less the umask.
    func commit() throws(DouctlError) {
        guard let staged else {
            closeStream()
            return
        }
        let mask = umask(0o077)
        umask(mask)
        do throws(StagedFile.CommitFailure) {
            try staged.commit(to: path, mode: 0o666 & ~mask, replacing: replacing)
        } catch {
            staged.discard()
            switch error {
            case .write(let failure), .rename(let failure): throw .localInput("cannot write \(path) (\(failure.reason))")
            case .exists: throw Self.exists(path)
            }
        }
    }

    /// The one rule of -o for api and download: an existing file is kept unless --force.
    static func exists(_ path: String) -> DouctlError {
        .localInput("\(path) already exists; not overwriting it (use --force to replace it)")
    }

    func discard() {
        staged?.discard()
        closeStream()
    }

    private func closeStream() {
        guard stream >= 0 else { return }
        close(stream)
        stream = -1
    }
}

/// The options of `api` that choose these outputs, and their help.
enum APIOutputOptions {
    static let output = OptionSpec("output", short: "o", value: ValueSpec("FILE", completion: .file),
                                   help: "write the reply's body, as received, to FILE (atomically; a device, FIFO or /dev/fd path is written into); - for stdout")
    static let force = OptionSpec.flag("force", help: "with -o FILE: replace FILE when it exists (without: refused, exit 3)")
    static let head = OptionSpec.flag("head", short: "I", help: "send HEAD and print only the status line and headers")

    static let discussion = """
        -o FILE writes the reply's body exactly as received (as --raw prints it; with -i
        the status line and headers first, as curl -i -o does) to a temp file beside
        FILE, renamed over it once the whole body has arrived: FILE never holds half a
        reply, a link at FILE is replaced rather than written through, and memory does
        not grow with the reply. An error reply, a broken transfer or Ctrl-C leaves FILE
        as it was (the error body goes where --error-body says). -o - is stdout, as
        without -o. An existing FILE is not replaced (exit 3, before anything is sent)
        unless --force, as in download. A path that exists and is not a regular file (/dev/null, a FIFO,
        /dev/stdout, /dev/fd/N) is written into as curl -o does, never replaced. -I (--head) sends HEAD and prints the status line and headers, as
        curl -I does; the exit code follows the status (404 → 5), and with -o FILE the
        head goes to FILE. Neither combines with --paginate; -I with -X is refused.
        """

    /// The request's method: -X (upper-cased), else HEAD with -I, else the implied one.
    static func method(given: String?, head: Bool, implied: String) throws(OptionError) -> String {
        let given = given?.uppercased()
        if head {
            if let given, given != "HEAD" { throw OptionError("-I sends HEAD; it cannot be combined with -X \(given)") }
            return "HEAD"
        }
        return given ?? implied
    }
}
