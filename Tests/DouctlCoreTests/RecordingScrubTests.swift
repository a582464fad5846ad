import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Testing

/// Issue 41, "Scrubbed by default": what `--record` writes holds no secret, whatever its
/// name or place, an echo of it by the server included.
@Suite struct RecordingScrubTests {
    static let accessToken = "at-PLANTED-0001-aaaa"
    static let refreshToken = "rt-PLANTED-0002-bbbb"
    /// An ID token (a JWT) sent as a hint and returned under a name nobody knows.
    static let idToken = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJQTEFOVEVEMDAzIn0.c2lnbmF0dXJlUExBTlRFRDAwMw"
    static let clientSecret = "cs-PLANTED-0004-dddd"
    static let password = "pw-PLANTED-0005-eeee"
    static let headerKey = "ak-PLANTED-0006-ffff"
    static let queryKey = "qk-PLANTED-0007-gggg"
    static let cookie = "ck-PLANTED-0008-hhhh"
    static let basicPassword = "bp-PLANTED-0009-iiii"
    /// Only the profile's `record_scrub` names this one.
    static let userNamed = "th-PLANTED-0010-jjjj"
    static let all = [accessToken, refreshToken, idToken, clientSecret, password, headerKey, queryKey, cookie, basicPassword, userNamed]

    static func json(_ value: JSON) -> [UInt8] { value.serialized(.compact) }

    /// Three exchanges carrying the ten secrets in every place they can be: headers (Bearer,
    /// Basic, Cookie, an API-key header, a custom header), the query, the path, form and JSON
    /// bodies, reply headers (Set-Cookie), JSON and text replies echoing them.
    static func recordSession(in directory: String, scrubNames: [String]) throws {
        let recorder = ExchangeRecorder(directory: directory).scrubbing(scrubNames)
        let basic = "Basic " + Base64.encode(Array("user:\(basicPassword)".utf8))
        let token = HTTPRequest(
            method: "POST", url: "https://api.example/oauth/token?id_token_hint=\(idToken)&api_key=\(queryKey)",
            headers: [HTTPHeader("Authorization", "Bearer \(accessToken)"), HTTPHeader("Cookie", "theme=dark; session=\(cookie)"),
                      HTTPHeader("X-Api-Key", headerKey), HTTPHeader("Content-Type", "application/x-www-form-urlencoded")],
            body: .bytes(Array("grant_type=refresh_token&refresh_token=\(refreshToken)&client_secret=\(clientSecret)&password=\(password)".utf8)))
        let granted = HTTPResponse(
            head: HTTPResponseHead(status: 200, headers: [HTTPHeader("Content-Type", "application/json"),
                                                          HTTPHeader("Set-Cookie", "session=\(cookie); Path=/; HttpOnly")]),
            body: json(["access_token": .string(accessToken), "refresh_token": .string(refreshToken), "odd": .string(idToken),
                        "echo": ["X-Api-Key": .string(headerKey), "Cookie": .string("session=\(cookie)"), "url": .string("/oauth/token?api_key=\(queryKey)")],
                        "note": .string("your key is \(headerKey), your password \(password), secret \(clientSecret)")]))
        try recorder.record(token, granted)

        let items = HTTPRequest(
            method: "GET", url: "https://api.example/items/\(queryKey)?api_key=\(queryKey)&page=2",
            headers: [HTTPHeader("Authorization", basic), HTTPHeader("X-Tenant-Handle", userNamed)])
        let listed = HTTPResponse(head: HTTPResponseHead(status: 200, headers: [HTTPHeader("Content-Type", "text/plain")]),
                                  body: Array("hello user:\(basicPassword), tenant \(userNamed), key \(queryKey), \(basic)".utf8))
        try recorder.record(items, listed)

        let update = HTTPRequest(
            method: "PATCH", url: "https://api.example/me",
            headers: [HTTPHeader("Content-Type", "application/json"), HTTPHeader("Authorization", "Bearer \(accessToken)")],
            body: .bytes(json(["password": .string(password), "tenant_handle": .string(userNamed), "nested": ["apiKey": .string(headerKey)]])))
        let updated = HTTPResponse(head: HTTPResponseHead(status: 200, headers: [HTTPHeader("Content-Type", "application/json")]),
                                   body: json(["token": .string(accessToken), "shown": .string("Bearer \(idToken)"), "name": "ahbei",
                                               "next_page_token": "page-2-cursor"]))
        try recorder.record(update, updated)
    }

