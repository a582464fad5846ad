import DouctlJSON
@testable import DouctlSandbox
import Testing

@Suite struct TokenTests {
    @Test func codeExchangeWithPKCES256() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let code = try harness.authorizationCode(extra: [("code_challenge", PKCE.challenge), ("code_challenge_method", "S256")])
        let reply = try harness.tokenRequest(Harness.client + [("grant_type", "authorization_code"), ("code", code),
                                                                ("redirect_uri", Harness.loopbackRedirect),
                                                                ("code_verifier", PKCE.verifier)])
        #expect(reply.status == 200)
        #expect(reply.header("Cache-Control") == "no-store")
        let json = try reply.json()
        #expect(isHex32(json["access_token"]))
        #expect(isHex32(json["refresh_token"]))
        #expect(json["expires_in"] == .number("3600"))
        #expect(json["douban_user_id"] == .string("1000001"))
        #expect(json["douban_user_name"] == .string("阿北"))
        #expect(json["scope"]?.stringValue == "douban_basic_common,shuo_basic_r,shuo_basic_w")
        #expect(json.objectValue?.keys.prefix(5) == ["access_token", "expires_in", "refresh_token", "douban_user_id", "douban_user_name"])
        let me = try harness.get("/v2/user/~me", token: json["access_token"]?.stringValue)
        #expect(me.status == 200)
        #expect(try me.json()["uid"] == .string("ahbei"))
    }

    @Test func plainPKCEIsAccepted() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let verifier = String(repeating: "a1-._~", count: 8)
        let code = try harness.authorizationCode(extra: [("code_challenge", verifier), ("code_challenge_method", "plain")])
        let reply = try harness.tokenRequest(Harness.client + [("grant_type", "authorization_code"), ("code", code),
                                                                ("redirect_uri", Harness.loopbackRedirect),
                                                                ("code_verifier", verifier)])
        #expect(reply.status == 200)
    }

    @Test func pkceVerifierMissingOrWrongGives118() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let pkce = [("code_challenge", PKCE.challenge), ("code_challenge_method", "S256")]
        let missing = try harness.tokenRequest(Harness.client + [("grant_type", "authorization_code"),
                                                                  ("code", try harness.authorizationCode(extra: pkce)),
                                                                  ("redirect_uri", Harness.loopbackRedirect)])
        #expect(missing.status == 400)
        #expect(missing.code == 118)
        #expect(missing.msg?.hasPrefix("invalid_authorization_code: ") == true)
        #expect(missing.msg?.contains("code_verifier") == true)
        let wrong = try harness.tokenRequest(Harness.client + [("grant_type", "authorization_code"),
                                                                ("code", try harness.authorizationCode(extra: pkce)),
                                                                ("redirect_uri", Harness.loopbackRedirect),
                                                                ("code_verifier", String(PKCE.verifier.reversed()))])
        #expect(wrong.status == 400)
        #expect(wrong.code == 118)
        #expect(try wrong.json()["request"] == .string("POST /service/auth2/token"))
    }

    @Test func codeIsSingleUseAndReuseRevokesItsTokens() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let code = try harness.authorizationCode()
        let fields = Harness.client + [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", Harness.loopbackRedirect)]
        let first = try harness.tokenRequest(fields)
        #expect(first.status == 200)
        let token = try #require(try first.json()["access_token"]?.stringValue)
        let second = try harness.tokenRequest(fields)
        #expect(second.status == 400)
        #expect(second.code == 118)
        #expect(second.msg?.hasPrefix("invalid_authorization_code") == true)
        #expect(try harness.get("/v2/user/~me", token: token).code == 103)
        let unknown = try harness.tokenRequest(Harness.client + [("grant_type", "authorization_code"), ("code", "nope"),
                                                                  ("redirect_uri", Harness.loopbackRedirect)])
        #expect(unknown.code == 118)
    }

    @Test func redirectURIMustMatchTheAuthorizeRequest() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let code = try harness.authorizationCode()
        let reply = try harness.tokenRequest(Harness.client + [("grant_type", "authorization_code"), ("code", code),
                                                                ("redirect_uri", "http://127.0.0.1:53682/callback/other")])
        #expect(reply.status == 400)
        #expect(reply.code == 117)
        #expect(reply.msg == "redirect_uri_mismatch")
    }

    @Test func expiredCodeGives118() throws {
        let clock = VirtualClock()
        let harness = try Harness { $0.authorizationCodeLifetime = 0.2; $0.clock = SandboxClock(now: clock.read) }
        defer { harness.stop() }
        let code = try harness.authorizationCode()
        clock.advance(0.4)
        let reply = try harness.tokenRequest(Harness.client + [("grant_type", "authorization_code"), ("code", code),
                                                                ("redirect_uri", Harness.loopbackRedirect)])
        #expect(reply.code == 118)
    }

    @Test func tokenEndpointErrors() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let get = try harness.get("/service/auth2/token?grant_type=authorization_code")
        #expect(get.status == 400)
        #expect(get.code == 101)
        #expect(get.msg == "invalid_request_method: GET")
        #expect(try get.json()["request"] == .string("GET /service/auth2/token"))

        let code = try harness.authorizationCode()
        let good = Harness.client + [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", Harness.loopbackRedirect)]
        func without(_ name: String) -> [(String, String)] { good.filter { $0.0 != name } }
        func replacing(_ name: String, _ value: String) -> [(String, String)] { good.map { $0.0 == name ? (name, value) : $0 } }
        let cases: [([(String, String)], Int, String)] = [
            (without("client_id"), 113, "required_parameter_is_missing: client_id"),
            (without("grant_type"), 113, "required_parameter_is_missing: grant_type"),
            (without("client_secret"), 113, "required_parameter_is_missing: client_secret"),
            (without("code"), 113, "required_parameter_is_missing: code"),
            (without("redirect_uri"), 113, "required_parameter_is_missing: redirect_uri"),
            (replacing("client_id", "other-app"), 104, "invalid_apikey"),
            (replacing("grant_type", "password"), 114, "unsupported_grant_type"),
            (replacing("grant_type", "client_credentials"), 114, "unsupported_grant_type"),
            (replacing("client_secret", "wrong"), 116, "client_secret_mismatch"),
        ]
        for (fields, code, msg) in cases {
            let reply = try harness.tokenRequest(fields)
            #expect(reply.status == 400, "\(msg)")
            #expect(reply.code == code, "\(reply.text)")
            #expect(reply.msg == msg)
        }
        // None of those spent the code.
        #expect(try harness.tokenRequest(good).status == 200)
    }

    @Test func httpBasicClientAuthentication() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let code = try harness.authorizationCode()
        let credentials = base64(Array("\(Sandbox.clientID):\(Sandbox.clientSecret)".utf8))
        let reply = try harness.tokenRequest([("grant_type", "authorization_code"), ("code", code),
                                              ("redirect_uri", Harness.loopbackRedirect)],
                                             headers: [("Authorization", "Basic \(credentials)")])
        #expect(reply.status == 200, "\(reply.text)")
        let wrong = base64(Array("\(Sandbox.clientID):nope".utf8))
        let refused = try harness.tokenRequest([("grant_type", "refresh_token"), ("refresh_token", "x")],
                                               headers: [("Authorization", "Basic \(wrong)")])
        #expect(refused.code == 116)
    }

    @Test func refreshRotatesAndInvalidatesTheOldPair() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let login = try harness.login()
        let oldAccess = try #require(login["access_token"]?.stringValue)
        let oldRefresh = try #require(login["refresh_token"]?.stringValue)
        harness.sandbox.expireAccessTokens()
        let expired = try harness.get("/v2/user/~me", token: oldAccess)
        #expect(expired.status == 400)
        #expect(expired.code == 106)
        #expect(expired.msg == "access_token_has_expired: \(oldAccess)")

        let refreshed = try harness.refresh(oldRefresh)
        #expect(refreshed.status == 200)
        let json = try refreshed.json()
        let newAccess = try #require(json["access_token"]?.stringValue)
        let newRefresh = try #require(json["refresh_token"]?.stringValue)
        #expect(isHex32(json["access_token"]) && isHex32(json["refresh_token"]))
        #expect(newAccess != oldAccess)
        #expect(newRefresh != oldRefresh)
        #expect(json["douban_user_id"] == .string("1000001"))
        #expect(try harness.get("/v2/user/~me", token: newAccess).status == 200)

        let reused = try harness.refresh(oldRefresh)
        #expect(reused.status == 400)
        #expect(reused.code == 119)
        #expect(reused.msg == "invalid_refresh_token")
        let oldAgain = try harness.get("/v2/user/~me", token: oldAccess)
        #expect(oldAgain.code == 103)
        #expect(oldAgain.msg == "invalid_access_token: \(oldAccess)")
    }

    @Test func refreshingALiveTokenGives124AndKeepsTheRefreshToken() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let login = try harness.login()
        let refreshToken = try #require(login["refresh_token"]?.stringValue)
        let early = try harness.refresh(refreshToken)
        #expect(early.status == 400)
        #expect(early.code == 124)
        #expect(early.msg == "access_token_has_not_expired")
        #expect(try harness.get("/v2/user/~me", token: login["access_token"]?.stringValue).status == 200)
        harness.sandbox.expireAccessTokens()
        #expect(try harness.refresh(refreshToken).status == 200)
        #expect(try harness.refresh("0123456789abcdef0123456789abcdef").code == 119)
        #expect(try harness.tokenRequest(Harness.client + [("grant_type", "refresh_token")]).code == 113)
    }

    @Test func revokeAccessAndRefreshTokens() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let first = try harness.login()
        let access = try #require(first["access_token"]?.stringValue)
        let revoked = try harness.post("/service/auth2/revoke", form: Harness.client + [("token", access)])
        #expect(revoked.status == 200)
        #expect(try revoked.json() == [:])
        #expect(try harness.get("/v2/user/~me", token: access).code == 103)
        // Its refresh token now works at once (the access token is gone).
        let afterRevoke = try harness.refresh(try #require(first["refresh_token"]?.stringValue))
        #expect(afterRevoke.status == 200)

        let second = try harness.login()
        let refresh = try #require(second["refresh_token"]?.stringValue)
        let revokeRefresh = try harness.post("/service/auth2/revoke",
                                             form: Harness.client + [("token", refresh), ("token_type_hint", "refresh_token")])
        #expect(revokeRefresh.status == 200)
        #expect(try harness.refresh(refresh).code == 119)
        #expect(try harness.get("/v2/user/~me", token: second["access_token"]?.stringValue).code == 103)

        let unknown = try harness.post("/service/auth2/revoke", form: Harness.client + [("token", "not-a-token")])
        #expect(unknown.status == 200)
        #expect(try harness.post("/service/auth2/revoke", form: Harness.client).code == 113)
        #expect(try harness.get("/service/auth2/revoke").code == 101)
    }
}

