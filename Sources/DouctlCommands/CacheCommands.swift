import DouctlArguments
import DouctlCore
import DouctlJSON

/// `douctl cache info|clear`: the response cache that `--cache` fills.
enum CacheCommands {
    static let command = Command(group: CommandSpec(
        "cache",
        abstract: "inspect or empty the response cache (--cache, --cache-only)",
        discussion: """
        GET and HEAD replies fetched with --cache DURATION are kept in
        $XDG_CACHE_HOME/douctl (else ~/.cache/douctl), one file per reply, mode 0600,
        keyed by profile, method, URL with its query, --unix-socket, and a hash of every
        header that can carry an identity (the token, -H Authorization, API keys, cookies;
        never the credential itself), so one identity's replies are never served to
        another. A reply's Vary is honoured: it is served only to requests sending the same
        values of the headers it names; Vary: * is never kept. auth login and auth logout
        drop the profile's replies; Set-Cookie headers are never kept. The profile key
        cache_max_mb bounds the directory (default 50); the least recently used replies go
        first. Replies with no-store in any Cache-Control line are never kept, nor error
        replies (4xx, 5xx), nor the answer to a request you made conditional, partial or
        no-store yourself (-H 'Range: ...', -H 'If-None-Match: ...'). A cache directory or
        reply another user could have written, or a symbolic link, is refused (exit 3) as
        config files are.

        Once a reply is older than the --cache duration and it came with an ETag or a
        Last-Modified, douctl asks again with If-None-Match / If-Modified-Since; a 304 Not
        Modified that names the version held renews it and its body is served. A 304 naming
        another version (a different ETag) renews nothing: the whole reply is fetched again.
        cache info counts, across runs, hits (served from the cache without asking),
        revalidations (renewed by a 304) and misses (fetched whole); cache clear resets them.
        """), [
        Command(CommandSpec(
            "info", abstract: "print the cache's directory, entries, size and hit counts as JSON",
            discussion: "On a terminal the same fields are shown as aligned lines; in a pipe, or with --json or --format json, the JSON object."),
            options: UserCommands.ViewOnly.self, run: info),
        Command(CommandSpec("clear", abstract: "delete every cached reply"), options: NoOptions.self, run: clear),
    ])

    static func info(_ options: UserCommands.ViewOnly, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let cache = try context.session.responseCache()
        let summary = cache.summary()
        let counts = cache.counts()
        context.output.document(.object(JSONObject([
            ("path", .string(cache.directory)), ("entries", .int(Int64(summary.entries))),
            ("bytes", .int(summary.bytes)), ("max_bytes", .int(cache.maximumBytes)),
            ("hits", .int(counts[.hits] ?? 0)), ("revalidations", .int(counts[.revalidations] ?? 0)),
            ("misses", .int(counts[.misses] ?? 0)),
        ])), view: .fields)
        return .success
    }

    static func clear(_ options: NoOptions, _ context: CommandContext) throws(DouctlError) -> ExitStatus {
        let removed = try context.session.responseCache().clear()
        context.output.note("Removed \(removed) cached \(removed == 1 ? "reply" : "replies").")
        return .success
    }

    /// The profile's identity changed (`auth login`, `auth logout`): its cached replies
    /// belong to the old one. Without a cache directory there is nothing to drop.
    static func dropReplies(_ context: CommandContext, profile: String) {
        guard let cache = try? context.session.responseCache() else { return }
        cache.drop(profile: profile)
    }
}