    @Test func tenPlantedSecretsNeverReachARecording() throws {
        let directory = try TemporaryDirectory(prefix: "scrub")
        try Self.recordSession(in: directory.path, scrubNames: ["*-handle", "tenant_handle"])
        let names = try FileIO.listDirectory(directory.path).sorted()
        #expect(names.count == 3, "\(names)")
        let text = try names.map { String(decoding: try FileIO.readFile(directory.path + "/" + $0), as: UTF8.self) }.joined(separator: "\n")
        for secret in Self.all {
            #expect(!text.containsBytes(secret), "\(secret) reached the recording")
            #expect(!names.joined().containsBytes(secret), "\(secret) reached a file name")
        }
        #expect(!text.containsBytes(Base64.encode(Array("user:\(Self.basicPassword)".utf8))), "the Basic credential, encoded")
        // What is not secret stays, so the recording still replays.
        #expect(text.containsBytes("theme=dark") == false, "a Cookie header goes whole")
        let items = try JSONParser.parse(FileIO.readFile(directory.path + "/" + names[1]))
        #expect(items["request"]?["query"] == [["api_key", "REDACTED"], ["page", "2"]], "an ordinary query field stays")
        #expect(items["request"]?["path"] == "/items/REDACTED", "a secret in the path is scrubbed")
        #expect(text.containsBytes("page-2-cursor"), "a page token is not a credential")
        #expect(text.containsBytes("ahbei"))
    }

    @Test func withoutTheProfilesNamesOnlyThatSecretRemains() throws {
        let directory = try TemporaryDirectory(prefix: "scrub")
        try Self.recordSession(in: directory.path, scrubNames: [])
        let text = try FileIO.listDirectory(directory.path).map { String(decoding: try FileIO.readFile(directory.path + "/" + $0), as: UTF8.self) }.joined()
        #expect(text.containsBytes(Self.userNamed), "the test can fail: an unknown name is not scrubbed without record_scrub")
        for secret in Self.all where secret != Self.userNamed {
            #expect(!text.containsBytes(secret), "\(secret) reached the recording")
        }
    }

    @Test(arguments: [
        ("Authorization", true), ("X-API-Key", true), ("x-goog-api-key", true), ("api_key", true), ("apiKey", true), ("key", true),
        ("client_secret", true), ("github_token", true), ("Set-Cookie", true), ("id_token", true), ("csrfmiddlewaretoken", true),
        ("next_page_token", false), ("token_type", false), ("expires_in", false), ("Content-Type", false), ("page", false),
        ("name", false), ("monkey", false), ("signature", false),
    ])
    func namesThatHoldSecrets(name: String, secret: Bool) {
        #expect(RecordingScrubber().isSecret(name: name) == secret)
    }

    @Test func shortNamesAreSecretsInAQueryNotAsJSONKeys() {
        for name in ["key", "code", "session"] {
            #expect(RecordingScrubber().isSecret(name: name))
            #expect(!RecordingScrubber().isSecret(name: name, inJSON: true), "\(name)")
        }
        #expect(RecordingScrubber().isSecret(name: "access_token", inJSON: true))
    }

    @Test func userPatternsMatchWithStars() {
        let scrubber = RecordingScrubber(extraNames: ["x-*-handle", "Tenant"])
        #expect(scrubber.isSecret(name: "X-Tenant-Handle"))
        #expect(scrubber.isSecret(name: "tenant"))
        #expect(!scrubber.isSecret(name: "x-handle"))
        #expect(!scrubber.isSecret(name: "tenants"))
    }

    @Test func aPrettyJSONReplyKeepsItsBytesForTheReplay() throws {
        let directory = try TemporaryDirectory(prefix: "scrub")
        let pretty = Array("{\n  \"b\": 1,\n  \"a\": [1, 2]\n}\n".utf8)
        try ExchangeRecorder(directory: directory.path).record(
            HTTPRequest(url: "https://api.example/x"),
            HTTPResponse(head: HTTPResponseHead(status: 200, headers: [HTTPHeader("Content-Type", "application/json")]), body: pretty))
        let name = try #require(try FileIO.listDirectory(directory.path).first)
        let file = try JSONParser.parse(FileIO.readFile(directory.path + "/" + name))
        #expect(file["response"]?["body"]?["text"]?.stringValue.map { Array($0.utf8) } == pretty)
        #expect(file["response"]?["body"]?["json"]?["b"] == 1, "still readable as JSON")
    }
}
