import DouctlJSON
import DouctlSandbox
import DouctlServer
import Testing

/// Coding's OAuth2: `/oauth_authorize.html`, `/api/oauth/access_token`, the device grant.
@Suite struct CodingOAuthTests {
    static let client = Harness.client

    @Test func codeExchangeGivesTheCurrentReplyShape() throws {
        let harness = try Harness { $0.tokenTTL = 7200 }
        defer { harness.stop() }
        let authorize = try harness.get("/oauth_authorize.html?" + FormURLEncoded.serialize(Harness.codingAuthorizeFields))
        #expect(authorize.status == 302)
        let location = try #require(authorize.header("Location"))
        #expect(location.hasPrefix(Harness.loopbackRedirect + "?"))
        let fields = queryFields(of: location)
        #expect(fields["state"] == "st-7")
        let code = try #require(fields["code"])
        let reply = try harness.codingTokenRequest(Self.client + [("grant_type", "authorization_code"), ("code", code)])
        #expect(reply.status == 200)
        #expect(reply.header("Cache-Control") == "no-store")
        let body = try reply.json()
        #expect(body.objectValue?.keys == ["access_token", "refresh_token", "scope", "team", "token_type", "expires_in"])
        #expect(isHex32(body["access_token"]))
        #expect(isHex32(body["refresh_token"]))
        #expect(body["expires_in"] == .string("7200"))  // a string, as Coding sends it
        #expect(body["token_type"] == "Bearer")
        #expect(body["team"] == "sandbox")
        #expect(body["scope"] == "user,social,social:tweet")
        // The token works on the legacy API, as the default user coder.
        let me = try harness.codingGet("/api/account/current_user", token: body["access_token"]?.stringValue)
        #expect(me.data?["global_key"] == "coder")
        // Granted scopes only: no user:email, no email.
        #expect(me.data?["email"] == "")
        // A code works once; reusing it fails and revokes what it gave.
        let again = try harness.codingTokenRequest(Self.client + [("grant_type", "authorization_code"), ("code", code)])
        #expect(again.status == 400)
        #expect(again.oauthError == "invalid_grant")
        #expect(try harness.codingGet("/api/account/current_user", token: body["access_token"]?.stringValue).code == 1000)
    }

    @Test func pkceIsVerifiedWhenAChallengeWasSent() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"  // RFC 7636 appendix B
        let fields = Harness.codingAuthorizeFields + [("code_challenge", challenge), ("code_challenge_method", "S256")]
        for (verifierField, expected) in [(nil, 400), ("wrong-verifier-wrong-verifier-wrong-verifier-x", 400), (verifier, 200)] as [(String?, Int)] {
            let code = try harness.codingAuthorizationCode(fields)
            var form = Self.client + [("grant_type", "authorization_code"), ("code", code)]
            if let verifierField { form.append(("code_verifier", verifierField)) }
            let reply = try harness.codingTokenRequest(form)
            #expect(reply.status == expected, "\(verifierField ?? "none"): \(reply.text)")
            if expected == 400 { #expect(reply.oauthError == "invalid_grant") }
        }
        // A bad challenge method is refused at the redirect.
        let bad = try harness.get("/oauth_authorize.html?" + FormURLEncoded.serialize(
            Harness.codingAuthorizeFields + [("code_challenge", challenge), ("code_challenge_method", "S512")]))
        #expect(queryFields(of: bad.header("Location") ?? "")["error"] == "invalid_request")
    }

