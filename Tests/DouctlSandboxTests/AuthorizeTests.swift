import DouctlJSON
import DouctlSandbox
import Testing

@Suite struct AuthorizeTests {
    @Test func autoApprovalRedirectsWithCodeAndState() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let reply = try harness.authorize(Harness.authorizeFields(state: "xyz 1"))
        #expect(reply.status == 302)
        let location = try #require(reply.header("Location"))
        #expect(location.hasPrefix(Harness.loopbackRedirect + "?"))
        let fields = queryFields(of: location)
        #expect(fields["state"] == "xyz 1")
        let code = try #require(fields["code"])
        #expect(!code.isEmpty)
    }

    @Test func registeredRedirectURIsFollowRFC8252() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let accepted = ["http://127.0.0.1/callback", "http://127.0.0.1:8080/callback", "http://127.0.0.1:53682/callback/work",
                        "http://localhost:9/callback", "http://localhost/callback/a/b", "http://127.0.0.1:1234/callback?x=1",
                        "https://example.com/back"]
        for redirect in accepted {
            let reply = try harness.authorize(Harness.authorizeFields(redirect: redirect))
            #expect(reply.status == 302, "\(redirect) should be accepted")
            let location = reply.header("Location") ?? ""
            #expect(location.hasPrefix(redirect), "\(redirect) → \(location)")
            #expect(queryFields(of: location)["code"] != nil)
        }
        #expect(queryFields(of: try harness.authorize(Harness.authorizeFields(redirect: "http://127.0.0.1:1234/callback?x=1"))
            .header("Location") ?? "")["x"] == "1")
        let rejected = ["http://127.0.0.1:8080/other", "https://127.0.0.1/callback", "http://evil.example/callback",
                        "https://example.com/back2", "https://example.com/back?x=1", "http://127.0.0.1/callbackx",
                        "http://127.0.0.1.evil.example/callback", "http://localhost:99999999/callback",
                        "http://127.0.0.1/callback#frag"]
        for redirect in rejected {
            let reply = try harness.authorize(Harness.authorizeFields(redirect: redirect))
            #expect(reply.status == 400, "\(redirect) should be refused")
            #expect(reply.code == 117, "\(redirect): \(reply.text)")
            #expect(reply.msg == "redirect_uri_mismatch")
        }
    }

    @Test func authorizeParameterErrors() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let complete = Harness.authorizeFields()
        for missing in ["client_id", "redirect_uri", "response_type"] {
            let reply = try harness.authorize(complete.filter { $0.0 != missing })
            #expect(reply.status == 400)
            #expect(reply.code == 113)
            #expect(reply.msg == "required_parameter_is_missing: \(missing)")
            #expect(try reply.json()["request"]?.stringValue == "GET /service/auth2/auth")
        }
        let wrongClient = try harness.authorize(complete.map { $0.0 == "client_id" ? ("client_id", "someone-else") : $0 })
        #expect(wrongClient.status == 400)
        #expect(wrongClient.code == 104)
        #expect(wrongClient.msg == "invalid_apikey")
        let wrongType = try harness.authorize(complete.map { $0.0 == "response_type" ? ("response_type", "id_token") : $0 })
        #expect(wrongType.status == 400)
        #expect(wrongType.code == 115)
        #expect(wrongType.msg == "unsupported_response_type")
        let wrongScope = try harness.authorize(complete.map { $0.0 == "scope" ? ("scope", "shuo_basic_r,root") : $0 })
        #expect(wrongScope.code == 125)
        let put = try harness.send("PUT", "/service/auth2/auth")
        #expect(put.status == 400)
        #expect(put.code == 101)
    }

    @Test func manualConsentApproveAsChosenUser() throws {
        let harness = try Harness { $0.approval = .manual }
        defer { harness.stop() }
        let page = try harness.authorize(Harness.authorizeFields(state: "st"))
        #expect(page.status == 200)
        #expect(page.header("Content-Type")?.hasPrefix("text/html") == true)
        #expect(page.text.contains("<form method=\"post\" action=\"/service/auth2/auth\">"))
        #expect(page.text.contains("value=\"linglu\""))
        let ticket = try #require(hiddenField("request_id", in: page.text))
        let decision = try harness.post("/service/auth2/auth", form: [("request_id", ticket), ("user", "linglu"), ("decision", "approve")])
        #expect(decision.status == 302)
        let location = try #require(decision.header("Location"))
        let fields = queryFields(of: location)
        #expect(fields["state"] == "st")
        let code = try #require(fields["code"])
        let tokens = try harness.tokenRequest(Harness.client + [("grant_type", "authorization_code"), ("code", code),
                                                                 ("redirect_uri", Harness.loopbackRedirect)]).json()
        #expect(tokens["douban_user_id"]?.stringValue == harness.sandbox.userID(of: "linglu"))
        #expect(tokens["douban_user_name"]?.stringValue == "林露")
        // The ticket is single-use.
        let again = try harness.post("/service/auth2/auth", form: [("request_id", ticket), ("decision", "approve")])
        #expect(again.status == 400)
        #expect(again.header("Content-Type")?.hasPrefix("text/html") == true)
    }

    @Test func manualConsentDenyRedirectsWithAccessDenied() throws {
        let harness = try Harness { $0.approval = .manual }
        defer { harness.stop() }
        let page = try harness.authorize(Harness.authorizeFields(redirect: "https://example.com/back", state: "q"))
        let ticket = try #require(hiddenField("request_id", in: page.text))
        let decision = try harness.post("/service/auth2/auth", form: [("request_id", ticket), ("decision", "deny")])
        #expect(decision.status == 302)
        let location = try #require(decision.header("Location"))
        #expect(location.hasPrefix("https://example.com/back?"))
        #expect(queryFields(of: location)["error"] == "access_denied")
        #expect(queryFields(of: location)["state"] == "q")
        #expect(queryFields(of: location)["code"] == nil)
    }

    @Test func userAgentFlowPutsTheTokenInTheFragment() throws {
        let harness = try Harness { $0.tokenTTL = 1800 }
        defer { harness.stop() }
        let reply = try harness.authorize(Harness.authorizeFields(responseType: "token", state: "ua"))
        #expect(reply.status == 302)
        let location = try #require(reply.header("Location"))
        #expect(location.hasPrefix(Harness.loopbackRedirect + "#"))
        let fields = queryFields(of: location, fragment: true)
        let token = try #require(fields["access_token"])
        #expect(token.count == 32)
        #expect(fields["expires_in"] == "1800")
        #expect(fields["state"] == "ua")
        #expect(fields["refresh_token"] == nil)
        #expect(try harness.get("/v2/user/~me", token: token).status == 200)
    }

    @Test func badPKCEMethodIsReportedOnTheRedirect() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let reply = try harness.authorize(Harness.authorizeFields(extra: [("code_challenge", PKCE.challenge),
                                                                          ("code_challenge_method", "S512")]))
        #expect(reply.status == 302)
        let fields = queryFields(of: reply.header("Location") ?? "")
        #expect(fields["error"] == "invalid_request")
        #expect(fields["code"] == nil)
    }

    @Test func consentAndVerifyPagesIgnoreFaults() throws {
        let harness = try Harness {
            $0.approval = .manual
            $0.faults = try! SandboxFault.parseList("503:1,reset:1")
        }
        defer { harness.stop() }
        let page = try harness.authorize(Harness.authorizeFields())
        #expect(page.status == 200)
        #expect(page.isComplete)
        let verify = try harness.get("/service/auth2/device/verify")
        #expect(verify.status == 200)
        #expect(try harness.get("/v2/user/ahbei").status == 503)
    }
}

/// The RFC 7636 Appendix B example.
enum PKCE {
    static let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    static let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
}

/// The value of `<input type="hidden" name="NAME" value="…">` in a page.
func hiddenField(_ name: String, in html: String) -> String? {
    guard let range = html.firstRange(of: "name=\"\(name)\" value=\"") else { return nil }
    let rest = html[range.upperBound...]
    guard let end = rest.firstIndex(of: "\"") else { return nil }
    return String(rest[..<end])
}
