@testable import DouctlCore
import DouctlTestSupport
import DouctlHTTP
import DouctlJSON
import DouctlSystem
import Testing

/// The token endpoint and the login flows against a scripted transport, on a virtual clock:
/// a device login that polls for minutes runs in a millisecond.
@Suite("OAuth flows")
struct OAuthFlowTests {
    static let grantJSON = #"{"access_token":"a-1","refresh_token":"r-1","expires_in":3600,"douban_user_id":"1000001","douban_user_name":"阿北"}"#

    // MARK: token endpoint

    @Test func theCodeExchangeSendsWhatRFC6749AndPKCEAsk() throws {
        let transport = ScriptedTransport([.json(200, Self.grantJSON)])
        let endpoint = TokenEndpoint(profile: try TestProfiles.douban(), http: transport)
        let answer = try endpoint.exchange(code: "c-1", redirectURI: "http://127.0.0.1:5000/cb", codeVerifier: "v-1")
        #expect(answer == .granted(TokenGrant(accessToken: "a-1", refreshToken: "r-1", expiresIn: 3600, userID: "1000001", userName: "阿北")))
        let sent = try #require(transport.requests.first)
        #expect(sent.method == "POST")
        #expect(sent.url == "http://127.0.0.1:8089/service/auth2/token")
        #expect(sent.header("Content-Type") == "application/x-www-form-urlencoded")
        #expect(sent.header("Accept") == "application/json")
        #expect(sent.form.map(\.0) == ["grant_type", "code", "redirect_uri", "code_verifier", "client_id", "client_secret"])
        #expect(sent.formValue("grant_type") == "authorization_code")
        #expect(sent.formValue("code") == "c-1")
        #expect(sent.formValue("redirect_uri") == "http://127.0.0.1:5000/cb")
        #expect(sent.formValue("code_verifier") == "v-1")
    }

    @Test func basicClientAuthenticationGoesInAHeader() throws {
        var profile = try TestProfiles.douban()
        profile.tokenAuth = .basic
        profile.clientID = "id:1"
        profile.clientSecret = "s e"
        let transport = ScriptedTransport([.json(200, Self.grantJSON)])
        _ = try TokenEndpoint(profile: profile, http: transport).refresh(refreshToken: "r-0")
        let sent = try #require(transport.requests.first)
        // RFC 6749 §2.3.1: form-encoded id and secret, joined by a colon, in base64.
        #expect(sent.header("Authorization") == "Basic " + Base64.encode(Array("id%3A1:s+e".utf8)))
        #expect(sent.formValue("client_id") == nil)
        #expect(sent.formValue("client_secret") == nil)
        #expect(sent.formValue("grant_type") == "refresh_token")
        #expect(sent.formValue("refresh_token") == "r-0")
    }

