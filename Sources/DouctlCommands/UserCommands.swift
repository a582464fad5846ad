import DouctlArguments
import DouctlCore
import DouctlJSON

/// `douctl user me|get|search|following|followers|follow|unfollow`.
enum UserCommands {
    static let userArgument = ArgumentSpec("ID", help: "numeric id or name (Douban uid such as ahbei; Coding global_key)")

    static let command = Command(group: CommandSpec(
        "user", abstract: "look up users and who they follow"), [
        Command(CommandSpec(
            "me", abstract: "the logged-in user", discussion: OutputOptions.discussion, options: OutputOptions.view,
            examples: [Example("douctl user me | jq -r .name", "your display name")]), run: me),
        Command(CommandSpec("get", abstract: "a user by id or name", discussion: OutputOptions.discussion, options: OutputOptions.view, arguments: [userArgument]), run: get),
        Command(CommandSpec(
            "search", abstract: "find users (Douban: /v2/user?q=)",
            discussion: OutputOptions.discussion,
            options: PagingOptions.specs(countRange: 1...100) + OutputOptions.view,
            arguments: [ArgumentSpec("QUERY", help: "words to look for")],
            examples: [Example("douctl user search 阿北 --all | jq -r .uid", "every match's uid")]), run: search),
        Command(CommandSpec("following", abstract: "whom a user follows", discussion: OutputOptions.discussion, options: PagingOptions.specs() + OutputOptions.view, arguments: [userArgument]), run: following),
        Command(CommandSpec("followers", abstract: "who follows a user", discussion: OutputOptions.discussion, options: PagingOptions.specs() + OutputOptions.view, arguments: [userArgument]), run: followers),
        Command(CommandSpec("follow", abstract: "follow a user", arguments: [userArgument]), run: follow),
        Command(CommandSpec("unfollow", abstract: "stop following a user", arguments: [userArgument]), run: unfollow),
    ])

    static func id(_ invocation: Invocation) throws(DouctlError) -> String { try invocation.idArgument() }

    static func me(_ invocation: Invocation) throws(DouctlError) -> ExitStatus {
        invocation.printDocument(try invocation.service().me(), view: .users)
        return .success
    }

    static func get(_ invocation: Invocation) throws(DouctlError) -> ExitStatus {
        invocation.printDocument(try invocation.service().user(try id(invocation)), view: .users)
        return .success
    }

    static func search(_ invocation: Invocation) throws(DouctlError) -> ExitStatus {
        try invocation.printListing(try invocation.service().searchUsers(invocation.parsed.argument("QUERY") ?? ""), view: .users)
        return .success
    }

    static func following(_ invocation: Invocation) throws(DouctlError) -> ExitStatus {
        try invocation.printListing(try invocation.service().following(try id(invocation)), view: .users)
        return .success
    }

    static func followers(_ invocation: Invocation) throws(DouctlError) -> ExitStatus {
        try invocation.printListing(try invocation.service().followers(try id(invocation)), view: .users)
        return .success
    }

    static func follow(_ invocation: Invocation) throws(DouctlError) -> ExitStatus {
        invocation.printJSON(try invocation.service().follow(try id(invocation)))
        return .success
    }

    static func unfollow(_ invocation: Invocation) throws(DouctlError) -> ExitStatus {
        invocation.printJSON(try invocation.service().unfollow(try id(invocation)))
        return .success
    }
}
