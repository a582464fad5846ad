import DouctlArguments
import DouctlCore
import DouctlJSON
import DouctlSystem

/// `douctl upload FILE...`: one streaming multipart request per file, several at once.
enum UploadCommand {
    static let command = Command(CommandSpec(
        "upload",
        abstract: "upload files, one multipart request each, streamed from disk",
        discussion: """
        Each file goes in its own multipart/form-data request with Content-Length, read
        from disk as it is sent (memory does not grow with file size). Its MIME type
        comes from its first bytes, then its extension. By default files go to the status
        endpoint as pictures (Douban: /shuo/v2/statuses/ field image; Coding:
        /api/tweet/insert_image field tweetImg), checked first as status pictures:
        on Douban that posts every file as a PUBLIC 广播. Every file is checked before
        the question and before the first is sent: one that fails the check posts
        nothing (exit 3). Progress counts each file's bytes. On a terminal, posting more
        than one file that way asks for confirmation first (--yes skips the question);
        use --to for any other endpoint.
        Results are printed as one JSON line per file, in the order given:
          {"file": "a.jpg", "ok": true, "reply": {...}}
          {"file": "b.jpg", "ok": false, "error": "...", "exit": 3}
        One failure does not stop the others; the exit code is the worst one. Progress
        is drawn on stderr when it is a terminal (or with --progress always). Ctrl-C
        stops every upload, reports which files completed, and exits 130.
        When stdout is a terminal the results read as text instead ("uploaded a.jpg";
        a failure only as its error line on stderr); --json or --format json keeps the
        JSON lines there too.
        """,
        examples: [
            Example("douctl upload --parallel 4 *.jpg | jq -r 'select(.ok) | .reply.id'", "post four pictures at a time; print the new ids"),
            Example("douctl upload big.bin --to /api/files --field file -f dir=backup", "any endpoint, any field"),
        ]), options: Options.self, run: run)

    /// `upload FILE... [--to PATH] [--field NAME] [-f KEY=VALUE]... [--parallel N] [--progress WHEN] [--yes]`.
    struct Options: CommandOptions, ShowsView {
        var files: [String] = []
        /// nil: the status picture endpoint.
        var to: String?
        var field: String?
        /// `-f KEY=VALUE`, sent as a form field with every file.
        var fields: [KeyValue] = []
        var parallel = 1
        var progress = ProgressMode.auto
        var yes = false
        var view = ViewOptions()

        static let bindings: [OptionBinding<Self>] = [
            .value({ $0.to = $1 }, OptionSpec("to", value: ValueSpec("PATH"), help: "the endpoint to upload to (default: the status picture endpoint)")),
            .value({ $0.field = $1 }, OptionSpec("field", value: ValueSpec("NAME"), help: "the multipart field of the file (default: image; Coding: tweetImg)")),
            .values({ $0.fields = $1 }, OptionSpec("raw-field", short: "f", value: ValueSpec("KEY=VALUE"), help: "add a form field to every request", repeatable: true),
                    parse: KeyValue.reader("-f")),
            .integer({ $0.parallel = $1 }, OptionSpec("parallel", value: ValueSpec("N", kind: .integer(1...64), default: "1"), help: "upload N files at once")),
            .choice({ $0.progress = $1 }, ProgressMode.option(help: "show progress on stderr: auto (on a terminal), always, never")),
            .flag({ $0.yes = $1 }, .flag("yes", short: "y", help: "post several files publicly without asking")),
            .group({ $0.view = $1 }, ViewOptions.self),
            .arguments({ $0.files = $1 }, ArgumentSpec("FILE", help: "files to upload", arity: .variadic(minimum: 1), completion: .file)),
        ]
    }

    static func run(_ options: Options, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let files = options.files
        let toStatuses = options.to == nil
        if toStatuses, try !context.session.profile().rules.hasStatuses {
            let name = try context.session.profile().name
            throw .usage("upload needs --to PATH on profile '\(name)': posting 广播 is Douban's and Coding's, and a plain OAuth2 API has no default endpoint")
        }
        let service = try context.session.service()
        // The default target posts statuses and needs a login; --to any endpoint is
        // curl-like, as `api` is: sent anonymously when there is no login.
        if toStatuses {
            try context.session.api().requireLogin()
            try checkPictures(files, service: service)
            try confirmPublicPosts(context, count: files.count, yes: options.yes)
        }
        let defaults = service.defaultUpload
        let target = UploadTarget(
            path: options.to ?? defaults.path,
            field: options.field ?? defaults.field,
            fields: options.fields.map { ($0.key, $0.value) },
            checksPicture: toStatuses)
        var factory = try context.session.clientFactory()
        factory.allowsAnonymous = !toStatuses
        let batch = UploadBatch(files: files, target: target, parallel: options.parallel, factory: factory)

        let report = BatchReport(context.output, cancellation: context.cancellation, display: context.output.progress(options.progress),
                                 lines: .standardOutput, textVerb: context.output.wantsView ? "uploaded" : nil)
        let completed = LockedValue<[String]>([])
        batch.run(progress: { index, sent, total in
            if sent == 0 { report.display?.started(index, name: files[index]) }
            report.display?.update(index, sent: sent, total: total)
        }, deliver: { result in
            switch result.outcome {
            case .uploaded(let reply):
                completed.withLock { $0.append(result.file) }
                report.succeeded(result.index, line: JSONObject([("file", .string(result.file)), ("ok", true), ("reply", reply ?? .null)]),
                                 name: result.file, bytes: result.bytes, seconds: result.seconds)
            case .failed(let error):
                report.failed(result.index, error, key: ("file", result.file), item: result.file, name: result.file)
            }
        })
        report.display?.stop()

        if context.cancellation.isRequested {
            let done = completed.value
            context.output.note("douctl: interrupted; \(done.count) of \(files.count) files uploaded\(done.isEmpty ? "" : ": " + done.joined(separator: ", "))")
            return .interrupted
        }
        return report.worst
    }

    /// Every picture is checked (type, size, readable) before the question and before the
    /// first is posted: a batch that would fail part-way posts nothing (exit 3).
    static func checkPictures(_ files: [String], service: SocialService) throws(DouctlError) {
        // One file is checked as it is sent, with its own result line: nothing to hold back.
        guard files.count > 1 else { return }
        var first: DouctlError?
        var failing = 0
        for file in files {
            do { try service.checkPicture(file) } catch {
                failing += 1
                if first == nil { first = error }
            }
        }
        guard let first else { return }
        let which = failing == 1 ? "" : "\(failing) of \(files.count) files failed the check; "
        throw first.annotated("\(which)nothing was posted: every file is checked before the first is sent")
    }

    /// The default target makes each file a public status: on a terminal, several of them
    /// need a yes first. Scripts (no terminal) and `--yes` go ahead.
    static func confirmPublicPosts(_ context: CommandContext, count: Int, yes: Bool) throws(DouctlError) {
        let stdin = context.process.standardInput
        guard count > 1, !yes, context.sendsRequests, context.output.terminal.stdinIsTerminal, context.output.terminal.stderrIsTerminal else { return }
        let profile = try context.session.profileName
        context.output.prompt("Post \(count) files as \(count) public statuses on \(profile)? [y/N] ")
        let answer = Terminal.readLine(stdin)?.trimmingCharacters(in: " \t\r\n").lowercased()
        if context.cancellation.isRequested { throw .stopped(context.cancellation.stopReason) }
        guard answer == "y" || answer == "yes" else {
            throw .usage("cancelled; nothing was posted (answer y, or pass --yes)")
        }
    }
}