    @Test func refreshTokensRotateAndAreSingleUse() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let code = try harness.codingAuthorizationCode()
        let first = try harness.codingTokenRequest(Self.client + [("grant_type", "authorization_code"), ("code", code)]).json()
        let access1 = try #require(first["access_token"]?.stringValue)
        let refresh1 = try #require(first["refresh_token"]?.stringValue)
        // Refreshing a live token is allowed (unlike Douban's 124) and invalidates the old pair.
        let second = try harness.codingTokenRequest(Self.client + [("grant_type", "refresh_token"), ("refresh_token", refresh1)])
        #expect(second.status == 200)
        let body = try second.json()
        let access2 = try #require(body["access_token"]?.stringValue)
        let refresh2 = try #require(body["refresh_token"]?.stringValue)
        #expect(access2 != access1)
        #expect(refresh2 != refresh1)
        #expect(isString(body["expires_in"]))
        #expect(body["scope"] == "user,social,social:tweet")
        #expect(try harness.codingGet("/api/account/current_user", token: access1).code == 1000)
        #expect(try harness.codingGet("/api/account/current_user", token: access2).code == 0)
        // The old refresh token is spent.
        let replay = try harness.codingTokenRequest(Self.client + [("grant_type", "refresh_token"), ("refresh_token", refresh1)])
        #expect(replay.status == 400)
        #expect(try replay.json()["error"] == "invalid_grant")
        #expect(isString(try replay.json()["error_description"]))
        // An expired access token refreshes too.
        harness.sandbox.expireAccessTokens()
        #expect(try harness.codingGet("/api/account/current_user", token: access2).code == 3207)
        let third = try harness.codingTokenRequest(Self.client + [("grant_type", "refresh_token"), ("refresh_token", refresh2)])
        #expect(third.status == 200)
        #expect(try harness.codingGet("/api/account/current_user", token: third.json()["access_token"]?.stringValue).code == 0)
    }

    @Test func basicClientAuthenticationAndClientErrors() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let basic = "Basic " + base64(Array("\(Sandbox.clientID):\(Sandbox.clientSecret)".utf8))
        let code = try harness.codingAuthorizationCode()
        let viaBasic = try harness.codingTokenRequest([("grant_type", "authorization_code"), ("code", code)],
                                                      headers: [("Authorization", basic)])
        #expect(viaBasic.status == 200, "\(viaBasic.text)")
        let wrongSecret = try harness.codingTokenRequest([("client_id", Sandbox.clientID), ("client_secret", "nope"),
                                                          ("grant_type", "authorization_code"), ("code", "x")])
        #expect(wrongSecret.status == 400)
        #expect(wrongSecret.oauthError == "invalid_client")
        let noSecret = try harness.codingTokenRequest([("client_id", Sandbox.clientID), ("grant_type", "refresh_token"),
                                                       ("refresh_token", "x")])
        #expect(noSecret.oauthError == "invalid_client")
        let unknownGrant = try harness.codingTokenRequest(Self.client + [("grant_type", "password")])
        #expect(unknownGrant.status == 400)
        #expect(unknownGrant.oauthError == "unsupported_grant_type")
        let unknownCode = try harness.codingTokenRequest(Self.client + [("grant_type", "authorization_code"), ("code", "nope")])
        #expect(unknownCode.oauthError == "invalid_grant")
        let wrongRedirect = try harness.codingTokenRequest(Self.client + [("grant_type", "authorization_code"),
                                                                          ("code", try harness.codingAuthorizationCode()),
                                                                          ("redirect_uri", "http://127.0.0.1:1/callback/other")])
        #expect(wrongRedirect.oauthError == "invalid_grant")
    }

    @Test func codesDoNotCrossBetweenDoubanAndCoding() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let codingCode = try harness.codingAuthorizationCode()
        let onDouban = try harness.tokenRequest(Harness.client + [("grant_type", "authorization_code"), ("code", codingCode),
                                                                  ("redirect_uri", Harness.loopbackRedirect)])
        #expect(onDouban.code == 118)
        let doubanCode = try harness.authorizationCode()
        let onCoding = try harness.codingTokenRequest(Self.client + [("grant_type", "authorization_code"), ("code", doubanCode)])
        #expect(onCoding.oauthError == "invalid_grant")
    }

    @Test func authorizeErrors() throws {
        let harness = try Harness()
        defer { harness.stop() }
        func authorize(_ fields: [(String, String)]) throws -> TestResponse {
            try harness.get("/oauth_authorize.html?" + FormURLEncoded.serialize(fields))
        }
        let unknownClient = try authorize([("client_id", "someone"), ("redirect_uri", Harness.loopbackRedirect),
                                           ("response_type", "code")])
        #expect(unknownClient.status == 400)
        #expect(unknownClient.header("Content-Type")?.hasPrefix("text/html") == true)
        let badRedirect = try authorize([("client_id", Sandbox.clientID), ("redirect_uri", "https://evil.example/cb"),
                                         ("response_type", "code")])
        #expect(badRedirect.status == 400)
        #expect(badRedirect.header("Location") == nil)
        let token = try authorize([("client_id", Sandbox.clientID), ("redirect_uri", Harness.loopbackRedirect),
                                   ("response_type", "token"), ("state", "s")])
        #expect(queryFields(of: token.header("Location") ?? "")["error"] == "unsupported_response_type")
        #expect(queryFields(of: token.header("Location") ?? "")["state"] == "s")
        let scope = try authorize([("client_id", Sandbox.clientID), ("redirect_uri", Harness.loopbackRedirect),
                                   ("response_type", "code"), ("scope", "user,shuo_basic_r")])
        #expect(queryFields(of: scope.header("Location") ?? "")["error"] == "invalid_scope")
    }

    @Test func manualApprovalShowsCodingUsersAndCanDeny() throws {
        let harness = try Harness { $0.approval = .manual }
        defer { harness.stop() }
        let page = try harness.get("/oauth_authorize.html?" + FormURLEncoded.serialize(Harness.codingAuthorizeFields))
        #expect(page.status == 200)
        #expect(page.text.contains("action=\"/oauth_authorize.html\""))
        #expect(page.text.contains("码农小王"))
        #expect(page.text.contains("读取冒泡"))
        #expect(!page.text.contains("阿北"))
        let ticket = try #require(hiddenField("request_id", in: page.text))
        let approve = try harness.post("/oauth_authorize.html", form: [("request_id", ticket), ("decision", "approve"),
                                                                       ("user", "devmei")])
        #expect(approve.status == 302)
        let code = try #require(queryFields(of: approve.header("Location") ?? "")["code"])
        let token = try harness.codingTokenRequest(Self.client + [("grant_type", "authorization_code"), ("code", code)]).json()
        let me = try harness.codingGet("/api/account/current_user", token: token["access_token"]?.stringValue)
        #expect(me.data?["global_key"] == "devmei")

        let second = try harness.get("/oauth_authorize.html?" + FormURLEncoded.serialize(Harness.codingAuthorizeFields))
        let secondTicket = try #require(hiddenField("request_id", in: second.text))
        let deny = try harness.post("/oauth_authorize.html", form: [("request_id", secondTicket), ("decision", "deny")])
        let denied = queryFields(of: deny.header("Location") ?? "")
        #expect(denied["error"] == "access_denied")
        #expect(denied["state"] == "st-7")
    }

    @Test func deviceGrantWorksForCoding() throws {
        let harness = try Harness {
            $0.approval = .manual
            $0.deviceInterval = 0
        }
        defer { harness.stop() }
        let start = try harness.post("/api/oauth/device", form: [("client_id", Sandbox.clientID), ("scope", "user,social")])
        #expect(start.status == 200)
        let device = try start.json()
        let deviceCode = try #require(device["device_code"]?.stringValue)
        let userCode = try #require(device["user_code"]?.stringValue)
        #expect(device["verification_uri"] == .string(harness.base + "/oauth_device.html"))
        #expect(isNumber(device["expires_in"]))
        func poll() throws -> TestResponse {
            try harness.codingTokenRequest(Self.client + [("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
                                                          ("device_code", deviceCode)])
        }
        #expect(try poll().oauthError == "authorization_pending")
        // Not a Douban device code, and not approvable as a Douban user.
        #expect(try harness.pollDevice(deviceCode).oauthError == "invalid_grant")
        #expect(!harness.sandbox.approveDevice(userCode: userCode, user: "ahbei"))
        // The verification page lists Coding's users.
        let page = try harness.get("/oauth_device.html?user_code=" + userCode)
        #expect(page.text.contains("码农小王"))
        #expect(page.text.contains("action=\"/oauth_device.html\""))
        let verified = try harness.post("/oauth_device.html", form: [("user_code", userCode), ("decision", "approve"),
                                                                     ("user", "opszhang")])
        #expect(verified.status == 200)
        let token = try poll()
        #expect(token.status == 200)
        let body = try token.json()
        #expect(body["expires_in"]?.stringValue != nil)
        #expect(body["scope"] == "user,social")
        let me = try harness.codingGet("/api/account/current_user", token: body["access_token"]?.stringValue)
        #expect(me.data?["global_key"] == "opszhang")
        #expect(try poll().oauthError == "invalid_grant")  // redeemed once

        // The approve hook defaults to coder for a Coding code.
        let another = try harness.post("/api/oauth/device", form: [("client_id", Sandbox.clientID)]).json()
        #expect(harness.sandbox.approveDevice(userCode: try #require(another["user_code"]?.stringValue)))
        let tokens = try harness.codingTokenRequest(Self.client + [("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
                                                                   ("device_code", another["device_code"]?.stringValue ?? "")]).json()
        #expect(tokens["scope"] == "user")
        #expect(try harness.codingGet("/api/account/current_user", token: tokens["access_token"]?.stringValue).data?["global_key"] == "coder")
        // Unknown scopes are refused up front.
        #expect(try harness.post("/api/oauth/device", form: [("client_id", Sandbox.clientID), ("scope", "root")]).oauthError == "invalid_scope")
    }
}
