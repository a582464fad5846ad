import DouctlArguments

/// The whole command tree. Adding a command group means adding its `command` here, with
/// the groups of global options it takes: `callingAPI()` for the commands that call the
/// API (they alone take the `api` group), the request groups by default (auth sends
/// requests, to the token endpoint, with secrets no printed request should carry), fewer
/// for the others (`douctl version --cacert x` is a usage error).
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
        ],
        inheritedGroups: GlobalOptions.sendingRequests.map(\.rawValue)), [
        AuthCommands.command,
        UserCommands.command.callingAPI(),
        ShuoCommands.command.callingAPI(),
        UploadCommand.command.callingAPI(),
        DownloadCommand.command.callingAPI(),
        APICommand.command.callingAPI(),
        ConfigCommands.command.inheriting([.profile, .output]),
        ProfileCommands.command.inheriting([.profile, .output]),
        CacheCommands.command.inheriting([.profile, .output]),
        KeeperCommands.command.inheriting([.profile, .output]),
        SandboxCommand.command.inheriting([.profile]),
        DemoCommand.command.inheriting([.output]),
        CompletionCommands.completion.inheriting([]),
        VersionCommand.command.inheriting([]),
        CompletionCommands.complete.inheriting([.profile]),
        CompletionCommands.manual.inheriting([]),
    ])

    /// The top-level commands that call the API (the man page's prose names them from here).
    static var commandsCallingAPI: [String] {
        root.children.map(\.spec.name).filter { root.callsAPI([$0]) }
    }
}
