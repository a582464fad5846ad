import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// The built douctl against a real OAuth2 provider nobody here wrote: Django OAuth Toolkit
/// (PyPI `django-oauth-toolkit`), with exact registered redirect URIs and PKCE required.
/// Skipped, naming "python3 with django-oauth-toolkit", when that is missing (a failure
/// under DOUCTL_REQUIRE_TOOLS=1; .ci/run installs it).
@Suite("a real OAuth2 provider (Django OAuth Toolkit)", .serialized)
struct OAuth2ProviderTests {
    // MARK: browser + PKCE to the exact registered redirect URI

    @Test func webLoginWithPKCEToTheRegisteredRedirectURIAndSpaceSeparatedScopes() throws {
        let provider = try DOTProvider.shared()
        // The profile's name differs from the registered path: nothing may be appended to it.
        let (douctl, browser, login) = try provider.webLogin(profile: "dot", client: "dotx", extra: ["--redirect-uri", "http://127.0.0.1/callback/dotx", "--user-url", "/api/user"])
        #expect(login.status == 0, "\(login)\n\(provider.log)")
        #expect(try login.json()["user_id"]?.stringValue == "1")
        #expect(try login.json()["user_name"]?.stringValue == "alice")
        #expect(try login.json()["scopes"] == .array(["read", "write"]))
        #expect(login.stderr.contains("Logged in to dot as alice (1)."))
        // The provider is shared: this login's request, not another test's.
        let authorize = try #require(provider.requests.first { $0.hasPrefix("GET /o/authorize/") && $0.contains("client_id=dotx") })
        #expect(authorize.contains("scope=read%20write&"))
        #expect(authorize.contains("code_challenge_method=S256"))
        let target = String(authorize.dropFirst(4).prefix { $0 != " " })
        let redirect = try #require(URLComponents(string: target)?.queryItems?.first { $0.name == "redirect_uri" }?.value)
        #expect(redirect.hasPrefix("http://127.0.0.1:") && redirect.hasSuffix("/callback/dotx"), "\(redirect)")
        #expect(!redirect.hasSuffix(":0/callback/dotx"))
        #expect(browser.waitForRecord(containing: "done").contains("followed=200 True"))

        let status = try douctl.run(["--profile", "dot", "auth", "status", "--check"], timeout: 120)
        #expect(status.status == 0, "\(status)")
        #expect(try status.json()["valid"] == .bool(true))
        #expect(try status.json()["user_name"]?.stringValue == "alice")
    }

    /// A redirect URI registered on the IPv6 loopback (RFC 8252 §7.3): the listener binds
    /// [::1], not 127.0.0.1, and the provider sees the registered host with douctl's port.
    @Test func webLoginToARedirectURIOnTheIPv6Loopback() throws {
        guard Self.canListenOnIPv6Loopback() else {
            try Test.cancel("skipped: needs an IPv6 loopback (::1), which this machine does not have")
        }
        let provider = try DOTProvider.shared()
        let (_, browser, login) = try provider.webLogin(profile: "dot6", client: "dot6", extra: ["--redirect-uri", "http://[::1]/callback/dot6", "--user-url", "/api/user"])
        #expect(login.status == 0, "\(login)\n\(provider.log)")
        #expect(try login.json()["user_name"]?.stringValue == "alice")
        let authorize = try #require(provider.requests.first { $0.hasPrefix("GET /o/authorize/") && $0.contains("client_id=dot6") })
        let target = String(authorize.dropFirst(4).prefix { $0 != " " })
        let redirect = try #require(URLComponents(string: target)?.queryItems?.first { $0.name == "redirect_uri" }?.value)
        #expect(redirect.hasPrefix("http://[::1]:") && redirect.hasSuffix("/callback/dot6"), "\(redirect)")
        #expect(browser.waitForRecord(containing: "done").contains("followed=200 True"))
    }

