import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// One cookie as douctl keeps it. A jar belongs to one profile, hence one host, so the
/// Domain attribute is not needed to choose cookies.
public struct Cookie: Sendable, Equatable {
    public var name: String
    public var value: String
    public var path: String
    /// Seconds since 1970; nil for a session cookie (kept until logout: a CLI has no browser
    /// session to end).
    public var expires: Double?

    public init(name: String, value: String, path: String = "/", expires: Double? = nil) {
        self.name = name
        self.value = value
        self.path = path
        self.expires = expires
    }

    /// Parses a Set-Cookie header value (RFC 6265 §5.2, the parts douctl needs).
    public static func parse(setCookie header: String, now: Double) -> Cookie? {
        let parts = header.split(separator: ";").map { $0.trimmingCharacters(in: " \t") }
        guard let first = parts.first, let equals = first.firstIndex(of: "=") else { return nil }
        let name = first[..<equals].trimmingCharacters(in: " ")
        guard !name.isEmpty else { return nil }
        var cookie = Cookie(name: name, value: first[first.index(after: equals)...].trimmingCharacters(in: "\" "))
        var maxAge: Int64?
        for attribute in parts.dropFirst() {
            let pieces = attribute.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            guard let key = pieces.first?.trimmingCharacters(in: " ").lowercased(), !key.isEmpty else { continue }
            let value = pieces.count > 1 ? pieces[1].trimmingCharacters(in: " ") : ""
            switch key {
            case "path": cookie.path = value.hasPrefix("/") ? value : "/"
            case "max-age":
                // RFC 6265 §5.2.2: an optional '-' and digits; anything else is ignored.
                let digits = value.hasPrefix("-") ? value.dropFirst() : Substring(value)
                if !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) {
                    maxAge = value.hasPrefix("-") ? -1 : Int64(digits) ?? Int64.max
                }
            case "expires": cookie.expires = HTTPDate.parse(value)
            default: break
            }
        }
        if let maxAge { cookie.expires = now + Double(min(maxAge, 400 * 86400)) } // Max-Age wins; RFC 6265bis caps at 400 days
        if let expires = cookie.expires { cookie.expires = min(expires, Timestamp.latest) }
        return cookie.isSendable ? cookie : nil
    }

    /// What curl keeps: a name that is a token, a value without control bytes (a tab aside),
    /// and for XSRF-TOKEN — sent back decoded as X-XSRF-TOKEN — a decoded value without CR,
    /// LF or NUL. Anything else could end the Cookie header early and inject another header.
    public var isSendable: Bool {
        guard HTTPSyntax.isToken(name), !value.utf8.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) else { return false }
        return name != CookieSession.xsrfCookie || HTTPSyntax.isFieldValue(PercentEncoding.decode(value, plusAsSpace: true))
    }

    func matches(path requestPath: String) -> Bool {
        requestPath == path || requestPath.hasPrefix(path.hasSuffix("/") ? path : path + "/")
    }
}

/// A profile's cookies on disk: cookies-PROFILE.json, 0600, replaced atomically under a
/// lock like credentials.json.
public struct CookieJar: Sendable {
    public let path: String
    private let lockPath: String

    public init(directory: ConfigDirectory, profile: String) {
        path = directory.cookieJarPath(profile: profile)
        lockPath = directory.path + "/.cookies-\(profile).lock"
        self.directory = directory
    }

    private let directory: ConfigDirectory

    public var exists: Bool { FileIO.fileExists(path) }

    public func load() throws(DouctlError) -> [Cookie] {
        guard let json = try directory.readJSONFile(path) else { return [] }
        guard let list = json["cookies"]?.arrayValue else {
            throw .badConfig(path: path, detail: "expected {\"cookies\": [...]}")
        }
        var cookies: [Cookie] = []
        for item in list {
            guard let name = item["name"]?.stringValue, let value = item["value"]?.stringValue else { continue }
            let cookie = Cookie(name: name, value: value, path: item["path"]?.stringValue ?? "/",
                                expires: item["expires"]?.stringValue.flatMap(Timestamp.parseRFC3339))
            guard cookie.isSendable else {
                throw .badConfig(path: path, detail: "cookie '\(HTTPSyntax.printable(name))' has a name or value that cannot be sent in a header (control bytes, CR or LF)")
            }
            cookies.append(cookie)
        }
        return cookies
    }