    @Test func codingWrapsItsGrantAndSendsTheLifetimeAsAString() throws {
        let transport = ScriptedTransport([.json(200, #"{"code":0,"data":{"access_token":"c-a","refresh_token":"c-r","expires_in":"864000"}}"#)])
        let answer = try TokenEndpoint(profile: try TestProfiles.coding(), http: transport).refresh(refreshToken: "old")
        #expect(answer == .granted(TokenGrant(accessToken: "c-a", refreshToken: "c-r", expiresIn: 864000)))
    }

    @Test func refusalsKeepTheirErrorCodeAndDescription() throws {
        let transport = ScriptedTransport([
            .json(400, #"{"error":"invalid_grant","error_description":"the code was used"}"#),
            .json(400, #"{"msg":"invalid_refresh_token: r-0","code":119,"request":"POST /service/auth2/token"}"#),
        ])
        let endpoint = TokenEndpoint(profile: try TestProfiles.douban(), http: transport)
        #expect(try endpoint.exchange(code: "c", redirectURI: nil, codeVerifier: nil)
                == .refused(TokenEndpointError(status: 400, error: "invalid_grant", code: nil, description: "the code was used")))
        #expect(try endpoint.refresh(refreshToken: "r-0")
                == .refused(TokenEndpointError(status: 400, error: "invalid_refresh_token", code: "119", description: nil)))
    }

    @Test func aTokenEndpointThatAnswersWithoutJSONIsABadReply() throws {
        let transport = ScriptedTransport([.reply(HTTPResponse(head: HTTPResponseHead(status: 502), body: Array("<html>bad gateway".utf8)))])
        #expect(throws: DouctlError.badReply("the token endpoint answered HTTP 502 without JSON (http://127.0.0.1:8089/service/auth2/token)", httpStatus: 502)) {
            try TokenEndpoint(profile: try TestProfiles.douban(), http: transport).refresh(refreshToken: "r")
        }
    }

    @Test func aProfileWithoutATokenURLCannotRefresh() throws {
        var profile = try TestProfiles.douban()
        profile.tokenURL = nil
        let transport = ScriptedTransport()
        #expect(throws: DouctlError.usage("profile 'sandbox' has no token_url; set one with: douctl config set token_url URL --profile sandbox")) {
            try TokenEndpoint(profile: profile, http: transport).refresh(refreshToken: "r")
        }
        #expect(transport.requests.isEmpty)
    }

    // MARK: device flow (RFC 8628)

    static let deviceReply = ScriptedTransport.Answer.json(200,
        #"{"device_code":"d-1","user_code":"WDJB-MJHT","verification_uri":"http://127.0.0.1:8089/device","interval":5,"expires_in":600}"#)

    static func pending(_ error: String, status: Int = 400) -> ScriptedTransport.Answer {
        .json(status, #"{"error":"\#(error)"}"#)
    }

    /// A device login against `transport` on a virtual clock; returns what it said and when
    /// each request went out.
    struct DeviceLogin {
        let clock = VirtualClock()
        let transport: ScriptedTransport
        var said: [String] = []
        var sentAt: [Double] = []
        var approvalTimeout: Double = 300
        /// The browser launcher the console offers (nil: none).
        var openBrowser: ((String) -> Bool)?

        init(_ answers: [ScriptedTransport.Answer]) {
            transport = ScriptedTransport(answers)
        }

        mutating func run() throws(DouctlError) -> TokenGrant {
            let clock = clock
            let lines = Recorder<String>()
            let times = Recorder<Double>()
            transport.observe = { _ in times.add(clock.now - VirtualClock.start) }
            let console = LoginConsole(say: { lines.add($0) }, readLine: { nil }, openBrowser: openBrowser,
                                       now: { clock.now }, sleep: { clock.sleep($0) }, isCancelled: { false },
                                       approvalTimeout: approvalTimeout)
            defer {
                said = lines.all
                // Seconds after the first request, to the millisecond (the login sleeps in steps).
                sentAt = times.all.map { ($0 * 1000).rounded() / 1000 }
            }
            return try OAuthLogin(profile: try TestProfiles.douban(), http: transport, console: console).device()
        }
    }

    /// Issue 40: --device is the login for machines without a browser; one that does not
    /// start is no news there (before: "Could not start a browser" on every device login).
    @Test func aDeviceLoginSaysNothingOfABrowserThatDidNotStart() throws {
        var failing = DeviceLogin([Self.deviceReply, .json(200, Self.grantJSON)])
        failing.openBrowser = { _ in false }
        _ = try failing.run()
        #expect(!failing.said.contains { $0.contains("browser") }, "\(failing.said)")
        var opening = DeviceLogin([Self.deviceReply, .json(200, Self.grantJSON)])
        opening.openBrowser = { _ in true }
        _ = try opening.run()
        #expect(opening.said.contains("Opened that page in a browser."), "\(opening.said)")
    }

    @Test func pendingSlowDownAndBusyAnswersAreWaitedThrough() throws {
        var login = DeviceLogin([
            Self.deviceReply,
            Self.pending("authorization_pending"),
            Self.pending("slow_down"),
            .json(503, #"{"error":"temporarily_unavailable"}"#),
            .json(200, Self.grantJSON),
        ])
        let grant = try login.run()
        #expect(grant.accessToken == "a-1")
        // Polls every 5 s; slow_down adds 5 s; a 503 doubles the interval.
        #expect(login.sentAt == [0, 5, 10, 20, 40])
        let polls = login.transport.requests.dropFirst()
        #expect(polls.allSatisfy { $0.formValue("grant_type") == "urn:ietf:params:oauth:grant-type:device_code" && $0.formValue("device_code") == "d-1" })
        #expect(login.transport.requests.first?.url == "http://127.0.0.1:8089/service/auth2/device")
        #expect(login.transport.requests.first?.formValue("scope") == "douban_basic_common,shuo_basic_r,shuo_basic_w")
        #expect(login.said.first == "To log in, open http://127.0.0.1:8089/device and enter the code: WDJB-MJHT")
        #expect(login.said.contains("The token endpoint answered HTTP 503 (temporarily_unavailable); trying again in 20s."))
    }

    @Test func aTimeoutWhilePollingBacksOff() throws {
        var login = DeviceLogin([Self.deviceReply, .failure(.timedOut("no reply")), .json(200, Self.grantJSON)])
        _ = try login.run()
        #expect(login.sentAt == [0, 5, 15])
        #expect(login.said.contains("The token endpoint did not answer (timed out: no reply); trying again in 10s."))
    }

    @Test(arguments: [
        ("access_denied", "the login was denied"),
        ("expired_token", "the device code expired before it was approved; run douctl auth login again"),
        ("unsupported_grant_type", "device login failed (unsupported_grant_type)"),
    ])
    func aFinalRefusalEndsTheLogin(error: String, message: String) throws {
        var login = DeviceLogin([Self.deviceReply, Self.pending("authorization_pending"), Self.pending(error)])
        #expect(throws: DouctlError.authentication(message)) { try login.run() }
        #expect(login.transport.requests.count == 3)
    }

    @Test func theDeviceCodeExpiresOnTheClock() throws {
        var login = DeviceLogin([
            .json(200, #"{"device_code":"d","user_code":"U","verification_uri":"http://v","interval":5,"expires_in":12}"#),
            Self.pending("authorization_pending"),
            Self.pending("authorization_pending"),
        ])
        #expect(throws: DouctlError.authentication("the device code expired before it was approved; run douctl auth login again")) {
            try login.run()
        }
        #expect(login.sentAt == [0, 5, 10], "no poll after the code expired at 12 s")
    }

    @Test func theWaitEndsAtTheApprovalTimeout() throws {
        var login = DeviceLogin([Self.deviceReply, Self.pending("authorization_pending")])
        login.approvalTimeout = 8
        #expect(throws: DouctlError.authentication("gave up after 8s waiting for approval (auth login --wait sets how long)")) {
            try login.run()
        }
    }

    @Test func theDeviceRequestIsTriedAgainWhenTheServerIsBusy() throws {
        var login = DeviceLogin([.json(503, "{}"), Self.deviceReply, .json(200, Self.grantJSON)])
        _ = try login.run()
        #expect(login.sentAt == [0, 1, 6])
        #expect(login.said.first == "The device endpoint answered HTTP 503; trying again in 1s.")
    }

    @Test func aDeviceReplyWithoutItsFieldsFails() throws {
        var login = DeviceLogin([.json(200, #"{"device_code":"d"}"#)])
        #expect(throws: DouctlError.authentication("the device authorization request failed (HTTP 200)")) { try login.run() }
    }

    @Test func theServersIntervalIsKeptWithinReason() throws {
        let zero = try #require(OAuthLogin.DeviceAuthorization(json: try JSONParser.parse(#"{"device_code":"d","user_code":"u","verification_url":"v","interval":0,"expires_in":1e9}"#)))
        #expect(zero.interval == 1)
        #expect(zero.lifetime == 86400)
        #expect(zero.verificationURI == "v", "Google's verification_url is accepted too")
        let huge = try #require(OAuthLogin.DeviceAuthorization(json: try JSONParser.parse(#"{"device_code":"d","user_code":"u","verification_uri":"v","interval":1e9}"#)))
        #expect(huge.interval == 60)
        #expect(huge.lifetime == 600)
    }

    /// A device authorization's `interval` and `expires_in` as JSON text, and the seconds
    /// douctl takes from them.
    struct Timing: Sendable, CustomTestStringConvertible {
        var interval: String
        var expiresIn: String
        var expectedInterval: Double
        var expectedLifetime: Double
        var testDescription: String { "interval \(interval), expires_in \(expiresIn)" }
    }

    /// Nonsense falls back to RFC 8628's 5 s and 600 s; huge values to 60 s and a day.
    @Test(arguments: [
        Timing(interval: "-5", expiresIn: "-1", expectedInterval: 5, expectedLifetime: 600),
        Timing(interval: #""7""#, expiresIn: #""900""#, expectedInterval: 7, expectedLifetime: 900),
        Timing(interval: #""NaN""#, expiresIn: #""nan""#, expectedInterval: 5, expectedLifetime: 600),
        Timing(interval: #""abc""#, expiresIn: "true", expectedInterval: 5, expectedLifetime: 600),
        Timing(interval: "1e308", expiresIn: "1e308", expectedInterval: 60, expectedLifetime: 86400),
        Timing(interval: "1e9", expiresIn: "1e9", expectedInterval: 60, expectedLifetime: 86400),
        Timing(interval: "1e400", expiresIn: "1e400", expectedInterval: 60, expectedLifetime: 86400),
        Timing(interval: "-1e400", expiresIn: "-1e400", expectedInterval: 5, expectedLifetime: 600),
        Timing(interval: "0.25", expiresIn: "0", expectedInterval: 1, expectedLifetime: 600),
        Timing(interval: "null", expiresIn: "{}", expectedInterval: 5, expectedLifetime: 600),
    ])
    func deviceTimingsAreKeptWithinReason(timing: Timing) throws {
        let json = try JSONParser.parse(#"{"device_code":"d","user_code":"u","verification_uri":"v","interval":\#(timing.interval),"expires_in":\#(timing.expiresIn)}"#)
        let authorization = try #require(OAuthLogin.DeviceAuthorization(json: json))
        #expect(authorization.interval == timing.expectedInterval)
        #expect(authorization.lifetime == timing.expectedLifetime)
    }

    @Test func aHugeIntervalIsCutToAMinuteAndTheWaitEndsOnTime() throws {
        var login = DeviceLogin([
            .json(200, #"{"device_code":"d","user_code":"U","verification_uri":"http://v","interval":1e308,"expires_in":1e308}"#),
            Self.pending("authorization_pending"),
        ])
        login.approvalTimeout = 90
        #expect(throws: DouctlError.authentication("gave up after 90s waiting for approval (auth login --wait sets how long)")) {
            try login.run()
        }
        #expect(login.sentAt == [0, 60])
        #expect(((login.clock.now - VirtualClock.start) * 1000).rounded() / 1000 == 90, "stopped at --wait, not a sleep later")
    }

    @Test func theLoginStopsWhenTheCodeExpiresNotAPollLater() throws {
        var login = DeviceLogin([
            .json(200, #"{"device_code":"d","user_code":"U","verification_uri":"http://v","interval":5,"expires_in":12}"#),
            Self.pending("authorization_pending"),
            Self.pending("authorization_pending"),
        ])
        #expect(throws: DouctlError.authentication("the device code expired before it was approved; run douctl auth login again")) {
            try login.run()
        }
        #expect(((login.clock.now - VirtualClock.start) * 1000).rounded() / 1000 == 12, "stopped when the code expired, not at the next poll (15 s)")
    }

    @Test func slowDownNeverMakesTheIntervalLongerThanAMinute() throws {
        var login = DeviceLogin([
            .json(200, #"{"device_code":"d","user_code":"U","verification_uri":"http://v","interval":58,"expires_in":600}"#),
            Self.pending("slow_down"),
            Self.pending("slow_down"),
            .json(200, Self.grantJSON),
        ])
        _ = try login.run()
        #expect(login.sentAt == [0, 58, 118, 178])
    }

    @Test func aRefusedConnectionToTheDeviceEndpointEndsAtOnce() throws {
        var login = DeviceLogin(Array(repeating: .failure(.cannotConnect("Connection refused")), count: 6))
        #expect(throws: DouctlError.transport(.cannotConnect("Connection refused"))) { try login.run() }
        #expect(login.transport.requests.count == 1)
        #expect(login.clock.slept == 0)
        #expect(login.said.isEmpty)
    }

    @Test func aServerThatDiesMidWaitEndsWithTheNetworkError() throws {
        var login = DeviceLogin([Self.deviceReply, Self.pending("authorization_pending")]
                                + Array(repeating: .failure(.cannotConnect("Connection refused")), count: 10))
        login.approvalTimeout = 60
        #expect(throws: DouctlError.transport(.cannotConnect("Connection refused"))) { try login.run() }
        // Polls at 5 (pending), 10, 20 and 40 s (refused, backing off): the third failure ends it.
        #expect(login.sentAt == [0, 5, 10, 20, 40])
    }

    @Test func aNetworkFailureJustBeforeTheDeadlineIsWhatIsReported() throws {
        var login = DeviceLogin([Self.deviceReply, Self.pending("authorization_pending"), .failure(.timedOut("no reply"))])
        login.approvalTimeout = 15
        #expect(throws: DouctlError.transport(.timedOut("no reply"))) { try login.run() }
        #expect(login.sentAt == [0, 5, 10])
        #expect(((login.clock.now - VirtualClock.start) * 1000).rounded() / 1000 == 15)
    }

    // MARK: paste flow

    @Test func aPastedRedirectIsExchangedWithItsVerifier() throws {
        let transport = ScriptedTransport([.json(200, Self.grantJSON)])
        let lines = Recorder<String>()
        let console = LoginConsole(
            say: { lines.add($0) },
            readLine: {
                // The person approves in a browser and pastes the address it was sent to.
                guard let url = lines.all.lazy.compactMap({ $0.split(separator: " ").last.map(String.init) }).first(where: { $0.hasPrefix("http") }),
                      let state = URLParts(url)?.value("state") else { return nil }
                return "http://127.0.0.1/callback?code=pasted-code&state=\(state)"
            },
            openBrowser: nil, sleep: { _ in }, isCancelled: { false })
        let grant = try OAuthLogin(profile: try TestProfiles.douban(), http: transport, console: console).paste()
        #expect(grant.accessToken == "a-1")
        let sent = try #require(transport.requests.first)
        #expect(sent.formValue("code") == "pasted-code")
        #expect(sent.formValue("redirect_uri") == "http://127.0.0.1/callback")
        let authorize = try #require(lines.all.compactMap { $0.split(separator: " ").last.flatMap { URLParts(String($0)) } }.first)
        #expect(authorize.value("code_challenge") == PKCE.challenge(for: sent.formValue("code_verifier") ?? ""))
        #expect(authorize.value("code_challenge_method") == "S256")
    }

    @Test func aPastedAddressOfAnotherLoginIsRefused() throws {
        #expect(throws: DouctlError.authentication("the pasted address belongs to another login attempt (its state does not match); run douctl auth login again")) {
            try OAuthLogin.code(fromPasted: "http://127.0.0.1/callback?code=c&state=other", expectedState: "mine")
        }
        #expect(try OAuthLogin.code(fromPasted: "just-a-code", expectedState: "mine") == "just-a-code")
    }
}
