import DouctlJSON
@testable import DouctlSandbox
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

    static let discovery: JSON = ["issuer": "https://login.example/o", "token_endpoint": "https://login.example/oauth/token",
                                  "authorization_endpoint": "https://login.example/oauth/authorize",
                                  "jwks_uri": "https://login.example/oauth/jwks", "id_token_signing_alg_values_supported": ["ES256"]]

    /// A recorded OIDC login: discovery, an authorization-code grant with an ID token and a
    /// refresh token, a refusal of a refresh, and a route that needs the token.
    static func oidcRecording(refreshRefusal: Bool = false, algorithms: JSON = ["ES256"]) -> [JSON] {
        var reply = Self.tokenReply.objectValue ?? JSONObject()
        reply["id_token"] = "REDACTED"
        var document = discovery.objectValue ?? JSONObject()
        document["id_token_signing_alg_values_supported"] = algorithms
        var exchanges = [
            ReplayMatchingTests.exchange("GET", "/.well-known/openid-configuration", reply: .object(document)),
            ReplayMatchingTests.exchange("POST", "/oauth/token", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                         body: .object(JSONObject([("form", [["grant_type", "authorization_code"], ["code", "REDACTED"], ["client_id", "app-7"],
                                                                             ["redirect_uri", "https://app.example/cb"]])])),
                                         reply: .object(reply)),
            ReplayMatchingTests.exchange("GET", "/api/me", headers: [("Authorization", "REDACTED")], reply: ["name": "ann"]),
        ]
        if refreshRefusal {
            exchanges.append(ReplayMatchingTests.exchange("POST", "/oauth/token", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                                          body: .object(JSONObject([("form", [["grant_type", "refresh_token"], ["refresh_token", "REDACTED"]])])),
                                                          status: 400, reply: ["error": "invalid_grant", "error_description": "recorded"]))
        }
        return exchanges
    }

    static func query(_ location: String) -> [String: String] {
        guard let mark = location.firstIndex(of: "?") else { return [:] }
        var result: [String: String] = [:]
        for pair in FormURLEncoded.parse(String(location[location.index(after: mark)...])) { result[pair.name] = pair.value }
        return result
    }

    /// The replay's authorization endpoint approved: the code and state from its redirect.
    static func authorize(_ harness: Harness, nonce: String? = "n-0S6_WzA2Mj", challenge: String? = nil,
                          redirect: String = "http://127.0.0.1:4711/callback") throws -> String {
        var fields = [("response_type", "code"), ("client_id", "app-7"), ("redirect_uri", redirect), ("state", "st-1"), ("scope", "openid")]
        if let nonce { fields.append(("nonce", nonce)) }
        if let challenge { fields += [("code_challenge", challenge), ("code_challenge_method", "S256")] }
        let reply = try harness.get("/oauth/authorize?" + FormURLEncoded.serialize(fields))
        #expect(reply.status == 302, "\(reply.text)")
        let location = reply.header("Location") ?? ""
        #expect(location.hasPrefix(redirect + "?"), "\(location)")
        let query = Self.query(location)
        #expect(query["state"] == "st-1")
        return query["code"] ?? ""
    }

    static func exchange(_ harness: Harness, code: String, verifier: String? = nil) throws -> TestResponse {
        var form = [("grant_type", "authorization_code"), ("code", code), ("client_id", "app-7"), ("redirect_uri", "https://app.example/cb")]
        if let verifier { form.append(("code_verifier", verifier)) }
        return try harness.post("/oauth/token", form: form)
    }

    /// The parts of a compact JWS: header, claims, signing input, signature bytes.
    static func jws(_ token: String) throws -> (header: JSON, claims: JSON, input: String, signature: [UInt8]) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(parts.count == 3, "a JWT: \(token)")
        return (try JSONParser.parse(try #require(Base64.decode(parts[0]))), try JSONParser.parse(try #require(Base64.decode(parts[1]))),
                parts[0] + "." + parts[1], try #require(Base64.decode(parts[2])))
    }

    @Test func theReissuedIDTokenIsES256AndVerifiesWithTheServedECKey() throws {
        let (harness, _) = try ReplayMatchingTests.harness(Self.oidcRecording())
        defer { harness.stop() }
        let served = try harness.get("/.well-known/openid-configuration").json()
        #expect(served["jwks_uri"] == .string(harness.base + "/oauth/jwks"))
        #expect(served["issuer"] == .string(harness.base + "/o"))
        #expect(served["id_token_signing_alg_values_supported"] == ["ES256"])
        let code = try Self.authorize(harness)
        let granted = try Self.exchange(harness, code: code)
        #expect(granted.status == 200, "\(granted.text)")
        let access = try #require(try granted.json()["access_token"]?.stringValue)
        let token = try Self.jws(try #require(try granted.json()["id_token"]?.stringValue))
        #expect(token.header["alg"] == "ES256")
        #expect(token.header["typ"] == "JWT")
        #expect(token.claims["iss"] == served["issuer"], "iss is the discovery document's issuer")
        #expect(token.claims["aud"] == "app-7")
        #expect(token.claims["nonce"] == "n-0S6_WzA2Mj", "the authorization request's nonce")
        #expect(token.claims["exp"]?.intValue.map { $0 - (token.claims["iat"]?.intValue ?? 0) } == 3600)
        #expect(token.claims["auth_time"] == token.claims["iat"])
        let atHash = Base64.encode(Array(Digest.sha256(Array(access.utf8)).prefix(16)), urlSafe: true)
        #expect(token.claims["at_hash"] == .string(atHash))

        let jwks = try harness.get("/oauth/jwks")
        #expect(jwks.status == 200)
        let key = try #require(try jwks.json()["keys"]?[0])
        #expect(key["kty"] == "EC")
        #expect(key["crv"] == "P-256")
        #expect(key["alg"] == "ES256")
        #expect(key["use"] == "sig")
        #expect(key["kid"] == token.header["kid"])
        let x = try #require(Base64.decode(key["x"]?.stringValue ?? "")), y = try #require(Base64.decode(key["y"]?.stringValue ?? ""))
        #expect(token.signature.count == 64)
        #expect(P256.verify(token.signature, message: Array(token.input.utf8), x: x, y: y), "the served key verifies the ID token")
        #expect(!P256.verify(token.signature, message: Array((token.input + "x").utf8), x: x, y: y))
    }

    /// A provider that signed RS256 (its discovery says so; the recorded token's header was
    /// scrubbed): the replay signs RS256 with an RSA key its JWKS serves, and says so.
    @Test func aRecordedRS256ProviderIsReplayedWithRS256AndAnRSAKey() throws {
        ReplayLogin.testRSAKey.withLock { key in key = key ?? RSATests.fixedKey }
        let (harness, _) = try ReplayMatchingTests.harness(Self.oidcRecording(algorithms: ["RS256", "HS256"]))
        defer { harness.stop() }
        let served = try harness.get("/.well-known/openid-configuration").json()
        #expect(served["id_token_signing_alg_values_supported"] == ["RS256"])
        let granted = try Self.exchange(harness, code: try Self.authorize(harness))
        #expect(granted.status == 200, "\(granted.text)")
        let token = try Self.jws(try #require(try granted.json()["id_token"]?.stringValue))
        #expect(token.header["alg"] == "RS256")
        #expect(token.claims["aud"] == "app-7")
        #expect(token.claims["nonce"] == "n-0S6_WzA2Mj")
        let keys = try #require(try harness.get("/oauth/jwks").json()["keys"]?.arrayValue)
        #expect(keys.count == 1, "only the key it signs with")
        let key = try #require(keys.first)
        #expect(key["kty"] == "RSA")
        #expect(key["alg"] == "RS256")
        #expect(key["use"] == "sig")
        #expect(key["e"] == "AQAB")
        #expect(key["kid"] == token.header["kid"])
        let n = try #require(Base64.decode(key["n"]?.stringValue ?? "")), e = try #require(Base64.decode(key["e"]?.stringValue ?? ""))
        #expect(token.signature.count == 256)
        #expect(RSA.verify(token.signature, message: Array(token.input.utf8), modulus: n, exponent: e), "the served key verifies the ID token")
        #expect(!RSA.verify(token.signature, message: Array((token.input + "x").utf8), modulus: n, exponent: e))
    }

    /// A recording whose kept ID tokens were signed RS256 by one grant and ES256 by another:
    /// discovery lists both, the JWKS serves both keys, each token names the one it verifies with.
    @Test func twoRecordedAlgorithmsAreBothServedAndPickedByKid() throws {
        ReplayLogin.testRSAKey.withLock { key in key = key ?? RSATests.fixedKey }
        func kept(_ alg: String) -> JSON {
            var reply = Self.tokenReply.objectValue ?? JSONObject()
            reply["id_token"] = .string(Base64.encode(Array("{\"alg\":\"\(alg)\"}".utf8), urlSafe: true) + ".eyJzdWIiOiI3In0.c2ln")
            return .object(reply)
        }
        let form = [("Content-Type", "application/x-www-form-urlencoded")]
        let exchanges = [
            ReplayMatchingTests.exchange("GET", "/.well-known/openid-configuration", reply: Self.discovery),
            ReplayMatchingTests.exchange("POST", "/oauth/token", headers: form,
                                         body: .object(JSONObject([("form", [["grant_type", "authorization_code"], ["code", "REDACTED"], ["client_id", "app-7"]])])),
                                         reply: kept("RS256")),
            ReplayMatchingTests.exchange("POST", "/oauth/token", headers: form,
                                         body: .object(JSONObject([("form", [["grant_type", "client_credentials"], ["client_id", "svc"]])])),
                                         reply: kept("ES256")),
        ]
        let (harness, _) = try ReplayMatchingTests.harness(exchanges)
        defer { harness.stop() }
        #expect(try harness.get("/.well-known/openid-configuration").json()["id_token_signing_alg_values_supported"] == ["RS256", "ES256"])
        let keys = try #require(try harness.get("/oauth/jwks").json()["keys"]?.arrayValue)
        #expect(keys.map { $0["kty"] } == ["RSA", "EC"])
        #expect(keys[0]["kid"] != keys[1]["kid"])
        let rs = try Self.jws(try #require(try Self.exchange(harness, code: try Self.authorize(harness)).json()["id_token"]?.stringValue))
        let es = try Self.jws(try #require(try harness.post("/oauth/token", form: [("grant_type", "client_credentials"), ("client_id", "svc")]).json()["id_token"]?.stringValue))
        #expect(rs.header["alg"] == "RS256")
        #expect(es.header["alg"] == "ES256")
        let rsa = try #require(keys.first { $0["kid"] == rs.header["kid"] }), ec = try #require(keys.first { $0["kid"] == es.header["kid"] })
        #expect(RSA.verify(rs.signature, message: Array(rs.input.utf8), modulus: try #require(Base64.decode(rsa["n"]?.stringValue ?? "")),
                           exponent: try #require(Base64.decode(rsa["e"]?.stringValue ?? ""))))
        #expect(P256.verify(es.signature, message: Array(es.input.utf8), x: try #require(Base64.decode(ec["x"]?.stringValue ?? "")),
                            y: try #require(Base64.decode(ec["y"]?.stringValue ?? ""))))
    }

    /// Which algorithm the replay signs with: a kept header's, else the recorded JWKS's,
    /// else discovery's first it can sign with, else ES256.
    @Test func theSigningAlgorithmFollowsTheRecording() {
        #expect(ReplayLogin.algorithm(headers: ["RS256"], jwks: nil, discovery: ["id_token_signing_alg_values_supported": ["ES256"]]) == "RS256")
        #expect(ReplayLogin.algorithm(headers: [], jwks: ["keys": [["kty": "RSA", "n": "AQAB", "e": "AQAB"]]], discovery: nil) == "RS256")
        #expect(ReplayLogin.algorithm(headers: [], jwks: ["keys": [["kty": "EC", "crv": "P-256"]]], discovery: ["id_token_signing_alg_values_supported": ["RS256"]]) == "ES256")
        #expect(ReplayLogin.algorithm(headers: [], jwks: nil, discovery: ["id_token_signing_alg_values_supported": ["HS256", "RS256"]]) == "RS256")
        #expect(ReplayLogin.algorithm(headers: [], jwks: nil, discovery: ["id_token_signing_alg_values_supported": ["HS256", "PS256"]]) == "ES256")
        #expect(ReplayLogin.algorithm(headers: [], jwks: nil, discovery: nil) == "ES256")
        let header = Base64.encode(Array(#"{"alg":"RS256","kid":"k1"}"#.utf8), urlSafe: true)
        #expect(ReplayLogin.headerAlgorithm(header + ".e30.c2ln") == "RS256")
        #expect(ReplayLogin.headerAlgorithm("REDACTED") == nil)
        #expect(ReplayLogin.headerAlgorithm(Base64.encode(Array(#"{"alg":"HS256"}"#.utf8), urlSafe: true) + ".e30.c2ln") == nil)
    }

    @Test func withoutANonceTheIDTokenCarriesNone() throws {
        let (harness, _) = try ReplayMatchingTests.harness(Self.oidcRecording())
        defer { harness.stop() }
        let granted = try Self.exchange(harness, code: try Self.authorize(harness, nonce: nil))
        let token = try Self.jws(try #require(try granted.json()["id_token"]?.stringValue))
        #expect(token.claims["nonce"] == nil)
    }

    @Test func onlyCodesTheReplayIssuedAreExchangedOnceAndPKCEIsChecked() throws {
        let (harness, _) = try ReplayMatchingTests.harness(Self.oidcRecording())
        defer { harness.stop() }
        let forged = try Self.exchange(harness, code: "not-issued")
        #expect(forged.status == 400)
        #expect(try forged.json()["error"] == "invalid_grant")
        let code = try Self.authorize(harness)
        #expect(try Self.exchange(harness, code: code).status == 200)
        #expect(try Self.exchange(harness, code: code).status == 400, "a code is used once")

        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
        let challenge = Base64.encode(Digest.sha256(Array(verifier.utf8)), urlSafe: true)
        let wrong = try Self.exchange(harness, code: try Self.authorize(harness, challenge: challenge), verifier: "another-verifier-another-verifier-xxxxxxxxx")
        #expect(wrong.status == 400)
        #expect(try Self.exchange(harness, code: try Self.authorize(harness, challenge: challenge), verifier: verifier).status == 200)
    }

    /// OpenID Connect Core §3.1.2.1: the authorization endpoint takes a form POST as it takes
    /// a GET; the code it gives is exchanged as any other, with its nonce.
    @Test func theAuthorizationEndpointTakesAFormPost() throws {
        let (harness, _) = try ReplayMatchingTests.harness(Self.oidcRecording())
        defer { harness.stop() }
        let fields = [("response_type", "code"), ("client_id", "app-7"), ("redirect_uri", "http://127.0.0.1:4711/callback"), ("state", "st-2"), ("nonce", "posted-nonce"), ("scope", "openid")]
        let reply = try harness.post("/oauth/authorize", form: fields)
        #expect(reply.status == 302, "\(reply.text)")
        let query = Self.query(reply.header("Location") ?? "")
        #expect(query["state"] == "st-2")
        let granted = try Self.exchange(harness, code: try #require(query["code"]))
        #expect(granted.status == 200, "\(granted.text)")
        let token = try Self.jws(try #require(try granted.json()["id_token"]?.stringValue))
        #expect(token.claims["nonce"] == "posted-nonce")
    }

    @Test func theAuthorizationEndpointRedirectsOnlyToLoopbackOrRecordedURIs() throws {
        let (harness, _) = try ReplayMatchingTests.harness(Self.oidcRecording())
        defer { harness.stop() }
        #expect(try !Self.authorize(harness, redirect: "https://app.example/cb").isEmpty, "the recorded one")
        let elsewhere = try harness.get("/oauth/authorize?response_type=code&client_id=app-7&redirect_uri=https%3A%2F%2Fevil.example%2Fcb&state=s")
        #expect(elsewhere.status == 400)
        #expect(elsewhere.header("Location") == nil)
    }

    @Test func refreshTokensAreCheckedLikeAccessTokens() throws {
        let (harness, _) = try ReplayMatchingTests.harness(Self.oidcRecording())
        defer { harness.stop() }
        let granted = try Self.exchange(harness, code: try Self.authorize(harness)).json()
        let refresh = try #require(granted["refresh_token"]?.stringValue)
        let renewed = try harness.post("/oauth/token", form: [("grant_type", "refresh_token"), ("refresh_token", refresh), ("client_id", "app-7")])
        #expect(renewed.status == 200, "\(renewed.text)")
        let access = try #require(try renewed.json()["access_token"]?.stringValue)
        #expect(access != granted["access_token"]?.stringValue)
        #expect(try harness.get("/api/me", token: access).status == 200)
        let token = try Self.jws(try #require(try renewed.json()["id_token"]?.stringValue))
        #expect(token.claims["nonce"] == nil, "a refreshed ID token carries no nonce")
        let other = try harness.post("/oauth/token", form: [("grant_type", "refresh_token"), ("refresh_token", "stale"), ("client_id", "app-7")])
        #expect(other.status == 400)
        #expect(try other.json()["error"] == "invalid_grant")
    }

    @Test func anUnknownRefreshTokenGetsTheRecordedRefusal() throws {
        let (harness, _) = try ReplayMatchingTests.harness(Self.oidcRecording(refreshRefusal: true))
        defer { harness.stop() }
        let other = try harness.post("/oauth/token", form: [("grant_type", "refresh_token"), ("refresh_token", "stale")])
        #expect(other.status == 400)
        #expect(try other.json()["error_description"] == "recorded")
    }

    @Test func accessTokensInTheQueryOrAFormFieldAreCheckedToo() throws {
        let (harness, _) = try ReplayMatchingTests.harness(Self.recording(unauthorized: ["error": "recorded refusal"]))
        defer { harness.stop() }
        let token = try Self.login(harness)["access_token"]?.stringValue ?? ""
        #expect(try harness.get("/api/me?access_token=stolen").status == 401)
        #expect(try harness.get("/api/me?access_token=stolen").json()["error"] == "recorded refusal")
        #expect(try harness.post("/api/me", form: [("access_token", "stolen")]).status == 401)
        #expect(try harness.get("/api/me?access_token=" + token).status == 200)
    }

    /// A recorded ID token whose claims survived keeps them (its nonce replaced by the
    /// client's); a scrubbed one names the subject the recorded userinfo reply names.
    @Test func recordedClaimsAreKeptAndAScrubbedTokensSubjectIsTheUserinfos() throws {
        ReplayLogin.testRSAKey.withLock { key in key = key ?? RSATests.fixedKey }
        let header = Base64.encode(Array(#"{"alg":"RS256"}"#.utf8), urlSafe: true)
        let payload = Base64.encode(Array(#"{"sub":"7","email":"ann@example.com","nonce":"recorded-nonce","iss":"https://login.example/o"}"#.utf8), urlSafe: true)
        var kept = Self.tokenReply.objectValue ?? JSONObject()
        kept["id_token"] = .string(header + "." + payload + ".c2ln")
        var discovery = Self.discovery.objectValue ?? JSONObject()
        discovery["userinfo_endpoint"] = "https://login.example/o/userinfo"
        let exchanges = { (reply: JSON) in [
            ReplayMatchingTests.exchange("GET", "/.well-known/openid-configuration", reply: .object(discovery)),
            ReplayMatchingTests.exchange("POST", "/oauth/token", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                         body: .object(JSONObject([("form", [["grant_type", "authorization_code"], ["code", "REDACTED"], ["client_id", "app-7"]])])),
                                         reply: reply),
            ReplayMatchingTests.exchange("GET", "/o/userinfo", headers: [("Authorization", "REDACTED")], reply: ["sub": "42", "name": "Ann"]),
        ] }
        let (harness, _) = try ReplayMatchingTests.harness(exchanges(.object(kept)))
        defer { harness.stop() }
        let claims = try Self.jws(try #require(try Self.exchange(harness, code: try Self.authorize(harness)).json()["id_token"]?.stringValue)).claims
        #expect(claims["sub"] == "7")
        #expect(claims["email"] == "ann@example.com")
        #expect(claims["nonce"] == "n-0S6_WzA2Mj")
        #expect(claims["iss"] == .string(harness.base + "/o"))

        var scrubbed = Self.tokenReply.objectValue ?? JSONObject()
        scrubbed["id_token"] = "REDACTED"
        let (other, _) = try ReplayMatchingTests.harness(exchanges(.object(scrubbed)))
        defer { other.stop() }
        let fresh = try Self.jws(try #require(try Self.exchange(other, code: try Self.authorize(other)).json()["id_token"]?.stringValue)).claims
        #expect(fresh["sub"] == "42", "the recorded userinfo's subject")
    }

    /// A recorded device authorization: fresh codes, `authorization_pending` once, then tokens.
    @Test func aRecordedDeviceLoginIsPendingOnceThenGrants() throws {
        let deviceGrant = "urn:ietf:params:oauth:grant-type:device_code"
        let form = { (fields: [[String]]) -> JSON in .object(JSONObject([("form", .array(fields.map { .array($0.map { .string($0) }) }))])) }
        let (harness, _) = try ReplayMatchingTests.harness([
            ReplayMatchingTests.exchange("POST", "/device", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                         body: form([["client_id", "cli"]]),
                                         reply: ["device_code": "REDACTED", "user_code": "WDJB-MJHT", "verification_uri": "https://login.example/device",
                                                 "verification_uri_complete": "https://login.example/device?user_code=WDJB-MJHT", "interval": 1, "expires_in": 600]),
            ReplayMatchingTests.exchange("POST", "/token", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                         body: form([["grant_type", deviceGrant], ["device_code", "REDACTED"], ["client_id", "cli"]]),
                                         status: 400, reply: ["error": "authorization_pending"]),
            ReplayMatchingTests.exchange("POST", "/token", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                         body: form([["grant_type", deviceGrant], ["device_code", "REDACTED"], ["client_id", "cli"]]),
                                         reply: Self.tokenReply),
        ])
        defer { harness.stop() }
        let started = try harness.post("/device", form: [("client_id", "cli")]).json()
        let deviceCode = try #require(started["device_code"]?.stringValue)
        let userCode = try #require(started["user_code"]?.stringValue)
        #expect(deviceCode != "REDACTED" && deviceCode.count == 40)
        #expect(userCode != "WDJB-MJHT")
        #expect(started["verification_uri_complete"] == .string("https://login.example/device?user_code=" + userCode))
        let poll = { try harness.post("/token", form: [("grant_type", deviceGrant), ("device_code", deviceCode), ("client_id", "cli")]) }
        let first = try poll()
        #expect(first.status == 400)
        #expect(try first.json()["error"] == "authorization_pending")
        let second = try poll()
        #expect(second.status == 200, "\(second.text)")
        let access = try #require(try second.json()["access_token"]?.stringValue)
        #expect(try harness.get("/api/me", token: access).status != 401)
        #expect(try poll().status == 400, "a device code is exchanged once")
        let forged = try harness.post("/token", form: [("grant_type", deviceGrant), ("device_code", "guess"), ("client_id", "cli")])
        #expect(try forged.json()["error"] == "invalid_grant")
    }
}
