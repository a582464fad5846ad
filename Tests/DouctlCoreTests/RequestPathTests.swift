@testable import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Testing

/// The request path's layers, in process over a scripted transport and a virtual clock: the
/// credentials layer (an explicit credential wins, the profile's goes only to its origin), the
/// cache (keyed by the credential actually sent), the quota (one owner, per origin, exit 6 at
/// once without --wait-on-rate-limit). The binary side is `PromiseTableTests`.
@Suite("Request path layers")
struct RequestPathTests {
    static let now = 2_000_000_000.0

    func client(_ transport: ScriptedTransport, profile: ResolvedProfile? = nil, token: String? = "tok123",
                change: (inout APIClientOptions) -> Void = { _ in }) throws -> APIClient {
        var options = APIClientOptions()
        options.requests.clock = RunClock(now: { Self.now }, sleep: { _, _ in })
        change(&options)
        return APIClient(profile: try profile ?? TestProfiles.douban(), http: transport, tokens: token.map(FixedToken.init), options: options)
    }

    // MARK: credentials

    @Test func anExplicitAuthorizationHeaderIsSentAloneInsteadOfTheStoredToken() throws {
        let transport = ScriptedTransport([.json(200, "{}")])
        let lines = Recorder<String>()
        let api = try client(transport) { $0.requests.verboseLog = { lines.add($0) } }
        _ = try api.send(APIRequest(path: "/v2/user/~me", headers: [HTTPHeader("Authorization", "Bearer override")]))
        let sent = try #require(transport.requests.first)
        #expect(sent.headers.filter { $0.name.lowercased() == "authorization" }.map(\.value) == ["Bearer override"])
        #expect(!sent.secrets.contains("tok123"))
        #expect(lines.all.contains { $0.contains("the Authorization header given with the request is sent") }, "\(lines.all)")
    }

    @Test func anExplicitKeyHeaderWinsOverTheProfilesTokenHeader() throws {
        var profile = try TestProfiles.douban()
        profile.tokenHeader = "X-API-Key"
        let transport = ScriptedTransport([.json(200, "{}")])
        _ = try client(transport, profile: profile).send(APIRequest(path: "/v2/x", headers: [HTTPHeader("X-API-Key", "mine")]))
        #expect(transport.requests.first?.headers.filter { $0.name == "X-API-Key" }.map(\.value) == ["mine"])
    }

    @Test func anExplicitTokenQueryParameterWinsOverTheProfilesQueryToken() throws {
        let transport = ScriptedTransport([.json(200, "{}")])
        _ = try client(transport, profile: try TestProfiles.coding()).send(APIRequest(path: "/api/current_user", query: [("access_token", "mine")]))
        #expect(transport.requests.first?.query.filter { $0.0 == "access_token" }.map(\.1) == ["mine"])
    }

    @Test func theStoredTokenGoesOnlyToItsOwnOrigin() throws {
        let transport = ScriptedTransport([.json(200, "{}"), .json(200, "{}")])
        let api = try client(transport)
        _ = try api.send(APIRequest(path: "https://elsewhere.example/v2/x"))
        _ = try api.send(APIRequest(path: "/v2/x"))
        #expect(transport.requests[0].header("Authorization") == nil)
        #expect(transport.requests[1].header("Authorization") == "Bearer tok123")
    }

