import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// An authorization server's metadata, read from its issuer (`profile add --issuer`): OpenID
/// Connect Discovery 1.0 (`ISSUER/.well-known/openid-configuration`), else RFC 8414
/// (`https://HOST/.well-known/oauth-authorization-server/PATH`, the well-known part inserted
/// before the issuer's path, §3.1). The document must name the issuer it was asked for
/// (RFC 8414 §3.3, OIDC Discovery §4.3): one that names another is refused, so a server
/// cannot hand a profile someone else's endpoints (the mix-up attack).
public struct ProviderMetadata: Sendable, Equatable {
    public var issuer: String
    /// Where the document was read.
    public var source: String
    public var authorizationEndpoint: String?
    public var tokenEndpoint: String?
    public var deviceAuthorizationEndpoint: String?
    public var revocationEndpoint: String?
    public var userinfoEndpoint: String?
    /// RFC 7591 dynamic client registration (`registration_endpoint`).
    public var registrationEndpoint: String?
    /// `token_endpoint_auth_methods_supported`; nil when not listed (RFC 8414: then
    /// client_secret_basic).
    public var tokenAuthMethods: [String]?
    /// `code_challenge_methods_supported`; nil when not listed.
    public var codeChallengeMethods: [String]?
    public var scopesSupported: [String]?

    /// The URLs to try, in order, for `issuer`.
    public static func candidates(for issuer: String) -> [String] {
        let trimmed = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        var urls = [trimmed + "/.well-known/openid-configuration"]
        if let schemeEnd = trimmed.firstRange(ofBytes: "://") {
            let rest = trimmed[schemeEnd.upperBound...]
            let slash = rest.firstIndex(of: "/") ?? rest.endIndex
            let origin = trimmed[..<slash]
            let path = rest[slash...]
            urls.append(origin + "/.well-known/oauth-authorization-server" + path)
            // OIDC Discovery's own rule puts the well-known part after the path (done first);
            // some servers follow RFC 8414's insertion for it too.
            if !path.isEmpty { urls.append(origin + "/.well-known/openid-configuration" + path) }
        }
        return urls
    }

    /// Reads the metadata of `issuer` through `http`: the first candidate answering 200 with
    /// a JSON object. Throws when none does, or when the document names another issuer.
    /// `recorder` (`--record DIR`): each document asked for is recorded, a replay can
    /// then answer the discovery too.
    public static func discover(issuer: String, http: any HTTPTransport, recorder: ExchangeRecorder? = nil) throws(DouctlError) -> ProviderMetadata {
        guard issuer.hasPrefix("https://") || issuer.hasPrefix("http://"), URLParts(issuer) != nil,
              !issuer.contains("?"), !issuer.contains("#") else {
            throw .usage("invalid issuer '\(TerminalText.escaped(issuer))': expected an https:// URL with no query or fragment (RFC 8414 §2)")
        }
        if !isTrusted(issuer) {
            throw .usage("refused issuer '\(TerminalText.escaped(issuer))': an issuer must be https:// (plain http only on 127.0.0.1, ::1 or localhost), since its endpoints receive the client secret and its ID tokens are trusted unsigned (OIDC Discovery §3, RFC 8414 §2); nothing was changed")
        }
        var tried: [String] = []
        for url in candidates(for: issuer) {
            let response = try LoginRequestPath(http: http, recorder: recorder)
                .fetch(HTTPRequest(method: "GET", url: url, headers: [HTTPHeader("Accept", "application/json")]))
            guard response.status == 200, let json = try? JSONParser.parse(response.body), json.objectValue != nil else {
                tried.append("\(url): HTTP \(response.status)")
                continue
            }
            return try ProviderMetadata(json: json, asked: issuer, source: url)
        }
        throw .badReply("no OpenID Connect or RFC 8414 metadata for issuer \(TerminalText.escaped(issuer)) (\(tried.joined(separator: "; ")))", httpStatus: nil)
    }

