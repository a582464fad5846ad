import DouctlArguments
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// `douctl config get|set|unset|list`: one profile's settings (the active one, or --profile).
enum ConfigCommands {
    static let showSecrets = OptionSpec.flag("show-secrets", help: "print client_secret, signing_secret and a proxy password instead of masking them")
    static let keyArgument = ArgumentSpec("KEY", help: "a profile key", kind: .choice(ProfileKey.allCases.map(\.rawValue)))

    static let command = Command(group: CommandSpec(
        "config",
        abstract: "read and change the active profile's settings",
        discussion: """
        Settings live in config.json in the config directory, per profile; --profile picks
        the profile (default: the active one). Keys:
        \(ProfileKey.allCases.map { "  \($0.rawValue) — \($0.help)" }.joined(separator: "\n"))
        """), [
        Command(CommandSpec(
            "get", abstract: "print a setting's value (presets included)",
            discussion: """
            Secrets are masked as in profile show: client_secret and signing_secret show
            their first 4 characters, a proxy URL's password shows as ***. --show-secrets
            prints them as stored.
            """,
            examples: [Example("douctl config get api_base", "where requests go")]), options: Get.self, run: get),
        Command(CommandSpec(
            "set", abstract: "change a setting of the profile",
            examples: [Example("douctl config set scopes douban_basic_common,shuo_basic_r --profile work", "ask for fewer scopes")]),
            options: SetKey.self, run: set),
        Command(CommandSpec(
            "unset", abstract: "remove a setting (the preset's value applies again)"), options: Unset.self, run: unset),
        Command(CommandSpec(
            "list", abstract: "print the profile's own settings as KEY=VALUE lines"), options: List.self, run: list),
    ])

    // MARK: - options

    /// `config get KEY [--show-secrets]`.
    struct Get: CommandOptions, NamesAProfileKey {
        var showSecrets = false
        var keyName = ""
        static let bindings: [OptionBinding<Self>] = [.flag({ $0.showSecrets = $1 }, ConfigCommands.showSecrets), .argument({ $0.keyName = $1 }, keyArgument)]
    }

    /// `config set KEY VALUE`.
    struct SetKey: CommandOptions, NamesAProfileKey {
        var keyName = ""
        var value = ""
        static let bindings: [OptionBinding<Self>] = [
            .argument({ $0.keyName = $1 }, keyArgument),
            .argument({ $0.value = $1 }, ArgumentSpec("VALUE", help: "the new value; scopes are separated by commas or spaces")),
        ]

        /// A secret on the command line is refused before stdin is read.
        func validate() throws(OptionError) {
            if key?.isSecret == true { try ConfigCommands.checkSecretSource(value) }
        }
    }

    /// `config unset KEY`.
    struct Unset: CommandOptions, NamesAProfileKey {
        var keyName = ""
        static let bindings: [OptionBinding<Self>] = [.argument({ $0.keyName = $1 }, keyArgument)]
    }

    /// The verbs whose argument is a profile key: the key, or nil for a name no key has.
    protocol NamesAProfileKey {
        var keyName: String { get }
    }

    /// `config list [--show-secrets]`.
    struct List: CommandOptions {
        var showSecrets = false
        static let bindings: [OptionBinding<Self>] = [.flag({ $0.showSecrets = $1 }, ConfigCommands.showSecrets)]
    }

    // MARK: - runs

    static func get(_ options: Get, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let key = try profileKey(options.key)
        guard let value = try context.session.profile().value(key) else { return .success }
        context.output.line(Mask.shown(key, value.display, showSecrets: options.showSecrets))
        return .success
    }

    static func set(_ options: SetKey, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let key = try profileKey(options.key)
        var text = options.value
        if key.isSecret {
            text = try secretValue(text, context: context)
        }
        let value = try key.parse(text)
        let name = try context.session.profileName
        try ConfigFile.checkProfileName(name)
        try context.session.updateConfig { (config: inout ConfigFile) throws(DouctlError) in
            var settings = config.profile(named: name) ?? ProfileSettings()
            settings[key] = value
            config.setProfile(name, settings)
            _ = try config.resolve(name) // refuse a change that leaves the profile unusable
        }
        return .success
    }

