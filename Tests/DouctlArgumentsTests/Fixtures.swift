import DouctlArguments

/// A small tree exercising every parser feature; shaped like douctl's own.
enum Fixture {
    static let root = CommandSpec(
        "tool",
        abstract: "a test tool",
        options: [
            OptionSpec("profile", value: ValueSpec("NAME"), help: "profile"),
            .flag("verbose", short: "v", help: "verbose", repeatable: true),
            OptionSpec("timeout", value: ValueSpec("SECONDS", kind: .number, default: "30"), help: "timeout"),
            OptionSpec("error-format", value: ValueSpec("FORMAT", kind: .choice(["text", "json"]), default: "text"), help: "errors"),
            .flag("help", short: "h", help: "help"),
            .flag("version", help: "version"),
        ],
        subcommands: [
            CommandSpec("shuo", abstract: "statuses", subcommands: [
                CommandSpec(
                    "post", abstract: "post",
                    options: [
                        OptionSpec("image", value: ValueSpec("FILE", completion: .file), help: "picture"),
                        OptionSpec("rec-url", value: ValueSpec("URL"), help: "link"),
                    ],
                    arguments: [ArgumentSpec("TEXT", help: "text", arity: .optional)]),
                CommandSpec("delete", abstract: "delete", arguments: [ArgumentSpec("ID", help: "ids", arity: .variadic(minimum: 1))]),
                CommandSpec("comment", abstract: "comment", arguments: [
                    ArgumentSpec("ID", help: "id"), ArgumentSpec("TEXT", help: "text"),
                ]),
                CommandSpec(
                    "timeline", abstract: "timeline",
                    options: [
                        OptionSpec("count", value: ValueSpec("N", kind: .integer(1...200)), help: "count"),
                        .flag("all", help: "all"),
                    ]),
            ]),
            CommandSpec(
                "api", abstract: "api",
                options: [
                    OptionSpec("method", short: "X", value: ValueSpec("METHOD"), help: "method"),
                    OptionSpec("raw-field", short: "f", value: ValueSpec("KEY=VALUE"), help: "field", repeatable: true),
                    .flag("include", short: "i", help: "include"),
                    OptionSpec("progress", value: ValueSpec("WHEN", kind: .choice(["auto", "always", "never"]), default: "auto"), help: "progress"),
                ],
                arguments: [ArgumentSpec("PATH", help: "path")]),
            CommandSpec("copy", abstract: "copy", arguments: [
                ArgumentSpec("SOURCE", help: "sources", arity: .variadic(minimum: 1)),
                ArgumentSpec("TARGET", help: "target"),
            ]),
            CommandSpec("secret", abstract: "hidden", isHidden: true),
        ])

    static let parser = ArgumentParser(root: root)
}
