#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// `douctl auth login https://api.example.com`: from the API's own URL to a profile that can
/// log in. The API names its authorization server (RFC 9728: a 401's `WWW-Authenticate:
/// Bearer resource_metadata="…"`, else `/.well-known/oauth-protected-resource`), whose RFC
/// 8414 or OIDC metadata gives the endpoints (`ProviderMetadata`), and, where it offers
/// `registration_endpoint` and no client id is known, douctl registers itself as a public
/// client (RFC 7591). Every document is checked before anything is written: a refusal is one
/// line and leaves the config as it was.
public struct ResourceDiscovery: Sendable {
    /// The API's origin: the new profile's api_base.
    public var apiBase: String
    /// Where the protected-resource metadata was read, and what it names.
    public var metadataURL: String
    public var resource: String
    public var provider: ProviderMetadata
    public var scopes: [String]

    /// The redirect URI douctl registers: a loopback port free now, written in full, since
    /// many servers match redirect URIs exactly although RFC 8252 §7.3 lets the port vary
    /// (the MCP SDK's does); the profile keeps it as registered.
    public static func redirectURI() -> String {
        freeLoopbackPort().map { "http://127.0.0.1:\($0)/callback" } ?? "http://127.0.0.1/callback"
    }

    /// A port on 127.0.0.1 that nothing listens on now (the kernel's choice for port 0).
    static func freeLoopbackPort() -> UInt16? {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0 else { return nil }
        let named = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        guard named == 0 else { return nil }
        let port = UInt16(bigEndian: address.sin_port)
        return port == 0 ? nil : port
    }

    /// Whether `url`'s host is the loopback interface, where plain http carries nothing
    /// off the machine.
    public static func isLoopback(_ url: String) -> Bool {
        guard let host = URLParts(url)?.host else { return false }
        return host == "127.0.0.1" || host == "localhost" || host == "[::1]" || host == "::1"
    }

    /// Refuses a URL douctl would send secrets to in the clear: http is only for loopback.
    static func requireSecure(_ url: String, what: String) throws(DouctlError) {
        guard URLParts(url) != nil, url.hasPrefix("https://") || (url.hasPrefix("http://") && isLoopback(url)) else {
            throw .badReply("the \(what) \(TerminalText.escaped(url)) is not https (only a loopback host may use http); refused, nothing was written", httpStatus: nil)
        }
    }

    /// `resource_metadata="…"` of a `Bearer` challenge in `WWW-Authenticate` (RFC 9728 §5.1).
    public static func resourceMetadataParameter(_ header: String) -> String? {
        let lower = HTTPSyntax.lowercased(Substring(header))
        guard lower.firstRange(ofBytes: "bearer") != nil, let range = lower.firstRange(ofBytes: "resource_metadata=") else { return nil }
        let offset = lower.utf8.distance(from: lower.utf8.startIndex, to: range.upperBound)
        var rest = Substring(String(decoding: Array(header.utf8).dropFirst(offset), as: UTF8.self))
        if rest.hasPrefix("\"") {
            rest = rest.dropFirst()
            guard let end = rest.firstIndex(of: "\"") else { return nil }
            return String(rest[..<end])
        }
        let end = rest.firstIndex { $0 == "," || $0 == " " } ?? rest.endIndex
        return String(rest[..<end])
    }

    /// The well-known URL of `resource`'s metadata: inserted between host and path (§3.1).
    public static func wellKnownURL(for resource: String) -> String? {
        guard let parts = URLParts(resource) else { return nil }
        let port = parts.port.map { ":\($0)" } ?? ""
        let path = parts.path == "/" ? "" : parts.path
        return "\(parts.scheme)://\(parts.host)\(port)/.well-known/oauth-protected-resource\(path)"
    }

