#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlServer
import DouctlSystem
import Synchronization

/// What the server calls for every request: faults, the request-shaping gate, replay or the
/// router, then recording and logging. It owns the state (behind one lock, shared with the
/// handlers; nothing else is shared mutably), its persistence and the picture directory.
final class SandboxCore: Sendable {
    let configuration: SandboxConfiguration
    let state: LockedValue<SandboxState>
    let journal = LockedValue(RequestJournal())
    let faults: FaultInjector
    let gate: ShapingGate
    let replay: ReplayStore?
    let store: StateStore?
    /// Where uploaded pictures live: `DIR/pictures` with `--data`, else a private temp dir.
    let pictureDirectory: String
    let ownsPictureDirectory: Bool
    let baseURL = BaseURL()
    /// Shared with both OAuth handler families; the test hooks approve device codes through it.
    let deviceGrant: DeviceGrant
    private let router: Router
    private let stopping = Atomic<Bool>(false)

    init(configuration: SandboxConfiguration) throws {
        self.configuration = configuration
        faults = FaultInjector(faults: configuration.faults, seed: configuration.faultSeed)
        gate = ShapingGate(signing: try configuration.signing.map(ShapingGate.parseSigning), quota: try configuration.quota.map(ShapingGate.parseQuota))
        replay = try configuration.replayDirectory.map { directory throws(SandboxError) in try ReplayStore(path: directory) }
        var initial: SandboxState
        if let directory = configuration.dataDirectory {
            let store = try StateStore(directory: directory)
            self.store = store
            pictureDirectory = store.pictureDirectory
            ownsPictureDirectory = false
            if let loaded = try store.load() {
                initial = loaded
            } else {
                initial = DoubanSeed.makeState()
                initial.generation = 1  // write the seed, so the directory is complete at once
            }
        } else {
            store = nil
            pictureDirectory = try SandboxCore.makeTemporaryDirectory()
            ownsPictureDirectory = true
            initial = DoubanSeed.makeState()
        }
        state = LockedValue(initial)
        deviceGrant = DeviceGrant(state: state, configuration: configuration, faults: faults, baseURL: baseURL)
        router = Router(state: state, configuration: configuration, baseURL: baseURL, pictureDirectory: pictureDirectory,
                        deviceGrant: deviceGrant)
        if store != nil { try save() }
    }

    private static func makeTemporaryDirectory() throws -> String {
        let parent = getenv("TMPDIR").map { String(cString: $0) }
        do {
            return try ScratchDirectory.create(prefix: "douctl-sandbox", in: parent)
        } catch {
            throw SandboxError("cannot create a temporary directory in \(parent?.nonEmpty ?? "/tmp"): \(error)")
        }
    }

    var isStopping: Bool { stopping.load(ordering: .relaxed) }

    func beginStopping() { stopping.store(true, ordering: .relaxed) }

    /// Saves the state if it changed (with `--data`). Failures are logged, not fatal: the
    /// sandbox keeps serving from memory.
    func save() throws {
        guard let store else { return }
        try store.save { state.withLock { $0 } }
    }

    func saveLoggingFailure() {
        do {
            try save()
        } catch {
            configuration.log?("sandbox: cannot save state: \(error)")
        }
    }

    func removeOwnedPictures() {
        guard ownsPictureDirectory else { return }
        ScratchDirectory.remove(pictureDirectory)
    }

    // MARK: - Handling

    func handle(_ sent: HTTPServerRequest) -> HTTPServerResponse {
        let started = SandboxClock.monotonic()
        // A replay compares bodies: it reads the body first and hands on a copy of it.
        let (request, body) = replay == nil ? (sent, ReplayBody.any) : Self.buffered(sent)
        let route = Route.match(request.path)
        let exchange = Exchange(request: request, route: route)
        let faultsApply = configuration.api != nil || !route.isHTMLPage
        var response: HTTPServerResponse
        if faultsApply, let code = faults.statusFault() {
            response = FaultInjector.statusReply(code, exchange, described: configuration.api != nil)
        } else if gate.isActive, let refused = gate.check(exchange, now: configuration.clock.now()) {
            response = refused
        } else if let api = configuration.api {
            // A request the recording lacks is answered by the description.
            if let replay, case .recorded(let recorded) = replay.answer(request, body: body, base: baseURL.value) {
                response = recorded
            } else {
                response = api(request)
            }
        } else if let replay {
            // A login step the recording lacks is served live, so any login flow works.
            switch replay.answer(request, body: body, base: baseURL.value, now: configuration.clock.now()) {
            case .recorded(let recorded):
                response = recorded
            case .unmatched(let refusal, let line):
                if route.isOAuth {
                    response = router.dispatch(exchange)
                    replay.login.noteIssued(response)
                } else {
                    response = refusal
                    configuration.log?(TerminalText.escaped(line))
                }
            }
        } else {
            response = router.dispatch(exchange)
        }
        response.headers += exchange.extraHeaders
        exchange.finishBody()
        saveLoggingFailure()
        let record = exchange.record(status: response.status)
        journal.withLock { $0.append(record) }
        if faultsApply {
            response = faults.shape(response) { self.isStopping }
            let latency = faults.latency
            if latency > 0 { SandboxClock.pause(latency) { isStopping } }
        }
        if let log = configuration.log {
            let milliseconds = Int(((SandboxClock.monotonic() - started) * 1000).rounded())
            // Any local process (or a web page, through the browser) chooses the path: a
            // decoded %1B or %0D%0A must neither drive the operator's terminal nor forge a
            // log line (Apache escaped its logs for this: CVE-2003-0020).
            log("\(TerminalText.escaped(request.sentMethod)) \(TerminalText.escaped(request.path)) \(response.status) \(milliseconds)ms")
        }
        return response
    }

    /// The request with its body read into memory (up to `ReplayStore.comparedBodyLimit`),
    /// and that body as a replay compares it. A larger body is read and dropped: it matches
    /// any recording's.
    static func buffered(_ request: HTTPServerRequest) -> (HTTPServerRequest, ReplayBody) {
        guard request.contentLength != nil || request.isChunked else { return (request, .empty) }
        let bytes: [UInt8]
        do {
            bytes = try request.body.readAll(limit: ReplayStore.comparedBodyLimit)
        } catch {
            _ = try? request.body.drain()
            return (HTTPServerRequest(method: request.sentMethod, target: request.target, headers: request.headers,
                                      remoteAddress: request.remoteAddress), .any)
        }
        let copy = HTTPServerRequest(method: request.sentMethod, target: request.target, headers: request.headers,
                                     body: bytes, remoteAddress: request.remoteAddress)
        return (request.sentMethod == request.method ? copy : copy.asGETWhenHEAD,
                ReplayBody.parse(bytes, contentType: request.headers["Content-Type"]))
    }
}