    @Test func anExplicitCredentialIsNotRefreshedWhenRefused() throws {
        let transport = ScriptedTransport([.json(401, #"{"error":"invalid_token"}"#)])
        let tokens = ScriptedTokens("tok123", refreshes: ["fresh"])
        let api = APIClient(profile: try TestProfiles.douban(), http: transport, tokens: tokens)
        #expect(throws: DouctlError.self) { try api.send(APIRequest(path: "/v2/x", headers: [HTTPHeader("Authorization", "Bearer mine")])) }
        #expect(tokens.refreshed.isEmpty && transport.requests.count == 1)
    }

    // MARK: cache

    @Test func aCachedReplyIsServedOnlyToTheCredentialThatFetchedIt() throws {
        let cache = ResponseCache(directory: TemporaryDirectory.make(prefix: "path-cache"), maximumBytes: 1 << 20)
        let policy = CachePolicy(cache: cache, freshFor: 300, cacheOnly: false, note: { _ in })
        let transport = ScriptedTransport([.json(200, #"{"who":"alice"}"#), .json(200, #"{"who":"bob"}"#)])
        let api = try client(transport, token: nil) { $0.cachePolicy = policy; $0.allowsAnonymous = true }
        func who(_ authorization: String) throws -> String? {
            try api.send(APIRequest(path: "/v2/me", headers: [HTTPHeader("Authorization", authorization)])).requireJSON()["who"]?.stringValue
        }
        #expect(try who("Bearer alice") == "alice")
        #expect(try who("Bearer bob") == "bob", "Bob must not get Alice's reply")
        #expect(try who("Bearer alice") == "alice")
        #expect(transport.requests.count == 2, "Alice's second call is a hit")
    }

    // MARK: quota

    @Test func aRateLimitedReplyWithoutWaitingIsTheAnswerAtOnce() throws {
        let transport = ScriptedTransport([.json(429, #"{"error":"slow"}"#, headers: [HTTPHeader("Retry-After", "9")])])
        let sleeps = Recorder<Double>()
        let api = try client(transport) { $0.requests.clock = RunClock(now: { Self.now }, sleep: { seconds, _ in sleeps.add(seconds) }) }
        #expect(throws: DouctlError.self) { try api.send(APIRequest(path: "/v2/x")) }
        #expect(transport.requests.count == 1 && sleeps.all.isEmpty)
    }

    @Test func aResetAnnouncedByAnotherOriginNeverBlocksTheAPI() throws {
        let directory = ConfigDirectory(path: TemporaryDirectory.make(prefix: "path-quota"))
        let elsewhere = HTTPResponse(head: HTTPResponseHead(status: 429, headers: [HTTPHeader("Retry-After", "3600")], url: "https://cdn.example/x"), body: [])
        let transport = ScriptedTransport([.reply(elsewhere), .json(200, "{}")])
        let api = try client(transport) { $0.serverRateLimit = ServerRateLimits(directory: directory, profile: "sandbox") }
        // The API redirected to another origin, which announced an hour's reset.
        _ = try? api.send(APIRequest(path: "/v2/redirected"))
        _ = try api.send(APIRequest(path: "/v2/x"))
        #expect(transport.requests.count == 2, "the API's own origin is not blocked by the CDN's reset")
    }

    @Test func aResetTheAPIAnnouncesStopsTheNextRequestBeforeSending() throws {
        let directory = ConfigDirectory(path: TemporaryDirectory.make(prefix: "path-quota"))
        let transport = ScriptedTransport([.json(200, "{}", headers: [HTTPHeader("Backoff", "60")])])
        let api = try client(transport) { $0.serverRateLimit = ServerRateLimits(directory: directory, profile: "sandbox") }
        _ = try api.send(APIRequest(path: "/v2/x"))
        do {
            _ = try api.send(APIRequest(path: "/v2/y"))
            Issue.record("sent into a Backoff")
        } catch {
            guard case .api(let apiError) = error else { Issue.record("\(error)"); return }
            #expect(apiError.kind == .rateLimited && apiError.message.contains("Backoff: 60"), "\(apiError.message)")
        }
        #expect(transport.requests.count == 1)
    }

    @Test func theQuotasLongerWaitsAreSaid() throws {
        let directory = ConfigDirectory(path: TemporaryDirectory.make(prefix: "path-quota"))
        let transport = ScriptedTransport([.json(200, "{}"), .json(200, "{}")])
        let lines = Recorder<String>()
        let clock = LockedValue(VirtualClock.start)
        var profile = try TestProfiles.douban()
        let quota = try #require(RateQuota("1/10s"))
        profile.rateLimit = quota
        profile.rateLimitText = "1/10s"
        let api = try client(transport, profile: profile) {
            $0.requests.clock = RunClock(now: { clock.value }, sleep: { seconds, _ in clock.withLock { $0 += seconds } })
            $0.requests.announce = { lines.add($0) }
            $0.rateLimiter = ClientRateLimiter(quota: quota, directory: directory, profile: "sandbox")
        }
        _ = try api.send(APIRequest(path: "/v2/x"))
        _ = try api.send(APIRequest(path: "/v2/x"))
        #expect(clock.value - VirtualClock.start >= 9.9)
        #expect(lines.all.count == 1 && lines.all.first?.contains("rate_limit 1/10s") == true, "\(lines.all)")
    }
}
