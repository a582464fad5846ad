import DouctlHTTP
import DouctlJSON
import DouctlServer
import DouctlSystem

/// The interactive OAuth2 flows of `douctl auth login` (RFC 6749, 7636, 8252, 8628). Each returns the token
/// endpoint's grant; storing it is the caller's job.
public final class OAuthLogin {
    public let profile: ResolvedProfile
    private let endpoint: TokenEndpoint
    private let console: LoginConsole

    public init(profile: ResolvedProfile, http: any HTTPTransport, console: LoginConsole, recorder: ExchangeRecorder? = nil) {
        self.profile = profile
        endpoint = TokenEndpoint(profile: profile, http: http, recorder: recorder)
        self.console = console
    }

    // MARK: - browser + loopback listener (RFC 6749 §4.1, RFC 8252, RFC 7636)

    public func web() throws(DouctlError) -> TokenGrant {
        let authorizeURL = try require(profile.authorizeURL, "authorize_url")
        _ = try require(profile.clientID, "client_id")
        let redirect = LoopbackRedirect(redirectURI: profile.redirectURI, profile: profile.name, asRegistered: profile.redirectURIIsRegistered)
        let pkce = PKCE()
        let state = Self.randomState()
        let listener = try CallbackListener(redirect: redirect, state: state)
        defer { listener.stop() }

        let redirectURI = redirect.uri(port: listener.port)
        let nonce = profile.asksForIDToken ? Self.randomState() : nil
        let url = Self.authorizationURL(base: authorizeURL, profile: profile, redirectURI: redirectURI, state: state, pkce: pkce, nonce: nonce)
        showAndOpen(url)
        console.say("Waiting for the browser to return to \(redirectURI) …")

        let (code, iss) = try waitForCallback(listener)
        // RFC 9207 §2.4: an authorization response that names its issuer must name the
        // profile's, or it came from another server (the mix-up attack); nothing is sent.
        if let iss, let issuer = profile.issuer, iss != issuer {
            throw .authentication("the login was refused: the authorization response names issuer '\(TerminalText.escaped(iss))', not the profile's issuer '\(TerminalText.escaped(issuer))' (RFC 9207); nothing was stored")
        }
        return try checkedIDToken(grant(from: endpoint.exchange(code: code, redirectURI: redirectURI, codeVerifier: profile.pkce ? pkce.verifier : nil)), nonce: nonce)
    }

    /// Prints the URL first (so it is there whatever the browser does), worded for what
    /// happens next: a browser douctl opens, or one the person opens.
    private func showAndOpen(_ url: String) {
        let shown = TerminalText.escaped(url)
        guard let open = console.openBrowser, BrowserURL.problem(url) == nil else {
            console.say("Open this URL in a browser to log in:\n  \(shown)")
            if console.openBrowser != nil, let problem = BrowserURL.problem(url) { console.say("Not opened in a browser: \(problem).") }
            return
        }
        console.say("Opening a browser to log in; if none appears, open this URL:\n  \(shown)")
        if !open(url) { console.say("Could not start a browser; open the URL above yourself.") }
    }

    private func waitForCallback(_ listener: CallbackListener) throws(DouctlError) -> (code: String, iss: String?) {
        let deadline = console.now() + console.approvalTimeout
        var warnedWrongStates = 0
        while true {
            let (result, wrongStates) = listener.snapshot()
            if wrongStates > warnedWrongStates {
                warnedWrongStates = wrongStates
                console.say("Ignored a callback whose state does not match this login (a stale or forged link); still waiting.")
            }
            switch result {
            case .code(let code, let iss)?:
                return (code, iss)
            case .denied(let error, let description)?:
                let detail = description.map { "\(error): \($0)" } ?? error
                throw .authentication("the login was refused in the browser (\(detail))")
            case nil:
                break
            }
            if console.isCancelled() { throw .interrupted }
            if console.now() >= deadline {
                throw .authentication("gave up after \(Int(console.approvalTimeout))s waiting for the browser (auth login --wait sets how long)")
            }
            console.sleep(0.05)
        }
    }

    // MARK: - paste-code (a registered web redirect, e.g. a real Douban app)

