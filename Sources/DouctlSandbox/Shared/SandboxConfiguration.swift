import DouctlServer

/// How the sandbox answers an authorization request (`douctl sandbox --approve`).
public enum SandboxApproval: String, Sendable, CaseIterable {
    /// The consent page approves at once: `/service/auth2/auth` redirects straight back with a
    /// code, and a device code is approved when its first poll arrives.
    case auto
    /// A person approves or denies on the consent / verification page (or a test calls
    /// `Sandbox.approveDevice(userCode:)`).
    case manual
}

/// Everything `douctl sandbox` can be told on its command line, and a few knobs for tests.
public struct SandboxConfiguration: Sendable {
    public var host = "127.0.0.1"
    /// 0 picks a free port.
    public var port: UInt16 = 0
    /// `--data DIR`: keep state (users, statuses, comments, likes, follows, tokens, pictures, and
    /// Coding's accounts, tweets, tokens and logged-in sessions) in DIR, written atomically after
    /// each change and loaded on start. Nil keeps it in memory.
    public var dataDirectory: String? = nil
    /// `--token-ttl`: access-token lifetime in seconds (Douban's and Coding's).
    public var tokenTTL: Double = 3600
    /// `--approve`.
    public var approval: SandboxApproval = .auto
    /// `--fault`: see `SandboxFault.faultHelp`.
    public var faults: [SandboxFault] = []
    /// Seeds the random draws of probabilistic faults, so tests are deterministic. Nil draws
    /// from the system generator.
    public var faultSeed: UInt64? = nil
    /// `--replay DIR`: answer from the exchanges `douctl --record DIR` wrote (see `ReplayStore`).
    public var replayDirectory: String? = nil
    /// `--openapi FILE`: another API served in place of Douban's and Coding's (built by the
    /// caller from a description: DouctlCore's `OpenAPIFake`); faults, signing, quota and
    /// --replay still apply around it, and a request a replay lacks is answered by it.
    public var api: (@Sendable (HTTPServerRequest) -> HTTPServerResponse)? = nil
    /// `--signing SCHEME:SECRET`: require hmac-sha1 or md5-sorted signatures (see `ShapingGate`).
    public var signing: String? = nil
    /// `--quota N/UNIT`: at most N API requests per UNIT, then 429 (see `ShapingGate`).
    public var quota: String? = nil
    /// Request bodies larger than this are refused by the server with 413.
    public var maxBodyBytes: Int64 = 8 << 30
    /// RFC 8628 device codes: lifetime and minimum polling interval, seconds.
    public var deviceCodeLifetime: Double = 600
    public var deviceInterval: Double = 1
    /// Authorization codes expire this many seconds after they are issued (Douban: minutes).
    public var authorizationCodeLifetime: Double = 300
    /// API calls allowed per access token per hour (`X-Ratelimit-Limit`); more get 429 / 111.
    public var rateLimitPerHour: Int = 5000
    /// Coding: whether the password login needs a captcha (`GET /api/captcha/login` answers
    /// this; the login's `j_captcha` must then match the last `GET /api/getCaptcha` picture).
    public var codingCaptchaRequired = true
    /// Coding: seconds a 2FA login step stays open before `user_login_status_expired`.
    public var codingTwoFactorTimeout: Double = 300
    /// Called once per request with a line such as `POST /shuo/v2/statuses/ 200 12ms`.
    public var log: (@Sendable (String) -> Void)? = nil
    /// Where the captcha and two-factor codes a person would read go (`coding captcha for
    /// session SID: CODE`); nil: to `log`. `douctl sandbox --quiet` keeps these, not requests.
    public var codes: (@Sendable (String) -> Void)? = nil
    /// The wall clock behind token expiry, `created_at` and every other lifetime; tests
    /// pass one they advance instead of sleeping.
    public var clock: SandboxClock = .system

    public init() {}
}

/// A problem starting the sandbox or reading its options, worded for the person who ran it.
public struct SandboxError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