    static func canListenOnIPv6Loopback() -> Bool {
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_loopback
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0 }
        }
    }

    // MARK: device grant (RFC 8628), no identity endpoint

    @Test func deviceLoginWithoutUserURLStoresTheTokenWithTheUserUnknown() throws {
        let provider = try DOTProvider.shared()
        let browser = try FakeBrowser()
        let douctl = Douctl(environment: ["BROWSER": browser.command("follow")])
        try provider.addProfile(douctl, name: "dotdev", client: "dotd")
        let login = try douctl.run(["--profile", "dotdev", "auth", "login", "--device", "--wait", "120"], timeout: 180)
        #expect(login.status == 0, "\(login)\n\(provider.log)")
        #expect(try login.json()["user_id"] == .null)
        #expect(try login.json()["user_name"] == .null)
        #expect(login.stderr.contains("Logged in to dotdev as an unknown user."))
        #expect(login.stderr.contains("no user_url"))
        let device = try #require(provider.requests.first { $0.hasPrefix("POST /o/device-authorization/") })
        #expect(device.hasSuffix(" 200"), "\(device)")
        // No Douban identity call went out.
        #expect(!provider.log.contains("/v2/user/~me"))

        let status = try douctl.run(["--profile", "dotdev", "auth", "status", "--check"], timeout: 120)
        #expect(status.status == 0, "\(status)")
        #expect(try status.json()["logged_in"] == .bool(true))
        #expect(try status.json()["user_id"] == .null)
        #expect(try status.json()["valid"] == .null)
        let token = try douctl.run(["--profile", "dotdev", "auth", "token"], timeout: 120)
        let api = try douctl.run(["--profile", "dotdev", "api", "/api/user"], environment: ["DOUCTL_TOKEN": token.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)])
        #expect(api.status == 0, "\(api)")
        #expect(try api.json()["username"]?.stringValue == "alice")
    }

    // MARK: refresh with rotation, revocation on logout (RFC 7009)

    @Test func refreshRotatesTheRefreshTokenAndLogoutRevokes() throws {
        let provider = try DOTProvider.shared()
        let browser = try FakeBrowser()
        // The confidential client, authenticated with HTTP Basic (RFC 6749 §2.3.1); its
        // secret comes from the environment, never argv.
        let douctl = Douctl(environment: ["BROWSER": browser.command("follow"), "DOUCTL_CLIENT_SECRET": "dotc-secret"])
        try provider.addProfile(douctl, name: "dotc", client: "dotc", extra: [
            "--redirect-uri", "http://127.0.0.1/callback/dotc", "--user-url", "/api/user", "--token-auth", "basic",
        ])
        let login = try douctl.run(["--profile", "dotc", "auth", "login", "--web", "--wait", "120"], timeout: 180)
        #expect(login.status == 0, "\(login)\n\(provider.log)")
        let before = try stored(douctl, "dotc")

        let refresh = try douctl.run(["--profile", "dotc", "auth", "refresh"], timeout: 120)
        #expect(refresh.status == 0, "\(refresh)")
        let after = try stored(douctl, "dotc")
        #expect(after.refresh != before.refresh)
        #expect(after.access != before.access)
        // The old refresh token is spent: DOT refuses it.
        let basic = "Authorization: Basic " + Data("dotc:dotc-secret".utf8).base64EncodedString()
        let replay = try douctl.run(["api", "-X", "POST", "\(provider.base)/o/token/", "-f", "grant_type=refresh_token",
                                     "-f", "refresh_token=\(before.refresh)", "-H", basic])
        #expect(replay.status != 0, "\(replay)")
        #expect((replay.stderr + replay.stdoutText).contains("invalid_grant"), "\(replay)")
        // The new access token works, until logout revokes it.
        let works = try douctl.run(["--profile", "dotc", "api", "/api/user"], timeout: 120)
        #expect(works.status == 0, "\(works)")

        let logout = try douctl.run(["--profile", "dotc", "auth", "logout"], timeout: 120)
        #expect(logout.status == 0, "\(logout)")
        #expect(!logout.stderr.contains("did not confirm revocation"), "\(logout)")
        #expect(provider.requests.filter { $0.hasPrefix("POST /o/revoke_token/") && $0.hasSuffix(" 200") }.count >= 2, "\(provider.log)")
        let refused = try douctl.run(["--profile", "dotc", "api", "/api/user"], environment: ["DOUCTL_TOKEN": after.access])
        #expect(refused.status == 4, "\(refused)")
    }

    /// Six processes find the token expired at once. Django OAuth Toolkit rotates refresh
    /// tokens, so a second refresh with the same token is refused (invalid_grant): all six
    /// succeeding with one refresh sent is the credentials lock working against a provider
    /// nobody here wrote (was proven against the sandbox only).
    @Test func racingProcessesSpendTheRotatingRefreshTokenOnce() throws {
        let provider = try DOTProvider.shared()
        let (douctl, _, login) = try provider.webLogin(profile: "dotrace", client: "dotx", extra: ["--redirect-uri", "http://127.0.0.1/callback/dotx", "--user-url", "/api/user"])
        #expect(login.status == 0, "\(login)\n\(provider.log)")
        // Due now, as far as douctl knows (the provider would still take it).
        let path = douctl.configDirectory + "/credentials.json"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let expired = text.replacingOccurrences(of: #""expires_at"\s*:\s*"[^"]*""#, with: #""expires_at":"2001-01-01T00:00:00Z""#, options: .regularExpression)
        try #require(expired != text)
        try expired.write(toFile: path, atomically: true, encoding: .utf8)
        try #require(chmod(path, 0o600) == 0, "douctl refuses a credentials file others can read")
        let before = try stored(douctl, "dotrace")
        let tokenRequests = { provider.requests.filter { $0.hasPrefix("POST /o/token/") }.count }
        let sentBefore = tokenRequests()

        let results = try RunningDouctl.racingOnTheCredentialsLock(douctl, ["--profile", "dotrace", "api", "/api/user"])

        #expect(results.allSatisfy { $0.status == 0 }, "\(results.filter { $0.status != 0 })\n\(provider.log)")
        #expect(results.allSatisfy { (try? $0.json()["username"]?.stringValue) == "alice" })
        #expect(tokenRequests() - sentBefore == 1, "one refresh sent: \(provider.log)")
        #expect(try stored(douctl, "dotrace").refresh != before.refresh, "the rotated refresh token is the one kept")
    }

    func stored(_ douctl: Douctl, _ profile: String) throws -> (access: String, refresh: String) {
        let data = try Data(contentsOf: URL(fileURLWithPath: douctl.configDirectory + "/credentials.json"))
        let entry = try JSONParser.parse(Array(data))["profiles"]?[profile]
        return (try #require(entry?["access_token"]?.stringValue), try #require(entry?["refresh_token"]?.stringValue))
    }
}

/// One Django OAuth Toolkit server for the suite: a single-file Django project (sqlite in a
/// temporary directory) on wsgiref, with a user alice, a public PKCE client `dotx`
/// (registered redirect http://127.0.0.1/callback/dotx), a confidential `dotc` and a
/// device-flow client `dotd`. The browser is always signed in as alice and the clients skip
/// the consent screen; `verification_uri_complete` approves the device code.
final class DOTProvider: @unchecked Sendable {
    let base: String
    let directory: String
    private let process: Process

    var log: String { (try? String(contentsOfFile: directory + "/provider.log", encoding: .utf8)) ?? "" }
    /// "METHOD TARGET STATUS" per request, in order (from the server's request log).
    var requests: [String] {
        log.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("\""), let close = line.dropFirst().firstIndex(of: "\"") else { return nil }
            let request = line[line.index(after: line.startIndex)..<close]
                .replacingOccurrences(of: " HTTP/1.1", with: "").replacingOccurrences(of: " HTTP/1.0", with: "")
            let status = line[line.index(after: close)...].split(separator: " ").first.map(String.init) ?? ""
            return "\(request) \(status)"
        }
    }

    private static let lock = NSLock()
    nonisolated(unsafe) private static var started: DOTProvider?

    static func shared() throws -> DOTProvider {
        try requireToolkit()
        lock.lock()
        defer { lock.unlock() }
        if let started { return started }
        let provider = try DOTProvider()
        started = provider
        return provider
    }

    /// python3 that imports oauth2_provider; otherwise skip (fail under DOUCTL_REQUIRE_TOOLS=1).
    static func requireToolkit(sourceLocation: SourceLocation = #_sourceLocation) throws {
        try PythonPeer.require(module: "oauth2_provider", package: "django-oauth-toolkit", sourceLocation: sourceLocation)
    }

    private init() throws {
        directory = TemporaryDirectory.make(prefix: "douctl-dot")
        let script = directory + "/dot_provider.py"
        try Data(Self.source.utf8).write(to: URL(fileURLWithPath: script))
        // Migrating a fresh sqlite database takes a while on a busy machine.
        (process, base) = try PythonPeer.launch(name: "Django OAuth Toolkit", script: script, arguments: [directory],
                                                directory: directory, log: "provider.log", waiting: 300)
    }

    deinit { if process.isRunning { process.terminate() } }

    /// A plain OAuth2 profile (no preset) for one of the provider's clients.
    /// A douctl whose browser (signed in as alice) follows every link, logged in with the web
    /// flow to a new profile `profile` of `client`: the douctl, its browser and the login's result.
    func webLogin(profile: String, client: String, extra: [String]) throws -> (Douctl, FakeBrowser, CommandResult) {
        let browser = try FakeBrowser()
        let douctl = Douctl(environment: ["BROWSER": browser.command("follow")])
        try addProfile(douctl, name: profile, client: client, extra: extra)
        let login = try douctl.run(["--profile", profile, "auth", "login", "--web", "--wait", "120"], timeout: 180)
        return (douctl, browser, login)
    }

    func addProfile(_ douctl: Douctl, name: String, client: String, extra: [String] = []) throws {
        let result = try douctl.run(["profile", "add", name, "--api-base", base, "--authorize-url", "\(base)/o/authorize/",
                                     "--token-url", "\(base)/o/token/", "--device-authorization-url", "\(base)/o/device-authorization/",
                                     "--revoke-url", "\(base)/o/revoke_token/", "--client-id", client, "--token-auth", "none",
                                     "--scopes", "read,write"] + extra)
        #expect(result.status == 0, "\(result)")
    }

    static let source = #"""
# A Django OAuth Toolkit provider for douctl's tests: one file, sqlite in DIR, served by
# wsgiref on 127.0.0.1 (one thread, no autoreload). Prints "ready PORT" when it listens.
#   python3 dot_provider.py DIR
import json, os, sys
DIR = sys.argv[1]
# OpenID Connect signs ID tokens with RS256: a key made for this run.
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
import django
from django.conf import settings
settings.configure(
    DEBUG=False, SECRET_KEY="douctl-test", ALLOWED_HOSTS=["127.0.0.1", "localhost"], ROOT_URLCONF=__name__,
    INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "django.contrib.sessions", "oauth2_provider"],
    MIDDLEWARE=["django.contrib.sessions.middleware.SessionMiddleware", "django.contrib.auth.middleware.AuthenticationMiddleware",
                __name__ + ".SignedIn"],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.path.join(DIR, "db.sqlite3")}},
    USE_TZ=True, LOGGING_CONFIG=None,
    TEMPLATES=[{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True}],
    OAUTH2_PROVIDER={
        "SCOPES": {"read": "Read", "write": "Write", "openid": "OpenID Connect"}, "DEFAULT_SCOPES": ["read"],
        "OIDC_ENABLED": True, "OIDC_RSA_PRIVATE_KEY": RSA_KEY,
        "PKCE_REQUIRED": True, "ROTATE_REFRESH_TOKEN": True, "REFRESH_TOKEN_GRACE_PERIOD_SECONDS": 0,
        "DEVICE_FLOW_INTERVAL": 1,
        "OAUTH_DEVICE_VERIFICATION_URI": "http://127.0.0.1/device",
        "OAUTH_DEVICE_VERIFICATION_URI_COMPLETE": lambda code: BASE[0] + "/test/approve-device?user_code=" + code,
    },
)
django.setup()
BASE = [""]
from django.contrib.auth.models import User
from django.http import JsonResponse, HttpResponse
from django.urls import include, path
from django.core.management import call_command
from oauth2_provider.decorators import protected_resource
from oauth2_provider.models import get_application_model, DeviceGrant

