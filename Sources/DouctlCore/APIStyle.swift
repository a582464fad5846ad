/// Which family of API a profile talks to. It decides endpoint paths, paging, which error
/// codes mean "token expired", and how tokens travel.
public enum APIStyle: String, Sendable, Equatable, CaseIterable {
    /// Douban API v2: bare JSON on success, `{"msg","code","request"}` errors, auth errors as HTTP 400.
    case douban
    /// Coding: replies wrapped in `{code, data, msg}`; `msg` may be an object of key → text.
    case coding

    /// Whether a profile of this style may log in with a password, into a cookie session
    /// (`auth login --password`) that `auth status` shows and `auth logout` ends.
    public var hasCookieSessions: Bool { self == .coding }
}
