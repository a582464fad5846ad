import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// Issue 41, item 3 against clients nobody here wrote the checks of: a login recorded from a
/// real OpenID provider (Django OAuth Toolkit, through `sandbox --proxy-to --record`) replayed
/// to a strict OIDC client (PyJWT's PyJWKClient and jwt.decode pinned to the provider's
/// algorithms=["RS256"], audience, issuer; the nonce and at_hash checked), and to one pinned
/// to ES256 once the recording says its provider signs ES256; and douctl's own device login
/// against a replay of a recorded device login.
///
/// In the provider's own serialized suite: these logins go to the one shared provider, whose
/// request log other tests of that suite read and count.
extension OAuth2ProviderTests {
    /// The provider's login recorded through the proxy, then the same login, every check a
    /// strict client makes, against the replay, with the provider stopped out of the path.
    @Test func aStrictOIDCClientLogsInToAReplayOfARealProvider() throws {
        try PythonPeer.require(module: "jwt, requests", package: "PyJWT")
        let provider = try DOTProvider.shared()
        let directory = TemporaryDirectory.make(prefix: "oidc-peer")
        let script = directory + "/oidc_peer.py"
        try Data(Self.strictOIDCPeer.utf8).write(to: URL(fileURLWithPath: script))
        let python = try Tools.require("python3")
        let recordings = directory + "/recording"

        let (proxy, through) = try FakeAnyAPITests.startReplay(Douctl(), ["--proxy-to", provider.base, "--record", recordings])
        let recorded = try FakeAnyAPITests.run(python, [script, "record", through])
        proxy.kill(SIGTERM)
        let stopped = proxy.finish()
        #expect(recorded.status == 0, "\(String(decoding: recorded.stdout, as: UTF8.self)) \(recorded.stderr)\n\(stopped.stderr)")
        #expect(String(decoding: recorded.stdout, as: UTF8.self).contains(#"ok {"alg": "RS256""#), "the provider signs RS256")
        let authorize = stopped.stderr.split(separator: "\n").first { $0.hasPrefix("GET /o/authorize/?") }
        #expect(authorize?.hasSuffix(" 302 (proxied)") == true, "the proxy passed the authorization redirect on: \(stopped.stderr)")

        let (replay, url) = try FakeAnyAPITests.startReplay(Douctl(), ["--replay", recordings])
        defer {
            replay.kill(SIGTERM)
            _ = replay.finish()
        }
        let checked = try FakeAnyAPITests.run(python, [script, "check", url, "RS256"])
        let output = String(decoding: checked.stdout, as: UTF8.self)
        #expect(checked.status == 0, "\(output) \(checked.stderr)")
        #expect(output.contains(#"ok {"alg": "RS256", "user": "alice"}"#), "the provider's RS256, for a client pinned to it: \(output)")

        // The same recording, its provider made an ES256 one (discovery says so, no recorded
        // JWKS): the replay signs ES256, for a client pinned to ES256.
        let es256 = directory + "/recording-es256"
        try FileManager.default.createDirectory(atPath: es256, withIntermediateDirectories: true)
        var sawDiscovery = false
        for name in try FileManager.default.contentsOfDirectory(atPath: recordings) where !name.contains("jwks") {
            var text = try String(contentsOfFile: recordings + "/" + name, encoding: .utf8)
            if name.contains("openid-configuration") {
                sawDiscovery = sawDiscovery || text.contains("RS256")
                text = text.replacingOccurrences(of: "RS256", with: "ES256")
            }
            try text.write(toFile: es256 + "/" + name, atomically: true, encoding: .utf8)
        }
        #expect(sawDiscovery, "the recorded discovery advertises RS256")
        let (ecReplay, ecURL) = try FakeAnyAPITests.startReplay(Douctl(), ["--replay", es256])
        let ecChecked = try FakeAnyAPITests.run(python, [script, "check", ecURL, "ES256"])
        ecReplay.kill(SIGTERM)
        _ = ecReplay.finish()
        let ecOutput = String(decoding: ecChecked.stdout, as: UTF8.self)
        #expect(ecChecked.status == 0, "\(ecOutput) \(ecChecked.stderr) \((try? FileManager.default.contentsOfDirectory(atPath: recordings)) ?? [])")
        #expect(ecOutput.contains(#"ok {"alg": "ES256", "user": "alice"}"#), "\(ecOutput)")

        // douctl's own browser login against the same replay, its endpoints discovered there.
        let browser = try FakeBrowser()
        let douctl = Douctl(environment: ["BROWSER": browser.command("follow")])
        let add = try douctl.run(["profile", "add", "replayed", "--issuer", url + "/o", "--api-base", url, "--client-id", "doto",
                                  "--token-auth", "none", "--scopes", "openid,read", "--user-url", "/api/user", "--user-id-field", "id", "--user-name-field", "username"])
        #expect(add.status == 0, "\(add)")
        let login = try douctl.run(["--profile", "replayed", "auth", "login", "--web", "--wait", "60"], timeout: 90)
        #expect(login.status == 0, "\(login)\n\(replay.stderrSoFar)")
        #expect(login.stderr.contains("as alice"), "\(login.stderr)")
        let user = try douctl.run(["--profile", "replayed", "api", "/api/user"])
        #expect(user.status == 0, "\(user)")
        #expect(try user.json()["username"] == "alice")
    }

