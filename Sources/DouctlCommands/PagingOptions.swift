import DouctlArguments

/// `--start`, `--count` and `--all` for list commands.
enum PagingOptions {
    static func specs(countRange: ClosedRange<Int> = 1...200) -> [OptionSpec] {
        [
            OptionSpec("start", value: ValueSpec("N", kind: .integer(0...Int.max)), help: "skip the first N items"),
            OptionSpec("count", value: ValueSpec("N", kind: .integer(countRange)), help: "items per page (the API's default when absent)"),
            .flag("all", help: "fetch every page and print each item as one JSON line (NDJSON)"),
            slurp,
            parallel,
        ]
    }

    /// `--slurp`, with `--all`: one JSON array of every item instead of NDJSON.
    static let slurp = OptionSpec.flag("slurp", help: "with --all: print one JSON array of all items, streamed")
    /// The same for `api`, whose walk is `--paginate`.
    static let slurpPaginate = OptionSpec.flag("slurp", help: "with --paginate: print one JSON array of all items, streamed")

    /// `--parallel N`, with `--all`: numbered pages fetched N at a time.
    static let parallel = parallel(walk: "--all")
    /// The same for `api`, whose walk is `--paginate`.
    static let parallelPaginate = parallel(walk: "--paginate")

    private static func parallel(walk: String) -> OptionSpec {
        OptionSpec(
            "parallel", value: ValueSpec("N", kind: .integer(1...16), default: "4"),
            help: "with \(walk): fetch N pages at once when the first reply gives the total (start/count, page/pageSize; items stay in order; 1: one at a time)")
    }
}
