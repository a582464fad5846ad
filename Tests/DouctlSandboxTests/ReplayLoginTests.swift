import DouctlJSON
import DouctlSandbox
import DouctlServer
import DouctlSystem
import DouctlTestSupport
import Testing

/// `sandbox --replay DIR` answers its recorded login for a new client (issue 41, part 3):
/// fresh tokens of the recorded shape, accepted on the recorded routes; other tokens refused.
@Suite struct ReplayLoginTests {
    static let tokenReply: JSON = ["access_token": "REDACTED", "refresh_token": "REDACTED", "token_type": "Bearer",
                                   "expires_in": 3600, "scope": "read write"]

    static func recording(unauthorized: JSON? = nil) -> [JSON] {
        var exchanges = [
            ReplayMatchingTests.exchange("POST", "/oauth/token", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                         body: .object(JSONObject([("form", [["grant_type", "password"], ["username", "ann"], ["password", "REDACTED"]])])),
                                         reply: tokenReply),
            ReplayMatchingTests.exchange("GET", "/api/me", headers: [("Authorization", "REDACTED")], reply: ["name": "ann"]),
        ]
        if let unauthorized {
            exchanges.append(ReplayMatchingTests.exchange("GET", "/api/me", status: 401, reply: unauthorized))
        }
        return exchanges
    }

    static func login(_ harness: Harness) throws -> JSON {
        let reply = try harness.post("/oauth/token", form: [("grant_type", "password"), ("username", "ann"), ("password", "hunter2")])
        #expect(reply.status == 200)
        return try reply.json()
    }

    @Test func theTokenEndpointIssuesFreshTokensOfTheRecordedShape() throws {
        let (harness, _) = try ReplayMatchingTests.harness(Self.recording())
        defer { harness.stop() }
        let first = try Self.login(harness)
        let second = try Self.login(harness)
        #expect(first["token_type"] == "Bearer")
        #expect(first["expires_in"] == 3600)
        #expect(first["scope"] == "read write")
        let fields = { (json: JSON) in json.objectValue.map { $0.keys.sorted() } ?? [] }
        #expect(fields(first) == ["access_token", "expires_in", "refresh_token", "scope", "token_type"])
        let access = first["access_token"]?.stringValue ?? ""
        #expect(access.count == 40)
        #expect(access != "REDACTED")
        #expect(first["refresh_token"]?.stringValue != "REDACTED")
        #expect(first["refresh_token"] != first["access_token"])
        #expect(second["access_token"] != first["access_token"], "every login gets its own token")
    }

    @Test func issuedTokensReachTheRecordedRoutesAndOthersGetTheRecorded401() throws {
        let refusal: JSON = ["error": "invalid_token", "detail": "recorded refusal"]
        let (harness, _) = try ReplayMatchingTests.harness(Self.recording(unauthorized: refusal))
        defer { harness.stop() }
        let token = try Self.login(harness)["access_token"]?.stringValue ?? ""
        let accepted = try harness.get("/api/me", token: token)
        #expect(accepted.status == 200)
        #expect(try accepted.json() == ["name": "ann"])
        let other = try harness.get("/api/me", token: "stolen-or-stale")
        #expect(other.status == 401)
        #expect(try other.json() == refusal)
        let recordedValue = try harness.get("/api/me", token: "REDACTED")
        #expect(recordedValue.status == 401, "the scrubbed placeholder is no credential")
    }

    @Test func withoutARecorded401AnUnknownTokenGetsAPlain401() throws {
        let (harness, _) = try ReplayMatchingTests.harness(Self.recording())
        defer { harness.stop() }
        let other = try harness.get("/api/me", token: "nope")
        #expect(other.status == 401)
        #expect(try other.json()["error"] == "invalid_token")
        #expect(other.header("WWW-Authenticate") == #"Bearer error="invalid_token""#)
    }

    @Test func aRequestWithoutACredentialMatchesAsBefore() throws {
        let (harness, _) = try ReplayMatchingTests.harness(Self.recording(unauthorized: ["error": "login required"]))
        defer { harness.stop() }
        // Two recordings of GET /api/me (200 with a token, then 401 without): in recorded order.
        #expect(try harness.get("/api/me").status == 200)
        #expect(try harness.get("/api/me").status == 401)
    }

