import DouctlArguments
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// `douctl download URL|PATH...`: files streamed to disk through a temp file, several at once.
enum DownloadCommand {
    static let command = Command(CommandSpec(
        "download",
        abstract: "download files to disk, streamed, resumable, one JSON line each",
        discussion: """
        Each URL (or PATH under the profile's api_base) is fetched with GET and streamed
        into a temp file beside the destination (.NAME.HASH.douctl-part), hashed as it
        arrives, and renamed into place when complete: the final name never holds a
        partial file, and memory does not grow with file size. The temp file is created
        anew (mode 0600; the finished file gets 0666 less the umask, as with curl -o),
        or, left by an earlier run, reused only when it is a regular file of yours
        with no other hard link: a symbolic link, hard link, directory or FIFO at that
        name is refused (exit 3) and left alone, never followed or written through. The token is sent only
        to the API's own origin (scheme, host and port of api_base); a picture on
        another host gets no Authorization header and no access_token. No login is
        needed: without one, requests go out anonymously.
        The file is named from the reply's Content-Disposition (filename*, then
        filename), else the URL's last path segment, else "download"; a name never has
        a directory part or a leading dot. -d DIR puts files in DIR (created when
        missing; default: the current directory); -o FILE names the one file; -o -
        writes the body to stdout (then no JSON line is printed). An existing file is
        never replaced: that download fails with exit 3 unless --force. A symbolic link
        there counts as existing; --force replaces the name itself (like mv), so what
        a link or another hard link points at is never written. -o naming a directory
        is refused (use -d DIR); a write that fails (-o /dev/full) exits 3, as in api.
        A transfer that breaks is retried like any GET (not with --no-retry). When the
        reply named a validator (a strong ETag, else a Last-Modified at least a second
        before its Date: RFC 9110 §13.1.5; a weak ETag never) the retry keeps the
        bytes received and asks for the rest with Range: bytes=N- and If-Range, checked
        as --continue checks it (below); without one it starts that attempt over.
        A download that still breaks off (the network, a timeout, --max-time, Ctrl-C)
        keeps what it received in its temp file, like curl and wget: its JSON line gets
        "partial" (the temp file) and "partial_bytes", and stderr says where it is and
        to run the same command with --continue. Any other failure (a full disk, an
        existing file) removes the temp file. The next run with --continue asks for the
        rest with Range: bytes=N-, and If-Range with that validator, so a file that changed meanwhile is fetched whole rather than
        spliced (a server that answers 200 sends it all again; a 416 for a partial
        that is already complete finishes it); a run without it starts afresh. A 206 is
        used only when it carries that same validator and a Content-Range from the
        partial's size to the end of a consistent total (and Content-Length to match);
        any other 206 means the partial is thrown away and the whole file fetched
        again, never spliced.
        Like curl -C - and wget -c, --continue also resumes a file already at the
        destination (-o FILE, or with -d the URL's own name), whoever wrote it: a
        regular file (a symbolic link or anything else there is refused, exit 3) is
        copied into the temp file, the rest asked for from its size (with no If-Range,
        as it carries no validator), and the finished file replaces it by rename, so
        it stays as it was until the download completes. A file the server says is
        already whole (416 with Content-Range: bytes */SIZE) is left untouched, exit 0,
        with "already_complete": true and a note on stderr; a 416 for any other size
        is an error (exit 8) that leaves the file as it was.
        Results are printed as one JSON line per source, in the order given:
          {"url": "...", "ok": true, "path": "a.jpg", "bytes": 1234, "mime": "image/jpeg", "sha256": "..."}
          {"url": "...", "ok": false, "error": "...", "exit": 5}
        bytes and sha256 cover the whole file; a resumed one also has "resumed_from"
        (the bytes already on disk). mime is the reply's Content-Type, else sniffed.
        One failure does not stop the others; the exit code is the worst one. HTTP
        errors map to the usual exit codes (404 → 5). Progress is drawn on stderr when
        it is a terminal (or with --progress always). Ctrl-C stops every download,
        leaves no final file for an unfinished one (its bytes stay for --continue), and
        exits 130; --max-time stops them the same way and exits 7, and their JSON lines
        say so ("exit": 7).
        """,
        examples: [
            Example("douctl download https://example.com/a.jpg /view/status/raw/public/p1.jpg -d pics", "two files into pics/"),
            Example("douctl download --continue -o big.iso https://example.com/big.iso", "resume a broken download"),
            Example("douctl download --parallel 4 $(cat urls) | jq -r 'select(.ok) | \"\\(.sha256)  \\(.path)\"' | sha256sum -c", "fetch a list and verify it"),
        ]), options: Options.self, run: run)