    /// Who logged in to this session (saved by the password login), so `auth status` can
    /// name the session's owner. Nil for a jar written before douctl kept it.
    public func owner() throws(DouctlError) -> Identity? {
        guard let user = try directory.readJSONFile(path)?["user"], case .object = user else { return nil }
        return Identity(id: user["id"]?.scalarText, name: user["name"]?.scalarText, displayName: user["display_name"]?.scalarText)
    }

    /// Deletes the jar and its lock file (`profile remove`): nothing of the profile is left
    /// behind, and a profile that never had a jar gets no lock file made for it either.
    public func remove() throws(DouctlError) {
        guard FileIO.nameExists(path) || FileIO.nameExists(lockPath) else { return }
        let lock: FileLock
        do { lock = try FileLock(path: lockPath) } catch { throw .localInput("cannot lock \(lockPath) (\(error))") }
        defer { lock.unlock() }
        do { try FileIO.removeFile(path) } catch { throw .localInput("cannot remove \(path) (\(error))") }
        // Unlinked while held: a process that waits on it next finds no jar, as it should.
        do { try FileIO.removeFile(lockPath) } catch { throw .localInput("cannot remove \(lockPath) (\(error))") }
    }

    /// Replaces the jar's contents (under the lock); an empty jar deletes the file. The
    /// owner is kept unless a new one is given (a login).
    public func save(_ cookies: [Cookie], owner newOwner: Identity? = nil) throws(DouctlError) {
        try directory.ensureExists()
        let lock: FileLock
        do { lock = try FileLock(path: lockPath) } catch { throw .localInput("cannot lock \(lockPath) (\(error))") }
        defer { lock.unlock() }
        if cookies.isEmpty {
            do { try FileIO.removeFile(path) } catch { throw .localInput("cannot remove \(path) (\(error))") }
            return
        }
        let items: [JSON] = cookies.map { cookie in
            var object = JSONObject([("name", .string(cookie.name)), ("value", .string(cookie.value)), ("path", .string(cookie.path))])
            if let expires = cookie.expires { object["expires"] = .string(Timestamp.rfc3339(expires)) }
            return .object(object)
        }
        var file = JSONObject([("cookies", .array(items))])
        let previousOwner = newOwner == nil ? try self.owner() : nil
        if let owner = newOwner ?? previousOwner {
            var user = JSONObject()
            user["id"] = owner.id.map(JSON.string) ?? .null
            user["name"] = owner.name.map(JSON.string) ?? .null
            user["display_name"] = owner.displayName.map(JSON.string) ?? .null
            file["user"] = .object(user)
        }
        try directory.writeJSONFile(.object(file), to: path)
    }
}

/// Sends a jar's cookies with each request (and XSRF-TOKEN back as X-XSRF-TOKEN, as Coding
/// wants), and keeps what Set-Cookie says. With a `jar` the cookies are saved after each
/// change; without one they live in memory (during the password login).
public final class CookieSession: SessionHooks {
    /// The cookie Coding wants back as the X-XSRF-TOKEN header.
    public static let xsrfCookie = "XSRF-TOKEN"
    public private(set) var cookies: [Cookie]
    private let jar: CookieJar?
    private let now: () -> Double

    /// `-v`: told when a bound below drops cookies.
    public var verboseLog: ((String) -> Void)?

    /// curl's bounds (lib/cookie.c, after CVE-2022-32205: a server that sets thousands of
    /// cookies made every later request too large for any server to take): at most 50
    /// cookies taken from one reply, at most 150 sent in one request, in a Cookie header of
    /// at most 8190 bytes. The rest are dropped, with a `-v` note.
    public static let maximumCookiesPerReply = 50
    public static let maximumCookiesPerRequest = 150
    public static let maximumCookieHeaderBytes = 8190

    public init(cookies: [Cookie] = [], jar: CookieJar?, now: @escaping () -> Double = Timestamp.now) {
        self.cookies = cookies
        self.jar = jar
        self.now = now
    }

