#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlArguments
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// `douctl api PATH`: any endpoint, any method, like `gh api`.
enum APICommand {
    static let command = Command(spec, options: APIOptions.self, run: run)

    static let spec = CommandSpec(
        "api",
        abstract: "send a request to any API endpoint and print the reply",
        discussion: """
        PATH is relative to the profile's api_base (/v2/user/~me) or a full URL.
        The method is GET, or POST when fields or --input are given (GET with --paginate);
        -X sets it.
        GET and DELETE put fields in the query string; POST, PUT and PATCH send them as a
        form body, or as multipart/form-data when --attach adds a file part.
        -f sends a string as it is. -F reads true, false, null and numbers as typed values
        (in a form they are sent as their text, null as an empty value); -F KEY=@FILE puts
        the file's contents in the field, as gh does (KEY=@- reads standard input).
        --attach KEY=FILE sends FILE itself as a file part (its name and MIME type, from
        its first bytes, go with it; KEY=- reads standard input) and makes the body
        multipart/form-data, with the other fields as text parts.
        --json sends the fields as one JSON object (Content-Type: application/json): -F
        values keep their types, a[b]=1 nests ({"a":{"b":1}}), a[]=1 builds arrays, and
        -F 'KEY:=JSON' takes any JSON value as it is. The profile key body_format (form
        or json) sets the default; the CODING OpenAPI takes JSON.
        --input sends a file (or - for stdin) as the body, streamed, with a Content-Length
        (standard input is read first, past 1 MiB into a private temporary file, as
        curl -d @- reads it; -H 'Transfer-Encoding: chunked' sends it chunked). Its Content-Type is
        what -H says; else application/json for a .json file or for standard input that
        starts with { or [, else application/octet-stream.
        A Coding-style reply {"code": 0, "data": ...} prints its data; --raw prints the
        bytes exactly as received. A successful reply that is not JSON (HTML from a
        WebDAV server's 201, text, an image) is printed as it arrives, any size, exit 0,
        as gh does; in a pipe always byte for byte. On a terminal a binary reply (an
        image, audio, an archive, application/octet-stream, bytes with a NUL or not
        UTF-8) is not shown: one line says so, exit 0, as xh's "binary data not shown"
        (-o FILE saves it; -o - prints it anyway, as curl's); text has the controls a
        terminal would obey escaped (\\x1B, \\u009B), as views show server text.
        Replies stream to stdout as they arrive, in flat memory: --raw copies the bytes
        through, and a JSON array is reformatted as it comes (a reply cut short leaves
        what was printed, then the error line); to a pipe or file it is reformatted
        and written on threads beside the receive. Past 256 KiB of output, a pipe on
        stdout is grown to 1 MiB (Linux), so its reader wakes less often. A Coding-style envelope whose
        success code comes before its data ({"code":0,...,"data":...}) is unwrapped
        as it arrives: the data streams, and a code after it still makes the reply
        an error. Any other object is held while it may be an envelope to unwrap or
        an error: one whose first member is not an envelope's (code, msg, data, ret,
        Response and their variants) streams once past 1 MiB; any other reply (an
        envelope whose data comes before its code) is held whole, up to 64 MiB, and
        a larger one is exit 8 (--raw prints any size). So is a single page of
        --paginate larger than 64 MiB. An envelope whose code says error is read
        only to its first 64 KiB, like an error status. Error
        replies, redirect bodies and replies that will be retried are read only to their
        first 64 KiB. --paginate skips items (by id) repeated from the page before. On an API error nothing goes to stdout unless asked:
        the error reply's body goes to stdout on a terminal and to stderr in a pipe
        (--error-body stdout|stderr|none chooses), then the error line with its exit
        code, so `id=$(douctl api ... | jq -r .id)` never reads an error document.
        --paginate follows a Link: <…>; rel="next" header (RFC 8288: GitHub, GitLab,
        Gitea), a next link in the body (next, next_url, paging.next, _links.next.href,
        links.next), a Next-Page URL or X-Next-Page number header, a cursor in the body
        (next_cursor and the like, sent back as cursor, or as the profile's
        cursor_param, in the query or a POST's body), or start/count (Douban),
        page/pageSize (Coding) or last_id pages,
        and prints every item as one line of JSON (NDJSON). The items are the reply when
        it is an array, or its lines when it is NDJSON (Datasette's _nl=on), else the
        array --items KEY (or the profile's items_key) names, e.g. --items rows for
        Datasette, else the first array of data, items, results, values, list,
        entries, records or nodes (also under data), else the object's only array. The
        page size may be a field or in PATH's query (/x?count=50). Next links are followed
        on the same origin only: a link to another origin stops the walk with exit 7. A
        page that repeats an earlier one (a server that ignores the paging parameters, a
        link back) ends the walk with a warning on stderr.
        \(APIOutputOptions.discussion)
        \(APIGraphQL.discussion)
        \(APIEvents.discussion)
        A 307 or 308 on the same origin is followed with the method and body (GET and
        HEAD follow any redirect); any other redirect is exit 7, naming the Location: the
        request was not carried out. An error status decides the exit code even when the
        body is not JSON (an HTML 502 is exit 1, quoted by its <title>; a text body by its
        first three lines, to 300 characters, controls as spaces); a 407 from a proxy is
        exit 7, sent once.
        Without PATH, fields go to api_base itself: with the coding-openapi preset,
        douctl api -f Action=DescribeCodingCurrentUser POSTs {"Action": …} as JSON and
        prints the Response; Response.Error codes AuthFailure* exit 4, ResourceNotFound* 5,
        LimitExceeded and RequestLimitExceeded 6.
        """,
        examples: [
            Example("douctl api /v2/user/~me", "who am I?"),
            Example("douctl api /shuo/v2/statuses/ -f text='你好'", "post a 广播 (POST, form body)"),
            Example("douctl api /shuo/v2/statuses/ -f text=hi --attach image=pic.jpg", "post with a picture (multipart)"),
            Example("douctl api /shuo/v2/statuses/ -F text=@note.txt", "a field's value from a file"),
            Example("douctl api /shuo/v2/statuses/home_timeline --paginate | jq -r .text", "every status, one per line"),
            Example("douctl api -X DELETE /shuo/v2/statuses/1402640366", "delete a status"),
        ])