class SignedIn:
    # The person at the browser is always alice (a provider's login page is not what is tested).
    def __init__(self, get_response): self.get_response = get_response
    def __call__(self, request):
        request.user = User.objects.get(username="alice")
        return self.get_response(request)

@protected_resource()
def client(request):
    # What a client-credentials token may read: the client it was issued to (no user).
    from oauth2_provider.models import get_access_token_model
    token = get_access_token_model().objects.get(token=request.META["HTTP_AUTHORIZATION"].split()[1])
    return JsonResponse({"client_id": token.application.client_id})

@protected_resource()
def user(request):
    return JsonResponse({"id": request.resource_owner.id, "username": request.resource_owner.username})

def approve_device(request):
    grant = DeviceGrant.objects.get(user_code=request.GET["user_code"])
    grant.status = grant.AUTHORIZED
    grant.user = User.objects.get(username="alice")
    grant.save()
    return HttpResponse("approved; close this tab")

from oauth2_provider import views as dot_views
# RFC 8414 §3.1: for the issuer BASE/o the metadata is also at BASE/.well-known/oauth-authorization-server/o.
urlpatterns = [path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")), path("api/user", user),
               path("api/client", client), path("test/approve-device", approve_device),
               path(".well-known/oauth-authorization-server/<path:issuer_path>", dot_views.OAuthServerMetadataView.as_view())]