    public func paste() throws(DouctlError) -> TokenGrant {
        let authorizeURL = try require(profile.authorizeURL, "authorize_url")
        let redirectURI = try require(profile.redirectURI, "redirect_uri")
        _ = try require(profile.clientID, "client_id")
        let pkce = PKCE()
        let state = Self.randomState()
        let nonce = profile.asksForIDToken ? Self.randomState() : nil
        let url = Self.authorizationURL(base: authorizeURL, profile: profile, redirectURI: redirectURI, state: state, pkce: pkce, nonce: nonce)
        showAndOpen(url)
        console.say("After approving, paste the address the browser was sent to (or just the code):")
        guard let line = console.readLine()?.trimmingCharacters(in: " \t\r\n"), !line.isEmpty else {
            if console.isCancelled() { throw .interrupted }
            throw .authentication("no code was pasted")
        }
        let code = try Self.code(fromPasted: line, expectedState: state)
        return try checkedIDToken(grant(from: endpoint.exchange(code: code, redirectURI: redirectURI, codeVerifier: profile.pkce ? pkce.verifier : nil)), nonce: nonce)
    }

    /// The code from a pasted redirect URL (state checked when present) or a bare code.
    static func code(fromPasted text: String, expectedState: String) throws(DouctlError) -> String {
        guard text.containsBytes("?") || text.containsBytes("code=") || text.containsBytes("error=") else { return text }
        let queryText = text.firstIndex(of: "?").map { String(text[text.index(after: $0)...]) } ?? text
        let query = URLParts.parseQuery(queryText.split(separator: "#").first.map(String.init) ?? queryText)
        func value(_ name: String) -> String? { query.first { $0.0 == name }?.1 }
        if let error = value("error") {
            throw .authentication("the login was refused in the browser (\(error))")
        }
        if let state = value("state"), state != expectedState {
            throw .authentication("the pasted address belongs to another login attempt (its state does not match); run douctl auth login again")
        }
        guard let code = value("code"), !code.isEmpty else {
            throw .authentication("the pasted address has no code")
        }
        return code
    }

    // MARK: - device authorization grant (RFC 8628)

    public func device() throws(DouctlError) -> TokenGrant {
        guard let deviceURL = profile.deviceAuthorizationURL else {
            throw .usage("profile '\(profile.name)' has no device_authorization_url (Douban has no device flow); use --web or --paste")
        }
        _ = try require(profile.clientID, "client_id")
        // --wait counts from the start of the login, the device request included.
        let deadline = console.now() + console.approvalTimeout
        let authorization = try authorizeDevice(deviceURL, deadline: deadline)
        showDeviceInstructions(authorization)
        return try checkedIDToken(pollForApproval(authorization, deadline: deadline), nonce: nil)
    }

    /// The longest wait between two polls, whatever the server asks (`interval`, `slow_down`,
    /// back-off): a login must notice approval within a minute.
    static let maximumInterval = 60.0
    /// Network failures in a row (no connection, a timeout, a broken connection) after which
    /// a device login stops with the network error instead of polling on.
    static let maximumNetworkFailures = 3

    /// The device authorization endpoint's answer (RFC 8628 §3.2), its timings kept within
    /// reason.
    struct DeviceAuthorization: Equatable {
        var deviceCode: String
        var userCode: String
        var verificationURI: String
        var verificationURIComplete: String?
        /// Seconds the device code lives (RFC 8628's `expires_in`).
        var lifetime: Double
        /// Seconds between polls.
        var interval: Double

        init?(json: JSON) {
            guard let deviceCode = json["device_code"]?.stringValue,
                  let userCode = json["user_code"]?.stringValue,
                  let verificationURI = json["verification_uri"]?.stringValue ?? json["verification_url"]?.stringValue else { return nil }
            self.deviceCode = deviceCode
            self.userCode = userCode
            self.verificationURI = verificationURI
            verificationURIComplete = json["verification_uri_complete"]?.stringValue
            // A lifetime that is not a positive number (negative, zero, NaN, text) is no
            // lifetime: RFC 8628's 10 minutes stand in, and --wait bounds the wait anyway.
            lifetime = Self.seconds(json["expires_in"]).flatMap { $0 > 0 ? min($0, 86400) : nil } ?? 600
            // Trust the server's interval only within reason: 0 would poll in a tight loop, a
            // huge or infinite one would never poll; a negative or unreadable one is RFC 8628's 5 s.
            interval = Self.seconds(json["interval"]).flatMap { $0 >= 0 ? min(max($0, 1), OAuthLogin.maximumInterval) : nil } ?? 5
        }