    /// `download URL... [-o FILE | -d DIR] [--parallel N] [--continue] [--force] [--progress WHEN]`.
    struct Options: CommandOptions, ShowsView {
        var sources: [String] = []
        /// `-o FILE`; "-" is stdout.
        var output: String?
        /// `-d DIR`.
        var directory: String?
        var parallel = 1
        /// `--continue`.
        var resume = false
        var force = false
        /// `--compressed`.
        var compressed = false
        var progress = ProgressMode.auto
        var view = ViewOptions()
        /// What `-o`, `-d`, `--continue`, `--force` and `--compressed` decide together,
        /// decided once by `validate()`.
        private(set) var resolved = DownloadOptions(target: .directory("."))

        static let bindings: [OptionBinding<Self>] = [
            .value({ $0.output = $1 }, OptionSpec("output", short: "o", value: ValueSpec("FILE", completion: .file), help: "write the (one) download to FILE; - for stdout")),
            .value({ $0.directory = $1 }, OptionSpec("dir", short: "d", value: ValueSpec("DIR", completion: .directory), help: "save files in DIR (default: the current directory)")),
            .integer({ $0.parallel = $1 }, OptionSpec("parallel", value: ValueSpec("N", kind: .integer(1...64), default: "1"), help: "download N files at once")),
            .flag({ $0.resume = $1 }, .flag("continue", short: "c", help: "resume a partial download (or a file already there) with Range")),
            .flag({ $0.force = $1 }, .flag("force", help: "replace files that already exist")),
            .flag({ $0.compressed = $1 }, .flag("compressed", help: "ask for a compressed reply (Accept-Encoding, as curl --compressed) and save it decoded; not with --continue")),
            .choice({ $0.progress = $1 }, ProgressMode.option(help: "show progress on stderr: auto (on a terminal), always, never")),
            .group({ $0.view = $1 }, ViewOptions.self),
            .arguments({ $0.sources = $1 }, ArgumentSpec("URL", help: "URLs, or paths under the profile's api_base", arity: .variadic(minimum: 1))),
        ]

        mutating func validate() throws(OptionError) { resolved = try download() }

        /// Where the files go and how: refuses a source that is no http(s) URL or API path,
        /// and the -o/-d/--continue combinations that make no sense.
        func download() throws(OptionError) -> DownloadOptions {
            for source in sources where source.isEmpty || Download.hasOtherScheme(source) {
                throw OptionError("cannot download '\(source)': expected an http:// or https:// URL, or a path under the API")
            }
            let target: DownloadTarget
            switch (output, directory) {
            case (.some, .some):
                throw OptionError("-o and -d cannot be used together")
            case (.some(let file), nil):
                guard sources.count == 1 else { throw OptionError("-o names one file; with several URLs use -d DIR") }
                guard !file.isEmpty else { throw OptionError("invalid value '' for -o: expected a file name or -") }
                // /dev/stdout is stdout, as `-o -` is: the body there, no result line after it.
                if file == "-" || OutputPath.namesStandardOutput(file) {
                    if resume { throw OptionError("--continue cannot resume a download to stdout") }
                    target = .standardOutput
                } else {
                    target = .file(file)
                }
            case (nil, .some(let path)):
                guard !path.isEmpty else { throw OptionError("invalid value '' for -d: expected a directory") }
                target = .directory(path)
            case (nil, nil):
                target = .directory(".")
            }
            if compressed && resume {
                throw OptionError("--continue cannot be combined with --compressed: a range of the compressed reply cannot continue decoded bytes")
            }
            return DownloadOptions(target: target, resume: resume, overwrite: force, compressed: compressed)
        }
    }

    static func run(_ options: Options, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        var download = options.resolved
        let output = context.output
        download.writeStandardOutput = { bytes in output.sink(bytes) }
        // The URL rule: URLs of one origin pick the profile whose api_base it is.
        let origins = Set(options.sources.map(ProfileChoice.origin(of:)))
        if origins.count == 1 { context.session.targetURL = options.sources.first }
        var factory = try context.session.clientFactory()
        factory.allowsAnonymous = true
        return runBatch(context, sources: options.sources, options: download, factory: factory, parallel: options.parallel,
                        progress: options.progress)
    }

    // MARK: - shuo get --save-images

    static let saveImagesOption = OptionSpec(
        "save-images", value: ValueSpec("DIR", completion: .directory),
        help: "also save the status's pictures in DIR (one JSON line each on stderr)")

    static let saveImagesDiscussion = """
        --save-images DIR saves each of the status's pictures in DIR (created when
        missing) the way douctl download -d DIR does: named from the reply or the URL,
        never replacing an existing file, the token only to the API's own origin.
        Douban: every picture attachment (its original size), a reshared status's
        too; Coding: the pictures in the tweet's content. stdout stays the status JSON alone; each picture
        gets one JSON line on stderr, {"url", "ok", "path", "bytes", "mime",
        "sha256"} or {"url", "ok": false, "error", "exit"}, and the exit code is the
        worst of them.
        """

