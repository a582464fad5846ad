import DouctlArguments
import DouctlCore
import DouctlJSON
import DouctlSystem

/// `douctl shuo …`: 广播 (Douban statuses; Coding tweets).
enum ShuoCommands {
    static let idArgument = ArgumentSpec("ID", help: "the status id (Coding: ID, or GLOBAL_KEY/ID for someone else's tweet)")

    static let command = Command(group: CommandSpec(
        "shuo", abstract: "post, read and delete 广播 (statuses), comments and likes"), [
        Command(postSpec, options: Post.self, run: statuses(post)),
        Command(CommandSpec(
            "get", abstract: "a status",
            discussion: OutputOptions.discussion + "\n" + DownloadCommand.saveImagesDiscussion,
            examples: [
                Example("douctl shuo get 1402640366 | jq -r .text", "just the text"),
                Example("douctl shuo get 1402640366 --save-images pics 2> saved.ndjson", "save its pictures in pics/"),
            ]), options: Get.self, run: statuses(get)),
        Command(CommandSpec(
            "delete", abstract: "delete your statuses; prints one JSON line per id",
            discussion: """
            Each id gets one JSON line, as upload's files do: {"id", "ok": true, "deleted":
            true, "status"} or, for one that failed, {"id", "ok": false, "error", "exit"}
            (its error line goes to stderr); one failure does not stop the rest, and the exit
            code is the worst. On a terminal it says "deleted ID" per status instead; --json
            or --format json keeps the JSON lines.
            """),
            options: Delete.self, run: statuses(delete)),
        Command(CommandSpec(
            "timeline", abstract: "your home timeline, or a user's statuses",
            discussion: "--all walks back with until_id, so statuses posted meanwhile cause neither gaps nor repeats.\n" + OutputOptions.discussion,
            examples: [Example("douctl shuo timeline --all | jq -c '{id, text}'", "every status, compactly")]), options: Timeline.self, run: statuses(timeline)),
        Command(CommandSpec("comments", abstract: "the comments on a status", discussion: OutputOptions.discussion), options: Comments.self, run: statuses(comments)),
        Command(CommandSpec("comment", abstract: "comment on a status", discussion: OutputOptions.discussion), options: Comment.self, run: statuses(comment)),
        Command(CommandSpec(
            "uncomment", abstract: "delete a comment",
            discussion: """
            Takes the status first, as comment does: shuo uncomment ID COMMENT_ID. Douban
            needs only the comment's id, so ID may be left out there. The older spelling
            shuo uncomment COMMENT_ID --status ID still works, with a warning.
            """,
            examples: [Example("douctl shuo uncomment 1402640366 9", "delete comment 9 on status 1402640366")]),
            options: Uncomment.self, run: statuses(uncomment)),
        Command(CommandSpec("like", abstract: "like a status", discussion: likeDiscussion), options: Target.self, run: statuses(like)),
        Command(CommandSpec("unlike", abstract: "take back a like", discussion: likeDiscussion), options: Target.self, run: statuses(unlike)),
        Command(CommandSpec("reshare", abstract: "reshare (转播) a status", discussion: OutputOptions.discussion), options: Target.self, run: statuses(reshare)),
    ])

    static let likeDiscussion = """
    On a terminal it says "liked ID" (or "unliked ID"); in a pipe, or with --json, it prints
    the reply, or {"id", "liked"} when the API answers with nothing.
    """

    static let postSpec = CommandSpec(
        "post",
        abstract: "post a 广播: text, a picture, or a recommended link",
        discussion: """
        TEXT of - reads the text from stdin. --image sends a multipart request with the
        picture in the field image; Douban takes JPEG, GIF or PNG up to 3 MiB, checked
        before anything is sent. Douban ignores --rec-* when a picture is sent, so douctl
        then leaves them out and says so. Coding-style APIs have no recommended links:
        there --rec-* is refused (exit 2), with or without a picture.
        """ + "\n" + OutputOptions.discussion,
        examples: [
            Example("douctl shuo post \"你好\" --image pic.jpg", "a status with a picture"),
            Example("fortune | douctl shuo post - | jq -r .id", "text from a pipe, print the new id"),
        ])

    // MARK: - options

