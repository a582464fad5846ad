import DouctlServer
import DouctlSystem

/// The caller behind a valid Douban access token.
struct DoubanViewer {
    let userID: Int64
    let token: String
    let scopes: [String]
}

/// Douban's token check for its API calls: Bearer tokens only, a per-token hourly quota
/// (`X-Ratelimit-*` headers), and scopes.
struct DoubanAuthentication: Sendable {
    let state: LockedValue<SandboxState>
    let configuration: SandboxConfiguration

    /// Checks the Bearer token as Douban does (102 / 103 / 106), counts the call against the
    /// token's hourly quota (111), and checks `scope` (1000). With `optional`, a request without
    /// an Authorization header is let through anonymously.
    func authenticate(_ exchange: Exchange, scope: String?, optional: Bool = false) throws -> DoubanViewer? {
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
        let now = configuration.clock.now()
        let limit = configuration.rateLimitPerHour
        let outcome: Result<DoubanViewer, DoubanError> = state.withLock { state in
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
                return .success(DoubanViewer(userID: record.userID, token: token, scopes: record.scopes))
            }
        }
        let viewer = try outcome.get()
        if let scope, !viewer.scopes.contains(scope) { throw DoubanError.needPermission }
        return viewer
    }

    func requireViewer(_ exchange: Exchange, scope: String) throws -> DoubanViewer {
        guard let viewer = try authenticate(exchange, scope: scope) else { throw DoubanError.tokenMissing }
        return viewer
    }

    /// `shuo_basic_r` for reads, `shuo_basic_w` for changes.
    func shuoViewer(_ exchange: Exchange) throws -> DoubanViewer {
        try requireViewer(exchange, scope: exchange.request.method == "GET" ? "shuo_basic_r" : "shuo_basic_w")
    }
}
