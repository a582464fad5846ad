#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlJSON
import DouctlServer
import DouctlSystem
import Synchronization

/// What the server calls for every request: routing, authentication, rate limits, faults,
/// recording and logging. The state lives behind one lock; nothing else is shared mutably.
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
    private let base = LockedValue("")
    private let stopping = Atomic<Bool>(false)

    init(configuration: SandboxConfiguration) throws {
        self.configuration = configuration
        faults = FaultInjector(faults: configuration.faults, seed: configuration.faultSeed)
        gate = ShapingGate(signing: try configuration.signing.map(ShapingGate.parseSigning), quota: try configuration.quota.map(ShapingGate.parseQuota))
        replay = try configuration.replayDirectory.map { directory throws(SandboxError) in try ReplayStore(directory: directory) }
        var initial: SandboxState
        if let directory = configuration.dataDirectory {
            let store = try StateStore(directory: directory)
            self.store = store
            pictureDirectory = store.pictureDirectory
            ownsPictureDirectory = false
            if let loaded = try store.load() {
                initial = loaded
            } else {
                initial = Seed.makeState()
                initial.generation = 1  // write the seed, so the directory is complete at once
            }
        } else {
            store = nil
            pictureDirectory = try SandboxCore.makeTemporaryDirectory()
            ownsPictureDirectory = true
            initial = Seed.makeState()
        }
        state = LockedValue(initial)
        if store != nil { try save() }
    }

    private static func makeTemporaryDirectory() throws -> String {
        let parent = (getenv("TMPDIR").map { String(cString: $0) })?.nonEmpty ?? "/tmp"
        var template = Array("\(parent)/douctl-sandbox-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.flatMap { mkdtemp($0) }.map { String(cString: $0) }
        }
        guard let created else { throw SandboxError("cannot create a temporary directory in \(parent): \(SystemError("mkdtemp"))") }
        return created
    }

    var baseURL: String {
        get { base.value }
    }

    func setBaseURL(_ url: String) { base.withLock { $0 = url } }

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
        if let directory = opendir(pictureDirectory) {
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name != "." && name != ".." { unlink(pictureDirectory + "/" + name) }
            }
            closedir(directory)
        }
        rmdir(pictureDirectory)
    }

    // MARK: - Handling

    func handle(_ request: HTTPServerRequest) -> HTTPServerResponse {
        let started = SandboxClock.monotonic()
        let route = Route.match(request.path)
        let exchange = Exchange(request: request, route: route)
        let faultsApply = !route.isHTMLPage
        var response: HTTPServerResponse
        if faultsApply, let code = faults.statusFault() {
            response = faultResponse(code, exchange)
        } else if gate.isActive, let refused = gate.check(exchange, now: SandboxClock.now()) {
            response = refused
        } else if let replay {
            response = replay.answer(request)
        } else {
            response = dispatch(exchange)
        }
        response.headers += exchange.extraHeaders
        exchange.finishBody()
        saveLoggingFailure()
        let record = exchange.record(status: response.status)
        journal.withLock { $0.append(record) }
        if faultsApply {
            response = shape(response)
            let latency = faults.latency
            if latency > 0 { SandboxClock.pause(latency) { isStopping } }
        }
        if let log = configuration.log {
            let milliseconds = Int(((SandboxClock.monotonic() - started) * 1000).rounded())
            log("\(request.method) \(request.path) \(response.status) \(milliseconds)ms")
        }
        return response
    }

    private func dispatch(_ exchange: Exchange) -> HTTPServerResponse {
        let request = exchange.request
        if case .coding(let route) = exchange.route { return codingDispatch(exchange, route) }
        do {
            let route = exchange.route
            if case .notFound = route { throw DoubanError.notFound }
            guard route.methods.contains(request.method) else {
                // Douban never implemented undoing a reshare: it answers like an unknown URI.
                if case .reshare = route, request.method == "DELETE" { throw DoubanError.notFound }
                throw DoubanError.invalidMethod(request.method)
            }
            if let apikey = exchange.query("apikey"), apikey != Sandbox.clientID { throw DoubanError.invalidAPIKey }
            switch route {
            case .root: return rootPage()
            case .authorize: return try authorize(exchange)
            case .token: return try token(exchange)
            case .deviceAuthorization: return try deviceAuthorization(exchange)
            case .deviceVerify: return try deviceVerify(exchange)
            case .revoke: return try revoke(exchange)
            case .userMe: return try userMe(exchange)
            case .user(let name): return try user(exchange, name: name)
            case .userSearch: return try userSearch(exchange)
            case .postStatus: return try postStatus(exchange)
            case .homeTimeline: return try homeTimeline(exchange)
            case .userTimeline(let name): return try userTimeline(exchange, name: name)
            case .status(let id): return try status(exchange, id: id)
            case .statusComments(let id): return try statusComments(exchange, id: id)
            case .comment(let id): return try comment(exchange, id: id)
            case .reshare(let id): return try reshare(exchange, id: id)
            case .like(let id): return try like(exchange, id: id)
            case .following(let name): return try followList(exchange, name: name, followers: false)
            case .followers(let name): return try followList(exchange, name: name, followers: true)
            case .followCreate: return try friendship(exchange, follow: true)
            case .followDestroy: return try friendship(exchange, follow: false)
            case .picture(let id): return try picture(exchange, id: id)
            case .avatar: return HTTPServerResponse(status: 200, headers: [("Content-Type", "image/gif"), ("Cache-Control", "max-age=86400")],
                                                    body: .bytes(ImageInfo.placeholderGIF))
            case .coding(let route): return codingDispatch(exchange, route)
            case .notFound: throw DoubanError.notFound
            }
        } catch let error as DoubanError {
            return Reply.douban(error, request: exchange.requestLabel)
        } catch let error as StandardOAuthError {
            return Reply.standard(error)
        } catch let error as PageError {
            return Reply.html(error.status, Pages.message(title: error.title, message: error.message))
        } catch {
            return Reply.douban(DoubanError(status: 500, code: 999, name: "unknow_v2_error", detail: "\(error)"),
                                request: exchange.requestLabel)
        }
    }

    // MARK: - Authentication

    /// The caller behind a valid access token.
    struct Viewer {
        let userID: Int64
        let token: String
        let scopes: [String]
    }

    /// Checks the Bearer token as Douban does (102 / 103 / 106), counts the call against the
    /// token's hourly quota (111), and checks `scope` (1000). With `optional`, a request without
    /// an Authorization header is let through anonymously.
    func authenticate(_ exchange: Exchange, scope: String?, optional: Bool = false) throws -> Viewer? {
        let header = exchange.request.headers["Authorization"]
        var token = ""
        if let header {
            let trimmed = header.trimmingSpaces()
            if trimmed.lowercased().hasPrefix("bearer") {
                token = String(trimmed.dropFirst(6)).trimmingSpaces()
            } else if !trimmed.isEmpty {
                // Another scheme (Basic, OAuth 1.0a): Douban reads no token from it.
                token = ""
            }
        }
        if token.isEmpty {
            // douban-client sends "Authorization: Bearer " without a token on public calls.
            if optional { return nil }
            throw DoubanError.tokenMissing
        }
        let now = SandboxClock.now()
        let limit = configuration.rateLimitPerHour
        let outcome: Result<Viewer, DoubanError> = state.withLock { state in
            switch state.checkAccessToken(token, now: now) {
            case .invalid: return .failure(.invalidToken(token))
            case .expired: return .failure(.tokenExpired(token))
            case .valid(let record):
                var window = state.rateWindows[token] ?? RateWindow(start: now, count: 0)
                if now - window.start >= 3600 { window = RateWindow(start: now, count: 0) }
                window.count += 1
                state.rateWindows[token] = window
                let remaining = max(0, limit - window.count)
                exchange.extraHeaders += [("X-Ratelimit-Limit", String(limit)), ("X-Ratelimit-Remaining", String(remaining))]
                if window.count > limit {
                    var error = DoubanError(status: 429, code: 111, name: "rate_limit_exceeded1")
                    error.headers = [("Retry-After", String(max(1, Int((window.start + 3600 - now).rounded(.up)))))]
                    return .failure(error)
                }
                return .success(Viewer(userID: record.userID, token: token, scopes: record.scopes))
            }
        }
        let viewer = try outcome.get()
        if let scope, !viewer.scopes.contains(scope) { throw DoubanError.needPermission }
        return viewer
    }

    func requireViewer(_ exchange: Exchange, scope: String) throws -> Viewer {
        guard let viewer = try authenticate(exchange, scope: scope) else { throw DoubanError.tokenMissing }
        return viewer
    }

    /// `shuo_basic_r` for reads, `shuo_basic_w` for changes.
    func shuoViewer(_ exchange: Exchange) throws -> Viewer {
        try requireViewer(exchange, scope: exchange.request.method == "GET" ? "shuo_basic_r" : "shuo_basic_w")
    }

    // MARK: - Faults

    private func faultResponse(_ code: Int, _ exchange: Exchange) -> HTTPServerResponse {
        if case .coding = exchange.route, let response = codingFaultResponse(code) { return response }
        switch code {
        case 429:
            var error = DoubanError(status: 429, code: 111, name: "rate_limit_exceeded1")
            error.headers = [("Retry-After", "1")]
            return Reply.douban(error, request: exchange.requestLabel)
        case 500:
            return Reply.douban(DoubanError(status: 500, code: 999, name: "unknow_v2_error"), request: exchange.requestLabel)
        default:
            // 502/503/504 come from the front proxy, as an HTML page.
            let reason = code == 502 ? "Bad Gateway" : code == 503 ? "Service Temporarily Unavailable" : "Gateway Time-out"
            var response = Reply.html(code, "<html>\r\n<head><title>\(code) \(reason)</title></head>\r\n<body>\r\n<center><h1>\(code) \(reason)</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")
            if code == 503 { response.headers.append(("Retry-After", "1")) }
            return response
        }
    }

    /// Applies `reset`, `truncate` and `slow-body` to a finished reply.
    private func shape(_ response: HTTPServerResponse) -> HTTPServerResponse {
        let reset = faults.resetFires()
        let truncate = faults.truncateFires()
        let pause = faults.slowBodyPause
        guard reset || truncate || pause != nil else { return response }
        var bytes: [UInt8]
        switch response.body {
        case .empty: bytes = []
        case .bytes(let body): bytes = body
        case .file(let path):
            guard let content = try? FileIO.readFile(path) else { return response }
            bytes = content
        case .stream: return response
        }
        var shaped = response
        if reset {
            let sent = bytes.count / 2
            let declared = max(Int64(bytes.count), 1)
            shaped.body = .stream(length: declared) { [bytes] writer in
                if sent > 0 { try writer.write(Array(bytes[..<sent])) }
                try writer.abortConnection()
            }
            return shaped
        }
        if truncate && bytes.count > 1 {
            bytes = Array(bytes[..<(bytes.count / 2)])
            shaped.body = .bytes(bytes)
            shaped.headers.removeAll { $0.0.lowercased() == "content-length" }
        }
        guard let pause, !bytes.isEmpty else { return shaped }
        // At most ~20 pieces, each at least 64 bytes: small enough to dribble, few enough to finish.
        let pieceSize = max(64, (bytes.count + 19) / 20)
        shaped.body = .stream(length: Int64(bytes.count)) { [bytes, self] writer in
            var offset = 0
            while offset < bytes.count {
                let end = min(offset + pieceSize, bytes.count)
                try writer.write(Array(bytes[offset..<end]))
                offset = end
                if offset < bytes.count { SandboxClock.pause(pause) { self.isStopping } }
            }
        }
        return shaped
    }

    // MARK: - Small pages

    private func rootPage() -> HTTPServerResponse {
        let text = """
            douctl sandbox: a local fake of Douban API v2 with OAuth2, and of Coding's legacy API.

            OAuth2:  \(baseURL)/service/auth2/auth  (client_id \(Sandbox.clientID), client_secret \(Sandbox.clientSecret))
                     \(baseURL)/service/auth2/token
                     \(baseURL)/service/auth2/device  (RFC 8628; verify at /service/auth2/device/verify)
                     \(baseURL)/service/auth2/revoke
            API:     \(baseURL)/v2/user/~me, /v2/user/:name, /v2/user?q=
                     \(baseURL)/shuo/v2/statuses/…, /shuo/v2/users/:id/following|followers, /shuo/v2/friendships/create|destroy
            Users:   ahbei (阿北, the default login), linglu, chenmo, sunxiaomei, wangdali

            Coding (same client id and secret):
            OAuth2:  \(baseURL)/oauth_authorize.html, \(baseURL)/api/oauth/access_token (expires_in is a string)
                     \(baseURL)/api/oauth/device  (RFC 8628; verify at /oauth_device.html); token as ?access_token=
            Login:   GET /api/captcha/login (sets the sid and XSRF-TOKEN cookies), GET /api/getCaptcha (PNG; the
                     code is also logged), POST /api/v2/account/login (account, password = hex SHA-1, j_captcha),
                     POST /api/check_two_factor_auth_code (code, logged too); send X-XSRF-TOKEN on POST/DELETE
            API:     /api/account/current_user, /api/user/key/:global_key, /api/tweet/public_tweets,
                     /api/activities/user_tweet, /api/tweet/user_public, /api/tweet/:global_key/:id, POST /api/tweet, …
            Users:   coder (码农小王, the default login), twofa (two-factor login), devmei, opszhang;
                     password \(CodingSeed.password)

            """
        return .text(200, text)
    }

    private func picture(_ exchange: Exchange, id: Int64) throws -> HTTPServerResponse {
        guard let picture = state.withLock({ $0.pictures[id] }) else { throw DoubanError.notFound }
        guard exchange.request.path.hasSuffix("." + picture.fileExtension) else { throw DoubanError.notFound }
        return HTTPServerResponse(status: 200, headers: [("Content-Type", picture.contentType), ("Cache-Control", "max-age=86400")],
                                  body: .file(path: pictureDirectory + "/" + picture.fileName))
    }
}