    @Test func aTokenFromTheSandboxsOwnLoginStepIsAcceptedToo() throws {
        let (harness, _) = try ReplayMatchingTests.harness(Self.recording(unauthorized: ["error": "bad token"]))
        defer { harness.stop() }
        // The recording's grant is a password grant at /oauth/token; this authorization-code
        // grant is not recorded, so the sandbox's own token endpoint answers it.
        let code = try harness.authorizationCode()
        let reply = try harness.tokenRequest(Harness.client + [("grant_type", "authorization_code"), ("code", code),
                                                               ("redirect_uri", Harness.loopbackRedirect)])
        #expect(reply.status == 200, "\(reply.text)")
        let token = try #require(try reply.json()["access_token"]?.stringValue)
        #expect(try harness.get("/api/me", token: token).status == 200)
        #expect(try harness.get("/api/me", token: token + "x").status == 401)
    }

    @Test func aRecordingWithoutALoginChecksNoToken() throws {
        let (harness, _) = try ReplayMatchingTests.harness([ReplayMatchingTests.exchange("GET", "/api/me", reply: ["name": "ann"])])
        defer { harness.stop() }
        #expect(try harness.get("/api/me", token: "anything").status == 200)
    }

    @Test func aRecordedIDTokenIsReissuedAndVerifiesWithTheServedJWKS() throws {
        let discovery: JSON = ["issuer": "https://login.example", "token_endpoint": "https://login.example/oauth/token",
                               "jwks_uri": "https://login.example/oauth/jwks"]
        var reply = Self.tokenReply.objectValue ?? JSONObject()
        reply["id_token"] = "REDACTED"
        let (harness, _) = try ReplayMatchingTests.harness([
            ReplayMatchingTests.exchange("GET", "/.well-known/openid-configuration", reply: discovery),
            ReplayMatchingTests.exchange("POST", "/oauth/token", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                         body: .object(JSONObject([("form", [["grant_type", "authorization_code"], ["code", "REDACTED"], ["client_id", "app-7"]])])),
                                         reply: .object(reply)),
        ])
        defer { harness.stop() }
        let served = try harness.get("/.well-known/openid-configuration").json()
        #expect(served["jwks_uri"] == .string(harness.base + "/oauth/jwks"))
        let granted = try harness.post("/oauth/token", form: [("grant_type", "authorization_code"), ("code", "abc"), ("client_id", "app-7")])
        #expect(granted.status == 200)
        let idToken = try #require(try granted.json()["id_token"]?.stringValue)
        let parts = idToken.split(separator: ".").map(String.init)
        try #require(parts.count == 3, "a JWT: \(idToken)")
        let header = try JSONParser.parse(try #require(Base64.decode(parts[0])))
        let claims = try JSONParser.parse(try #require(Base64.decode(parts[1])))
        #expect(header["alg"] == "HS256")
        #expect(claims["iss"] == .string(harness.base))
        #expect(claims["aud"] == "app-7")
        #expect(claims["exp"]?.intValue.map { $0 - (claims["iat"]?.intValue ?? 0) } == 3600)

        let jwks = try harness.get("/oauth/jwks")
        #expect(jwks.status == 200)
        let key = try #require(try jwks.json()["keys"]?[0])
        #expect(key["kid"] == header["kid"])
        let encodedKey = try #require(key["k"]?.stringValue)
        let secret = try #require(Base64.decode(encodedKey))
        let expected = Base64.encode(Self.hmacSHA256(key: secret, message: Array((parts[0] + "." + parts[1]).utf8)), urlSafe: true)
        #expect(parts[2] == expected, "the served key verifies the ID token")
        let forged = Base64.encode(Self.hmacSHA256(key: Array("other".utf8), message: Array((parts[0] + "." + parts[1]).utf8)), urlSafe: true)
        #expect(parts[2] != forged)
    }

    /// HMAC-SHA256 (RFC 2104), written again here so the test checks the replay's own.
    static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var block = key.count > 64 ? Digest.sha256(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        return Digest.sha256(block.map { $0 ^ 0x5c } + Digest.sha256(block.map { $0 ^ 0x36 } + message))
    }

    @Test func hmacSHA256MatchesRFC4231() {
        // RFC 4231 test case 2.
        let mac = Self.hmacSHA256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(Digest.hex(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }
}