    /// `douctl auth login --device` against a replay of a recorded device login: fresh device
    /// and user codes, `authorization_pending` once, then tokens that reach the recorded route.
    @Test func douctlsDeviceLoginWorksAgainstAReplayedDeviceLogin() throws {
        let recordings = TemporaryDirectory.make(prefix: "device-replay")
        func write(_ name: String, _ text: String) throws {
            try text.write(toFile: recordings + "/" + name, atomically: true, encoding: .utf8)
        }
        let form = #"["Content-Type","application/x-www-form-urlencoded"]"#
        try write("0001-POST-device.json", #"{"request":{"method":"POST","path":"/device","query":[],"headers":[\#(form)],"#
            + #""body":{"form":[["client_id","cli"],["scope","read"]]}},"response":{"status":200,"headers":[["Content-Type","application/json"]],"#
            + #""body":{"json":{"device_code":"REDACTED","user_code":"WDJB-MJHT","verification_uri":"https://login.example/device","#
            + #""verification_uri_complete":"https://login.example/device?user_code=WDJB-MJHT","interval":1,"expires_in":600}}}}"#)
        for (index, reply) in [(2, #""status":400,"headers":[["Content-Type","application/json"]],"body":{"json":{"error":"authorization_pending"}}"#),
                               (3, #""status":200,"headers":[["Content-Type","application/json"]],"body":{"json":{"access_token":"REDACTED","refresh_token":"REDACTED","token_type":"Bearer","expires_in":3600,"scope":"read"}}"#)] {
            try write("000\(index)-POST-token.json", #"{"request":{"method":"POST","path":"/token","query":[],"headers":[\#(form)],"#
                + #""body":{"form":[["grant_type","urn:ietf:params:oauth:grant-type:device_code"],["device_code","REDACTED"],["client_id","cli"]]}},"#
                + #""response":{\#(reply)}}"#)
        }
        try write("0004-GET-api_me.json", #"{"request":{"method":"GET","path":"/api/me","query":[],"headers":[["Authorization","REDACTED"]]},"#
            + #""response":{"status":200,"headers":[["Content-Type","application/json"]],"body":{"json":{"name":"ann"}}}}"#)

        let (replay, url) = try FakeAnyAPITests.startReplay(Douctl(), ["--replay", recordings])
        defer {
            replay.kill(SIGTERM)
            _ = replay.finish()
        }
        let douctl = Douctl()
        let add = try douctl.run(["profile", "add", "dev", "--api-base", url, "--token-url", url + "/token",
                                  "--device-authorization-url", url + "/device", "--client-id", "cli", "--token-auth", "none", "--scopes", "read"])
        #expect(add.status == 0, "\(add)")
        let login = try douctl.run(["--profile", "dev", "auth", "login", "--device", "--no-browser", "--wait", "30"], timeout: 60)
        #expect(login.status == 0, "\(login)")
        #expect(!login.stderr.contains("WDJB-MJHT"), "a fresh user code, not the recorded one: \(login.stderr)")
        let credentials = try String(contentsOfFile: douctl.configDirectory + "/credentials.json", encoding: .utf8)
        #expect(!credentials.contains("REDACTED"), "\(credentials)")
        let me = try douctl.run(["--profile", "dev", "api", "/api/me"])
        #expect(me.status == 0, "\(me)")
        #expect(try me.json()["name"] == "ann")
        let polls = replay.stderrSoFar.components(separatedBy: "POST /token 400").count - 1
        #expect(polls == 1, "authorization_pending once: \(replay.stderrSoFar)")
    }

    /// A device login recorded from Django OAuth Toolkit (douctl through the recording
    /// proxy, the browser approving at the provider), replayed to a new douctl: fresh codes,
    /// pending once, then tokens that reach the recorded route.
    @Test func douctlsDeviceLoginWorksAgainstAReplayOfARealProvidersDeviceLogin() throws {
        let provider = try DOTProvider.shared()
        let recordings = TemporaryDirectory.make(prefix: "dot-device") + "/recording"
        let (proxy, through) = try FakeAnyAPITests.startReplay(Douctl(), ["--proxy-to", provider.base, "--record", recordings])
        func addProfile(_ douctl: Douctl, _ base: String) throws {
            let add = try douctl.run(["profile", "add", "dev", "--api-base", base, "--token-url", base + "/o/token/",
                                      "--device-authorization-url", base + "/o/device-authorization/", "--client-id", "dotd",
                                      "--token-auth", "none", "--scopes", "read,write", "--user-url", "/api/user", "--user-name-field", "username"])
            #expect(add.status == 0, "\(add)")
        }
        let browser = try FakeBrowser()
        let recorder = Douctl(environment: ["BROWSER": browser.command("follow")])
        try addProfile(recorder, through)
        let recorded = try recorder.run(["--profile", "dev", "auth", "login", "--device", "--wait", "120"], timeout: 180)
        proxy.kill(SIGTERM)
        let stopped = proxy.finish()
        #expect(recorded.status == 0, "\(recorded)\n\(stopped.stderr)\n\(provider.log.suffix(2000))")
        #expect(stopped.stderr.contains("POST /o/device-authorization/ 200 (proxied)"), "\(stopped.stderr)")

        let (replay, url) = try FakeAnyAPITests.startReplay(Douctl(), ["--replay", recordings])
        defer {
            replay.kill(SIGTERM)
            _ = replay.finish()
        }
        let douctl = Douctl()
        try addProfile(douctl, url)
        let login = try douctl.run(["--profile", "dev", "auth", "login", "--device", "--no-browser", "--wait", "30"], timeout: 60)
        #expect(login.status == 0, "\(login)\n\(replay.stderrSoFar)")
        #expect(login.stderr.contains("as alice"), "\(login.stderr)")
        #expect(replay.stderrSoFar.components(separatedBy: "POST /o/token/ 400").count - 1 == 1, "pending once: \(replay.stderrSoFar)")
        let user = try douctl.run(["--profile", "dev", "api", "/api/user"])
        #expect(user.status == 0, "\(user)")
        #expect(try user.json()["username"] == "alice")
    }

    static let strictOIDCPeer = #"""
# A strict OpenID Connect client nobody here wrote the checks of: PyJWT (PyJWKClient,
# jwt.decode pinned to one algorithm, audience, issuer) over requests.
#   python3 oidc_peer.py record BASE        log in to Django OAuth Toolkit at BASE (through a recording proxy)
#   python3 oidc_peer.py check BASE ALG     the same login against a replay, every check a strict client
#                                           pinned to algorithms=[ALG] makes
import base64, hashlib, json, secrets, sys, urllib.parse
import jwt, requests

MODE, BASE = sys.argv[1], sys.argv[2].rstrip("/")
ALG = sys.argv[3] if len(sys.argv) > 3 else "RS256"
OTHER = "ES256" if ALG == "RS256" else "RS256"
CLIENT = "doto"

def fail(why):
    print("FAIL " + why, flush=True)
    sys.exit(1)

def expect(condition, why):
    if not condition: fail(why)

def local(url):
    # The provider's own URLs, reached through BASE (the recording proxy); a replay's are its own.
    parts = urllib.parse.urlsplit(url)
    return BASE + parts.path + ("?" + parts.query if parts.query else "")

discovery = requests.get(BASE + "/o/.well-known/openid-configuration", timeout=10)
expect(discovery.status_code == 200, "discovery: %d %s" % (discovery.status_code, discovery.text[:200]))
meta = discovery.json()
if MODE == "check":
    expect(meta["issuer"].startswith(BASE), "the issuer is the replay's: " + meta["issuer"])
    expect(meta.get("id_token_signing_alg_values_supported") == [ALG], ALG + " advertised: %r" % meta.get("id_token_signing_alg_values_supported"))
    for name in ("authorization_endpoint", "token_endpoint", "jwks_uri", "userinfo_endpoint"):
        expect(meta[name].startswith(BASE + "/"), name + " points at the replay: " + meta[name])

verifier = secrets.token_urlsafe(48)
challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
state, nonce = secrets.token_urlsafe(12), secrets.token_urlsafe(12)
redirect = "http://127.0.0.1/callback/doto" if MODE == "record" else "http://127.0.0.1:8765/callback/doto"
authorize = requests.get(local(meta["authorization_endpoint"]), params={
    "response_type": "code", "client_id": CLIENT, "redirect_uri": redirect, "scope": "openid read",
    "state": state, "nonce": nonce, "code_challenge": challenge, "code_challenge_method": "S256"},
    allow_redirects=False, timeout=10)
expect(authorize.status_code == 302, "authorize: %d %s" % (authorize.status_code, authorize.text[:300]))
location = authorize.headers["Location"]
expect(location.startswith(redirect + "?"), "redirected to the client: " + location)
query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query))
expect(query.get("state") == state, "state echoed")
code = query["code"]

def token(fields):
    # The first RS256 grant makes the replay's 2048-bit RSA key: seconds in a debug build.
    return requests.post(local(meta["token_endpoint"]), data=dict(fields, client_id=CLIENT), timeout=90)

granted = token({"grant_type": "authorization_code", "code": code, "redirect_uri": redirect, "code_verifier": verifier})
expect(granted.status_code == 200, "token: %d %s" % (granted.status_code, granted.text[:300]))
tokens = granted.json()
for field in ("access_token", "refresh_token", "id_token"):
    expect(field in tokens, field + " granted")

jwks = requests.get(local(meta["jwks_uri"]), timeout=10)
expect(jwks.status_code == 200, "jwks")
if MODE == "check":
    header = jwt.get_unverified_header(tokens["id_token"])
    expect(header["alg"] == ALG, "an " + ALG + " ID token: %r" % header)
    key = jwt.PyJWKClient(meta["jwks_uri"]).get_signing_key_from_jwt(tokens["id_token"])
    claims = jwt.decode(tokens["id_token"], key.key, algorithms=[ALG], audience=CLIENT, issuer=meta["issuer"],
                        options={"require": ["exp", "iat", "iss", "aud", "sub"]})
    expect(claims.get("nonce") == nonce, "the nonce the client sent: %r" % claims.get("nonce"))
    at_hash = base64.urlsafe_b64encode(hashlib.sha256(tokens["access_token"].encode()).digest()[:16]).rstrip(b"=").decode()
    expect(claims.get("at_hash") == at_hash, "at_hash")
    try:
        jwt.decode(tokens["id_token"], key.key, algorithms=[ALG], audience="another-client", issuer=meta["issuer"])
        fail("another audience accepted")
    except jwt.InvalidAudienceError:
        pass
    try:
        jwt.decode(tokens["id_token"], key.key, algorithms=[OTHER], audience=CLIENT, issuer=meta["issuer"])
        fail("an " + OTHER + "-only client accepted an " + ALG + " token")
    except jwt.InvalidAlgorithmError:
        pass

bearer = lambda value: {"Authorization": "Bearer " + value}
user = requests.get(BASE + "/api/user", headers=bearer(tokens["access_token"]), timeout=10)
expect(user.status_code == 200 and user.json().get("username") == "alice", "api with the token: %d %s" % (user.status_code, user.text[:200]))
info = requests.get(local(meta["userinfo_endpoint"]), headers=bearer(tokens["access_token"]), timeout=10)
expect(info.status_code == 200, "userinfo: %d %s" % (info.status_code, info.text[:200]))
wrong = requests.get(BASE + "/api/user", headers=bearer("not-a-token-it-issued"), timeout=10)
expect(wrong.status_code in (401, 403), "api with another token: %d" % wrong.status_code)

refreshed = token({"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]})
expect(refreshed.status_code == 200, "refresh: %d %s" % (refreshed.status_code, refreshed.text[:300]))
renewed = refreshed.json()["access_token"]
expect(renewed != tokens["access_token"], "a new access token")
again = requests.get(BASE + "/api/user", headers=bearer(renewed), timeout=10)
expect(again.status_code == 200, "api with the refreshed token: %d" % again.status_code)
stale = token({"grant_type": "refresh_token", "refresh_token": "not-a-refresh-token-it-issued"})
expect(stale.status_code == 400 and stale.json().get("error") == "invalid_grant", "refresh with another token: %d %s" % (stale.status_code, stale.text[:200]))
if MODE == "check":
    if_query = requests.get(BASE + "/api/user", params={"access_token": "not-a-token-it-issued"}, timeout=10)
    expect(if_query.status_code == 401, "a query access_token is checked: %d" % if_query.status_code)
print("ok " + json.dumps({"alg": jwt.get_unverified_header(tokens["id_token"])["alg"], "user": user.json().get("username")}), flush=True)
"""#
}
