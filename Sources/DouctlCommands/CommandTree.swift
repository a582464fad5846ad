import DouctlArguments

/// The whole command tree. Adding a command group means adding its `command` here.
enum CommandTree {
    static let root = Command(group: CommandSpec(
        "douctl",
        abstract: "a command-line client for Douban- and Coding-style REST APIs",
        discussion: """
        Data goes to stdout (JSON, pretty on a terminal, compact in pipes); progress,
        prompts and errors go to stderr. Try everything offline with: douctl demo
        """,
        options: GlobalOptions.specs,
        examples: [
            Example("douctl api /v2/user/~me | jq -r .name", "call any endpoint"),
        ]), [
        AuthCommands.command,
        UserCommands.command,
        ShuoCommands.command,
        UploadCommand.command,
        DownloadCommand.command,
        APICommand.command,
        ConfigCommands.command,
        ProfileCommands.command,
        CacheCommands.command,
        SandboxCommand.command,
        DemoCommand.command,
        CompletionCommands.completion,
        VersionCommand.command,
        CompletionCommands.complete,
        CompletionCommands.manual,
    ])
}