    init(json: JSON, asked: String, source: String) throws(DouctlError) {
        let named = json["issuer"]?.stringValue
        // RFC 8414 §3.3: identical to the issuer the metadata was asked for. A trailing
        // slash the user typed is not a different issuer.
        guard let named, named == asked || named + "/" == asked else {
            throw .badReply("the metadata at \(TerminalText.escaped(source)) names issuer '\(TerminalText.escaped(named ?? "(none)"))', not '\(TerminalText.escaped(asked))'; refused (RFC 8414 §3.3: another server's endpoints would get this profile's logins); nothing was changed", httpStatus: nil)
        }
        issuer = named
        self.source = source
        // OIDC Core §3.1.3.7 point 6 trusts an ID token for the TLS it came over: an https
        // issuer whose document sends the token or userinfo request (or any other) over
        // plain http gives that trust away, so the whole document is refused.
        let endpointKeys = ["authorization_endpoint", "token_endpoint", "device_authorization_endpoint", "revocation_endpoint", "userinfo_endpoint", "jwks_uri", "registration_endpoint", "introspection_endpoint"]
        for key in endpointKeys {
            if let text = json[key]?.stringValue, !Self.isTrusted(text, asLoopbackAs: asked) {
                throw .badReply("the metadata at \(TerminalText.escaped(source)) puts \(key) at '\(TerminalText.escaped(text))', not an https:// URL; refused (every endpoint of an https issuer must be https, or tokens and ID tokens travel in clear); nothing was changed", httpStatus: nil)
            }
        }
        func url(_ key: String) -> String? {
            guard let text = json[key]?.stringValue, text.hasPrefix("https://") || text.hasPrefix("http://"),
                  URLParts(text) != nil, !text.contains(" ") else { return nil }
            return text
        }
        func list(_ key: String) -> [String]? { json[key]?.arrayValue?.compactMap(\.stringValue) }
        authorizationEndpoint = url("authorization_endpoint")
        tokenEndpoint = url("token_endpoint")
        deviceAuthorizationEndpoint = url("device_authorization_endpoint")
        revocationEndpoint = url("revocation_endpoint")
        userinfoEndpoint = url("userinfo_endpoint")
        registrationEndpoint = url("registration_endpoint")
        tokenAuthMethods = list("token_endpoint_auth_methods_supported")
        codeChallengeMethods = list("code_challenge_methods_supported")
        scopesSupported = list("scopes_supported")
    }

    /// Whether `url` may carry a login: https, or plain http to a loopback host (a provider
    /// on this machine, as the sandbox and tests run). An endpoint (`asLoopbackAs`: its
    /// issuer) may be plain http only when its issuer is, on a loopback host.
    static func isTrusted(_ url: String, asLoopbackAs issuer: String? = nil) -> Bool {
        if url.hasPrefix("https://") { return true }
        guard url.hasPrefix("http://"), let parts = URLParts(url) else { return false }
        if let issuer, issuer.hasPrefix("https://") || !isTrusted(issuer) { return false }
        return isLoopbackHost(parts.host)
    }

    /// 127.0.0.0/8, ::1 and localhost (RFC 6761 §6.3).
    public static func isLoopbackHost(_ host: String) -> Bool {
        let lowered = HTTPSyntax.lowercased(Substring(host))
        return lowered == "localhost" || lowered == "[::1]" || lowered == "::1" || lowered.hasPrefix("127.")
    }

    /// How the client authenticates at the token endpoint: with a secret, `basic` where the
    /// server takes client_secret_basic (its default when it lists nothing), else `post`;
    /// without one, `none` where listed (a public client). nil: leave the profile's setting.
    public func tokenAuth(hasSecret: Bool) -> TokenAuth? {
        let methods = tokenAuthMethods ?? ["client_secret_basic"]
        if hasSecret {
            if methods.contains("client_secret_basic") { return .basic }
            if methods.contains("client_secret_post") { return .post }
            return nil
        }
        return methods.contains("none") ? TokenAuth.none : nil
    }

    /// Whether the server takes PKCE S256; nil when its metadata does not say.
    public var supportsPKCE: Bool? { codeChallengeMethods.map { $0.contains("S256") } }

    /// The profile settings the metadata fills (endpoints, issuer, token_auth, pkce), for a
    /// client that `hasSecret`; keys the metadata does not give are left out.
    public func settings(hasSecret: Bool) -> [(ProfileKey, ProfileValue)] {
        var settings: [(ProfileKey, ProfileValue)] = [(.issuer, .text(issuer))]
        let endpoints: [(ProfileKey, String?)] = [
            (.authorizeURL, authorizationEndpoint), (.tokenURL, tokenEndpoint),
            (.deviceAuthorizationURL, deviceAuthorizationEndpoint), (.revokeURL, revocationEndpoint),
            (.userURL, userinfoEndpoint),
        ]
        for (key, value) in endpoints { if let value { settings.append((key, .text(value))) } }
        if userinfoEndpoint != nil {
            // OIDC Core §5.1: the userinfo reply names the user by sub and preferred_username.
            settings += [(.userIDField, .text("sub")), (.userNameField, .text("preferred_username"))]
        }
        if let auth = tokenAuth(hasSecret: hasSecret) { settings.append((.tokenAuth, .text(auth.rawValue))) }
        if let pkce = supportsPKCE { settings.append((.pkce, .text(pkce ? "true" : "false"))) }
        return settings
    }
}