func base64(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    var output = ""
    var index = 0
    while index < bytes.count {
        let chunk = Array(bytes[index..<min(index + 3, bytes.count)])
        let value = UInt32(chunk[0]) << 16 | UInt32(chunk.count > 1 ? chunk[1] : 0) << 8 | UInt32(chunk.count > 2 ? chunk[2] : 0)
        for position in 0..<4 {
            output.append(position <= chunk.count ? alphabet[Int((value >> UInt32(18 - position * 6)) & 0x3F)] : "=")
        }
        index += 3
    }
    return output
}

/// A long-running sandbox stays bounded: logins past the grant limit revoke the oldest grant, and
/// settled device codes are pruned a minute after they settle.
@Suite struct BoundedStateTests {
    @Test func theEleventhGrantRevokesTheOldest() throws {
        let harness = try Harness()
        defer { harness.stop() }
        var grants: [JSON] = []
        for _ in 0..<(GrantLimit.perUserAndClient + 1) { grants.append(try harness.login()) }
        let oldest = try #require(grants.first)
        let revoked = try harness.get("/v2/user/~me", token: oldest["access_token"]?.stringValue)
        #expect(revoked.status == 400)
        #expect(revoked.code == 103)
        #expect(try harness.refresh(try #require(oldest["refresh_token"]?.stringValue)).status == 400)
        for grant in grants.dropFirst() {
            #expect(try harness.get("/v2/user/~me", token: grant["access_token"]?.stringValue).status == 200)
        }
    }

