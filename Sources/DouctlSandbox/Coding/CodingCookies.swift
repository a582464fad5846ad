import DouctlServer

/// The cookies of Coding's web session.
enum CodingCookies {
    static let session = "sid"
    static let xsrf = "XSRF-TOKEN"
    static let xsrfHeader = "X-XSRF-TOKEN"

    static func set(_ session: CodingCookieSession) -> [(String, String)] {
        let maxAge = session.rememberMe ? "; Max-Age=\(Int(CodingCookieSession.rememberedLifetime))" : ""
        return [("Set-Cookie", "\(Self.session)=\(session.sid); Path=/\(maxAge); HttpOnly"),
                ("Set-Cookie", "\(xsrf)=\(session.xsrfToken); Path=/\(maxAge)")]
    }

    static let cleared: [(String, String)] = [
        ("Set-Cookie", "\(session)=; Path=/; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly"),
        ("Set-Cookie", "\(xsrf)=; Path=/; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT"),
    ]
}

extension Exchange {
    /// The first cookie `name` of the request's `Cookie` headers.
    func cookie(_ name: String) -> String? {
        for header in request.headers.values("Cookie") {
            for piece in header.split(separator: ";") {
                let pair = piece.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                if pair[0].trimmingSpaces() == name {
                    let value = pair.count > 1 ? pair[1].trimmingSpaces() : ""
                    return value.isEmpty ? nil : value
                }
            }
        }
        return nil
    }

    /// POST, PUT, DELETE, PATCH: what the XSRF check guards.
    var isUnsafeMethod: Bool {
        !["GET", "HEAD", "OPTIONS"].contains(request.method)
    }
}
