import DouctlArguments

/// A tree for the completion and man-page renderers, shaped like douctl's own: named
/// `douctl` (the scripts call `douctl __complete KIND`), global options with choices, a
/// directory and dynamic values, nested groups, file and variadic arguments, CJK text,
/// backslashes, roff-hostile lines, and a hidden command and hidden options.
enum RenderFixture {
    static let root = make()

    /// A fresh copy each call (the determinism tests render two separately built trees).
    static func make() -> CommandSpec {
        CommandSpec(
            "douctl",
            abstract: "a command-line client for Douban- and Coding-style REST APIs",
            discussion: "Data goes to stdout; everything else to stderr.",
            options: [
                OptionSpec("profile", value: ValueSpec("NAME", completion: .dynamic("profiles")), help: "use this profile (env DOUCTL_PROFILE)"),
                OptionSpec("config-dir", value: ValueSpec("DIR", completion: .directory), help: "config directory"),
                .flag("verbose", short: "v", help: "log requests and replies on stderr", repeatable: true),
                OptionSpec("timeout", value: ValueSpec("SECONDS", kind: .number, default: "30"), help: "give up after this long"),
                OptionSpec("error-format", value: ValueSpec("FORMAT", kind: .choice(["text", "json"]), default: "text"),
                           help: "print errors as text or JSON"),
                OptionSpec("pair", values: [ValueSpec("NAME"), ValueSpec("WHEN", kind: .choice(["soon", "late"]))],
                           help: "bind NAME to WHEN (two words)", repeatable: true),
                .flag("debug-dump", help: "internal: dump every byte", hidden: true),
                .flag("help", short: "h", help: "show help for the command"),
                .flag("version", help: "print the version"),
            ],
            subcommands: [
                CommandSpec("auth", abstract: "log in and manage tokens", subcommands: [
                    CommandSpec(
                        "login", abstract: "log in with OAuth2",
                        options: [
                            .flag("web", help: "browser and loopback redirect"),
                            .flag("device", help: "device grant"),
                            OptionSpec("scopes", value: ValueSpec("S,..."), help: "scopes to ask for"),
                            OptionSpec("timeout", value: ValueSpec("SECONDS", kind: .number, default: "300"),
                                       help: "wait this long for approval", key: "login-timeout"),
                        ]),
                    CommandSpec("status", abstract: "show the login state"),
                ]),
                CommandSpec("shuo", abstract: "post, read and delete 广播 (statuses)", subcommands: [
                    CommandSpec(
                        "post", abstract: "post a 广播: text, a picture, or a recommended link",
                        discussion: """
                        TEXT of - reads the text from stdin. --image sends a multipart request; Douban
                        takes JPEG, GIF or PNG up to 3 MB.
                        .This line starts with a dot and 'this one' is quoted.
                        'So does this line start with a quote.

                        A Windows path looks like C:\\Users\\douctl and stays intact.
                        For example:
                          douctl shuo post "你好，豆瓣" --image cat.jpg
                          .hidden-dot-line \\n not an escape
                        """,
                        options: [
                            OptionSpec("image", value: ValueSpec("FILE", completion: .file), help: "attach a picture"),
                            OptionSpec("rec-url", value: ValueSpec("URL"), help: "recommend a link"),
                            OptionSpec("secret-mode", value: ValueSpec("MODE"), help: "not for you", hidden: true),
                        ],
                        arguments: [ArgumentSpec("TEXT", help: "what to say; - reads stdin", arity: .optional)],
                        examples: [
                            Example("douctl shuo post \"你好，豆瓣\" --image cat.jpg", "a status with a picture"),
                            Example("fortune | douctl shuo post - | jq -r .id", "text from a pipe, print the new id"),
                        ]),
                    CommandSpec("delete", abstract: "delete statuses",
                                arguments: [ArgumentSpec("ID", help: "status ids", arity: .variadic(minimum: 1))]),
                    CommandSpec(
                        "timeline", abstract: "your home timeline",
                        options: [
                            OptionSpec("count", value: ValueSpec("N", kind: .integer(1...200)), help: "statuses per page"),
                            .flag("all", help: "fetch every page (NDJSON)"),
                        ]),
                ]),
                CommandSpec("user", abstract: "look up users", subcommands: [
                    CommandSpec("get", abstract: "a user by id or name", arguments: [ArgumentSpec("ID", help: "id or uid")]),
                    CommandSpec("post-count", abstract: "how many statuses a user posted", arguments: [ArgumentSpec("ID", help: "id or uid")]),
                ]),
                CommandSpec(
                    "upload", abstract: "upload files, one multipart request each",
                    options: [
                        OptionSpec("to", value: ValueSpec("PATH"), help: "endpoint path"),
                        OptionSpec("raw-field", short: "f", value: ValueSpec("KEY=VALUE"), help: "add a form field", repeatable: true),
                        OptionSpec("progress", value: ValueSpec("WHEN", kind: .choice(["auto", "always", "never"]), default: "auto"),
                                   help: "progress bars on stderr"),
                        OptionSpec("parallel", value: ValueSpec("N", kind: .integer(1...Int.max), default: "1"), help: "files at once"),
                    ],
                    arguments: [ArgumentSpec("FILE", help: "files to upload", arity: .variadic(minimum: 1), completion: .file)]),
                CommandSpec(
                    "api", abstract: "call any endpoint",
                    options: [
                        OptionSpec("method", short: "X", value: ValueSpec("METHOD", kind: .choice(["GET", "POST", "PUT", "DELETE"]), default: "GET"),
                                   help: "HTTP method"),
                        .flag("include", short: "i", help: "print the status line and headers [on stderr]"),
                        OptionSpec("input", value: ValueSpec("FILE", completion: .file), help: "send this file as the body"),
                        OptionSpec("attach", value: ValueSpec("KEY=FILE", completion: .keyedFile), help: "add a file part", repeatable: true),
                    ],
                    arguments: [ArgumentSpec("PATH", help: "endpoint path, e.g. /v2/user/~me")]),
                CommandSpec("profile", abstract: "manage profiles", subcommands: [
                    CommandSpec("use", abstract: "make a profile the default",
                                arguments: [ArgumentSpec("NAME", help: "profile name", completion: .dynamic("profiles"))]),
                    CommandSpec("add", abstract: "add a profile",
                                options: [OptionSpec("preset", value: ValueSpec("P", kind: .choice(["douban", "coding", "sandbox"])), help: "start from a preset")],
                                arguments: [ArgumentSpec("NAME", help: "profile name")]),
                ]),
                CommandSpec("sandbox", abstract: "serve a local fake API",
                            options: [OptionSpec("data", value: ValueSpec("DIR", completion: .directory), help: "keep state in DIR")]),
                CommandSpec("completion", abstract: "print a shell completion script",
                            arguments: [ArgumentSpec("SHELL", help: "the shell", kind: .choice(["bash", "zsh", "fish"]))]),
                CommandSpec("__complete", abstract: "print completion candidates", arguments: [ArgumentSpec("KIND", help: "what to list")], isHidden: true),
            ])
    }

