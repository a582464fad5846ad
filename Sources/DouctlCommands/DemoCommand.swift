#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlArguments
import DouctlCore
import DouctlJSON
import DouctlSandbox
import DouctlSystem

/// `douctl demo`: the first five minutes in one command. Starts a sandbox in-process with a
/// throw-away config directory and runs the real commands against it, narrating each one.
enum DemoCommand {
    static let command = Command(CommandSpec(
        "demo",
        abstract: "try everything against a built-in sandbox: log in, post with a picture, read, like, comment, delete",
        discussion: """
        Each step runs the real douctl command (shown on stderr) against a sandbox started
        for the demo, with a temporary config directory that is removed afterwards. On a
        terminal each step shows what the same command typed by hand shows (the feed, the
        user card, "deleted ID"); in a pipe, or with --pretty or --compact, each reply's JSON
        goes to stdout, as the commands print it in a pipe (shuo delete's are JSON lines).
        Nothing touches your own configuration or the network.
        """), options: NoOptions.self, run: run)

    static func run(_ options: NoOptions, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let workspace = try makeWorkspace(temporaryDirectory: context.environment["TMPDIR"])
        defer { ScratchDirectory.remove(workspace) }
        var configuration = SandboxConfiguration()
        configuration.log = nil
        let sandbox = try SandboxCommand.start(configuration)
        defer { sandbox.stop() }

        let demo = Demo(context: context, workspace: workspace)
        demo.say("Started a sandbox Douban at \(sandbox.baseURL) (config in a temporary directory).")
        try demo.writeProfile(base: sandbox.baseURL)

        try demo.step("Log in with the device flow (the sandbox approves it at once)",
                      ["auth", "login", "--device", "--no-browser"])
        try demo.step("Who am I?", ["user", "me"])
        let picture = workspace + "/douctl-demo.png"
        do { try AtomicFile.write(DemoPicture.png(), to: picture, mode: 0o644) } catch {
            throw .localInput("cannot write the demo picture (\(error))")
        }
        let posted = try demo.step("Post a 广播 with a picture", ["shuo", "post", "你好，豆瓣！这是 douctl demo 发的第一条广播。", "--image", picture], keepingReplyShownAs: .feed)
        guard let id = posted?["id"]?.scalarText else { throw .badReply("the new status has no id") }
        try demo.step("Read it back", ["shuo", "get", id])
        try demo.step("The home timeline, newest first", ["shuo", "timeline", "--count", "3"])
        try demo.step("Like it", ["shuo", "like", id])
        try demo.step("Comment on it", ["shuo", "comment", id, "第一条评论 ✓"])
        try demo.step("Delete it", ["shuo", "delete", id])
        demo.say("\neverything worked. Next: douctl sandbox (keep one running), then douctl --profile sandbox auth login")
        return .success
    }

    /// A private temporary directory for the demo's config and picture, removed afterwards.
    private static func makeWorkspace(temporaryDirectory: String?) throws(DouctlError) -> String {
        do {
            return try ScratchDirectory.create(prefix: "douctl-demo", in: temporaryDirectory)
        } catch {
            throw .localInput("cannot create a temporary directory for the demo (\(error))")
        }
    }
}

/// Runs the demo's steps as in-process douctl invocations.
private struct Demo {
    let context: CommandContext
    let workspace: String

    var configDirectory: String { workspace + "/config" }

    func say(_ text: String) {
        context.output.printer.line(text, style: text.hasPrefix("\n==>") || text.hasPrefix("==>") ? .heading : .plain)
    }

    func writeProfile(base: String) throws(DouctlError) {
        let directory = ConfigDirectory(path: configDirectory)
        try directory.updateConfig { (config: inout ConfigFile) in
            config.setProfile("sandbox", ProfileSettings(Preset.sandboxSettings(style: .douban, base: base)))
            config.defaultProfile = "sandbox"
        }
    }

    /// On a terminal (unless --pretty or --compact asks for JSON) each step writes to it
    /// directly, so the commands show the views a person typing them sees.
    var showsViews: Bool { context.output.stdoutIsTerminal && !context.globals.pretty && !context.globals.compact }

    /// Narrates and runs `douctl ARGS` with the demo's config. On a terminal its output goes
    /// there as it would typed by hand; in a pipe its JSON is copied to stdout. With
    /// `keepingReplyShownAs` the reply (the first JSON value printed) is captured and
    /// returned; on a terminal it is then shown with the view the command itself uses.
    @discardableResult
    func step(_ title: String, _ arguments: [String], keepingReplyShownAs view: HumanView? = nil) throws(DouctlError) -> JSON? {
        say("\n==> \(title)")
        say("    $ douctl \(arguments.map(quote).joined(separator: " "))")
        var environment = context.environment
        environment["DOUCTL_CONFIG_DIR"] = configDirectory
        for name in ["DOUCTL_TOKEN", "DOUCTL_PROFILE", "DOUCTL_CLIENT_ID", "DOUCTL_CLIENT_SECRET", "BROWSER"] { environment[name] = nil }
        // The demo's own profile, whatever a .douctl file where it runs names.
        environment["DOUCTL_PROFILE"] = "sandbox"
        let nullInput = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { close(nullInput) }
        func run(_ extra: [String], output: Int32?) -> Int32 {
            let stdout = context.output.handOver()
            var process = ProcessContext(
                arguments: arguments + extra, environment: environment,
                standardInput: nullInput, standardOutput: output ?? stdout, standardError: context.output.stderrDescriptor)
            // On our own stdout the step sees the terminal we were told of (a test's, too).
            if output == nil { process.terminal = context.output.terminal }
            // The step runs on the demo's clock and stops with it (a test's virtual clock too).
            process.clock = context.clock
            process.cancellation = context.cancellation
            return Douctl.main(process)
        }
        func check(_ status: Int32) throws(DouctlError) {
            guard status == 0 else {
                throw .badReply("the demo stopped: 'douctl \(arguments.joined(separator: " "))' exited \(status)")
            }
        }
        let color = context.globals.color == .auto ? [] : ["--color", context.globals.color.rawValue]
        if showsViews && view == nil {
            try check(run(color, output: nil))
            return nil
        }
        let capture = workspace + "/step-output"
        let fd = open(capture, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .localInput("cannot create \(capture)") }
        defer { close(fd) }
        let style = showsViews ? ["--compact"] : context.output.prettyJSON ? ["--pretty"] : ["--compact"]
        let status = run(style, output: fd)  // no --color: the reply is parsed, and a pipe gets plain JSON as before
        lseek(fd, 0, SEEK_SET)
        let output = (try? FileIO.readAll(fd)) ?? []
        let firstLine = output.split(separator: 0x0A, maxSplits: 1).first.map(Array.init) ?? []
        let reply = (try? JSONParser.parse(output)) ?? (try? JSONParser.parse(firstLine))
        if showsViews {
            // The demo itself has no --format: the view is drawn as printDocument draws it.
            if let reply, let lines = view?.document(TerminalText.shown(reply), context.output.viewContext) {
                context.output.viewLines(lines)
            } else {
                context.output.write(output)
            }
        } else {
            context.output.write(output)
        }
        context.output.flush()
        try check(status)
        return reply
    }

    private func quote(_ word: String) -> String {
        word.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_./=".contains($0)) } ? word : "'\(word)'"
    }
}