        /// A number of seconds as a server may send it: a JSON number or a numeric string
        /// (Coding sends its lifetimes as strings); nil for NaN and anything else.
        static func seconds(_ value: JSON?) -> Double? {
            guard let value else { return nil }
            let number = value.doubleValue ?? value.stringValue.flatMap { Double($0.trimmingCharacters(in: " ")) }
            guard let number, !number.isNaN else { return nil }
            return number
        }
    }

    private func authorizeDevice(_ url: String, deadline: Double) throws(DouctlError) -> DeviceAuthorization {
        let (status, reply) = try requestDeviceCode(url, deadline: deadline)
        guard (200..<300).contains(status), let reply, let authorization = DeviceAuthorization(json: reply) else {
            let detail = reply?["error"]?.stringValue ?? reply?["msg"]?.stringValue ?? "HTTP \(status)"
            throw .authentication("the device authorization request failed (\(detail))")
        }
        return authorization
    }

    private func showDeviceInstructions(_ authorization: DeviceAuthorization) {
        // All three come from the server: shown escaped on one line each, opened only when
        // BrowserURL allows (a server's javascript: or --option is never handed to a browser).
        let complete = authorization.verificationURIComplete
        console.say("To log in, open \(TerminalText.escaped(authorization.verificationURI)) and enter the code: \(TerminalText.escaped(authorization.userCode))")
        if let complete { console.say("(or open \(TerminalText.escaped(complete)), which carries the code)") }
        if let open = console.openBrowser {
            let page = complete.flatMap { BrowserURL.problem($0) == nil ? $0 : nil } ?? authorization.verificationURI
            if let problem = BrowserURL.problem(page) {
                console.say("Not opened in a browser: \(problem); open the page yourself if you trust it.")
            } else {
                // --device is the login for machines without one: a browser that does not
                // start is no news (the line above already says to open the page).
                if open(page) { console.say("Opened that page in a browser.") }
            }
        }
        console.say("Waiting for approval …")
    }

    /// Polls the token endpoint until the login is approved, refused, or out of time. No
    /// sleep outlasts the device code or `--wait`: when the next poll would come after
    /// either, the login sleeps only until then and stops with its message — or with the
    /// network error, when the last poll could not reach the server.
    private func pollForApproval(_ authorization: DeviceAuthorization, deadline: Double) throws(DouctlError) -> TokenGrant {
        var interval = authorization.interval
        let expiry = console.now() + authorization.lifetime
        let end = min(expiry, deadline)
        var networkFailures = 0
        var lastFailure: TransportError?
        while true {
            let left = end - console.now()
            if interval >= left {
                try pause(max(left, 0))
                if let lastFailure { throw .transport(lastFailure) }
                if expiry <= deadline {
                    throw .authentication("the device code expired before it was approved; run douctl auth login again")
                }
                throw .authentication("gave up after \(Int(console.approvalTimeout))s waiting for approval (auth login --wait sets how long)")
            }
            try pause(interval)
            let result = try pollDevice(authorization.deviceCode)
            if case .unreachable = result {} else {
                networkFailures = 0
                lastFailure = nil
            }
            switch result {
            case .granted(let grant):
                return grant
            case .pending:
                continue
            case .slowDown:
                interval = min(interval + 5, Self.maximumInterval)
            case .backOff(let reason):
                interval = min(max(interval, 1) * 2, Self.maximumInterval) // RFC 8628 §3.5
                console.say("\(TerminalText.escaped(reason)); trying again in \(Int(interval))s.")
            case .unreachable(let error):
                // A server that went away does not come back by waiting out --wait: a few
                // backed-off polls, then the network error.
                networkFailures += 1
                if networkFailures >= Self.maximumNetworkFailures { throw .transport(error) }
                lastFailure = error
                interval = min(max(interval, 1) * 2, Self.maximumInterval) // RFC 8628 §3.5
                console.say("The token endpoint did not answer (\(TerminalText.escaped(error.message))); trying again in \(Int(interval))s.")
            }
        }
    }

    /// What one device-flow poll means for the next.
    enum PollResult: Equatable {
        case granted(TokenGrant)
        /// Not approved yet (`authorization_pending`).
        case pending
        /// `slow_down`: poll five seconds less often from now on.
        case slowDown
        /// The endpoint answered "not now" (429, 5xx): wait twice as long. The reason is
        /// told to the user.
        case backOff(String)
        /// The endpoint could not be reached (no connection, a timeout, a broken
        /// connection): wait twice as long, a few times at most.
        case unreachable(TransportError)
    }