    /// The man page of the fixture, with caller-written sections like douctl's.
    static func manPage(root: CommandSpec = root) -> ManPage {
        ManPage(
            root: root, date: "2025-01-15", version: "1.2.3",
            description: [
                .paragraph("douctl talks to Douban- and Coding-style REST APIs. Data goes to stdout;\nprogress and errors go to stderr."),
                .preformatted("douctl sandbox &\ndouctl --profile sandbox auth login"),
            ],
            extraSections: [
                ManPage.Section(title: "FILES", blocks: [
                    .definitions([(term: "~/.config/douctl/config.json", text: "profiles and settings")]),
                ]),
                ManPage.Section(title: "ENVIRONMENT", blocks: [
                    .definitions([(term: "DOUCTL_PROFILE", text: "the profile to use"), (term: "DOUCTL_TOKEN", text: "an access token, never stored")]),
                ]),
                ManPage.Section(title: "EXIT STATUS", blocks: [
                    .definitions([(term: "0", text: "success"), (term: "2", text: "usage error"), (term: "130", text: "interrupted")]),
                ]),
                ManPage.Section(title: "EXAMPLES", blocks: [
                    .example(command: "douctl shuo timeline --all | jq -r '.text'", explanation: "every status's text"),
                    .example(command: "douctl api /v2/user/~me -X GET", explanation: "call an endpoint \\ directly"),
                ]),
                ManPage.Section(title: "SEE ALSO", blocks: [.paragraph("jq(1), curl(1)")]),
            ])
    }
}