    /// `douctl api`'s options, typed. Combinations that make no sense are refused by
    /// `validate()`, at parse time: before standard input is read or anything is sent.
    struct APIOptions: CommandOptions, PresentsOutput {
        /// PATH; nil: api_base itself (with fields or --input).
        var path: String?
        /// `-X`, as given.
        var method: String?
        /// `-f KEY=VALUE`: strings.
        var rawFields: [RequestField] = []
        /// `-F KEY=VALUE`: typed values (`KEY:=JSON` too), or `KEY=@FILE`, a file's text to read.
        var typedFields: [RequestDraft.Field] = []
        /// `--attach KEY=FILE` (`KEY=@FILE` too): `value` is the file's path, `-` stdin.
        var attachments: [KeyValue] = []
        /// `-H 'Name: value'`.
        var headers: [HTTPHeader] = []
        var input: String?
        var progress: ProgressMode = .auto
        var json = false
        var paginate = false
        var slurp = false
        var parallel = ParallelPaging.defaultWidth
        var include = false
        /// `-o FILE`; `-` is stdout (see `outputFile`).
        var output: String?
        var head = false
        /// `--force`: -o FILE replaces an existing file (as download's --force).
        var force = false
        var raw = false
        /// `--items KEY`: where --paginate finds a page's items.
        var items: String?
        /// `--follow`: reconnect an event stream (`APIEvents`).
        var follow = false