    /// One poll (RFC 8628 §3.4, §3.5), judged; a refusal that ends the login is thrown.
    private func pollDevice(_ deviceCode: String) throws(DouctlError) -> PollResult {
        let answer: TokenEndpoint.Answer
        do {
            answer = try endpoint.pollDevice(deviceCode: deviceCode)
        } catch .transport(let error) where error.isTransient {
            return .unreachable(error)
        } catch .badReply(_, let status?) where Self.isTransient(status: status) {
            return .backOff("The token endpoint answered HTTP \(status)")
        }
        switch answer {
        case .granted(let grant):
            return .granted(grant)
        case .refused(let error) where Self.isTransient(status: error.status):
            return .backOff("The token endpoint answered HTTP \(error.status) (\(error.summary))")
        case .refused(let error):
            switch error.error {
            case "authorization_pending": return .pending
            case "slow_down": return .slowDown
            case "access_denied": throw .authentication("the login was denied")
            case "expired_token": throw .authentication("the device code expired before it was approved; run douctl auth login again")
            default: throw .authentication("device login failed (\(error.summary))")
            }
        }
    }

    /// Statuses that say "not now" rather than "no": a proxy or an overloaded server.
    static func isTransient(status: Int) -> Bool {
        status == 429 || status == 500 || status == 502 || status == 503 || status == 504
    }

    /// The device authorization POST (RFC 8628 §3.1), tried again when the server answers
    /// "not now" (429, 5xx): up to five tries, backing off 1, 2, 4, 8 s, within the login's
    /// wait. A network failure is not tried again here (the HTTP layer's --retry has had its
    /// go): a server that refuses the connection ends the login at once, exit 7.
    private func requestDeviceCode(_ url: String, deadline: Double) throws(DouctlError) -> (status: Int, json: JSON?) {
        let fields = [("scope", profile.scopeParameter)]
        var delay = 1.0
        for attempt in 1...5 {
            let last = attempt == 5 || console.now() + delay >= deadline
            let answer = try endpoint.postForm(url, fields)
            guard Self.isTransient(status: answer.status), !last else { return answer }
            console.say("The device endpoint answered HTTP \(answer.status); trying again in \(Int(delay))s.")
            try pause(delay)
            delay *= 2
        }
        return try endpoint.postForm(url, fields)
    }

    private func pause(_ seconds: Double) throws(DouctlError) {
        var remaining = seconds
        while remaining > 0 {
            if console.isCancelled() { throw .interrupted }
            let step = min(remaining, 0.1)
            console.sleep(step)
            remaining -= step
        }
        if console.isCancelled() { throw .interrupted }
    }

    // MARK: - helpers

    /// The grant, once its ID token passes `TokenGrant.idTokenProblem` (a login that asked
    /// for the openid scope); nothing is stored otherwise.
    func checkedIDToken(_ grant: TokenGrant, nonce: String?) throws(DouctlError) -> TokenGrant {
        guard profile.asksForIDToken else { return grant }
        if let problem = grant.idTokenProblem(issuer: profile.issuer, clientID: profile.clientID, nonce: nonce, now: console.now()) {
            throw .authentication("the login was refused: \(problem); nothing was stored")
        }
        return grant
    }

    private func grant(from answer: TokenEndpoint.Answer) throws(DouctlError) -> TokenGrant {
        switch answer {
        case .granted(let grant): return grant
        case .refused(let error): throw .authentication("the token endpoint refused the code (\(error.summary))")
        }
    }

    private func require(_ value: String?, _ key: String) throws(DouctlError) -> String {
        guard let value, !value.isEmpty else {
            if key == "client_id", profile.lacksAnApp {
                throw .usage("profile '\(profile.name)' has no client_id, and Douban admits no new apps; with an app of your own: douctl config set client_id VALUE --profile \(profile.name); else \(DouctlError.firstSteps)")
            }
            throw .usage("profile '\(profile.name)' has no \(key); set it with: douctl config set \(key) VALUE --profile \(profile.name)")
        }
        return value
    }

    static func randomState() -> String {
        var generator = SystemRandomNumberGenerator()
        return PKCE.randomString(length: 32, using: &generator)
    }