    /// Reads what `url` says about logging in to it, through `http` (no credential sent).
    /// `recorder` (`--record DIR`): every document asked for is recorded.
    public static func discover(_ url: String, http: any HTTPTransport, recorder: ExchangeRecorder? = nil) throws(DouctlError) -> ResourceDiscovery {
        let path = LoginRequestPath(http: http, recorder: recorder)
        try requireSecure(url, what: "API URL")
        let origin = ProfileChoice.origin(of: url)
        var metadataURL: String?
        // An unauthenticated request: a 401's challenge names the metadata (§5.1).
        if let reply = try? path.fetch(HTTPRequest(method: "GET", url: url, headers: [HTTPHeader("Accept", "application/json")])),
           reply.status == 401, let challenge = reply.head.header("WWW-Authenticate") {
            metadataURL = resourceMetadataParameter(challenge)
        }
        let source = metadataURL ?? wellKnownURL(for: url) ?? url
        try requireSecure(source, what: "resource metadata URL")
        let document = try fetchJSON(source, path: path, what: "protected resource metadata (RFC 9728)")
        // §3.3: the metadata names the resource it is about; another one's is refused.
        guard let resource = document["resource"]?.stringValue,
              [url, origin].contains(where: { $0 == resource || $0 + "/" == resource || $0 == resource + "/" }) else {
            throw .badReply("the metadata at \(TerminalText.escaped(source)) is about resource '\(TerminalText.escaped(document["resource"]?.stringValue ?? "(none)"))', not \(TerminalText.escaped(url)); refused (RFC 9728 §3.3), nothing was written", httpStatus: nil)
        }
        guard let server = document["authorization_servers"]?.arrayValue?.first?.stringValue else {
            throw .badReply("the metadata at \(TerminalText.escaped(source)) names no authorization_servers; log in with a profile instead (douctl profile add NAME --issuer URL)", httpStatus: nil)
        }
        try requireSecure(server, what: "authorization server")
        let provider = try ProviderMetadata.discover(issuer: server, http: http, recorder: recorder)
        // Every endpoint of a non-loopback server must be https, or a token crosses in clear.
        let endpoints = [provider.authorizationEndpoint, provider.tokenEndpoint, provider.deviceAuthorizationEndpoint,
                         provider.revocationEndpoint, provider.userinfoEndpoint, provider.registrationEndpoint].compactMap { $0 }
        if !isLoopback(provider.issuer) {
            for endpoint in endpoints where !endpoint.hasPrefix("https://") {
                throw .badReply("the authorization server \(TerminalText.escaped(provider.issuer)) names the endpoint \(TerminalText.escaped(endpoint)), which is not https; refused, nothing was written", httpStatus: nil)
            }
        }
        guard provider.tokenEndpoint != nil else {
            throw .badReply("the authorization server \(TerminalText.escaped(provider.issuer)) has no token_endpoint; refused, nothing was written", httpStatus: nil)
        }
        let scopes = document["scopes_supported"]?.arrayValue?.compactMap(\.stringValue) ?? []
        return ResourceDiscovery(apiBase: origin, metadataURL: source, resource: resource, provider: provider, scopes: scopes)
    }

    /// RFC 7591: registers douctl as a public client with a loopback redirect and the grants
    /// it uses; returns the client id (and a secret when the server issues one).
    public func register(redirectURI: String, http: any HTTPTransport, recorder: ExchangeRecorder? = nil) throws(DouctlError) -> (clientID: String, clientSecret: String?) {
        guard let endpoint = provider.registrationEndpoint else {
            throw .usage("the authorization server \(TerminalText.escaped(provider.issuer)) offers no dynamic client registration; register a client there and pass it: DOUCTL_CLIENT_ID=ID douctl auth login \(apiBase)")
        }
        var grants: [JSON] = ["authorization_code", "refresh_token"]
        if provider.deviceAuthorizationEndpoint != nil { grants.append("urn:ietf:params:oauth:grant-type:device_code") }
        let body = JSON.object(JSONObject([
            ("client_name", "douctl"), ("redirect_uris", .array([.string(redirectURI)])),
            ("grant_types", .array(grants)), ("response_types", .array(["code"])),
            ("token_endpoint_auth_method", "none"),
        ]))
        let request = HTTPRequest(method: "POST", url: endpoint,
                                  headers: [HTTPHeader("Content-Type", "application/json"), HTTPHeader("Accept", "application/json")],
                                  body: .bytes(Array(body.text(.compact).utf8)))
        let reply = try LoginRequestPath(http: http, recorder: recorder).fetch(request)
        guard reply.status == 200 || reply.status == 201, let json = try? JSONParser.parse(reply.body) else {
            throw .badReply("the client registration at \(TerminalText.escaped(endpoint)) was refused (HTTP \(reply.status)); nothing was written", httpStatus: reply.status)
        }
        guard let clientID = json["client_id"]?.stringValue, !clientID.isEmpty,
              clientID.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            throw .badReply("the client registration at \(TerminalText.escaped(endpoint)) returned no client_id; refused, nothing was written", httpStatus: nil)
        }
        return (clientID, json["client_secret"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 })
    }

    /// A profile name for the API: its host (a port appended), as `profile add` takes it.
    public var profileName: String {
        guard let parts = URLParts(apiBase) else { return "api" }
        var name = parts.host.filter { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-") }
        if let port = parts.port { name += "-\(port)" }
        return name.isEmpty ? "api" : String(name.prefix(64))
    }

    /// The new profile's settings: api_base, the metadata's endpoints, the client.
    public func settings(clientID: String, clientSecret: String?, redirectURI: String) -> [(ProfileKey, ProfileValue)] {
        var settings: [(ProfileKey, ProfileValue)] = [(.apiBase, .text(apiBase))]
        settings += provider.settings(hasSecret: clientSecret != nil)
        settings.append((.clientID, .text(clientID)))
        if let clientSecret { settings.append((.clientSecret, .text(clientSecret))) }
        else if provider.tokenAuth(hasSecret: false) == nil { settings.append((.tokenAuth, .text(TokenAuth.none.rawValue))) }
        settings.append((.redirectURI, .text(redirectURI)))
        if !scopes.isEmpty { settings.append((.scopes, .list(scopes))) }
        return settings
    }

    static func fetchJSON(_ url: String, path: LoginRequestPath, what: String) throws(DouctlError) -> JSON {
        let reply = try path.fetch(HTTPRequest(method: "GET", url: url, headers: [HTTPHeader("Accept", "application/json")]))
        guard reply.status == 200, let json = try? JSONParser.parse(reply.body), json.objectValue != nil else {
            throw .badReply("no \(what) at \(TerminalText.escaped(url)) (HTTP \(reply.status)); log in with a profile instead (douctl profile add NAME --issuer URL)", httpStatus: nil)
        }
        return json
    }
}