        static let bindings: [OptionBinding<Self>] = [
            .value({ $0.method = $1 }, OptionSpec("method", short: "X", value: ValueSpec("METHOD", completion: .choices(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])), help: "HTTP method (default GET, or POST with fields)")),
            .values({ $0.rawFields = $1 }, OptionSpec("raw-field", short: "f", value: ValueSpec("KEY=VALUE"), help: "add a string field", repeatable: true),
                    parse: { (raw: String) throws(OptionError) in
                        let pair = try KeyValue.parse(raw, shown: "-f")
                        return RequestField.string(pair.key, pair.value)
                    }),
            .values({ $0.typedFields = $1 }, OptionSpec("field", short: "F", value: ValueSpec("KEY=VALUE", completion: .file),
                                               help: "add a typed field; KEY=@FILE reads the value from a file, KEY=@- from stdin", repeatable: true),
                    parse: RequestDraft.Field.typed),
            .values({ $0.attachments = $1 }, OptionSpec("attach", value: ValueSpec("KEY=FILE", completion: .keyedFile),
                                               help: "add a file part (the body becomes multipart); KEY=- reads stdin", repeatable: true),
                    parse: { (raw: String) throws(OptionError) in
                        let pair = try KeyValue.parse(raw, shown: "--attach")
                        return KeyValue(pair.key, pair.value.hasPrefix("@") ? String(pair.value.dropFirst()) : pair.value)
                    }),
            .values({ $0.headers = $1 }, OptionSpec("header", short: "H", value: ValueSpec("'NAME: VALUE'"), help: "add a request header (NAME a token; no CR, LF or NUL in VALUE)", repeatable: true),
                    parse: HTTPHeader.option),
            .value({ $0.input = $1 }, OptionSpec("input", value: ValueSpec("FILE", completion: .file), help: "send this file (or - for stdin) as the request body, streamed")),
            .choice({ $0.progress = $1 }, ProgressMode.option(help: "upload progress for --attach/--input on stderr: auto (on a terminal), always, never")),
            .flag({ $0.json = $1 }, .flag("json", help: "send the fields as a JSON object (typed values, a[b]=1 nesting, a[]=1 arrays, KEY:=JSON)")),
            .flag({ $0.paginate = $1 }, .flag("paginate", help: "fetch every page and print each item as a JSON line")),
            .flag({ $0.slurp = $1 }, PagingOptions.slurpPaginate),
            .value({ $0.items = $1 }, OptionSpec("items", value: ValueSpec("KEY"), help: "with --paginate: the key of each page's items when the reply is an object (dotted path, e.g. rows or data.items; profile key items_key)")),
            .integer({ $0.parallel = $1 }, PagingOptions.parallelPaginate),
            .flag({ $0.follow = $1 }, .flag("follow", help: "an event stream (text/event-stream, NDJSON): connect again when it drops or ends, after its retry:, with Last-Event-ID")),
            .flag({ $0.include = $1 }, .flag("include", short: "i", help: "print the status line and headers before the body")),
            .value({ $0.output = $1 }, APIOutputOptions.output),
            .flag({ $0.head = $1 }, APIOutputOptions.head),
            .flag({ $0.force = $1 }, APIOutputOptions.force),
            .flag({ $0.raw = $1 }, .flag("raw", help: "print the body exactly as received (no formatting, no envelope unwrapping)")),
            .argument({ $0.path = $1 }, ArgumentSpec("PATH", help: "the endpoint, e.g. /v2/user/~me or /shuo/v2/statuses/home_timeline; api_base itself when left out with fields", arity: .optional)),
        ]

        /// api shows an error reply's body by default; --raw shows it as received. --raw, -i,
        /// -I and -o FILE print bytes and heads, not documents: no --jq with them.
        var presentation: OutputPresentation {
            let unfilterable = [(raw, "--raw"), (include, "-i"), (head, "-I"), (outputFile != nil, "-o FILE")].first(where: { $0.0 })?.1
            return OutputPresentation(showsErrorBodies: true, rawErrorBodies: raw, unfilterable: unfilterable)
        }

        /// The walk of --paginate, as list commands' --all walks.
        var paging: PagingOptions { PagingOptions(all: paginate, slurp: slurp, parallel: parallel) }