    @Test func settledDeviceCodesArePrunedAfterAMinute() {
        var state = SandboxState()
        let now = 1_000_000.0
        for (index, decision) in [DeviceRecord.Decision.redeemed, .denied, .pending].enumerated() {
            let record = DeviceRecord(deviceCode: "code\(index)", userCode: "USER-000\(index)", clientID: "c", scopes: [],
                                      expiresAt: now + 1800, interval: 5, decision: decision,
                                      settledAt: decision == .pending ? nil : now)
            state.devices[record.deviceCode] = record
            state.deviceCodesByUserCode[record.userCode] = record.deviceCode
        }
        state.pruneTransientRecords(now: now + DeviceRecord.settledRetention - 1)
        #expect(state.devices.count == 3)
        state.pruneTransientRecords(now: now + DeviceRecord.settledRetention)
        #expect(state.devices.keys.sorted() == ["code2"])
        state.pruneTransientRecords(now: now + 1800 + 3600)
        #expect(state.devices.isEmpty)
    }

    @Test func theRequestJournalKeepsAtMostItsByteBudgetOfBodies() {
        var journal = RequestJournal()
        let megabyte = [UInt8](repeating: 7, count: 1 << 20)
        for index in 0..<40 {
            let part = RecordedPart(name: "image", filename: "\(index).png", contentType: "image/png", size: Int64(megabyte.count),
                                    bytes: megabyte)
            journal.append(RecordedRequest(method: "POST", path: "/p", rawTarget: "/p?i=\(index)", query: [], headers: [],
                                           contentType: nil, contentLength: nil, isChunked: false, bodySize: 0, form: [],
                                           parts: [part], status: 200))
        }
        let kept = journal.entries.reduce(0) { $0 + ($1.parts.first?.bytes?.count ?? 0) }
        #expect(kept <= RequestJournal.keptBytesBudget)
        // Each part's record counts too (issue 20), so one 1 MiB body fewer than 32 fits.
        #expect(journal.entries.count == (RequestJournal.keptBytesBudget >> 20) - 1)
        #expect(journal.entries.last?.rawTarget == "/p?i=39")
        journal.append(RecordedRequest(method: "GET", path: "/g", rawTarget: "/g", query: [], headers: [], contentType: nil,
                                       contentLength: nil, isChunked: false, bodySize: 0, form: [], parts: [], status: 200))
        #expect(journal.entries.count == RequestJournal.keptBytesBudget >> 20)
    }

