import DouctlHTTP

/// Issue 44: what a command that calls the API can start before its arguments are parsed.
public enum EarlyLoad {
    /// The top-level commands that call the API: `CommandTree.commandsCallingAPI`, known here
    /// without building the command tree (a test keeps the two equal).
    static let commandsCallingAPI: Set<String> = ["api", "download", "shuo", "upload", "user"]

    /// Starts opening libcurl beside the main thread (`CurlLibrary.preload`) when the first
    /// word of the command line that is not an option names a command that calls the API,
    /// so the ~4 ms of opening it overlaps parsing, the configuration and the profile. Any
    /// other command line loads libcurl, if at all, when it first needs it, as before.
    public static func libcurlIfTheCommandCallsTheAPI(_ arguments: [String]) {
        guard let word = arguments.dropFirst().first(where: { !$0.hasPrefix("-") }),
              commandsCallingAPI.contains(word) else { return }
        CurlLibrary.preload()
    }
}
