import DouctlSystem

/// The outcome of one source's download.
public struct DownloadResult: Sendable, Equatable {
    public var index: Int
    public var source: String
    /// The absolute URL the source names.
    public var url: String
    public var outcome: Outcome
    public var seconds: Double
    /// A failed download's bytes, kept for `--continue`.
    public var keptPartial: KeptPartial? = nil

    public enum Outcome: Sendable, Equatable {
        case downloaded(DownloadedFile)
        case failed(DouctlError)
    }
}

/// Downloads sources `parallel` at a time, each worker with its own client (libcurl handles
/// are not shared between threads), and hands results over in the order the sources were
/// given, as soon as every earlier one is done.
public struct DownloadBatch: Sendable {
    public var sources: [String]
    public var options: DownloadOptions
    public var parallel: Int
    public var factory: ClientFactory

    public init(sources: [String], options: DownloadOptions, parallel: Int, factory: ClientFactory) {
        self.sources = sources
        self.options = options
        self.parallel = parallel
        self.factory = factory
    }

    /// `progress(index, received, total)` is called from worker threads; `deliver` in source
    /// order (from worker threads, one at a time). Sources not started before an interrupt
    /// get no result.
    public func run(
        progress: @escaping @Sendable (Int, Int64, Int64) -> Void,
        deliver: @escaping @Sendable (DownloadResult) -> Void
    ) {
        let ordering = LockedValue<(next: Int, waiting: [Int: DownloadResult])>((0, [:]))
        let batch = self
        let clients = ClientPool(factory: factory)
        let cancellation = factory.http.cancellation
        runConcurrently(count: sources.count, width: parallel) { index in
            guard !cancellation.isRequested else { return }
            let result = batch.download(index, clients: clients, progress: progress)
            ordering.withLock { state in
                state.waiting[index] = result
                while let ready = state.waiting.removeValue(forKey: state.next) {
                    deliver(ready)
                    state.next += 1
                }
            }
        }
    }

    private func download(_ index: Int, clients: ClientPool, progress: @escaping @Sendable (Int, Int64, Int64) -> Void) -> DownloadResult {
        let started = Timestamp.now()
        let outcome: DownloadResult.Outcome
        var kept: KeptPartial?
        do {
            let client = try clients.take()
            defer { clients.give(client) }
            let download = Download(client: client, source: sources[index], options: options)
            outcome = .downloaded(try download.run(progress: { received, total in progress(index, received, total) },
                                                   kept: { kept = $0 }))
        } catch {
            outcome = .failed(error)
        }
        let url = factory.profile.url(for: sources[index])
        return DownloadResult(index: index, source: sources[index], url: url, outcome: outcome, seconds: Timestamp.now() - started,
                              keptPartial: kept)
    }
}