        /// `-o FILE`; nil without -o or with `-o -` (stdout).
        var outputFile: String? { output == "-" ? nil : output }

        /// Fields, files or --input make a body (or, for a bodyless method, a query).
        var hasBodyInput: Bool { input != nil || !rawFields.isEmpty || !typedFields.isEmpty || !attachments.isEmpty }

        /// POST when something is sent, else GET; --paginate keeps GET (pagination only
        /// makes sense for reads, so it keeps GET even with fields).
        var impliedMethod: String { isGraphQL || (hasBodyInput && !paginate) ? "POST" : "GET" }

        /// PATH graphql (the profile's endpoint) or a path ending in /graphql, with fields:
        /// a GraphQL request (`APIGraphQL`).
        var isGraphQL: Bool { input == nil && path.map { GraphQL.isEndpoint($0) } == true }

        /// The method sent: -X (upper-cased), else HEAD with -I, else the implied one.
        func requestMethod() throws(OptionError) -> String {
            try APIOutputOptions.method(given: method, head: head, implied: impliedMethod)
        }

        static let bodylessMethods = ["GET", "HEAD", "DELETE", "OPTIONS"]

        /// The method sent, decided once by `validate()` (see `requestMethod()`).
        private(set) var sentMethod = "GET"

        /// Every refusal that the options alone decide: the forms of single values (the
        /// key-value options and -H were read as they were bound) and the combinations;
        /// the method is decided here, once.
        mutating func validate() throws(OptionError) {
            // Without PATH the request goes to api_base itself, for Action APIs (CODING's
            // OpenAPI: douctl api -f Action=DescribeCodingCurrentUser); a bare read needs a PATH.
            if path == nil && rawFields.isEmpty && typedFields.isEmpty && input == nil {
                throw OptionError("missing argument PATH")
            }
            if let path { try APICommand.checkPath(path) }
            sentMethod = try requestMethod()
            let method = sentMethod
            guard !method.isEmpty, method.allSatisfy({ $0.isLetter || $0 == "-" }) else {
                throw OptionError("invalid method '\(method)'")
            }
            if let outputFile {
                do { try OutputFile.checkName(outputFile) } catch { throw OptionError(error.message) }
            }
            if !attachments.isEmpty {
                if json { throw OptionError("--json cannot be combined with --attach (a file part needs multipart/form-data)") }
                if input != nil { throw OptionError("--attach cannot be combined with --input") }
                if Self.bodylessMethods.contains(method) {
                    throw OptionError("file parts need a method with a body (POST, PUT, PATCH), not \(method)")
                }
            }
            if isGraphQL && !attachments.isEmpty { throw OptionError("--attach cannot be combined with a GraphQL request (its body is JSON)") }
            if items != nil && !paginate { throw OptionError("--items goes with --paginate") }
            if items == "" { throw OptionError("--items needs a key, e.g. --items rows") }
            if force && outputFile == nil { throw OptionError("--force goes with -o FILE (it replaces an existing file)") }
            if follow && (paginate || head || outputFile != nil || raw) {
                throw OptionError("--follow cannot be combined with \(paginate ? "--paginate" : head ? "-I" : raw ? "--raw" : "-o FILE")")
            }
            if paginate && (head || outputFile != nil) {
                throw OptionError("\(head ? "-I" : "-o FILE") cannot be combined with --paginate (redirect stdout to a file instead)")
            }
            try paging.validate()
        }
    }

    static func run(_ options: APIOptions, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        do {
            return try send(options, context)
        } catch {
            // Everything of an api request is the user's: a URL libcurl refuses is a
            // malformed PATH (exit 2), not a network failure.
            if case .transport(.invalidRequest(let detail)) = error, detail.containsBytes("URL") {
                throw .usage("invalid PATH \(shownPath(options.path)): \(detail)")
            }
            throw error
        }
    }

    /// PATH as an error line shows it: quoted, control characters escaped.
    private static func shownPath(_ path: String?) -> String {
        "'" + ErrorReport.escapingControls(path ?? "") + "'"
    }

    /// A PATH no URL can carry as written: spaces and control characters must be
    /// percent-encoded (%20), as curl requires.
    static func checkPath(_ path: String) throws(OptionError) {
        if path.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) {
            throw OptionError("invalid PATH \(shownPath(path)): spaces and control characters must be percent-encoded (%20)")
        }
    }

    private static func send(_ options: APIOptions, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        // Every value's form was checked as it was bound (`APIOptions.validate()`); files and standard input are read here.
        let draft = try RequestDraft(options)
        // The URL rule: an absolute URL picks the profile whose api_base has its origin.
        context.session.targetURL = options.path
        var graphQL: JSONObject?
        var request: APIRequest
        if options.isGraphQL {
            (request, graphQL) = try APIGraphQL.request(draft, standardInput: StandardInput(context.process), profile: try context.session.profile())
        } else {
            request = try draft.request(standardInput: StandardInput(context.process), bodyFormat: try context.session.profile().bodyFormat)
        }
        let client = try context.session.api(allowsAnonymous: true)
        request.path = try client.expandingPlaceholders(request.path)
        if options.paginate, let graphQL {
            return try APIGraphQL.walk(request, body: graphQL, client: client, slurp: options.slurp, context: context)
        }
        if options.paginate {
            // (-o and -I do not go with --paginate: `APIOptions.validate()` refused that.)
            try context.walk(request, client: client, paging: options.paging, itemsKey: options.items ?? client.profile.itemsKey)
            return .success
        }
        // --dry-run: the transport prints the request; nothing is streamed, shown as
        // progress or written to -o's file.
        guard context.sendsRequests else {
            return try printReply(try client.exchange(request), request: request, options: options, client: client, context: context, headPrinted: false)
        }
        if let status = try APIOutput.run(request, options: options, client: client, context: context) { return status }
        if options.follow { return try APIEvents.follow(request, options: options, client: client, context: context) }

        if canStream(request, client: client, context: context) {
            guard let (held, headPrinted) = try streamReply(request, options: options, client: client, context: context) else { return .success }
            // A successful reply's head was printed (--include) as it arrived, when it arrived
            // through the stream.
            return try printReply(held, request: request, options: options, client: client, context: context, headPrinted: headPrinted)
        }
        let response = try exchangeShowingProgress(request, progress: options.progress, client: client, context: context)
        return try printReply(response, request: request, options: options, client: client, context: context, headPrinted: false)
    }

    /// Prints a reply held in memory: decoded, unwrapped from its envelope, reformatted.
    private static func printReply(
        _ response: HTTPResponse, request: APIRequest, options: APIOptions, client: APIClient, context: CommandContext, headPrinted: Bool
    ) throws(DouctlError) -> ExitStatus {
        let reply: APIReply
        do {
            reply = try client.decode(response, for: request, parsesArrays: false)
        } catch {
            // --raw prints a successful reply's bytes as received, whatever they are (as the
            // streamed path does): only an error status or envelope is an error.
            if options.raw, case .badReply = error, (200..<300).contains(response.status) {
                context.output.reply(response, payload: nil, raw: true, withHead: options.include && !headPrinted, showsBytes: options.output == "-")
                return .success
            }
            // The error body (printed with the error) goes where --error-body says; so does
            // the head --include asked for.
            if options.include { context.output.errorHead(response.head) }
            throw error
        }
        if reply.isUnparsedJSONArray && !options.raw {
            try context.output.reformattedReply(response, withHead: options.include && !headPrinted)
        } else {
            context.output.reply(response, payload: options.raw ? nil : reply.payload, raw: options.raw, withHead: options.include && !headPrinted,
                                 showsBytes: options.output == "-")
        }
        return APIGraphQL.partial(reply.graphQLProblems, output: context.output)
    }

    /// Whether the reply can stream to stdout as it arrives: not when it must be held for a
    /// recording or the cache, with files to upload (they show progress) or with a body
    /// streamed chunked from a pipe (a refreshed token cannot resend it). A rate-limited
    /// reply is waited out on the streamed path too, before anything is printed.
    private static func canStream(_ request: APIRequest, client: APIClient, context: CommandContext) -> Bool {
        client.cachePolicy == nil && client.requests.recorder == nil
            && uploadedFiles(request.body).isEmpty && request.body.isReplayable
    }

    /// Sends and streams a successful reply to stdout as it arrives: --raw copies the bytes
    /// through; a JSON array is reformatted as a stream. Any other successful reply (an
    /// object that may be an envelope, text that may not be JSON) is held, up to
    /// `HTTPResponse.maximumBodyBytes`, and returned to be printed whole; so is an error
    /// reply (its first 64 KiB). Nil when the reply was printed.
    private static func streamReply(_ request: APIRequest, options: APIOptions, client: APIClient, context: CommandContext) throws(DouctlError) -> (HTTPResponse, headPrinted: Bool)? {
        let printer = StreamingReply(output: context.output, raw: options.raw, include: options.include, showsBytes: options.output == "-")
        printer.decode = { (reply: HTTPResponse) throws(DouctlError) in _ = try client.decode(reply, for: request, parsesArrays: false) }
        printer.pipelines = true
        // Every way the transfer ends goes through `endTransfer` before anything else is
        // written or decided; a malformed reply found in the bytes received is the error,
        // as when each chunk was reformatted before the next was read.
        func transfer() throws(DouctlError) -> HTTPResponse {
            do {
                let response = try client.stream(request, restart: { printer.restart() }, head: { printer.head($0) }, sink: { printer.take($0) })
                printer.endTransfer()
                return response
            } catch {
                printer.endTransfer()
                if let problem = printer.problem { throw problem }
                throw error
            }
        }
        let response: HTTPResponse
        do {
            response = try transfer()
        } catch .transport(.outputFailed(let detail)) {
            if let problem = printer.problem { throw problem }
            // A binary body on a terminal: the transfer was stopped before a byte was shown.
            if let refused = printer.refusedBinary {
                context.output.note(refused)
                return nil
            }
            throw context.output.readerClosed ? .stopped(.readerClosed) : .transport(.outputFailed(detail))
        }
        guard (200..<300).contains(response.status) else { return (response, false) }
        if let refused = printer.refusedBinary {
            context.output.note(refused)
            return nil
        }
        return try printer.finish(response.head).map { ($0, printer.headPrinted) }
    }

    /// Sends, drawing upload progress on stderr when the body comes from files (--attach,
    /// --input) and stderr is a terminal (or --progress always), as `upload` does.
    private static func exchangeShowingProgress(_ request: APIRequest, progress mode: ProgressMode, client: APIClient, context: CommandContext) throws(DouctlError) -> HTTPResponse {
        let files = uploadedFiles(request.body)
        guard !files.isEmpty, let display = context.output.progress(mode) else {
            return try client.exchange(request)
        }
        let name = files.joined(separator: ", ")
        display.started(0, name: name)
        let started = Timestamp.now()
        var sent: Int64 = 0
        defer { display.stop() }
        let response = try client.exchange(request) { progress in
            sent = progress.uploaded
            display.update(0, sent: progress.uploaded, total: progress.uploadTotal)
        }
        display.finished(0, summary: "\(ProgressDisplay.fit(name, 24))  sent \(ProgressDisplay.bytes(sent)) in \(Timestamp.duration(Timestamp.now() - started))")
        return response
    }

    private static func uploadedFiles(_ body: APIRequest.Body) -> [String] {
        switch body {
        case .multipart(let form):
            return form.parts.compactMap { part in
                if case .file(_, let path, _, _) = part { return FileIO.baseName(path) }
                return nil
            }
        case .raw(.segments(let segments), _):
            return segments.compactMap { segment in
                if case .file(let path, _) = segment { return path.hasPrefix("/proc/self/fd/") ? "stdin" : FileIO.baseName(path) }
                return nil
            }
        default:
            return []
        }
    }
}