    /// The authorization request (RFC 6749 §4.1.1 + PKCE). Scopes are space-separated for a
    /// plain OAuth2 profile, comma-separated for Douban and Coding (`scopeParameter`).
    public static func authorizationURL(base: String, profile: ResolvedProfile, redirectURI: String, state: String, pkce: PKCE, nonce: String? = nil) -> String {
        var fields = [
            ("client_id", profile.clientID ?? ""),
            ("redirect_uri", redirectURI),
            ("response_type", "code"),
        ]
        if !profile.scopes.isEmpty { fields.append(("scope", profile.scopeParameter)) }
        fields.append(("state", state))
        if profile.pkce { fields += [("code_challenge", pkce.challenge), ("code_challenge_method", pkce.method)] }
        // OpenID Connect Core §3.1.2.1: the nonce comes back in the ID token, tying it to this login.
        if let nonce { fields.append(("nonce", nonce)) }
        return FormEncoding.appendQuery(fields, to: base)
    }
}

/// The one-shot HTTP listener on the loopback host of the redirect URI that receives the browser's redirect. It lives
/// only for the login and answers the browser with a short page.
final class CallbackListener: Sendable {
    enum Result: Sendable, Equatable {
        /// The code, and the issuer the response names (RFC 9207's `iss`), when it does.
        case code(String, String?)
        case denied(String, String?)
    }

    private let server: HTTPServer
    private let state: LockedValue<(result: Result?, wrongStates: Int)>

    var port: UInt16 { server.port }

    init(redirect: LoopbackRedirect, state expectedState: String) throws(DouctlError) {
        let state = LockedValue<(result: Result?, wrongStates: Int)>((nil, 0))
        self.state = state
        // The server hands handlers the percent-decoded path.
        let path = PercentEncoding.decode(redirect.path, plusAsSpace: true)
        do {
            server = try HTTPServer(host: redirect.bindHost, port: redirect.port) { request in
                guard request.path == path else {
                    return CallbackListener.page(404, "Not found", "This address is not the douctl login callback.")
                }
                if state.value.result != nil {
                    return CallbackListener.page(409, "Already done", "douctl already received a response for this login.")
                }
                // The state comes first, for errors too: another page must not be able to
                // abort this login by sending the browser here with error=….
                guard request.queryValue("state") == expectedState else {
                    state.withLock { $0.wrongStates += 1 }
                    return CallbackListener.page(400, "Wrong login", "This link does not belong to the login douctl is waiting for.")
                }
                if let error = request.queryValue("error") {
                    let result = Result.denied(error, request.queryValue("error_description"))
                    return CallbackListener.page(200, "Login refused", "douctl was not authorized (\(HTMLText.escape(error))). You can close this tab.") {
                        state.withLock { $0.result = $0.result ?? result }
                    }
                }
                guard let code = request.queryValue("code"), !code.isEmpty else {
                    return CallbackListener.page(400, "No code", "The authorization server sent no code.")
                }
                return CallbackListener.page(200, "Logged in", "douctl is logged in. You can close this tab.") {
                    let iss = request.queryValue("iss")
                    state.withLock { $0.result = $0.result ?? .code(code, iss) }
                }
            }
            try server.start()
        } catch {
            throw .localInput("cannot listen on \(redirect.host):\(redirect.port) for the login callback (\(error))")
        }
    }

    func snapshot() -> (Result?, Int) {
        let value = state.value
        return (value.result, value.wrongStates)
    }

    func stop() { server.stop() }

    /// A small HTML page. `afterSending` runs once the page is written, so the login
    /// finishes (and the listener closes) only after the browser has its answer.
    static func page(_ status: Int, _ title: String, _ text: String, afterSending: (@Sendable () -> Void)? = nil) -> HTTPServerResponse {
        let html = Array("<!doctype html><meta charset=utf-8><title>douctl: \(title)</title><body style=\"font-family:sans-serif;margin:3em\"><h1>\(title)</h1><p>\(text)</p>".utf8)
        let headers = [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store")]
        guard let afterSending else {
            return HTTPServerResponse(status: status, headers: headers, body: .bytes(html))
        }
        var response = HTTPServerResponse(status: status, headers: headers, body: .stream(length: Int64(html.count)) { writer in
            try writer.write(html)
            afterSending()
        })
        response.closeConnection = true
        return response
    }
}