    static let secretOnCommandLine = "a secret is never taken from the command line, where ps shows it to every user: give - to read it from standard input, @FILE to read it from a file, or '$VAR' to read the environment variable VAR when it is used (e.g. douctl config set client_secret - < secret.txt)"

    /// The one rule for every secret key (client_secret, signing_secret), in `config set`
    /// and `profile add`: "-" reads a line of stdin, "@FILE" a file (a trailing newline
    /// dropped), "$VAR" or "${VAR}" names the environment variable read when the secret is
    /// used. Anything else would sit in argv, readable by every user in ps: refused at parse
    /// time (`validate()`), before stdin is read.
    static func checkSecretSource(_ text: String) throws(OptionError) {
        guard text == "-" || (text.hasPrefix("@") && text.count > 1) || (text.hasPrefix("$") && text.count > 1) else {
            throw OptionError(secretOnCommandLine)
        }
    }

    /// The secret `text` stands for: "$VAR" as written (read when a request is sent), "-"
    /// a line of stdin, "@FILE" the file's text.
    static func secretValue(_ text: String, context: CommandContext) throws(DouctlError) -> String {
        if text.hasPrefix("$") && text.count > 1 { return text }
        if text.hasPrefix("@") && text.count > 1 {
            let path = String(text.dropFirst())
            let bytes: [UInt8]
            do {
                bytes = try FileIO.readFile(path)
            } catch {
                throw .localInput("cannot read the secret from \(TerminalText.escaped(path)) (\(error))")
            }
            var secret = String(decoding: bytes, as: UTF8.self)
            while secret.hasSuffix("\n") || secret.hasSuffix("\r") { secret.removeLast() }
            guard !secret.isEmpty, !secret.contains("\n") else {
                throw .localInput("\(TerminalText.escaped(path)) holds no secret on one line; put the secret alone in it")
            }
            return secret
        }
        guard text == "-" else { throw .usage(secretOnCommandLine) }
        let stdin = context.process.standardInput
        if context.output.terminal.stdinIsTerminal { context.output.note("Secret:") }
        guard let line = Terminal.readSecretLine(stdin)?.trimmingCharacters(in: "\r\n"), !line.isEmpty else {
            throw .usage("no secret on standard input")
        }
        return line
    }

    static func unset(_ options: Unset, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let key = try profileKey(options.key)
        let name = try context.session.profileName
        try context.session.updateConfig { (config: inout ConfigFile) throws(DouctlError) in
            guard var settings = config.profile(named: name) else { return }
            settings[key] = nil
            config.setProfile(name, settings)
        }
        return .success
    }

    static func list(_ options: List, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let name = try context.session.profileName
        for (key, value) in try context.session.config().profile(named: name)?.entries ?? [] {
            context.output.line("\(key.rawValue)=\(Mask.shown(key, value.display, showSecrets: options.showSecrets))")
        }
        return .success
    }

    /// The parser has checked KEY against the keys; this only turns "none" into the error.
    private static func profileKey(_ key: ProfileKey?) throws(DouctlError) -> ProfileKey {
        guard let key else { throw .usage("missing argument KEY") }
        return key
    }
}

/// Masks secrets for display: enough to recognise, not enough to use.
enum Mask {
    /// A setting as `config get`, `config list` and `profile show` print it: secrets
    /// masked, a proxy URL's password as *** (unless `--show-secrets`).
    static func shown(_ key: ProfileKey, _ text: String, showSecrets: Bool) -> String {
        if showSecrets { return text }
        if key.isSecret { return secret(text) }
        if key == .proxy { return Redaction.redactUserinfo(text) }
        return text
    }

    static func secret(_ value: String) -> String {
        guard value.count > 8 else { return String(repeating: "*", count: max(value.count, 4)) }
        return String(value.prefix(4)) + String(repeating: "*", count: 8)
    }
}

extension ConfigCommands.NamesAProfileKey {
    var key: ProfileKey? { ProfileKey(rawValue: keyName) }
}