    /// `shuo post [TEXT] [--image FILE] [--rec-*]`. Whether --rec-* goes with a picture is the
    /// API style's to say (Douban drops them with a warning; Coding refuses them), so it is
    /// decided at run time, not here.
    struct Post: CommandOptions, ShowsView {
        /// nil: none given; "-": read from stdin.
        var text: String?
        var images: [String] = []
        var image: String? { images.first }
        var recommendation = StatusDraft.Recommendation()
        var view = ViewOptions()

        func validate() throws(OptionError) {
            if images.count > 1 {
                throw OptionError("--image given \(images.count) times: a status carries one picture (post the others with douctl upload)")
            }
        }

        static let bindings: [OptionBinding<Self>] = [
            // Every --image given, so a second one is refused (`validate`) rather than
            // replacing the first: a status carries one picture.
            .values({ $0.images = $1 }, OptionSpec("image", value: ValueSpec("FILE", completion: .file), help: "attach a picture (one: a status carries one)")),
            .value({ $0.recommendation.url = $1 }, OptionSpec("rec-url", value: ValueSpec("URL"), help: "recommend a link")),
            .value({ $0.recommendation.title = $1 }, OptionSpec("rec-title", value: ValueSpec("TITLE"), help: "the link's title")),
            .value({ $0.recommendation.description = $1 }, OptionSpec("rec-desc", value: ValueSpec("TEXT"), help: "the link's description")),
            .value({ $0.recommendation.image = $1 }, OptionSpec("rec-image", value: ValueSpec("URL"), help: "the link's picture (a URL)")),
            .group({ $0.view = $1 }, ViewOptions.self),
            .argument({ $0.text = $1 }, ArgumentSpec("TEXT", help: "what to say; - reads stdin", arity: .optional)),
        ]
    }

    /// `shuo get ID [--packed] [--save-images DIR] [--images]`.
    struct Get: CommandOptions, ShowsView {
        var id = ""
        var packed = false
        var saveImages: String?
        var images = false
        var view = ViewOptions()

        static let bindings: [OptionBinding<Self>] = [
            .flag({ $0.packed = $1 }, .flag("packed", help: "include comments, likers and resharers (Douban pack=true)")),
            .value({ $0.saveImages = $1 }, DownloadCommand.saveImagesOption),
            .flag({ $0.images = $1 }, .flag("images", help: "draw the status's pictures in the terminal where it can (kitty, Ghostty, iTerm2, WezTerm); elsewhere they are named")),
            .group({ $0.view = $1 }, ViewOptions.self),
            .argument({ $0.id = $1 }, idArgument),
        ]

        func validate() throws(OptionError) {
            if saveImages == "" { throw OptionError("invalid value '' for --save-images: expected a directory") }
        }
    }

    /// `shuo delete ID...`.
    struct Delete: CommandOptions, ShowsView {
        var ids: [String] = []
        var view = ViewOptions()
        static let bindings: [OptionBinding<Self>] = [
            .group({ $0.view = $1 }, ViewOptions.self),
            .arguments({ $0.ids = $1 }, ArgumentSpec("ID", help: "status ids", arity: .variadic(minimum: 1))),
        ]
    }

    /// `shuo timeline`: walked with until_id, so its paging has --count, --all and --slurp
    /// but neither --start nor --parallel.
    struct Timeline: CommandOptions, ShowsView {
        var user: String?
        var isPublic = false
        var count: Int?
        var sinceID: String?
        var untilID: String?
        var all = false
        var slurp = false
        var view = ViewOptions()

        static let bindings: [OptionBinding<Self>] = [
            .value({ $0.user = $1 }, OptionSpec("user", value: ValueSpec("ID"), help: "a user's own statuses instead of your home timeline")),
            .flag({ $0.isPublic = $1 }, .flag("public", help: "everyone's public statuses (Coding)")),
            .integer({ $0.count = $1 }, OptionSpec("count", value: ValueSpec("N", kind: .integer(1...200)), help: "statuses per page (at most 200)")),
            .value({ $0.sinceID = $1 }, OptionSpec("since-id", value: ValueSpec("ID", kind: .integer(0...Int.max)), help: "only statuses newer than ID")),
            .value({ $0.untilID = $1 }, OptionSpec("until-id", value: ValueSpec("ID", kind: .integer(0...Int.max)), help: "only statuses up to and including ID")),
            .flag({ $0.all = $1 }, .flag("all", help: "fetch every page and print each status as one JSON line (NDJSON; on a terminal, as the feed)")),
            .flag({ $0.slurp = $1 }, PagingOptions.slurp),
            .group({ $0.view = $1 }, ViewOptions.self),
        ]