    /// Issue 20: records of many tiny parts cost memory though they keep no bytes; the budget
    /// counts them, so 300 requests of 1,000 parts (300,000 records) are not all kept.
    @Test func theRequestJournalCountsPartRecordsAgainstItsBudget() {
        var journal = RequestJournal()
        let parts = Array(repeating: RecordedPart(name: "f", filename: nil, contentType: nil, size: 1, bytes: nil), count: 1000)
        for index in 0..<300 {
            journal.append(RecordedRequest(method: "POST", path: "/p", rawTarget: "/p?i=\(index)", query: [], headers: [],
                                           contentType: nil, contentLength: nil, isChunked: false, bodySize: 0, form: [],
                                           parts: parts, status: 413))
        }
        #expect(journal.entries.count * 1000 * RequestJournal.partOverhead <= RequestJournal.keptBytesBudget)
        #expect(journal.entries.count > 200)
        #expect(journal.entries.last?.rawTarget == "/p?i=299")
    }

    @Test func tokensThatCannotBeRenewedGoAnHourAfterExpiring() {
        var state = SandboxState()
        let (access, _) = state.issueTokens(userID: 1, clientID: "c", scopes: [], ttl: 60, now: 0, withRefreshToken: false)
        let (renewable, _) = state.issueTokens(userID: 1, clientID: "c", scopes: [], ttl: 60, now: 0)
        state.pruneTransientRecords(now: 60 + 3599)
        #expect(state.accessTokens[access.token] != nil)
        state.pruneTransientRecords(now: 60 + 3600)
        #expect(state.accessTokens[access.token] == nil)
        #expect(state.accessTokens[renewable.token] != nil)
    }
}
