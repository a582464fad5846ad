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

    /// The MCP Python SDK's authorization server and protected resource (mcp.server.auth:
    /// RFC 9728 metadata and challenge, RFC 8414, RFC 7591 registration, PKCE), a server
    /// nobody here wrote: douctl logs in from the resource's URL with the browser flow.
    @Test func aLoginFromAnMCPServersURLWorksAgainstTheMCPPythonSDK() throws {
        try PythonPeer.require(module: "mcp.server.auth.routes, uvicorn", package: "mcp uvicorn")
        let peer = try PythonPeer(name: "mcp-auth", source: Self.mcpServer)
        let browser = try FakeBrowser()
        let douctl = Douctl(environment: ["BROWSER": browser.command("follow")])
        let login = try douctl.run(["auth", "login", peer.base + "/mcp", "--web"], timeout: 60)
        #expect(login.status == 0, "\(login)\n\(peer.log.suffix(2000))")
        #expect(login.stderr.contains("with a registered client"), "\(login)")
        let call = try douctl.run("api", peer.base + "/mcp")
        #expect(call.status == 0, "\(call)")
        #expect(call.stdoutText.contains("\"ok\""), "the SDK's bearer middleware took the token: \(call)")
        let status = try douctl.run(["auth", "status", "--no-check", "--explain", "--json", "--profile", "127.0.0.1-\(peer.base.split(separator: ":").last ?? "")"])
        #expect(status.status == 0, "\(status)")
        print("MCP SDK: \(login.stderr.split(separator: "\n").filter { $0.contains("wrote profile") }.joined())")
    }

    static let mcpServer = #"""
# The MCP Python SDK's own OAuth authorization server and protected-resource routes
# (mcp.server.auth), with an in-memory provider that approves every authorization
# request at once, and an API at /mcp behind the SDK's bearer-auth middleware.
import secrets, socket, sys, time
import uvicorn
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.responses import JSONResponse
from starlette.routing import Route
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import (AccessToken, AuthorizationCode, ProviderTokenVerifier,
                                      RefreshToken, construct_redirect_uri)
from mcp.server.auth.routes import (build_resource_metadata_url, create_auth_routes,
                                    create_protected_resource_routes)
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.shared.auth import OAuthToken


class Provider:
    def __init__(self):
        self.clients, self.codes, self.tokens, self.refresh = {}, {}, {}, {}

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, info):
        self.clients[info.client_id] = info

    async def authorize(self, client, params):
        code = secrets.token_hex(16)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300, client_id=client.client_id,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, code):
        return self.codes.get(code)

    def _issue(self, client_id, scopes):
        access, refresh = "mcp-at-" + secrets.token_hex(8), "mcp-rt-" + secrets.token_hex(8)
        self.tokens[access] = AccessToken(token=access, client_id=client_id, scopes=scopes, expires_at=int(time.time()) + 3600)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=3600, refresh_token=refresh,
                          scope=" ".join(scopes) or None)

    async def exchange_authorization_code(self, client, code):
        self.codes.pop(code.code, None)
        return self._issue(client.client_id, code.scopes)

    async def load_refresh_token(self, client, refresh_token):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        self.refresh.pop(refresh_token.token, None)
        return self._issue(client.client_id, scopes or refresh_token.scopes)

    async def load_access_token(self, token):
        return self.tokens.get(token)

    async def revoke_token(self, token):
        self.tokens.pop(getattr(token, "token", None), None)


listener = socket.socket()
listener.bind(("127.0.0.1", 0))
port = listener.getsockname()[1]
base = f"http://127.0.0.1:{port}"
provider = Provider()
resource = AnyHttpUrl(base + "/mcp")


async def api(scope, receive, send):
    await JSONResponse({"ok": True, "client_id": scope["user"].access_token.client_id})(scope, receive, send)

protected = RequireAuthMiddleware(api, [], build_resource_metadata_url(resource))
routes = create_auth_routes(provider, AnyHttpUrl(base), client_registration_options=ClientRegistrationOptions(enabled=True))
routes += create_protected_resource_routes(resource, [AnyHttpUrl(base)])
routes.append(Route("/mcp", endpoint=protected, methods=["GET"]))
app = Starlette(routes=routes, middleware=[Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(ProviderTokenVerifier(provider)))])
print(f"ready {port}", flush=True)
uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listener])
"""#
}
