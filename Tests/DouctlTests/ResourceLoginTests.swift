import DouctlJSON
import DouctlServer
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 39, point 5, with the built binary: `douctl auth login http://127.0.0.1:PORT/api`
/// against an API and authorization server written here (RFC 9728, RFC 8414, RFC 7591 and the
/// device flow), and the same server lying.
@Suite("auth login URL: discovery, registration, a profile for the origin")
struct ResourceLoginTests {
    /// One server on 127.0.0.1 playing the API and its authorization server; `lie` changes
    /// one document.
    static func server(lie: String? = nil) throws -> (TestServer, LockedValue<String>) {
        let base = LockedValue("")
        let server = try TestServer { request in
            let origin = base.value
            func json(_ status: Int, _ text: String, _ headers: [(String, String)] = []) -> HTTPServerResponse {
                HTTPServerResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: .bytes(Array(text.utf8)))
            }
            switch request.path {
            case "/api":
                if request.header("Authorization") == "Bearer device-token" { return json(200, #"{"ok":true}"#) }
                return json(401, #"{"error":"unauthorized"}"#, [("WWW-Authenticate", #"Bearer resource_metadata="\#(origin)/.well-known/oauth-protected-resource/api""#)])
            case "/.well-known/oauth-protected-resource/api":
                return json(200, #"{"resource":"\#(origin)/api","authorization_servers":["\#(origin)/auth"]}"#)
            case "/.well-known/oauth-authorization-server/auth":
                let issuer = lie == "issuer" ? "http://127.0.0.2:\(origin.split(separator: ":").last ?? "")/auth" : origin + "/auth"
                return json(200, #"{"issuer":"\#(issuer)","authorization_endpoint":"\#(origin)/auth/authorize","token_endpoint":"\#(origin)/auth/token","device_authorization_endpoint":"\#(origin)/auth/device","registration_endpoint":"\#(origin)/auth/register","token_endpoint_auth_methods_supported":["none"],"code_challenge_methods_supported":["S256"]}"#)
            case "/auth/register":
                return lie == "registration" ? json(201, #"{"client_name":"douctl"}"#) : json(201, #"{"client_id":"dyn-client-1"}"#)
            case "/auth/device":
                return json(200, #"{"device_code":"dev-1","user_code":"ABCD-EFGH","verification_uri":"\#(origin)/auth/activate","expires_in":60,"interval":1}"#)
            case "/auth/token":
                guard request.form.contains(where: { $0.name == "client_id" && $0.value == "dyn-client-1" }) else {
                    return json(401, #"{"error":"invalid_client"}"#)
                }
                return json(200, #"{"access_token":"device-token","token_type":"Bearer","expires_in":3600,"refresh_token":"r-1"}"#)
            default:
                return json(404, #"{"error":"not_found"}"#)
            }
        }
        base.withLock { $0 = server.baseURL }
        return (server, base)
    }

    @Test func aLoginFromTheAPIsURLRegistersAClientWritesAProfileAndLogsInWithTheDeviceFlow() throws {
        let (server, _) = try Self.server()
        defer { server.stop() }
        let douctl = Douctl()
        let login = try douctl.run(["auth", "login", server.baseURL + "/api", "--device", "--no-browser"], timeout: 60)
        #expect(login.status == 0, "\(login)")
        #expect(login.stderr.contains("ABCD-EFGH"), "the user code is shown: \(login)")
        let name = "127.0.0.1-\(server.port)"
        #expect(login.stderr.contains("wrote profile \(name) with a registered client"), "\(login)")
        let paths = server.received.map(\.path)
        #expect(paths.prefix(5) == ["/api", "/.well-known/oauth-protected-resource/api", "/auth/.well-known/openid-configuration",
                                    "/.well-known/oauth-authorization-server/auth", "/auth/register"], "\(paths)")
        let register = try JSONParser.parse(server.received[4].body)
        #expect(register["token_endpoint_auth_method"]?.stringValue == "none")
        // The URL rule picks the new profile: the token goes to the API, and only there.
        let call = try douctl.run("api", server.baseURL + "/api")
        #expect(call.status == 0, "\(call)")
        #expect(call.stdoutText.contains("\"ok\""), "\(call)")
        let config = try String(contentsOfFile: douctl.configDirectory + "/config.json", encoding: .utf8)
        #expect(config.contains("dyn-client-1") && config.contains(name))
        print("auth login URL: \(server.received.count) requests: \(paths.joined(separator: " "))")
    }

    @Test(arguments: ["issuer", "registration"])
    func aLyingServerIsRefusedInOneLineAndNothingIsWritten(_ lie: String) throws {
        let (server, _) = try Self.server(lie: lie)
        defer { server.stop() }
        let douctl = Douctl()
        let login = try douctl.run(["auth", "login", server.baseURL + "/api", "--device", "--no-browser"])
        #expect(login.status == 8, "\(login)")
        #expect(login.stderr.split(separator: "\n").count == 1, "\(login)")
        #expect(login.errorLine.contains("refused"), "\(login)")
        #expect(!FileManager.default.fileExists(atPath: douctl.configDirectory + "/config.json"), "nothing written")
        #expect(!server.received.contains { $0.path == "/auth/token" || $0.path == "/auth/device" })
        print("lying server (\(lie)): \(login.errorLine)")
    }
}