        /// The walk's settings: the page size is in the request already.
        var paging: PagingOptions { PagingOptions(count: count, all: all, slurp: slurp) }

        func validate() throws(OptionError) { try paging.validate() }
    }

    /// `shuo comments ID`: a page, or every page.
    struct Comments: CommandOptions, ShowsView {
        var id = ""
        var paging = PagingOptions()
        var view = ViewOptions()
        static let bindings: [OptionBinding<Self>] = [
            PagingOptions.group({ $0.paging = $1 }, countRange: 1...100),
            .group({ $0.view = $1 }, ViewOptions.self),
            .argument({ $0.id = $1 }, idArgument),
        ]
    }

    /// `shuo comment ID TEXT`.
    struct Comment: CommandOptions, ShowsView {
        var id = ""
        /// "-": read from stdin.
        var text = ""
        var view = ViewOptions()
        static let bindings: [OptionBinding<Self>] = [
            .group({ $0.view = $1 }, ViewOptions.self),
            .argument({ $0.id = $1 }, idArgument),
            .argument({ $0.text = $1 }, ArgumentSpec("TEXT", help: "the comment; - reads it from stdin")),
        ]
    }

    /// `shuo uncomment [ID] COMMENT_ID`: the status first, as `comment ID TEXT` has it.
    /// `--status ID` is the older spelling of ID, kept working with a warning.
    struct Uncomment: CommandOptions {
        var id: String?
        var commentID = ""
        var status: String?
        static let bindings: [OptionBinding<Self>] = [
            .value({ $0.status = $1 }, OptionSpec("status", value: ValueSpec("ID"), help: "deprecated: the status id, now given first (shuo uncomment ID COMMENT_ID)")),
            .argument({ $0.id = $1 }, ArgumentSpec("ID", help: "the status the comment is on (Coding needs it; Douban does not)", arity: .optional)),
            .argument({ $0.commentID = $1 }, ArgumentSpec("COMMENT_ID", help: "the comment's id")),
        ]

        func validate() throws(OptionError) {
            if id != nil, status != nil { throw OptionError("the status is given twice: use shuo uncomment ID COMMENT_ID, without --status") }
        }

        /// The status the comment is on, however it was given.
        var statusID: String? { id ?? status }
    }

    /// `shuo like|unlike|reshare ID`.
    struct Target: CommandOptions, ShowsView {
        var id = ""
        var view = ViewOptions()
        static let bindings: [OptionBinding<Self>] = [.group({ $0.view = $1 }, ViewOptions.self), .argument({ $0.id = $1 }, idArgument)]
    }

    // MARK: - runs

    static func post(_ options: Post, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        var text = options.text
        if text == "-" { text = try StandardInput(context.process).text(for: "TEXT -") }
        let recommendation = options.recommendation
        let draft = StatusDraft(text: text, imagePath: options.image, recommendation: recommendation.isEmpty ? nil : recommendation)
        let service = try context.session.service()
        if let ignored = service.ignoredParts(of: draft) { context.output.warn(ignored) }
        context.output.document(try service.post(draft), view: .feed)
        return .success
    }

    static func get(_ options: Get, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let status = try context.session.service().status(try statusID(options.id, context), packed: options.packed)
        context.output.document(status, view: .feed)
        if options.images, context.output.wantsView {
            InlineImages.show(pictures: try context.session.service().pictureURLs(in: status), context)
        }
        guard let directory = options.saveImages else { return .success }
        return try DownloadCommand.savePictures(of: status, into: directory, context)
    }

    /// Deletes each id, reporting each as `upload` and `download` do: one JSON line per id,
    /// `{"id","ok":true,"deleted":true,"status"}` or `{"id","ok":false,"error","exit"}`
    /// (with the error line on stderr); one failure does not stop the rest.
    static func delete(_ options: Delete, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let service = try context.session.service()
        // Every id is checked before any is deleted.
        for id in options.ids { try checkStatusID(id, context) }
        let report = BatchReport(context.output, cancellation: context.cancellation, display: nil, lines: .standardOutput,
                                 textVerb: context.output.wantsView ? "deleted" : nil)
        for (index, id) in options.ids.enumerated() {
            if context.cancellation.isRequested { return .interrupted }
            do {
                let reply = try service.delete(id)
                report.succeeded(index, line: JSONObject([("id", .string(id)), ("ok", true), ("deleted", true), ("status", reply ?? .null)]),
                                 name: id, bytes: 0, seconds: 0)
            } catch {
                report.failed(index, error, key: ("id", id), item: id, name: id)
            }
        }
        return report.worst
    }

