import DouctlArguments
import DouctlCore
import DouctlHTTP

/// `douctl version`: douctl's version and the libcurl it loads (`--version` skips libcurl,
/// to stay instant).
enum VersionCommand {
    static let command = Command(CommandSpec("version", abstract: "print douctl's version and the libcurl it uses"), run: run)

    static func run(_ invocation: Invocation) throws(DouctlError) -> ExitStatus {
        invocation.stdout.line("douctl \(Douctl.version)")
        do {
            try CurlLibrary.load()
            invocation.stdout.line("libcurl \(CurlLibrary.version ?? "(unknown version)")")
        } catch {
            invocation.stdout.line("libcurl not available: \(error.message)")
        }
        return .success
    }
}