call_command("migrate", verbosity=0)
alice = User.objects.create_user("alice", password="not-used")
Application = get_application_model()
Application.objects.create(name="dotx", client_id="dotx", client_type=Application.CLIENT_PUBLIC,
    authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE, redirect_uris="http://127.0.0.1/callback/dotx",
    skip_authorization=True, algorithm="")
Application.objects.create(name="dotc", client_id="dotc", client_secret="dotc-secret", client_type=Application.CLIENT_CONFIDENTIAL,
    authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE, redirect_uris="http://127.0.0.1/callback/dotc",
    skip_authorization=True, algorithm="")
Application.objects.create(name="dot6", client_id="dot6", client_type=Application.CLIENT_PUBLIC,
    authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE, redirect_uris="http://[::1]/callback/dot6",
    skip_authorization=True, algorithm="")
Application.objects.create(name="doto", client_id="doto", client_type=Application.CLIENT_PUBLIC,
    authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE, redirect_uris="http://127.0.0.1/callback/doto",
    skip_authorization=True, algorithm=Application.RS256_ALGORITHM)
Application.objects.create(name="dotcc", client_id="dotcc", client_secret="dotcc-secret", client_type=Application.CLIENT_CONFIDENTIAL,
    authorization_grant_type=Application.GRANT_CLIENT_CREDENTIALS, redirect_uris="", algorithm="")
Application.objects.create(name="dotd", client_id="dotd", client_type=Application.CLIENT_PUBLIC,
    authorization_grant_type=Application.GRANT_DEVICE_CODE, redirect_uris="", skip_authorization=True, algorithm="")

from wsgiref.simple_server import make_server, WSGIRequestHandler
from django.core.wsgi import get_wsgi_application
class Quiet(WSGIRequestHandler):
    def log_message(self, format, *args): sys.stderr.write((format % args) + "\n")
server = make_server("127.0.0.1", 0, get_wsgi_application(), handler_class=Quiet)
BASE[0] = "http://127.0.0.1:%d" % server.server_port
import threading, time
def orphaned(parent=os.getppid()):
    while os.getppid() == parent: time.sleep(1)
    os._exit(0)
threading.Thread(target=orphaned, daemon=True).start()
print("ready %d" % server.server_port, flush=True)
server.serve_forever()
"""#
}