    static func timeline(_ options: Timeline, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let query = TimelineQuery(
            user: try options.user.map { value throws(DouctlError) in try context.session.api().expandingPlaceholders(value) },
            count: options.count,
            sinceID: options.sinceID, untilID: options.untilID, isPublic: options.isPublic)
        let listing = try context.session.service().timeline(query)
        if options.all {
            try context.walk(listing.request, scheme: listing.scheme, paging: options.paging, view: .feed)
        } else {
            context.output.document(try context.session.api().send(listing.request).requireJSON(), view: .feed)
        }
        return .success
    }

    static func comments(_ options: Comments, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        try context.printListing(try context.session.service().comments(try statusID(options.id, context)), paging: options.paging, view: .feed)
        return .success
    }

    static func comment(_ options: Comment, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        var text = options.text
        if text == "-" { text = try StandardInput(context.process).text(for: "TEXT -") }
        guard !text.isEmpty else { throw .usage("the comment is empty") }
        context.output.document(try context.session.service().comment(on: try statusID(options.id, context), text: text), view: .feed)
        return .success
    }

    static func uncomment(_ options: Uncomment, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        if let status = options.status {
            context.output.warn("--status is deprecated; give the status first: douctl shuo uncomment \(status) \(options.commentID)")
        }
        var status: String?
        if let given = options.statusID { status = try statusID(given, context) }
        let reply = try context.session.service().deleteComment(options.commentID, statusID: status)
        context.output.json(reply ?? .object(JSONObject([("id", .string(options.commentID)), ("deleted", true)])))
        return .success
    }

    static func like(_ options: Target, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let id = try statusID(options.id, context)
        printDone(try context.session.service().like(id), fallback: .object(JSONObject([("id", .string(id)), ("liked", true)])), says: "liked", id, context)
        return .success
    }

    static func unlike(_ options: Target, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let id = try statusID(options.id, context)
        printDone(try context.session.service().unlike(id), fallback: .object(JSONObject([("id", .string(id)), ("liked", false)])), says: "unliked", id, context)
        return .success
    }

    static func reshare(_ options: Target, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        context.output.document(try context.session.service().reshare(try statusID(options.id, context)), view: .feed)
        return .success
    }

    /// What like and unlike did: on a terminal one line ("liked ID", as delete says
    /// "deleted ID"), else the reply, or `fallback` when the API answers with nothing.
    private static func printDone(_ reply: JSON?, fallback: JSON, says verb: String, _ id: String, _ context: CommandContext) {
        if context.output.wantsView {
            context.output.viewLines([verb + " " + context.output.viewContext.style.bold(id)])
        } else {
            context.output.json(reply ?? fallback)
        }
    }

    // MARK: - helpers

    /// Every shuo verb, refused first (exit 2, nothing read or sent) on a profile whose API
    /// has no 广播: a plain OAuth2 API, which `douctl api` serves.
    static func statuses<Options>(
        _ run: @escaping @Sendable (Options, CommandContext) throws(DouctlError) -> ExitStatus
    ) -> @Sendable (Options, CommandContext) throws(DouctlError) -> ExitStatus {
        { (options: Options, context: CommandContext) throws(DouctlError) -> ExitStatus in
            let profile = try context.session.profile()
            guard profile.rules.hasStatuses else { throw PlainService.notThisAPI("shuo", profile: profile.name) }
            return try run(options, context)
        }
    }

    /// The ID argument with `{me}` expanded, checked as the API style wants it.
    static func statusID(_ id: String, _ context: CommandContext) throws(DouctlError) -> String {
        let id = try context.expandingID(id)
        try checkStatusID(id, context)
        return id
    }

    /// A status id the profile's style cannot have (`shuo get abc` on Douban, whose ids are
    /// numbers) is refused here, exit 2, rather than sent to come back as a 404.
    static func checkStatusID(_ id: String, _ context: CommandContext) throws(DouctlError) {
        try context.session.profile().rules.checkStatusID(id)
    }
}
