@testable import DouctlCommands
import DouctlArguments
import DouctlCore
import DouctlJSON
import DouctlSandbox
import DouctlSystem
import DouctlTestSupport
import Testing

/// `douctl config|profile|sandbox|demo|completion|__complete|__man|version` twice: argv →
/// typed options (with the refusals of `validate()`), and in-process runs → stdout, stderr,
/// exit (no sockets, no sandbox started).
@Suite struct AdminCommandTests {
    /// The repository root, for the checked-in generated files.
    static let repository: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3) // Tests/DouctlCommandsTests/AdminCommandTests.swift
        return parts.joined(separator: "/")
    }()

    // MARK: - argv → options: config

    @Test(arguments: [
        (["config", "get", "api_base"], "api_base", false),
        (["config", "get", "client_secret", "--show-secrets"], "client_secret", true),
        (["config", "get", "--show-secrets", "proxy", "--profile", "work"], "proxy", true),
    ])
    func configGetBindsKeyAndShowSecrets(argv: [String], key: String, showSecrets: Bool) throws {
        let options = try boundOptions(argv, as: ConfigCommands.Get.self)
        #expect(options.key == ProfileKey(rawValue: key))
        #expect(options.showSecrets == showSecrets)
    }

    @Test func configKeysOutsideTheListAreRefusedByTheParser() throws {
        #expect(throws: UsageError.self) { try boundOptions(["config", "get", "colour"], as: ConfigCommands.Get.self) }
        #expect(throws: UsageError.self) { try boundOptions(["config", "unset", "colour"], as: ConfigCommands.Unset.self) }
        #expect(throws: UsageError.self) { try boundOptions(["config", "set", "api_base"], as: ConfigCommands.SetKey.self) }
    }

    @Test func configSetBindsKeyAndValue() throws {
        let options = try boundOptions(["config", "set", "scopes", "a,b"], as: ConfigCommands.SetKey.self)
        #expect(options.key == .scopes && options.value == "a,b")
        #expect(try boundOptions(["config", "unset", "scopes"], as: ConfigCommands.Unset.self).key == .scopes)
        #expect(try boundOptions(["config", "list", "--show-secrets"], as: ConfigCommands.List.self).showSecrets)
        #expect(try !boundOptions(["config", "list"], as: ConfigCommands.List.self).showSecrets)
    }

    /// A secret never comes from argv: refused at parse time, before stdin is read; one
    /// rule for every secret key (issue 39): -, @FILE or $VAR.
    @Test(arguments: [
        (["config", "set", "signing_secret", "s3cret"], false),
        (["config", "set", "signing_secret", "-"], true),
        (["config", "set", "signing_secret", "$SIGNING_SECRET"], true),
        (["config", "set", "client_secret", "s3cret"], false),
        (["config", "set", "client_secret", "-"], true),
        (["config", "set", "client_secret", "@secret.txt"], true),
        (["config", "set", "client_secret", "${CLIENT_SECRET}"], true),
        (["config", "set", "client_secret", "@"], false),
        (["config", "set", "client_id", "not-a-secret"], true),
    ])
    func configSetRefusesASecretOnTheCommandLine(argv: [String], accepted: Bool) throws {
        if accepted {
            _ = try boundOptions(argv, as: ConfigCommands.SetKey.self)
        } else {
            #expect(throws: OptionError(ConfigCommands.secretOnCommandLine)) { try boundOptions(argv, as: ConfigCommands.SetKey.self) }
        }
    }

    // MARK: - argv → options: profile

    @Test func profileListTakesTheView() throws {
        #expect(try boundOptions(["profile", "list", "--json"], as: ProfileCommands.List.self).view.json)
        #expect(try boundOptions(["profile", "list", "--format", "text"], as: ProfileCommands.List.self).view.format == .text)
        let plain = try boundOptions(["profile", "list"], as: ProfileCommands.List.self)
        #expect(plain.view.format == nil && !plain.view.json)
        #expect(plain.presentation.view != nil)
    }

    @Test(arguments: [
        (["profile", "show"], nil as String?, false),
        (["profile", "show", "work"], "work", false),
        (["profile", "show", "work", "--show-secrets"], "work", true),
    ])
    func profileShowBindsNameAndShowSecrets(argv: [String], name: String?, showSecrets: Bool) throws {
        let options = try boundOptions(argv, as: ProfileCommands.Show.self)
        #expect(options.name == name)
        #expect(options.showSecrets == showSecrets)
    }

    @Test func profileAddBindsEveryKeyOption() throws {
        let options = try boundOptions([
            "profile", "add", "gh", "--preset", "douban", "--api-base", "https://api.github.com",
            "--client-id", "ID", "--scopes", "read:user,repo", "--token-auth", "none", "--signing-secret", "$S",
        ], as: ProfileCommands.Add.self)
        #expect(options.name == "gh")
        #expect(options.preset == "douban")
        #expect(options.settings == [.apiBase: "https://api.github.com", .clientID: "ID", .scopes: "read:user,repo", .tokenAuth: "none", .signingSecret: "$S"])
        let bare = try boundOptions(["profile", "add", "x"], as: ProfileCommands.Add.self)
        #expect(bare.preset == nil && bare.settings.isEmpty)
        // One option per key but preset, which has its own: none lost, none twice; then
        // --openapi's choice of server (not keys: they make api_base).
        #expect(ProfileCommands.Add.optionSpecs.map(\.long) == ["preset"] + ProfileKey.allCases.filter { $0 != .preset }.map(\.flagName) + ["server", "server-var"])
    }

    @Test func profileAddRefusesBadValuesAtParseTime() throws {
        #expect(throws: OptionError(ConfigCommands.secretOnCommandLine)) {
            try boundOptions(["profile", "add", "x", "--signing-secret", "s3cret"], as: ProfileCommands.Add.self)
        }
        #expect(throws: UsageError.self) { try boundOptions(["profile", "add", "x", "--preset", "weibo"], as: ProfileCommands.Add.self) }
        #expect(throws: UsageError.self) { try boundOptions(["profile", "add", "x", "--style", "weibo"], as: ProfileCommands.Add.self) }
        #expect(throws: UsageError.self) { try boundOptions(["profile", "add"], as: ProfileCommands.Add.self) }
    }

    @Test(arguments: [["profile", "remove", "work"], ["profile", "use", "work"]])
    func profileRemoveAndUseTakeAName(argv: [String]) throws {
        #expect(try boundOptions(argv, as: ProfileCommands.Named.self).name == "work")
        #expect(throws: UsageError.self) { try boundOptions(Array(argv.dropLast()), as: ProfileCommands.Named.self) }
    }

    // MARK: - argv → options: sandbox

    @Test func sandboxDefaultsAreTodays() throws {
        let configuration = try boundOptions(["sandbox"], as: SandboxCommand.Options.self).configuration()
        #expect(configuration.host == "127.0.0.1")
        #expect(configuration.port == 0)
        #expect(configuration.dataDirectory == nil)
        #expect(configuration.tokenTTL == 3600)
        #expect(configuration.approval == .auto)
        #expect(configuration.faults.isEmpty)
        #expect(configuration.replayDirectory == nil && configuration.signing == nil && configuration.quota == nil)
    }

    @Test func sandboxBindsEveryOption() throws {
        let options = try boundOptions([
            "sandbox", "--host", "::1", "--port", "8089", "--data", "/tmp/state", "--token-ttl", "2.5",
            "--approve", "manual", "--fault", "503:0.2,latency:200ms", "--replay", "/tmp/rec",
            "--signing", "hmac-sha1:k", "--quota", "40/min", "--seed", "10",
        ], as: SandboxCommand.Options.self)
        #expect(options.seed == 10)
        let configuration = try options.configuration()
        #expect(configuration.host == "::1")
        #expect(configuration.port == 8089)
        #expect(configuration.dataDirectory == "/tmp/state")
        #expect(configuration.tokenTTL == 2.5)
        #expect(configuration.approval == .manual)
        #expect(configuration.faults.count == 2)
        #expect(configuration.replayDirectory == "/tmp/rec")
        #expect(configuration.signing == "hmac-sha1:k" && configuration.quota == "40/min")
        // --mock is the hidden old name of --replay; --replay wins when both are given.
        #expect(try boundOptions(["sandbox", "--mock", "/m"], as: SandboxCommand.Options.self).configuration().replayDirectory == "/m")
        #expect(try boundOptions(["sandbox", "--mock", "/m", "--replay", "/r"], as: SandboxCommand.Options.self).configuration().replayDirectory == "/r")
    }

    @Test(arguments: ["503:2", "503:0.2,,latency:1ms", "weather:1"])
    func sandboxRefusesABadFaultAtParseTime(spec: String) throws {
        do {
            _ = try boundOptions(["sandbox", "--fault", spec], as: SandboxCommand.Options.self)
            Issue.record("--fault \(spec) was accepted")
        } catch let error as OptionError {
            #expect(error.message.hasPrefix("invalid --fault"), "\(error.message)")
        }
    }

    @Test func sandboxRefusesBadValuesInTheParser() throws {
        #expect(throws: UsageError.self) { try boundOptions(["sandbox", "--port", "70000"], as: SandboxCommand.Options.self) }
        #expect(throws: UsageError.self) { try boundOptions(["sandbox", "--approve", "sometimes"], as: SandboxCommand.Options.self) }
        #expect(throws: UsageError.self) { try boundOptions(["sandbox", "--token-ttl", "soon"], as: SandboxCommand.Options.self) }
    }

    // MARK: - argv → options: completion, __complete, __man, version, demo

    @Test(arguments: CompletionCommands.shells)
    func completionTakesAShell(shell: String) throws {
        #expect(try boundOptions(["completion", shell], as: CompletionCommands.Shell.self).shell == shell)
    }

    @Test func completionRefusesOtherShellsAndGlobals() throws {
        #expect(throws: UsageError.self) { try boundOptions(["completion", "powershell"], as: CompletionCommands.Shell.self) }
        #expect(throws: UsageError.self) { try boundOptions(["completion"], as: CompletionCommands.Shell.self) }
        #expect(throws: UsageError.self) { try boundOptions(["completion", "bash", "--profile", "x"], as: CompletionCommands.Shell.self) }
        #expect(try boundOptions(["__complete", "profiles"], as: CompletionCommands.Candidates.self).kind == "profiles")
        #expect(try boundOptions(["__complete", "anything"], as: CompletionCommands.Candidates.self).kind == "anything")
    }

    @Test(arguments: [["version"], ["__man"], ["demo"]])
    func commandsWithoutOptionsParse(argv: [String]) throws {
        _ = try boundOptions(argv, as: NoOptions.self)
        #expect(throws: UsageError.self) { try boundOptions(argv + ["--cacert", "x"], as: NoOptions.self) }
    }

    // MARK: - runs: config

    @Test func configSetGetUnsetRoundTrip() throws {
        let douctl = try InProcessDouctl()
        let set = try douctl.run("config", "set", "scopes", "douban_basic_common,shuo_basic_r", "--profile", "douban")
        #expect(set.status == 0 && set.stdout.isEmpty && set.stderr.isEmpty, "\(set)")
        let got = try douctl.run("config", "get", "scopes", "--profile", "douban")
        #expect(got.status == 0, "\(got)")
        #expect(got.stdoutText == "douban_basic_common,shuo_basic_r\n")
        #expect(try douctl.run("config", "list", "--profile", "douban").stdoutText == "scopes=douban_basic_common,shuo_basic_r\n")
        let unset = try douctl.run("config", "unset", "scopes", "--profile", "douban")
        #expect(unset.status == 0 && unset.stdout.isEmpty, "\(unset)")
        #expect(try douctl.run("config", "list", "--profile", "douban").stdout.isEmpty)
        #expect(try douctl.run("config", "get", "scopes", "--profile", "douban").stdoutText != got.stdoutText)
    }

    @Test func configSetReadsASigningSecretFromStdinAndMasksIt() throws {
        let douctl = try InProcessDouctl()
        let set = try douctl.run("config", "set", "signing_secret", "-", "--profile", "douban", input: "abcdefghijkl\n")
        #expect(set.status == 0, "\(set)")
        #expect(try douctl.run("config", "get", "signing_secret", "--profile", "douban").stdoutText == "abcd********\n")
        #expect(try douctl.run("config", "list", "--show-secrets", "--profile", "douban").stdoutText == "signing_secret=abcdefghijkl\n")
    }

    @Test func configSetRefusesASecretOnTheCommandLineBeforeReadingStdin() throws {
        let douctl = try InProcessDouctl()
        let result = try douctl.run("config", "set", "signing_secret", "s3cret", "--profile", "douban", input: "from-stdin\n")
        #expect(result.status == 2, "\(result)")
        #expect(result.stdout.isEmpty)
        #expect(result.errorLine == "douctl: \(ConfigCommands.secretOnCommandLine)")
        #expect(!result.stderr.contains("s3cret"))
        #expect(try douctl.run("config", "list", "--profile", "douban").stdout.isEmpty)
    }

    @Test func configSetRefusesAValueThatLeavesTheProfileUnusable() throws {
        let douctl = try InProcessDouctl()
        let result = try douctl.run("config", "set", "style", "weibo", "--profile", "p")
        #expect(result.status == 2, "\(result)")
        #expect(result.stdout.isEmpty)
    }

    // MARK: - runs: profile

    @Test func profileAddListShowRemove() throws {
        let douctl = try InProcessDouctl()
        let added = try douctl.run("profile", "add", "work", "--preset", "douban", "--client-id", "KEY", "--client-secret", "-", input: "SECRETSECRET\n")
        #expect(added.status == 0, "\(added)")
        let json = try added.json()
        #expect(json["name"]?.stringValue == "work")
        #expect(json["preset"]?.stringValue == "douban")
        #expect(json["style"]?.stringValue == "douban")
        #expect(json["client_id"]?.stringValue == "KEY")
        #expect(json["client_secret"]?.stringValue == "SECR********")
        #expect(json["configured"]?.boolValue == true)

        let rows = try douctl.run("profile", "list").lines()
        #expect(rows.first?["name"]?.stringValue == "work")
        #expect(rows.first?["configured"]?.boolValue == true)
        let names = rows.compactMap { $0["name"]?.stringValue }
        #expect(names.contains("douban"))

        let shown = try douctl.run("profile", "show", "work", "--show-secrets")
        #expect(shown.status == 0, "\(shown)")
        #expect(try shown.json()["client_secret"]?.stringValue == "SECRETSECRET")

        #expect(try douctl.run("profile", "use", "work").stderr == "Default profile is now work.\n")
        #expect(try douctl.run("profile", "show").json()["name"]?.stringValue == "work")

        let removed = try douctl.run("profile", "remove", "work")
        #expect(removed.status == 0, "\(removed)")
        #expect(removed.stderr == "Removed profile work.\n")
        let again = try douctl.run("profile", "remove", "work")
        #expect(again.status == 2)
        #expect(again.errorLine == "douctl: no profile named 'work' in \(douctl.configDirectory)/config.json")
        #expect(try douctl.run("profile", "show", "work").status == 2)
    }

    /// A profile with no preset and no style is a plain OAuth2 API: profile add, show and
    /// list said "douban", what it is not (its replies get no Douban handling).
    @Test func aPlainOAuth2ProfileShowsItsStyleAsOAuth2() throws {
        let douctl = try InProcessDouctl()
        let added = try douctl.run("profile", "add", "gh", "--api-base", "https://api.github.com", "--client-id", "ID")
        #expect(added.status == 0, "\(added)")
        #expect(try added.json()["style"]?.stringValue == "oauth2")
        #expect(try douctl.run("profile", "show", "gh").json()["style"]?.stringValue == "oauth2")
        let row = try douctl.run("profile", "list").lines().first { $0["name"]?.stringValue == "gh" }
        #expect(row?["style"]?.stringValue == "oauth2")
        #expect(row?["preset"] == .null)
        let style = try douctl.run("config", "get", "style", "--profile", "gh")
        #expect(style.status == 0 && style.stdoutText == "oauth2\n", "config get says what profile show says (was douban)")
        // A style or a preset set says what it is, as before.
        #expect(try douctl.run("profile", "add", "c", "--api-base", "https://c.test", "--style", "coding").json()["style"]?.stringValue == "coding")
        #expect(try douctl.run("profile", "add", "d", "--api-base", "https://d.test", "--style", "douban").json()["style"]?.stringValue == "douban")
        #expect(try douctl.run("profile", "show", "coding").json()["style"]?.stringValue == "coding")
        #expect(try douctl.run("config", "get", "style", "--profile", "c").stdoutText == "coding\n")
        #expect(try douctl.run("config", "get", "style", "--profile", "douban").stdoutText == "douban\n")
    }

    @Test func profileAddRefusesASecretOnTheCommandLine() throws {
        let douctl = try InProcessDouctl()
        let result = try douctl.run("profile", "add", "x", "--api-base", "https://x.test", "--signing-secret", "s3cret")
        #expect(result.status == 2, "\(result)")
        #expect(result.stdout.isEmpty)
        #expect(!result.stderr.contains("s3cret"))
        #expect(try douctl.run("profile", "show", "x").status == 2)
    }

    // MARK: - runs: completion, __complete, __man, version, sandbox

    @Test(arguments: [
        (["completion", "bash"], "completions/douctl.bash"),
        (["completion", "zsh"], "completions/_douctl"),
        (["completion", "fish"], "completions/douctl.fish"),
        (["__man"], "man/douctl.1"),
    ])
    func generatedFilesAreTheCheckedInBytes(argv: [String], file: String) throws {
        let result = try InProcessDouctl().run(argv)
        #expect(result.status == 0 && result.stderr.isEmpty, "\(result)")
        #expect(result.stdout == (try FileIO.readFile(Self.repository + "/" + file)),
                "\(file) is stale; regenerate it: .build/debug/douctl \(argv.joined(separator: " ")) > \(file)")
    }

    @Test func completeListsConfiguredProfilesThenPresets() throws {
        let douctl = try InProcessDouctl()
        try douctl.run("profile", "add", "work", "--preset", "douban")
        let names = try douctl.run("__complete", "profiles").stdoutText.split(separator: "\n").map(String.init)
        #expect(names == ["work"] + Preset.all.map(\.name))
        #expect(try douctl.run("__complete", "keys").stdoutText == ProfileKey.allCases.map { $0.rawValue + "\n" }.joined())
        let unknown = try douctl.run("__complete", "weather")
        #expect(unknown.status == 0 && unknown.stdout.isEmpty && unknown.stderr.isEmpty)
    }

    @Test func versionPrintsDouctlsVersionFirst() throws {
        let result = try InProcessDouctl().run("version")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText.split(separator: "\n").first.map(String.init) == "douctl \(Douctl.version)")
    }

    /// A bad --fault is refused before the sandbox claims a slot or opens a port.
    @Test func sandboxRefusesABadFaultBeforeStarting() throws {
        let douctl = try InProcessDouctl()
        let result = try douctl.run("sandbox", "--fault", "503:2")
        #expect(result.status == 2, "\(result)")
        #expect(result.stdout.isEmpty)
        #expect(result.errorLine.hasPrefix("douctl: invalid --fault"))
        #expect(result.stderr.contains("douctl sandbox"))
        #expect(!FileIO.fileExists(douctl.configDirectory + "/.sandbox.lock"))
    }
}
