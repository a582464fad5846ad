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

    @Test func aRecordingWithoutALoginChecksNoToken() throws {
        let (harness, _) = try ReplayMatchingTests.harness([ReplayMatchingTests.exchange("GET", "/api/me", reply: ["name": "ann"])])
        defer { harness.stop() }
        #expect(try harness.get("/api/me", token: "anything").status == 200)
    }
}
