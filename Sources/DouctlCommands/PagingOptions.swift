import DouctlArguments
import DouctlCore

/// `--start`, `--count`, `--all`, `--slurp` and `--parallel` of list commands.
struct PagingOptions: CommandOptions {
    var start: Int?
    var count: Int?
    /// Walk every page (`--all`; api's `--paginate`).
    var all = false
    var slurp = false
    var parallel = ParallelPaging.defaultWidth

    init() {}

    /// The walk of a command whose options have other names (api's `--paginate`, shuo
    /// timeline's own `--count`/`--all`).
    init(count: Int? = nil, all: Bool, slurp: Bool, parallel: Int = ParallelPaging.defaultWidth) {
        self.count = count
        self.all = all
        self.slurp = slurp
        self.parallel = parallel
    }

    static let bindings: [OptionBinding<PagingOptions>] = [
        .integer({ $0.start = $1 }, OptionSpec("start", value: ValueSpec("N", kind: .integer(0...Int.max)), help: "skip the first N items")),
        .integer({ $0.count = $1 }, count(1...200)),
        .flag({ $0.all = $1 }, OptionSpec.flag("all", help: "fetch every page and print each item as one JSON line (NDJSON)")),
        .flag({ $0.slurp = $1 }, slurp),
        .integer({ $0.parallel = $1 }, parallel),
    ]

    /// The group for a command whose API takes at most `countRange.upperBound` per page.
    static func group<Options>(_ set: @escaping OptionBinding<Options>.Setter<PagingOptions>, countRange: ClosedRange<Int> = 1...200) -> OptionBinding<Options> {
        OptionBinding.group(set, PagingOptions.self).mapOptions { spec in spec.long == "count" ? count(countRange) : spec }
    }

    func validate() throws(OptionError) {
        if slurp && !all { throw OptionError("--slurp goes with --all (or api --paginate)") }
    }

    private static func count(_ range: ClosedRange<Int>) -> OptionSpec {
        OptionSpec("count", value: ValueSpec("N", kind: .integer(range)), help: "items per page (the API's default when absent)")
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
