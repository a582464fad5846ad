/// How a login flow talks to the person: lines on stderr, lines from stdin, a browser,
/// a clock. Passed in, so tests drive the flows with scripts instead of a human.
public struct LoginConsole {
    /// Shows a line to the person (stderr).
    public var say: (String) -> Void
    /// Reads one line typed or piped in; nil at end of input.
    public var readLine: () -> String?
    /// Reads a line without echoing it (passwords), when input is a terminal.
    public var readSecret: () -> String?
    /// Where to save pictures the person must look at (captchas): the config directory,
    /// private to the user; each is removed once answered.
    public var captchaDirectory: String
    /// Opens a URL in a browser; nil when douctl must only print URLs (--no-browser).
    public var openBrowser: ((String) -> Bool)?
    public var now: () -> Double
    public var sleep: (Double) -> Void
    public var isCancelled: () -> Bool
    /// How long to wait for the person to approve (auth login --wait; default 5 minutes).
    public var approvalTimeout: Double

    public init(
        say: @escaping (String) -> Void,
        readLine: @escaping () -> String?,
        readSecret: (() -> String?)? = nil,
        captchaDirectory: String = "/tmp",
        openBrowser: ((String) -> Bool)?,
        now: @escaping () -> Double = Timestamp.now,
        sleep: @escaping (Double) -> Void,
        isCancelled: @escaping () -> Bool,
        approvalTimeout: Double = 300
    ) {
        self.say = say
        self.readLine = readLine
        self.readSecret = readSecret ?? readLine
        self.captchaDirectory = captchaDirectory
        self.openBrowser = openBrowser
        self.now = now
        self.sleep = sleep
        self.isCancelled = isCancelled
        self.approvalTimeout = approvalTimeout
    }
}

/// The ways `douctl auth login` can get a token.
public enum LoginMethod: String, Sendable, CaseIterable {
    /// Browser + loopback listener + PKCE (RFC 8252).
    case web
    /// RFC 8628 device authorization: a code typed on another device.
    case device
    /// Print the URL, paste back the redirected URL or code (a registered web redirect).
    case paste
    /// An access token read from stdin.
    case token
    /// Coding's cookie login with account and password.
    case password
    /// The JSON of `douctl auth export` from stdin (moving a login to CI).
    case credentials
    /// RFC 6749 §4.4: the client's own token, with the profile's client id and secret.
    case clientCredentials
    /// A user name and password sent as HTTP Basic.
    case basic

    /// The automatic choice: device when no browser can open and the profile has a
    /// device endpoint; paste when the registered redirect is not loopback; web otherwise.
    public static func automatic(profile: ResolvedProfile, browserAvailable: Bool) -> LoginMethod {
        if !browserAvailable, profile.deviceAuthorizationURL != nil { return .device }
        if let redirect = profile.redirectURI, !LoopbackRedirect.isLoopback(redirect) { return .paste }
        return .web
    }
}
