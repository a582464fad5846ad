/// Where API calls get their access token from.
public protocol AccessTokenSource: AnyObject {
    /// The token to send now (refreshed first when the stored one is past its expiry), or
    /// nil when there is none.
    func currentToken() throws(DouctlError) -> String?
    /// The server just rejected `token` as expired or invalid: a fresh token to replay the
    /// request with once, or nil when none can be had.
    func refresh(rejected token: String) throws(DouctlError) -> String?
    /// What to tell the user when the server refuses the token we sent, e.g. "run: douctl auth login".
    var rejectionHint: String { get }
    /// The tokens in force (access and refresh), for `--record` to scrub wherever they appear.
    func liveSecrets() -> [String]
    /// "Basic" when the token in force is a stored user:password (`auth login --basic`),
    /// else nil (the profile's scheme or API-key placement applies).
    var credentialScheme: String? { get }
    /// The API base whose origin the credential was obtained for (issue 39): it is sent
    /// there only, whatever `--api-base` says. nil: wherever this run's api_base is
    /// (DOUCTL_TOKEN, given for this run). A store that cannot be read is an error, as
    /// when the token is read.
    func loginOrigin() throws(DouctlError) -> String?
}

extension AccessTokenSource {
    public func liveSecrets() -> [String] { [] }
    public var credentialScheme: String? { nil }
    public func loginOrigin() throws(DouctlError) -> String? { nil }
}

/// No login was stored when the run decided its credential (`CredentialInForce.none`, or a
/// cookie session): requests go without a token, and the store the decision just read is
/// not read again for each of them.
public final class NoStoredLogin: AccessTokenSource {
    public let rejectionHint: String

    public init(profile: String) {
        rejectionHint = "run: \(DouctlError.loginCommand(profile))"
    }

    public func currentToken() throws(DouctlError) -> String? { nil }
    public func refresh(rejected token: String) throws(DouctlError) -> String? { nil }
}

/// `DOUCTL_TOKEN`: used as is, never refreshed, never written anywhere. Also a login's new
/// credential while it is checked, and `--dry-run`'s placeholder, each in its `scheme`.
public final class FixedToken: AccessTokenSource {
    private let token: String
    /// "Basic" for a user:password (`auth login --basic`, or `--dry-run` for such a profile);
    /// nil: the profile's scheme or API-key placement.
    public let credentialScheme: String?

    public init(_ token: String, scheme: String?) {
        self.token = token
        credentialScheme = scheme
    }

    public convenience init(_ token: String) {
        self.init(token, scheme: nil)
    }

    public func currentToken() throws(DouctlError) -> String? { token }
    public func refresh(rejected token: String) throws(DouctlError) -> String? { nil }
    public var rejectionHint: String { "the token in DOUCTL_TOKEN was refused" }
    public func liveSecrets() -> [String] { [token] }
}
