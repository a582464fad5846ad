@testable import DouctlCommands
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Testing

/// Issue 39, point 5, in process: `auth login https://api.example.com` with no profile finds
/// the authorization server the API names (RFC 9728), reads its metadata (RFC 8414),
/// registers a client (RFC 7591) and writes a profile for the origin; metadata that lies is
/// refused in one line and nothing is written.
@Suite struct ResourceLoginCommandTests {
    static let api = "https://api.example.com"
    static let auth = "https://auth.example.com"

    static func challenge() -> ScriptedTransport.Answer {
        .json(401, #"{"error":"unauthorized"}"#, headers: [HTTPHeader("WWW-Authenticate", #"Bearer error="invalid_token", resource_metadata="\#(api)/.well-known/oauth-protected-resource""#)])
    }

    static func resourceMetadata(resource: String = api, server: String = auth) -> ScriptedTransport.Answer {
        .json(200, #"{"resource":"\#(resource)","authorization_servers":["\#(server)"],"scopes_supported":["read","write"]}"#)
    }

    static func serverMetadata(issuer: String = auth, token: String = "\(auth)/token", registration: String = "\(auth)/register") -> ScriptedTransport.Answer {
        .json(200, #"{"issuer":"\#(issuer)","authorization_endpoint":"\#(auth)/authorize","token_endpoint":"\#(token)","registration_endpoint":"\#(registration)","code_challenge_methods_supported":["S256"],"token_endpoint_auth_methods_supported":["none"]}"#)
    }

    @Test func aLoginFromTheAPIsURLDiscoversRegistersAndWritesAProfileForItsOrigin() throws {
        let transport = ScriptedTransport([Self.challenge(), Self.resourceMetadata(), .json(404, "{}"), Self.serverMetadata(),
                                           .json(201, #"{"client_id":"registered-7","client_name":"douctl"}"#)])
        let douctl = try InProcessDouctl(transport: transport)
        let login = try douctl.run(["auth", "login", Self.api, "--with-token"], input: Array("the-token\n".utf8))
        #expect(login.status == 0, "\(login)")
        #expect(transport.requests.map(\.url) == [Self.api, "\(Self.api)/.well-known/oauth-protected-resource",
                                                   "\(Self.auth)/.well-known/openid-configuration",
                                                   "\(Self.auth)/.well-known/oauth-authorization-server", "\(Self.auth)/register"])
        #expect(transport.requests.first?.header("Authorization") == nil, "nothing secret to an unknown API")
        let registration = try JSONParser.parse(transport.requests.last.map { request -> [UInt8] in
            if case .bytes(let bytes) = request.body { return bytes } else { return [] }
        } ?? [])
        #expect(registration["token_endpoint_auth_method"]?.stringValue == "none")
        let redirect = registration["redirect_uris"]?.arrayValue?.first?.stringValue ?? ""
        #expect(redirect.hasPrefix("http://127.0.0.1:") && redirect.hasSuffix("/callback"), "a loopback port, written in full: \(redirect)")
        #expect(login.stderr.contains("wrote profile api.example.com with a registered client"), "\(login)")

        let show = try douctl.run("profile", "show", "api.example.com")
        #expect(show.status == 0, "\(show)")
        let profile = try show.json()
        #expect(profile["api_base"]?.stringValue == Self.api)
        #expect(profile["client_id"]?.stringValue == "registered-7")
        #expect(profile["token_url"]?.stringValue == "\(Self.auth)/token")
        #expect(profile["issuer"]?.stringValue == Self.auth)
        #expect(profile["redirect_uri"]?.stringValue == redirect, "kept as registered")
        // The URL rule now picks it: the token goes to its origin.
        transport.then(.json(200, "{}"))
        #expect(try douctl.run("api", Self.api + "/things").status == 0)
        #expect(transport.requests.last?.header("Authorization") == "Bearer the-token")
        // Logging in from the URL again uses the profile, with no discovery.
        let again = try douctl.run(["auth", "login", Self.api + "/x", "--with-token"], input: Array("second\n".utf8))
        #expect(again.status == 0, "\(again)")
        #expect(transport.requests.count == 6)
    }

    /// Each lie is one line, exit 8 (or 2), nothing written.
    @Test(arguments: ["other-issuer", "http-endpoint", "no-client-id", "other-resource", "http-server"])
    func lyingMetadataIsRefusedInOneLineAndNothingIsWritten(_ lie: String) throws {
        var script: [ScriptedTransport.Answer] = [Self.challenge()]
        switch lie {
        case "other-issuer": script += [Self.resourceMetadata(), .json(404, "{}"), Self.serverMetadata(issuer: "https://evil.example.net")]
        case "http-endpoint": script += [Self.resourceMetadata(), .json(404, "{}"), Self.serverMetadata(token: "http://auth.example.com/token")]
        case "no-client-id": script += [Self.resourceMetadata(), .json(404, "{}"), Self.serverMetadata(), .json(201, #"{"client_name":"douctl"}"#)]
        case "other-resource": script += [Self.resourceMetadata(resource: "https://bank.example.org")]
        default: script += [Self.resourceMetadata(server: "http://auth.example.com")]
        }
        let transport = ScriptedTransport(script)
        let douctl = try InProcessDouctl(transport: transport)
        let login = try douctl.run(["auth", "login", Self.api, "--with-token"], input: Array("the-token\n".utf8))
        #expect(login.status == 8, "\(login)")
        #expect(login.stderr.split(separator: "\n").count == 1, "one line: \(login)")
        #expect(login.stderr.contains("refused"), "\(login)")
        #expect(transport.unused == 0)
        #expect(try douctl.run("profile", "show", "api.example.com").status == 2, "no profile was written")
        #expect((try? FileIO.readFile(douctl.configDirectory + "/credentials.json")) == nil, "nothing stored")
        print("lie \(lie): \(login.errorLine)")
    }

    @Test func theWWWAuthenticateParameterIsReadQuotedOrNot() {
        #expect(ResourceDiscovery.resourceMetadataParameter(#"Bearer resource_metadata="https://a.test/m", scope="x""#) == "https://a.test/m")
        #expect(ResourceDiscovery.resourceMetadataParameter("Bearer realm=x, Resource_Metadata=https://a.test/m") == "https://a.test/m")
        #expect(ResourceDiscovery.resourceMetadataParameter(#"Basic realm="x""#) == nil)
        #expect(ResourceDiscovery.wellKnownURL(for: "https://a.test/api/v1") == "https://a.test/.well-known/oauth-protected-resource/api/v1")
        #expect(ResourceDiscovery.wellKnownURL(for: "https://a.test") == "https://a.test/.well-known/oauth-protected-resource")
    }
}