    /// The cookie session stored for a profile that logged in with a password, or nil.
    /// Whether it is sent is `CredentialInForce`'s decision (a token, DOUCTL_TOKEN's or a
    /// stored one, wins). A jar that cannot be read is an error (exit 3, as a corrupt
    /// credentials file is), not a logged-out profile.
    public static func stored(for profile: ResolvedProfile, store: CredentialStore, now: @escaping () -> Double) throws(DouctlError) -> CookieSession? {
        guard profile.rules.hasCookieSessions else { return nil }
        let jar = CookieJar(directory: store.directory, profile: profile.name)
        guard jar.exists else { return nil }
        let cookies = try jar.load()
        return cookies.isEmpty ? nil : CookieSession(cookies: cookies, jar: jar, now: now)
    }

    public func prepare(_ request: inout HTTPRequest) {
        let path = URLParts(request.url)?.path ?? "/"
        let current = now()
        let matching = cookies.filter { $0.matches(path: path) && ($0.expires ?? .infinity) > current }
        guard !matching.isEmpty else { return }
        let sending = Self.bounded(matching)
        if sending.count < matching.count {
            verboseLog?("* cookies: sending \(sending.count) of \(matching.count) (a Cookie header holds at most \(Self.maximumCookiesPerRequest) cookies and \(Self.maximumCookieHeaderBytes) bytes)")
        }
        request.headers.append(HTTPHeader("Cookie", sending.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")))
        if let xsrf = sending.first(where: { $0.name == Self.xsrfCookie }) {
            request.headers.set("X-XSRF-TOKEN", PercentEncoding.decode(xsrf.value, plusAsSpace: true))
        }
    }

    public func received(_ response: HTTPResponse, for request: HTTPRequest) throws(DouctlError) {
        let current = now()
        var changed = false
        var taken = 0, offered = 0
        for header in response.head.headers where header.name.lowercased() == "set-cookie" {
            offered += 1
            guard taken < Self.maximumCookiesPerReply else { continue }
            taken += 1
            guard let cookie = Cookie.parse(setCookie: header.value, now: current) else { continue }
            cookies.removeAll { $0.name == cookie.name && $0.path == cookie.path }
            if (cookie.expires ?? .infinity) > current { cookies.append(cookie) }
            changed = true
        }
        if offered > taken {
            verboseLog?("* cookies: took the first \(taken) of \(offered) Set-Cookie headers of this reply (at most \(Self.maximumCookiesPerReply))")
        }
        if changed { try jar?.save(cookies) }
    }

    /// The cookies one request carries: longest path first (RFC 6265 §5.4), then the
    /// oldest — the login's own session cookies before any a server added since — up to
    /// `maximumCookiesPerRequest` cookies and `maximumCookieHeaderBytes` bytes of header value.
    static func bounded(_ matching: [Cookie]) -> [Cookie] {
        let ordered = matching.enumerated().sorted {
            $0.element.path.utf8.count != $1.element.path.utf8.count ? $0.element.path.utf8.count > $1.element.path.utf8.count : $0.offset < $1.offset
        }.map(\.element)
        var sending: [Cookie] = []
        var bytes = 0
        for cookie in ordered {
            let length = cookie.name.utf8.count + 1 + cookie.value.utf8.count + (sending.isEmpty ? 0 : 2)
            guard sending.count < maximumCookiesPerRequest, bytes + length <= maximumCookieHeaderBytes else { break }
            sending.append(cookie)
            bytes += length
        }
        return sending
    }

    public func value(of name: String) -> String? { cookies.first { $0.name == name }?.value }

    public func liveSecrets() -> [String] { cookies.map(\.value) }

    /// A SHA-256 over the session's cookies (XSRF-TOKEN aside: it guards writes, it does not
    /// say who is logged in), so each login is its own identity in the response cache.
    public var credentialDigest: String? {
        let identity = cookies.filter { $0.name != Self.xsrfCookie }.map { "\($0.name)=\($0.value)" }.sorted()
        guard !identity.isEmpty else { return nil }
        return Digest.hex(Digest.sha256(Array(("cookies\n" + identity.joined(separator: "\n")).utf8)))
    }
}
