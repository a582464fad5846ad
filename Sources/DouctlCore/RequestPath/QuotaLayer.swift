import DouctlHTTP
import DouctlSystem

/// The one owner of rate limits: the profile's own `rate_limit` quota, and what servers say
/// (`Retry-After`, `RateLimit`, `RateLimit-*`, `X-RateLimit-*`, Kinto's `Backoff`, read by
/// `RateLimitNotice`), recorded per origin and shared by every douctl of the profile, so a
/// reset announced by another origin (a redirect's target, a CDN) never blocks the API.
/// A rate-limited reply is waited out and sent again only with `--wait-on-rate-limit`
/// (every wait said on stderr: how long, why, before which try); without it the reply
/// stands and the command exits 6 at once. All waits are on the run's clock and end at
/// Ctrl-C or `--max-time`.
final class QuotaLayer: RequestLayer {
    let next: RequestLayer
    let profile: ResolvedProfile
    let requests: RequestSettings
    let rateLimiter: ClientRateLimiter?
    let serverRateLimits: ServerRateLimits?

    init(profile: ResolvedProfile, requests: RequestSettings, rateLimiter: ClientRateLimiter?, serverRateLimits: ServerRateLimits?, next: RequestLayer) {
        self.profile = profile
        self.requests = requests
        self.rateLimiter = rateLimiter
        self.serverRateLimits = serverRateLimits
        self.next = next
    }

    func send(_ request: OutgoingRequest, _ reply: ReplyHandling) throws(DouctlError) -> HTTPResponse {
        let clock = requests.clock
        var waited = 0.0
        var tries = 1
        // Just waited out a reset this process was told of: the shared record of the same
        // reset is not waited for twice.
        var justWaited = false
        while true {
            try waitForTurn(request, honouringServerReset: !justWaited)
            let response = try next.send(request, reply)
            let notice = RateLimitNotice.read(response.head, now: clock.now())
            let limited = profile.rules.meansRateLimited(response)
            // Recorded for the origin that said it: after a redirect, the reply's.
            if let notice, let until = notice.resetAt, notice.isExhausted || limited,
               let record = serverRateLimit(for: response.head.url ?? request.http.url), sameOrigin(response.head.url, request.http.url) {
                record.record(until: until, reason: notice.reason, now: clock.now())
            }
            guard let rateLimitWait = requests.rateLimitWait, limited, request.isReplayable else { return response }
            let (seconds, reason) = Self.delay(for: response, notice: notice, now: clock.now())
            guard waited + seconds <= rateLimitWait.maximum else { return response }
            waited += seconds
            tries += 1
            if !rateLimitWait.wait(seconds, "\(reason); before try \(tries)") { throw .interrupted }
            justWaited = true
        }
    }

    /// Before a send: a reset the server announced for this origin (by any douctl process of
    /// the profile) is waited for with `--wait-on-rate-limit`, else nothing is sent (exit 6);
    /// then the profile's `rate_limit` quota, waited for interruptibly.
    private func waitForTurn(_ request: OutgoingRequest, honouringServerReset: Bool) throws(DouctlError) {
        let clock = requests.clock
        if honouringServerReset, let record = serverRateLimit(for: request.http.url), let (until, reason) = record.blockedUntil(now: clock.now()) {
            let seconds = until - clock.now()
            guard let rateLimitWait = requests.rateLimitWait, seconds <= rateLimitWait.maximum else {
                throw .api(APIError(
                    kind: .rateLimited, httpStatus: 429,
                    message: "the server's quota is spent for \(Int(max(seconds, 1).rounded(.up)))s more, per \(reason); nothing was sent",
                    request: request.summary, hint: "the quota is shared by every douctl of profile '\(profile.name)'; pass --wait-on-rate-limit to wait for it"))
            }
            if seconds > 0, !rateLimitWait.wait(seconds, reason) { throw .interrupted }
        }
        let (cancellation, announce) = (requests.cancellation, requests.announce)
        let quota = profile.rateLimitText.map { "rate_limit \($0)" } ?? "rate_limit"
        try rateLimiter?.acquire(now: clock.now) { seconds in
            // Short waits pace a walk without a word; a wait a person would notice is said.
            if seconds >= 1 { announce?("\(quota) of profile '\(profile.name)': waiting \(Timestamp.describeRemaining(seconds))") }
            clock.sleep(seconds, cancellation)
            return !cancellation.isRequested
        }
    }

    /// The shared record of the server's resets for `url`'s origin, for requests to the
    /// profile's own API: a URL elsewhere (`api https://other.example/x`, a download from a
    /// CDN) neither spends nor waits for the profile's quota.
    private func serverRateLimit(for url: String) -> ServerRateLimit? {
        guard let serverRateLimits, profile.isOwnOrigin(url), let parsed = HTTPURL(url) else { return nil }
        return serverRateLimits.record(for: "\(parsed.scheme)://\(parsed.host):\(parsed.effectivePort)")
    }

    private func sameOrigin(_ reply: String?, _ request: String) -> Bool {
        guard let reply else { return true }
        guard let a = HTTPURL(reply), let b = HTTPURL(request) else { return false }
        return a.sameOrigin(as: b)
    }

    /// How long to wait out a rate-limited reply: the server's word (`Retry-After`, else the
    /// reset the other headers announce, each capped at `RateLimitNotice.longestWait`);
    /// else a minute (Douban's X-Ratelimit headers tell the hourly quota, not when it
    /// resets).
    static func delay(for response: HTTPResponse, notice: RateLimitNotice?, now: Double) -> (Double, String) {
        if let (seconds, text) = RateLimitNotice.retryAfter(response.head, now: now), seconds.isFinite {
            return (min(max(seconds, 1), RateLimitNotice.longestWait), "Retry-After: \(text)")
        }
        if let notice, let until = notice.resetAt {
            return (max(until - now, 1), notice.reason)
        }
        return (60, "HTTP \(response.status), no Retry-After")
    }
}

/// Where the resets servers announced are kept: per origin, for one profile, in its config
/// directory (`ServerRateLimit`).
public struct ServerRateLimits: Sendable {
    let directory: ConfigDirectory
    let profile: String

    public init(directory: ConfigDirectory, profile: String) {
        self.directory = directory
        self.profile = profile
    }

    public func record(for origin: String) -> ServerRateLimit {
        ServerRateLimit(directory: directory, profile: profile, origin: origin)
    }
}
