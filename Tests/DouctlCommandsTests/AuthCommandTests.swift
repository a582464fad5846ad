@testable import DouctlCommands
import DouctlArguments
import DouctlCore
import DouctlJSON
import DouctlTestSupport
import Testing

/// `douctl auth …` twice: argv → typed options (with the combinations refused at parse
/// time), and options + a scripted transport → stdout, stderr, exit, in process.
@Suite struct AuthCommandTests {
    // MARK: argv → options

    /// One flow flag at most; without one the profile decides (`LoginMethod.automatic`).
    @Test(arguments: [
        ([], nil),
        (["--web"], LoginMethod.web),
        (["--device"], .device),
        (["--paste"], .paste),
        (["--with-token"], .token),
        (["--password"], .password),
        (["--with-credentials"], .credentials),
    ] as [([String], LoginMethod?)])
    func loginBindsTheFlow(flags: [String], method: LoginMethod?) throws {
        let options = try boundOptions(["auth", "login"] + flags, as: AuthCommands.LoginOptions.self)
        #expect(options.method == method)
        #expect(options.wait == 300 && !options.noBrowser && options.requestedScopes == nil)
    }

    @Test func loginBindsScopesWaitAndNoBrowser() throws {
        let options = try boundOptions(["auth", "login", "--device", "--no-browser", "--wait", "60", "--scopes", "douban_basic_common, shuo_basic_r,,"],
                                       as: AuthCommands.LoginOptions.self)
        #expect(options.method == .device)
        #expect(options.noBrowser)
        #expect(options.wait == 60)
        #expect(options.requestedScopes == ["douban_basic_common", "shuo_basic_r"])
    }

    @Test(arguments: [
        (["--with-token", "--web"], "choose one of --web, --with-token"),
        (["--device", "--paste"], "choose one of --device, --paste"),
        (["--password", "--with-credentials", "--web"], "choose one of --web, --password, --with-credentials"),
    ])
    func twoFlowsAreRefusedAtParseTime(flags: [String], message: String) throws {
        #expect(throws: OptionError(message)) { try boundOptions(["auth", "login"] + flags, as: AuthCommands.LoginOptions.self) }
    }

    @Test func statusBindsItsFlagsAndView() throws {
        let options = try boundOptions(["auth", "status", "--show-token", "--no-check", "--json"], as: AuthCommands.StatusOptions.self)
        #expect(options.showToken && options.noCheck && !options.check)
        #expect(options.view.json)
        #expect(!options.checks(stdoutIsTerminal: true))
        let plain = try boundOptions(["auth", "status"], as: AuthCommands.StatusOptions.self)
        #expect(plain.checks(stdoutIsTerminal: true) && !plain.checks(stdoutIsTerminal: false))
        #expect(!plain.showToken && plain.view.format == nil)
        #expect(try boundOptions(["auth", "status", "--check"], as: AuthCommands.StatusOptions.self).checks(stdoutIsTerminal: false))
    }

    @Test func exportAndTheVerbsWithoutOptions() throws {
        #expect(try boundOptions(["auth", "export", "--yes-i-know"], as: AuthCommands.ExportOptions.self).yesIKnow)
        #expect(try !boundOptions(["auth", "export"], as: AuthCommands.ExportOptions.self).yesIKnow)
        for verb in ["token", "refresh", "logout"] {
            _ = try boundOptions(["auth", verb], as: NoOptions.self)
            #expect(throws: UsageError.self) { try boundOptions(["auth", verb, "--web"], as: NoOptions.self) }
        }
    }

    // MARK: options + scripted transport → output

