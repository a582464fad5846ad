#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import DouctlCommands
import DouctlArguments
import DouctlSandbox
import DouctlSystem
import DouctlTestSupport

/// Runs `Douctl.main` in this process, the way `main.swift` does, through a `ProcessContext`
/// of its own: a private HOME and config directory, a controlled environment, stdin from
/// bytes, stdout and stderr into files that are read back.
struct InProcessDouctl {
    let home: TemporaryDirectory
    var configDirectory: String { home.path + "/config" }
    var environment: [String: String]
    /// When set, every request goes to this scripted transport instead of libcurl: the
    /// command layer runs with no sockets and no waits.
    var transport: ScriptedTransport?
    /// Last changes to the process a run gets: its own cancellation, a virtual clock, a
    /// transport that sees the HTTP configuration.
    var configure: (@Sendable (inout ProcessContext) -> Void)?

    init(environment extra: [String: String] = [:], transport: ScriptedTransport? = nil) throws {
        self.transport = transport
        home = try TemporaryDirectory(prefix: "douctl-commands")
        environment = [
            "HOME": home.path,
            "LANG": "C.UTF-8",
            "PATH": "/usr/bin:/bin",
            "DOUCTL_CONFIG_DIR": home.path + "/config",
            "XDG_CACHE_HOME": home.path + "/cache",
        ]
        environment.merge(extra) { $1 }
    }

    @discardableResult
    func run(_ arguments: String..., input: String? = nil, environment extra: [String: String] = [:]) throws -> CommandResult {
        try run(arguments, input: input.map { Array($0.utf8) }, environment: extra)
    }

    @discardableResult
    func run(_ arguments: [String], input: [UInt8]? = nil, environment extra: [String: String] = [:]) throws -> CommandResult {
        let streams = try TemporaryDirectory(prefix: "douctl-streams")
        let inputPath = streams.path + "/stdin"
        let writer = try open(inputPath, O_WRONLY | O_CREAT | O_TRUNC)
        defer { close(writer) }
        try FileIO.writeAll(writer, input ?? [])
        let stdin = try open(inputPath, O_RDONLY)
        let stdout = try open(streams.path + "/stdout", O_WRONLY | O_CREAT | O_TRUNC)
        let stderr = try open(streams.path + "/stderr", O_WRONLY | O_CREAT | O_TRUNC)
        var variables = environment
        variables.merge(extra) { $1 }
        var process = ProcessContext(arguments: arguments, environment: variables,
                                     standardInput: stdin, standardOutput: stdout, standardError: stderr)
        if let transport { process.makeTransport = { _ in transport } }
        // A cancellation of its own: a --max-time timer or a cancelled run never reaches
        // the other tests running in this process.
        process.cancellation = Cancellation()
        // A .douctl file is looked for from the run's own home, not wherever the tests run.
        process.workingDirectory = home.path
        configure?(&process)
        let status = Douctl.main(process)
        for fd in [stdin, stdout, stderr] { close(fd) }
        return CommandResult(status: status, stdout: try FileIO.readFile(streams.path + "/stdout"),
                             stderrBytes: try FileIO.readFile(streams.path + "/stderr"))
    }

    private func open(_ path: String, _ flags: Int32) throws -> Int32 {
        #if canImport(Glibc)
        let fd = Glibc.open(path, flags | O_CLOEXEC, 0o600)
        #else
        let fd = Darwin.open(path, flags | O_CLOEXEC, 0o600)
        #endif
        guard fd >= 0 else { throw SystemError("open", path: path) }
        return fd
    }
}

/// A sandbox on 127.0.0.1 in this process, and an in-process douctl whose default profile
/// points at it.
struct SandboxRun {
    let sandbox: Sandbox
    let douctl: InProcessDouctl

    init(environment: [String: String] = [:], configuration: SandboxConfiguration = SandboxConfiguration()) throws {
        sandbox = try Sandbox(configuration)
        try sandbox.start()
        douctl = try InProcessDouctl(environment: environment)
        try SandboxProfiles.write(base: sandbox.baseURL, in: douctl.configDirectory)
    }

    /// Stores a token the sandbox issued as the default profile's login.
    @discardableResult
    func login(user: String = "ahbei") throws -> String {
        let tokens = sandbox.issueToken(user: user, scopes: Sandbox.allScopes)
        try Credentials.write(["sandbox": tokens.accessToken], in: douctl.configDirectory, expiresAt: "2099-01-01T00:00:00Z",
                              refreshTokens: ["sandbox": tokens.refreshToken])
        return tokens.accessToken
    }

    func stop() { sandbox.stop() }
}

/// What the parser and a verb's bindings make of `argv`: the typed options its run gets, with
/// `validate()` applied (the parse half of each verb's tests).
func boundOptions<Options: CommandOptions>(_ argv: [String], as _: Options.Type = Options.self) throws -> Options {
    guard case .run(let parsed) = try ArgumentParser(root: Douctl.rootSpec).parse(argv) else {
        throw TestFailure("\(argv) did not parse to a run")
    }
    return try Options.bind(parsed)
}

extension InProcessDouctl {
    /// The API base the scripted runs name; the scripted transport answers whatever it is.
    static let scriptedBase = "http://api.test"

    /// An in-process douctl whose requests go to `transport`, with a token in the environment.
    static func scripted(_ transport: ScriptedTransport) throws -> InProcessDouctl {
        try InProcessDouctl(environment: ["DOUCTL_TOKEN": "t0ken"], transport: transport)
    }
}
