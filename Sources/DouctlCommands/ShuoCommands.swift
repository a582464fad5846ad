import DouctlArguments
import DouctlCore
import DouctlJSON
import DouctlSystem

/// `douctl shuo …`: 广播 (Douban statuses; Coding tweets).
enum ShuoCommands {
    static let idArgument = ArgumentSpec("ID", help: "the status id (Coding: ID, or GLOBAL_KEY/ID for someone else's tweet)")

    static let command = Command(group: CommandSpec(
        "shuo", abstract: "post, read and delete 广播 (statuses), comments and likes"), [
        Command(postSpec, run: post),
        Command(CommandSpec(
            "get", abstract: "a status",
            discussion: OutputOptions.discussion + "\n" + DownloadCommand.saveImagesDiscussion,
            options: [
                .flag("packed", help: "include comments, likers and resharers (Douban pack=true)"),
                DownloadCommand.saveImagesOption,
                .flag("images", help: "draw the status's pictures in the terminal where it can (kitty, Ghostty, iTerm2, WezTerm); elsewhere they are named"),
            ] + OutputOptions.view,
            arguments: [idArgument],
            examples: [
                Example("douctl shuo get 1402640366 | jq -r .text", "just the text"),
                Example("douctl shuo get 1402640366 --save-images pics 2> saved.ndjson", "save its pictures in pics/"),
            ]), run: get),
        Command(CommandSpec(
            "delete", abstract: "delete your statuses; prints one JSON line per deleted id",
            discussion: "On a terminal it says \"deleted ID\" per status instead; --json or --format json keeps the JSON lines.",
            options: OutputOptions.view,
            arguments: [ArgumentSpec("ID", help: "status ids", arity: .variadic(minimum: 1))]), run: delete),
        Command(CommandSpec(
            "timeline", abstract: "your home timeline, or a user's statuses",
            discussion: "--all walks back with until_id, so statuses posted meanwhile cause neither gaps nor repeats.\n" + OutputOptions.discussion,
            options: [
                OptionSpec("user", value: ValueSpec("ID"), help: "a user's own statuses instead of your home timeline"),
                .flag("public", help: "everyone's public statuses (Coding)"),
                OptionSpec("count", value: ValueSpec("N", kind: .integer(1...200)), help: "statuses per page (at most 200)"),
                OptionSpec("since-id", value: ValueSpec("ID", kind: .integer(0...Int.max)), help: "only statuses newer than ID"),
                OptionSpec("until-id", value: ValueSpec("ID", kind: .integer(0...Int.max)), help: "only statuses up to and including ID"),
                .flag("all", help: "fetch every page and print each status as one JSON line (NDJSON; on a terminal, as the feed)"),
                PagingOptions.slurp,
            ] + OutputOptions.view,
            examples: [Example("douctl shuo timeline --all | jq -c '{id, text}'", "every status, compactly")]), run: timeline),
        Command(CommandSpec("comments", abstract: "the comments on a status", discussion: OutputOptions.discussion, options: PagingOptions.specs(countRange: 1...100) + OutputOptions.view, arguments: [idArgument]), run: comments),
        Command(CommandSpec(
            "comment", abstract: "comment on a status",
            arguments: [idArgument, ArgumentSpec("TEXT", help: "the comment; - reads it from stdin")]), run: comment),
        Command(CommandSpec(
            "uncomment", abstract: "delete a comment",
            options: [OptionSpec("status", value: ValueSpec("ID"), help: "the status the comment is on (Coding needs it)")],
            arguments: [ArgumentSpec("COMMENT_ID", help: "the comment's id")]), run: uncomment),
        Command(CommandSpec("like", abstract: "like a status", arguments: [idArgument]), run: like),
        Command(CommandSpec("unlike", abstract: "take back a like", arguments: [idArgument]), run: unlike),
        Command(CommandSpec("reshare", abstract: "reshare (转播) a status", arguments: [idArgument]), run: reshare),
    ])

    static let postSpec = CommandSpec(
        "post",
        abstract: "post a 广播: text, a picture, or a recommended link",
        discussion: """
        TEXT of - reads the text from stdin. --image sends a multipart request with the
        picture in the field image; Douban takes JPEG, GIF or PNG up to 3 MiB, checked
        before anything is sent. Douban ignores --rec-* when a picture is sent, so douctl
        then leaves them out and says so. Coding-style APIs have no recommended links:
        there --rec-* is refused (exit 2), with or without a picture.
        """,
        options: [
            OptionSpec("image", value: ValueSpec("FILE", completion: .file), help: "attach a picture"),
            OptionSpec("rec-url", value: ValueSpec("URL"), help: "recommend a link"),
            OptionSpec("rec-title", value: ValueSpec("TITLE"), help: "the link's title"),
            OptionSpec("rec-desc", value: ValueSpec("TEXT"), help: "the link's description"),
            OptionSpec("rec-image", value: ValueSpec("URL"), help: "the link's picture (a URL)"),
        ],
        arguments: [ArgumentSpec("TEXT", help: "what to say; - reads stdin", arity: .optional)],
        examples: [
            Example("douctl shuo post \"你好\" --image pic.jpg", "a status with a picture"),
            Example("fortune | douctl shuo post - | jq -r .id", "text from a pipe, print the new id"),
        ])