    static let me = ScriptedTransport.Answer.json(200, #"{"id":"1000001","uid":"ahbei","name":"阿北"}"#)
    static let refused = ScriptedTransport.Answer.json(400, #"{"code":103,"msg":"invalid_access_token: t","request":"GET /v2/user/~me"}"#)

    /// An in-process douctl whose default profile, 'sandbox', points at http://api.test.
    static func douctl(_ transport: ScriptedTransport, environment: [String: String] = [:], token: String? = nil, refreshToken: String? = nil) throws -> InProcessDouctl {
        let douctl = try InProcessDouctl(environment: environment, transport: transport)
        try SandboxProfiles.write(base: "http://api.test", in: douctl.configDirectory)
        if let token {
            try Credentials.write(["sandbox": token], in: douctl.configDirectory, expiresAt: "2099-01-01T00:00:00Z",
                                  refreshTokens: refreshToken.map { ["sandbox": $0] } ?? [:])
        }
        return douctl
    }

    @Test func loginWithTokenChecksItStoresItAndTokenPrintsIt() throws {
        let transport = ScriptedTransport([Self.me])
        let douctl = try Self.douctl(transport)
        let result = try douctl.run("auth", "login", "--with-token", input: "t0ken\n")
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr == "Logged in to sandbox as ahbei (1000001).\n")
        let printed = try result.json()
        #expect(printed["profile"]?.stringValue == "sandbox")
        #expect(printed["user_id"]?.stringValue == "1000001")
        #expect(printed["user_name"]?.stringValue == "ahbei")
        #expect(transport.requests.map(\.url) == ["http://api.test/v2/user/~me"])
        #expect(transport.requests.first?.header("Authorization") == "Bearer t0ken")

        let token = try douctl.run("auth", "token")
        #expect(token.status == 0, "\(token)")
        #expect(token.stdoutText == "t0ken\n")
        let status = try douctl.run("auth", "status", "--no-check")
        #expect(status.status == 0, "\(status)")
        #expect(try status.json()["credential"]?.stringValue == "token")
        #expect(try status.json()["user_name"]?.stringValue == "ahbei")
        #expect(try status.json()["token"]?.stringValue != "t0ken", "masked without --show-token")
        #expect(transport.requests.count == 1, "token and status --no-check send nothing")
    }

    /// The login's identity request is made like every other: "$VAR" values in
    /// common_params come from the environment (they went out empty once).
    @Test func theIdentityRequestCarriesTheEnvironmentsValues() throws {
        let transport = ScriptedTransport([Self.me])
        let douctl = try Self.douctl(transport, environment: ["VAR": "bar"])
        #expect(try douctl.run("config", "set", "common_params", #"{"x":"$VAR"}"#, "--profile", "sandbox").status == 0)
        let result = try douctl.run("auth", "login", "--with-token", input: "t0ken\n")
        #expect(result.status == 0, "\(result)")
        #expect(transport.requests.first?.queryValue("x") == "bar")
    }

    /// With no stored login when the run decides, the token verbs say so (exit 4) and an
    /// anonymous `api` request that the server refuses points at `auth login`. The store
    /// is read once, by that decision (`NoStoredLogin`), not again for each request.
    @Test func withoutALoginTheTokenVerbsAndARefusalPointAtLogin() throws {
        let transport = ScriptedTransport([Self.refused])
        let douctl = try Self.douctl(transport)
        for verb in ["token", "refresh"] {
            let result = try douctl.run("auth", verb)
            #expect(result.status == 4, "\(verb): \(result)")
            #expect(result.errorLine.contains("not logged in"), "\(verb): \(result.errorLine)")
        }
        let refused = try douctl.run("api", "/v2/user/~me")
        #expect(refused.status == 4, "\(refused)")
        #expect(refused.errorLine.contains("douctl auth login"), "\(refused.errorLine)")
        #expect(transport.requests.first?.header("Authorization") == nil)
        let withEnvironment = try douctl.run("auth", "refresh", environment: ["DOUCTL_TOKEN": "t"])
        #expect(withEnvironment.status == 2 && withEnvironment.errorLine.contains("DOUCTL_TOKEN is set"), "\(withEnvironment)")
    }

    @Test func aRefusedTokenIsExit4AndNothingIsStored() throws {
        let transport = ScriptedTransport([Self.refused])
        let douctl = try Self.douctl(transport)
        let result = try douctl.run("auth", "login", "--with-token", input: "bad\n")
        #expect(result.status == 4, "\(result)")
        #expect(result.stdout.isEmpty)
        #expect(result.errorLine.hasPrefix("douctl: the API refused this token"))
        #expect(try douctl.run("auth", "token").status == 4)
    }

    @Test func twoFlowsExit2BeforeStdinIsReadOrAnythingSent() throws {
        let transport = ScriptedTransport()
        let douctl = try Self.douctl(transport)
        let result = try douctl.run("auth", "login", "--with-token", "--device", input: "t0ken\n")
        #expect(result.status == 2, "\(result)")
        #expect(result.errorLine == "douctl: choose one of --device, --with-token")
        #expect(transport.requests.isEmpty)
    }

    /// Which style the profile is needs the profile: refused at run time, before anything is
    /// asked or sent.
    @Test func passwordIsCodingsLogin() throws {
        let transport = ScriptedTransport()
        let douctl = try Self.douctl(transport)
        let result = try douctl.run("auth", "login", "--password", input: "me\nsecret\n")
        #expect(result.status == 2, "\(result)")
        #expect(result.errorLine == "douctl: --password is Coding's login; profile 'sandbox' is douban-style (use --web, --device or --paste)")
        #expect(transport.requests.isEmpty)
    }

    @Test func loginIsRefusedWhileDOUCTL_TOKENIsSet() throws {
        let transport = ScriptedTransport()
        let douctl = try Self.douctl(transport, environment: ["DOUCTL_TOKEN": "env"])
        let result = try douctl.run("auth", "login", "--with-token", input: "t0ken\n")
        #expect(result.status == 2, "\(result)")
        #expect(result.errorLine == "douctl: DOUCTL_TOKEN is set, so douctl would ignore a stored login; unset it first")
        #expect(transport.requests.isEmpty)
    }

    @Test func statusChecksTheLoginWithTheServer() throws {
        let transport = ScriptedTransport([Self.me, Self.refused])
        // Not a word of the messages: a token sent is masked wherever it appears in them.
        let douctl = try Self.douctl(transport, token: "st0red-t0ken")
        let valid = try douctl.run("auth", "status", "--check")
        #expect(valid.status == 0, "\(valid)")
        #expect(try valid.json()["valid"]?.boolValue == true)
        #expect(try valid.json()["user_name"]?.stringValue == "ahbei")
        #expect(transport.requests.first?.header("Authorization") == "Bearer st0red-t0ken")

        let refused = try douctl.run("auth", "status", "--check")
        #expect(refused.status == 4, "\(refused)")
        #expect(try refused.json()["valid"]?.boolValue == false)
        #expect(refused.errorLine.hasPrefix("douctl: the server refused the stored login of sandbox"))
    }

    /// Issue 40: a refused token whose refresh is refused too said "run: douctl auth login
    /// --profile sandbox" twice in one line.
    @Test func statusCheckGivesItsAdviceOnce() throws {
        let transport = ScriptedTransport([Self.refused, .json(400, #"{"error":"invalid_grant","error_description":"refresh token revoked"}"#)])
        let douctl = try Self.douctl(transport, token: "st0red-t0ken", refreshToken: "r3fresh")
        let result = try douctl.run("auth", "status", "--check")
        #expect(result.status == 4, "\(result)")
        #expect(result.errorLine.hasPrefix("douctl: the server refused the stored login of sandbox"), "\(result)")
        #expect(result.errorLine.components(separatedBy: "douctl auth login").count == 2, "the advice once: \(result.errorLine)")
    }

    @Test func statusWithoutALoginIsExit4() throws {
        let douctl = try Self.douctl(ScriptedTransport())
        let result = try douctl.run("auth", "status")
        #expect(result.status == 4, "\(result)")
        #expect(try result.json()["logged_in"]?.boolValue == false)
    }

    @Test func logoutRevokesBothTokensAndForgetsThem() throws {
        let transport = ScriptedTransport([.json(200, "{}"), .json(200, "{}")])
        let douctl = try Self.douctl(transport, token: "acc", refreshToken: "ref")
        let result = try douctl.run("auth", "logout")
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr == "Logged out of sandbox.\n")
        #expect(result.stdout.isEmpty)
        #expect(transport.requests.map(\.url) == ["http://api.test/service/auth2/revoke", "http://api.test/service/auth2/revoke"])
        #expect(transport.requests.map { $0.formValue("token") } == ["ref", "acc"])
        #expect(transport.requests.map { $0.formValue("token_type_hint") } == ["refresh_token", "access_token"])
        #expect(try douctl.run("auth", "token").status == 4)
        let again = try douctl.run("auth", "logout")
        #expect(again.stderr == "Not logged in to sandbox; nothing to do.\n")
        #expect(transport.requests.count == 2)
    }

    @Test func aRevocationTheServerDoesNotConfirmIsAWarning() throws {
        let transport = ScriptedTransport([.json(500, "{}"), .failure(.connectionLost("reset"))])
        let douctl = try Self.douctl(transport, token: "acc", refreshToken: "ref")
        let result = try douctl.run("auth", "logout")
        #expect(result.status == 0, "\(result)")
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(lines.first?.hasPrefix("douctl: warning: the server did not confirm revocation (HTTP 500, ") == true)
        #expect(lines.first?.hasSuffix("); the local copy is deleted") == true)
        #expect(lines.last == "Logged out of sandbox.")
        #expect(try douctl.run("auth", "token").status == 4)
    }

    @Test func refreshStoresWhatTheTokenEndpointSends() throws {
        let transport = ScriptedTransport([.json(200, #"{"access_token":"new","refresh_token":"new-ref","expires_in":3600,"douban_user_id":"1000001"}"#)])
        let douctl = try Self.douctl(transport, token: "old", refreshToken: "old-ref")
        let result = try douctl.run("auth", "refresh")
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr == "Refreshed the token of sandbox.\n")
        #expect(try result.json()["profile"]?.stringValue == "sandbox")
        #expect(transport.requests.map(\.url) == ["http://api.test/service/auth2/token"])
        #expect(transport.requests.first?.formValue("grant_type") == "refresh_token")
        #expect(transport.requests.first?.formValue("refresh_token") == "old-ref")
        #expect(try douctl.run("auth", "token").stdoutText == "new\n")
    }

    @Test func exportPrintsTheStoredLoginInAPipe() throws {
        let douctl = try Self.douctl(ScriptedTransport(), token: "acc", refreshToken: "ref")
        let result = try douctl.run("auth", "export")
        #expect(result.status == 0, "\(result)")
        let printed = try result.json()
        #expect(printed["douctl"]?.stringValue == "credentials")
        #expect(printed["credential"]?["refresh_token"]?.stringValue == "ref")
    }
}
