import DouctlHTTP
import DouctlSystem

/// `--cache DURATION`, `--cache-only`: buffered GET and HEAD replies from and into the
/// response cache. It sits below the credentials layer, so it sees the request as it goes
/// out: an entry is keyed by the credential actually sent (the stored token, your own
/// `-H Authorization`, an API key header or query, the cookie session), the URL and the Unix
/// socket (`ResponseCache.key(profile:request:unixSocket:)`), and is served only to a request
/// that sends the same, with the same values of the headers its `Vary` names. A fresh entry
/// (`CachePolicy.isFresh`: every `Cache-Control` line read) is served; a stale one with validators is
/// revalidated (RFC 9111 §4.3, a 304 renews it); else the network (storing a plain
/// success); else — when the network fails or answers 5xx — a stale copy with a warning
/// (stale-if-error). Error replies are never stored, so never served.
final class CacheLayer: RequestLayer {
    let next: RequestLayer
    let policy: CachePolicy
    let profile: ResolvedProfile
    let clock: RunClock
    let unixSocket: String?
    /// Whether this run already said that a reply's `no-store` kept it out of the cache.
    private let toldNoStore = LockedValue(false)

    init(_ policy: CachePolicy, profile: ResolvedProfile, clock: RunClock, unixSocket: String?, next: RequestLayer) {
        self.policy = policy
        self.profile = profile
        self.clock = clock
        self.unixSocket = unixSocket
        self.next = next
    }

    func send(_ request: OutgoingRequest, _ reply: ReplyHandling) throws(DouctlError) -> HTTPResponse {
        // Only replies that are read are cached, and only safe ones; a request made
        // conditional, partial or no-store by the caller gets the server's own answer.
        guard reply.streaming == nil, ["GET", "HEAD"].contains(request.http.method),
              !ResponseCache.bypasses(request.http) else {
            return try next.send(request, reply)
        }
        let key = ResponseCache.key(profile: profile.name, request: request.http, unixSocket: unixSocket,
                                    volatileQuery: ResponseCache.volatileQuery(signing: profile.signing))
        let now = clock.now()
        let entry = try policy.cache.load(key, request: request.http)
        if let entry, policy.cacheOnly || policy.isFresh(entry, request: request.http, now: now) {
            policy.cache.count(.hits)
            return entry.response
        }
        if policy.cacheOnly {
            throw .notCached("not in the cache: \(request.summary) (--cache-only sends nothing; nothing was contacted)")
        }
        var conditional = request
        if let entry { conditional.http.headers += entry.conditionalHeaders }
        var response: HTTPResponse
        do {
            response = try next.send(conditional, reply)
        } catch .transport(let error) where error.cameFromTheNetwork {
            guard let entry else { throw .transport(error) }
            policy.note("\(error.message); using the cached reply from \(Timestamp.describeRemaining(now - entry.storedAt)) ago")
            policy.cache.count(.hits)
            return entry.response
        }
        if response.status == 304 {
            if let entry, entry.hasValidator, entry.isConfirmed(by: response.head) {
                policy.cache.count(.revalidations)
                do {
                    return try policy.cache.refresh(key, entry, with: response.head, request: request.http, now: now).response
                } catch {
                    policy.note(error.message)
                    return entry.response
                }
            }
            // A 304 that is not about what we hold (another ETag, or none asked for):
            // its "not modified" confirms nothing; ask again for the whole reply.
            if entry?.hasValidator == true {
                policy.note("the server answered 304 Not Modified for a version douctl does not hold; fetching the whole reply")
                response = try next.send(request, reply)
            }
            // Still "not modified", with nothing asked or nothing held: no body to serve.
            if response.status == 304 {
                throw .badReply("the server answered 304 Not Modified, but douctl holds no copy it confirms: \(request.summary)", httpStatus: 304)
            }
        }
        if ResponseCache.isStorable(response, request: request.http) {
            do { try policy.cache.store(key, response, request: request.http, now: now) } catch { policy.note(error.message) }
        } else if (200..<300).contains(response.status), CacheControl(response.head.headers).has("no-store") {
            // --cache asked for a copy the server forbids: say why there is none, once a run.
            let first = toldNoStore.withLock { told -> Bool in
                defer { told = true }
                return !told
            }
            if first { policy.note("the reply says Cache-Control: no-store, so --cache keeps no copy of it (\(request.summary))") }
        } else if response.status >= 500, let entry {
            policy.note("the server answered HTTP \(response.status); using the cached reply from \(Timestamp.describeRemaining(now - entry.storedAt)) ago")
            policy.cache.count(.hits)
            return entry.response
        }
        policy.cache.count(.misses)
        return response
    }
}