    // MARK: - runs

    static func post(_ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let parsed = context.parsed
        var text = parsed.argument("TEXT")
        if text == "-" { text = try StandardInput.text(context.process.standardInput) }
        let recommendation = StatusDraft.Recommendation(
            url: parsed.value("rec-url"), title: parsed.value("rec-title"),
            description: parsed.value("rec-desc"), image: parsed.value("rec-image"))
        let draft = StatusDraft(text: text, imagePath: parsed.value("image"), recommendation: recommendation.isEmpty ? nil : recommendation)
        let service = try context.service()
        if let ignored = service.ignoredParts(of: draft) { context.warn(ignored) }
        context.printJSON(try service.post(draft))
        return .success
    }

    static func get(_ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let status = try context.service().status(try id(context), packed: context.parsed.has("packed"))
        context.printDocument(status, view: .feed)
        if context.parsed.has("images"), context.wantsView {
            InlineImages.show(pictures: try context.service().pictureURLs(in: status), context)
        }
        return try DownloadCommand.savePictures(of: status, context)
    }

    /// Deletes each id, reporting each; one failure does not stop the rest.
    static func delete(_ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let service = try context.service()
        // Every id is checked before any is deleted.
        for id in context.parsed.argumentValues("ID") { try checkStatusID(id, context) }
        var statuses: [ExitStatus] = []
        for id in context.parsed.argumentValues("ID") {
            if Interrupt.requested { return .interrupted }
            do {
                let reply = try service.delete(id)
                if context.wantsView {
                    context.printLines(["deleted " + context.viewContext.style.bold(id)])
                } else {
                    context.printJSONLine(.object(JSONObject([("id", .string(id)), ("deleted", true), ("status", reply ?? .null)])))
                }
                statuses.append(.success)
            } catch {
                context.report(error, about: id)
                statuses.append(ExitStatus(error))
            }
        }
        return ExitStatus.worst(statuses)
    }

    static func timeline(_ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let parsed = context.parsed
        let query = TimelineQuery(
            user: try parsed.value("user").map { value throws(DouctlError) in try context.api().expandingPlaceholders(value) },
            count: parsed.integer("count"),
            sinceID: parsed.value("since-id"), untilID: parsed.value("until-id"), isPublic: parsed.has("public"))
        let listing = try context.service().timeline(query)
        if parsed.has("all") {
            try context.walk(listing.request, scheme: listing.scheme, paging: try PagingOptions.legacy(context.parsed), view: .feed)
        } else {
            _ = try PagingOptions.legacy(context.parsed)
            context.printDocument(try context.api().send(listing.request).requireJSON(), view: .feed)
        }
        return .success
    }

    static func comments(_ context: CommandContext) throws(DouctlError) -> ExitStatus {
        try context.printListing(try context.service().comments(try id(context)), paging: try PagingOptions.legacy(context.parsed), view: .feed)
        return .success
    }

    static func comment(_ context: CommandContext) throws(DouctlError) -> ExitStatus {
        var text = context.parsed.argument("TEXT") ?? ""
        if text == "-" { text = try StandardInput.text(context.process.standardInput) }
        guard !text.isEmpty else { throw .usage("the comment is empty") }
        context.printJSON(try context.service().comment(on: try id(context), text: text))
        return .success
    }

    static func uncomment(_ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let commentID = context.parsed.argument("COMMENT_ID") ?? ""
        let reply = try context.service().deleteComment(commentID, statusID: context.parsed.value("status"))
        context.printJSON(reply ?? .object(JSONObject([("id", .string(commentID)), ("deleted", true)])))
        return .success
    }

    static func like(_ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let statusID = try id(context)
        context.printJSON(try context.service().like(statusID) ?? .object(JSONObject([("id", .string(statusID)), ("liked", true)])))
        return .success
    }

    static func unlike(_ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let statusID = try id(context)
        context.printJSON(try context.service().unlike(statusID) ?? .object(JSONObject([("id", .string(statusID)), ("liked", false)])))
        return .success
    }

    static func reshare(_ context: CommandContext) throws(DouctlError) -> ExitStatus {
        context.printJSON(try context.service().reshare(try id(context)))
        return .success
    }

    // MARK: - helpers

    static func id(_ context: CommandContext) throws(DouctlError) -> String {
        let id = try context.idArgument()
        try checkStatusID(id, context)
        return id
    }

    /// A status id the profile's style cannot have (`shuo get abc` on Douban, whose ids are
    /// numbers) is refused here, exit 2, rather than sent to come back as a 404.
    static func checkStatusID(_ id: String, _ context: CommandContext) throws(DouctlError) {
        try context.profile().rules.checkStatusID(id)
    }
}
