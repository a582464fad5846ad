/// Which family of API a profile talks to. It decides endpoint paths, paging, which error
/// codes mean "token expired", and how tokens travel.
public enum APIStyle: String, Sendable, Equatable, CaseIterable {
    /// Douban API v2: bare JSON on success, `{"msg","code","request"}` errors, auth errors as HTTP 400.
    case douban
    /// Coding: replies wrapped in `{code, data, msg}`; `msg` may be an object of key → text.
    case coding
}
