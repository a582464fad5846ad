import DouctlArguments
import DouctlCore
import DouctlHTTP

/// `douctl version`: douctl's version and the libcurl it loads (`--version` skips libcurl,
/// to stay instant).
enum VersionCommand {
    static let command = Command(CommandSpec("version", abstract: "print douctl's version and the libcurl it uses"), options: NoOptions.self, run: run)

    static func run(_ options: NoOptions, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        context.output.line("douctl \(Douctl.version)")
        do {
            try CurlLibrary.load()
            context.output.line("libcurl \(CurlLibrary.version ?? "(unknown version)")")
        } catch {
            context.output.line("libcurl not available: \(error.message)")
        }
        return .success
    }
}