    /// `shuo get ID --save-images DIR`, after the status was printed.
    /// (`shuo get`'s options have refused an empty DIR.)
    static func savePictures(of status: JSON, into directory: String, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        var factory = try context.session.clientFactory()
        factory.allowsAnonymous = true
        let urls = try context.session.service().pictureURLs(in: status)
        guard !urls.isEmpty else { return .success }
        return runBatch(context, sources: urls, options: DownloadOptions(target: .directory(directory)), factory: factory,
                        parallel: 4, lines: .standardError, resumeCommand: { url in
            "douctl download --continue -d \(CurlCommand.quote(directory, placeholders: [])) \(CurlCommand.quote(url, placeholders: []))"
        })
    }

    /// Where a broken download left its bytes, and how to resume it (on stderr).
    static func keptNote(_ kept: KeptPartial, result: DownloadResult, options: DownloadOptions,
                         resumeCommand: ((String) -> String)?) -> String {
        let how: String
        if let resumeCommand {
            how = "resume with: \(resumeCommand(result.url))"
        } else {
            how = options.resume ? "run the same command again to resume it" : "run the same command with --continue to resume it"
        }
        return "douctl: \(result.url): kept the \(kept.bytes) bytes received in \(kept.path); \(how)"
    }

    /// Runs the batch and prints one JSON line per source; shared with `shuo get --save-images`
    /// (whose lines go to stderr, so they replace the usual error line and progress).
    /// `resumeCommand`: how the user resumes a broken download — nil for "the same command
    /// with --continue" (`download`), else the command for one URL (`shuo get --save-images`).
    static func runBatch(_ context: CommandContext, sources: [String], options: DownloadOptions, factory: ClientFactory, parallel: Int,
                         progress: ProgressMode = .auto, lines: BatchReport.Lines = .standardOutput,
                         resumeCommand: (@Sendable (String) -> String)? = nil) -> ExitStatus {
        // Lines on stderr take the place of the error lines and the progress display.
        let display = lines == .standardError ? nil : context.output.progress(progress)
        let lines = options.target == .standardOutput ? .none : lines
        // A person at a terminal reads "downloaded PATH"; the JSON lines are for programs.
        let textVerb = lines == .standardOutput && context.output.wantsView ? "downloaded" : nil
        let report = BatchReport(context.output, cancellation: context.cancellation, display: display, lines: lines, textVerb: textVerb)

        let started = LockedValue<Set<Int>>([])
        let complete = LockedValue<[String]>([])  // notes for files --continue found whole
        let keptNotes = LockedValue<[String]>([])  // where broken downloads left their bytes
        let names = sources.map { DownloadNaming.name(url: $0) ?? $0 }
        let batch = DownloadBatch(sources: sources, options: options, parallel: parallel, factory: factory)
        batch.run(progress: { index, received, total in
            if started.withLock({ $0.insert(index).inserted }) { display?.started(index, name: names[index]) }
            display?.update(index, sent: received, total: total)
        }, deliver: { result in
            switch result.outcome {
            case .downloaded(let file):
                var line = JSONObject([("url", .string(file.url)), ("ok", true), ("path", .string(file.path)),
                                       ("bytes", .int(file.bytes)), ("mime", .string(file.mediaType)), ("sha256", .string(file.sha256))])
                if file.resumedFrom > 0 { line["resumed_from"] = .int(file.resumedFrom) }
                if file.alreadyComplete {
                    line["already_complete"] = true
                    complete.withLock { $0.append("douctl: \(file.path) is already complete (\(file.bytes) bytes); nothing to resume") }
                }
                report.succeeded(result.index, line: line, name: file.path, bytes: file.bytes, seconds: result.seconds)
            case .failed(let error):
                var more: [(String, JSON)] = []
                if let kept = result.keptPartial {
                    more = [("partial", .string(kept.path)), ("partial_bytes", .int(kept.bytes))]
                    keptNotes.withLock { $0.append(keptNote(kept, result: result, options: options, resumeCommand: resumeCommand)) }
                }
                report.failed(result.index, error, key: ("url", result.url), item: result.source, name: names[result.index], more: more)
            }
        })
        display?.stop()
        for line in complete.value + keptNotes.value { context.output.note(line) }

        if context.cancellation.isRequested {
            if context.cancellation.reason == .interrupt { context.output.note("douctl: interrupted; unfinished downloads left no final file") }
            return .interrupted
        }
        return report.worst
    }
}
