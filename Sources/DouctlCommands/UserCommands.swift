import DouctlArguments
import DouctlCore
import DouctlJSON

/// `douctl user me|get|search|following|followers|follow|unfollow`.
enum UserCommands {
    static let userArgument = ArgumentSpec("ID", help: "numeric id or name (Douban uid such as ahbei; Coding global_key)")

    static let command = Command(group: CommandSpec(
        "user", abstract: "look up users and who they follow"), [
        Command(CommandSpec(
            "me", abstract: "the logged-in user", discussion: OutputOptions.discussion,
            examples: [Example("douctl user me | jq -r .name", "your display name")]), options: ViewOnly.self, run: me),
        Command(CommandSpec("get", abstract: "a user by id or name", discussion: OutputOptions.discussion), options: OneUser.self, run: get),
        Command(CommandSpec(
            "search", abstract: "find users (Douban: /v2/user?q=)",
            discussion: OutputOptions.discussion,
            examples: [Example("douctl user search 阿北 --all | jq -r .uid", "every match's uid")]), options: Search.self, run: search),
        Command(CommandSpec("following", abstract: "whom a user follows", discussion: OutputOptions.discussion), options: Relations.self, run: following),
        Command(CommandSpec("followers", abstract: "who follows a user", discussion: OutputOptions.discussion), options: Relations.self, run: followers),
        Command(CommandSpec("follow", abstract: "follow a user"), options: Target.self, run: follow),
        Command(CommandSpec("unfollow", abstract: "stop following a user"), options: Target.self, run: unfollow),
    ])

    // MARK: - options

    /// `user me`: only the output view.
    struct ViewOnly: CommandOptions, ShowsView {
        var view = ViewOptions()
        static let bindings: [OptionBinding<Self>] = [.group({ $0.view = $1 }, ViewOptions.self)]
    }

    /// `user get ID`.
    struct OneUser: CommandOptions, ShowsView {
        var id = ""
        var view = ViewOptions()
        static let bindings: [OptionBinding<Self>] = [.group({ $0.view = $1 }, ViewOptions.self), .argument({ $0.id = $1 }, userArgument)]
    }

    /// `user search QUERY`: a page, or every page.
    struct Search: CommandOptions, ShowsView {
        var query = ""
        var paging = PagingOptions()
        var view = ViewOptions()
        static let bindings: [OptionBinding<Self>] = [
            PagingOptions.group({ $0.paging = $1 }, countRange: 1...100),
            .group({ $0.view = $1 }, ViewOptions.self),
            .argument({ $0.query = $1 }, ArgumentSpec("QUERY", help: "words to look for")),
        ]
    }

    /// `user following|followers ID`.
    struct Relations: CommandOptions, ShowsView {
        var id = ""
        var paging = PagingOptions()
        var view = ViewOptions()
        static let bindings: [OptionBinding<Self>] = [
            PagingOptions.group({ $0.paging = $1 }),
            .group({ $0.view = $1 }, ViewOptions.self),
            .argument({ $0.id = $1 }, userArgument),
        ]
    }

    /// `user follow|unfollow ID`.
    struct Target: CommandOptions {
        var id = ""
        static let bindings: [OptionBinding<Self>] = [.argument({ $0.id = $1 }, userArgument)]
    }

    // MARK: - runs

    static func me(_ options: ViewOnly, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        context.output.document(try context.session.service().me(), view: .users)
        return .success
    }

    static func get(_ options: OneUser, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        context.output.document(try context.session.service().user(try context.expandingID(options.id)), view: .users)
        return .success
    }

    static func search(_ options: Search, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        try context.printListing(try context.session.service().searchUsers(options.query), paging: options.paging, view: .users)
        return .success
    }

    static func following(_ options: Relations, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        try context.printListing(try context.session.service().following(try context.expandingID(options.id)), paging: options.paging, view: .users)
        return .success
    }

    static func followers(_ options: Relations, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        try context.printListing(try context.session.service().followers(try context.expandingID(options.id)), paging: options.paging, view: .users)
        return .success
    }

    static func follow(_ options: Target, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        context.output.json(try context.session.service().follow(try context.expandingID(options.id)))
        return .success
    }

    static func unfollow(_ options: Target, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        context.output.json(try context.session.service().unfollow(try context.expandingID(options.id)))
        return .success
    }
}
