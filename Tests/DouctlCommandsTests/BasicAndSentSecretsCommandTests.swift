@testable import DouctlCommands
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Testing

/// Issue 38, points 2 (Basic) and 8, in process on a scripted transport: a Basic login is
/// checked at user_url before it is stored, `--dry-run` prints the scheme the profile's
/// credential really goes in and `auth token` what that line needs, and no secret douctl
/// sent comes back in its own lines (error, `--error-format json`, error body on stderr)
/// when a server echoes it.
@Suite struct BasicAndSentSecretsCommandTests {
    static let password = "pa55-w0rd!"
    static let basic = Base64.encode(Array("ann:\(password)".utf8))

    /// A douctl whose profile 'b' is a plain API at http://api.test, with `options` added.
    static func douctl(_ transport: ScriptedTransport, _ options: [String] = [], environment: [String: String] = [:]) throws -> InProcessDouctl {
        let douctl = try InProcessDouctl(environment: environment, transport: transport)
        let add = try douctl.run(["profile", "add", "b", "--api-base", "http://api.test"] + options)
        #expect(add.status == 0, "\(add)")
        return douctl
    }

    /// stderr holds none of `secrets` (nor their base64 or percent-encoded forms).
    static func expectNone(of secrets: [String], in result: CommandResult, sourceLocation: SourceLocation = #_sourceLocation) {
        for secret in secrets {
            for form in [secret, Base64.encode(Array(secret.utf8)), PercentEncoding.encode(secret)] {
                #expect(!result.stderr.contains(form), "\(form) in \(result.stderr)", sourceLocation: sourceLocation)
            }
        }
    }

    // MARK: - Basic is a credential like a token

    /// The user name and password go to user_url as Basic first; a refusal is exit 4 with one
    /// line, nothing stored, and the password the server echoed in `detail` masked. Before:
    /// "Logged in" and exit 0, whatever the password.
    @Test func aBasicLoginTheServerRefusesIsExit4AndStoresNothing() throws {
        let transport = ScriptedTransport([.json(401, #"{"detail":"wrong password '\#(Self.password)' for ann"}"#)])
        let douctl = try Self.douctl(transport, ["--user-url", "/user"])
        let login = try douctl.run(["--profile", "b", "auth", "login", "--basic"], input: Array("ann:\(Self.password)\n".utf8))
        #expect(login.status == 4, "\(login)")
        #expect(login.stderr == "douctl: the server refused the user name or password (HTTP 401: wrong password '***' for ann); nothing was stored\n")
        #expect(login.stdout.isEmpty)
        #expect(transport.requests.map(\.url) == ["http://api.test/user"])
        #expect(transport.requests.first?.header("Authorization") == "Basic " + Self.basic)
        #expect(try douctl.run("--profile", "b", "auth", "status", "--no-check").status == 4, "nothing was stored")

        transport.then(.json(403, #"{"detail":"ann:\#(Self.password) may not"}"#))
        let json = try douctl.run(["--profile", "b", "auth", "login", "--basic", "--error-format", "json"], input: Array("ann:\(Self.password)\n".utf8))
        #expect(json.status == 4, "\(json)")
        let object = try JSONParser.parse(json.stderrBytes)
        #expect(object["exit"]?.intValue == 4)
        #expect(object["error"]?.stringValue?.hasPrefix("the server refused the user name or password (HTTP 403: ") == true, "\(json)")
        Self.expectNone(of: [Self.password, "ann:" + Self.password], in: json)
    }

    /// Accepted: stored with the user the server names; `auth token` prints what follows
    /// "Basic ", and `--dry-run` prints `Authorization: Basic $DOUCTL_TOKEN` (it printed
    /// Bearer, and `auth token` nothing, so the README's recipe got a 401).
    @Test func aBasicLoginTheServerAcceptsIsStoredAndItsDryRunLineIsBasic() throws {
        let transport = ScriptedTransport([.json(200, #"{"id":7,"login":"ann-the-user"}"#)])
        let douctl = try Self.douctl(transport, ["--user-url", "/user"])
        let login = try douctl.run(["--profile", "b", "auth", "login", "--basic"], input: Array("ann:\(Self.password)\n".utf8))
        #expect(login.status == 0, "\(login)")
        #expect(login.stderr == "Logged in to b as ann-the-user (7) (HTTP Basic).\n")
        #expect(transport.requests.first?.header("Authorization") == "Basic " + Self.basic)

        let token = try douctl.run("--profile", "b", "auth", "token")
        #expect(token.status == 0, "\(token)")
        #expect(token.stdoutText == Self.basic + "\n")
        let dry = try douctl.run("--profile", "b", "api", "/things", "--dry-run")
        #expect(dry.status == 0, "\(dry)")
        #expect(dry.stdoutText.contains(#"-H "Authorization: Basic $DOUCTL_TOKEN""#), "\(dry.stdoutText)")
        #expect(!dry.stdoutText.contains(Self.basic))
        #expect(transport.requests.count == 1, "a dry run sends nothing")
        // DOUCTL_TOKEN wins over the stored login, as in a real run: the profile's scheme.
        let environment = try douctl.run(["--profile", "b", "api", "/things", "--dry-run"], environment: ["DOUCTL_TOKEN": "t0ken"])
        #expect(environment.stdoutText.contains(#"-H "Authorization: Bearer $DOUCTL_TOKEN""#), "\(environment.stdoutText)")
    }

    /// No user_url and no preset: nothing to ask, so the login is stored unchecked, and a
    /// warning says so (not silence).
    @Test func aBasicLoginWithNothingToAskIsStoredWithAWarning() throws {
        let transport = ScriptedTransport()
        let douctl = try Self.douctl(transport)
        let login = try douctl.run(["--profile", "b", "auth", "login", "--basic"], input: Array("ann:\(Self.password)\n".utf8))
        #expect(login.status == 0, "\(login)")
        #expect(login.stderr == """
            douctl: warning: profile 'b' has no user_url, so the user name and password were stored without being checked (set one to check them: douctl config set user_url /user --profile b)
            Logged in to b as ann (HTTP Basic).

            """)
        #expect(transport.requests.isEmpty)
    }

    /// The README's dry-run recipe needs `auth token` to print what the printed line's
    /// `$DOUCTL_TOKEN` stands for, for every kind of credential: an API key in the header
    /// or query parameter the profile names goes there as the placeholder.
    @Test(arguments: [(["--token-header", "X-API-Key"], #"-H "X-API-Key: $DOUCTL_TOKEN""#),
                      (["--token-query", "key"], #""http://api.test/things?key=$DOUCTL_TOKEN""#),
                      ([], #"-H "Authorization: Bearer $DOUCTL_TOKEN""#)])
    func anAPIKeyOrBearerDryRunLineCarriesThePlaceholderWhereTheKeyGoes(options: [String], expected: String) throws {
        let transport = ScriptedTransport()
        let douctl = try Self.douctl(transport, options)
        #expect(try douctl.run(["--profile", "b", "auth", "login", "--with-token"], input: Array("k3y-0123456789\n".utf8)).status == 0)
        #expect(try douctl.run("--profile", "b", "auth", "token").stdoutText == "k3y-0123456789\n")
        let dry = try douctl.run("--profile", "b", "api", "/things", "--dry-run")
        #expect(dry.status == 0, "\(dry)")
        #expect(dry.stdoutText.contains(expected), "\(dry.stdoutText)")
        #expect(!dry.stdoutText.contains("k3y-0123456789"))
    }

    // MARK: - no secret in douctl's own lines

    /// A token endpoint that repeats the client secret in error_description: the error line
    /// masks it, sent in the form (token_auth post) or as Basic (token_auth basic), in text
    /// and in JSON. Before: printed in the error line.
    @Test(arguments: ["post", "basic"])
    func aClientSecretTheTokenEndpointEchoesIsMasked(tokenAuth: String) throws {
        let secret = "s3cr3t/client+value"
        let transport = ScriptedTransport([
            .json(401, #"{"error":"invalid_client","error_description":"client_secret \#(secret) is not the one we know"}"#),
            .json(401, #"{"error":"invalid_client","error_description":"client_secret \#(secret) is not the one we know"}"#),
        ])
        let douctl = try Self.douctl(transport, ["--token-url", "http://api.test/token", "--client-id", "cid", "--token-auth", tokenAuth],
                                     environment: ["DOUCTL_CLIENT_SECRET": secret])
        let login = try douctl.run("--profile", "b", "auth", "login", "--client-credentials")
        #expect(login.status == 4, "\(login)")
        #expect(login.stderr == "douctl: the token endpoint refused the client's credentials (invalid_client, client_secret *** is not the one we know)\n")
        #expect(login.stdout.isEmpty)
        let json = try douctl.run("--profile", "b", "auth", "login", "--client-credentials", "--error-format", "json")
        #expect(json.status == 4, "\(json)")
        #expect(try JSONParser.parse(json.stderrBytes)["error"]?.stringValue?.contains("client_secret *** is not") == true, "\(json)")
        Self.expectNone(of: [secret], in: json)
    }

    /// A refresh token the server repeats while refusing it.
    @Test func aRefreshTokenTheServerEchoesIsMasked() throws {
        let transport = ScriptedTransport([.json(400, #"{"error":"invalid_grant","error_description":"r3fresh-t0ken-9 was spent"}"#)])
        let douctl = try Self.douctl(transport, ["--token-url", "http://api.test/token", "--client-id", "cid", "--token-auth", "none"])
        try Credentials.write(["b": "acc3ss-t0ken-1"], in: douctl.configDirectory, expiresAt: "2099-01-01T00:00:00Z", refreshTokens: ["b": "r3fresh-t0ken-9"])
        let refresh = try douctl.run("--profile", "b", "auth", "refresh")
        #expect(refresh.status == 4, "\(refresh)")
        #expect(refresh.errorLine.contains("invalid_grant, *** was spent"), "\(refresh)")
        Self.expectNone(of: ["r3fresh-t0ken-9"], in: refresh)
    }

    /// An API that repeats the token in its error: the error line and the error body douctl
    /// shows on stderr (a pipe) mask it; stdout stays empty.
    @Test func aTokenAnAPIEchoesIsMaskedInTheErrorLineAndTheBodyOnStderr() throws {
        let token = "t0ken-echoed-42"
        let reply = ScriptedTransport.Answer.json(403, #"{"message":"token t0ken-echoed-42 lacks the scope","echo":"Bearer t0ken-echoed-42"}"#)
        let transport = ScriptedTransport([reply, reply])
        let douctl = try Self.douctl(transport, environment: ["DOUCTL_TOKEN": token])
        let api = try douctl.run("--profile", "b", "api", "/things")
        #expect(api.status == 4, "\(api)")
        #expect(api.stdout.isEmpty)
        #expect(api.errorLine.contains("token *** lacks the scope"), "\(api)")
        #expect(api.stderr.contains(#""echo":"Bearer ***""#), "the body on stderr too: \(api.stderr)")
        Self.expectNone(of: [token], in: api)
        let json = try douctl.run("--profile", "b", "api", "/things", "--error-format", "json", "--error-body", "none")
        #expect(json.status == 4)
        #expect(try JSONParser.parse(json.stderrBytes)["message"]?.stringValue == "token *** lacks the scope", "\(json)")
        Self.expectNone(of: [token], in: json)
    }

    /// upload's result line for a failed file carries douctl's error message: on stdout too,
    /// a secret the server repeated is masked there, as in the error line on stderr.
    @Test func aBatchsFailedLineMasksTheEchoedToken() throws {
        let token = "t0ken-echoed-42"
        let file = try TemporaryDirectory.file(named: "a.txt", bytes: Array("alpha".utf8))
        let transport = ScriptedTransport([.json(403, #"{"message":"token t0ken-echoed-42 may not upload"}"#)])
        let douctl = try Self.douctl(transport, environment: ["DOUCTL_TOKEN": token])
        let upload = try douctl.run("--profile", "b", "upload", file, "--to", "/files")
        #expect(upload.status == 4, "\(upload)")
        let line = try JSONParser.parse(upload.stdout)
        #expect(line["error"]?.stringValue?.contains("token *** may not upload") == true, "\(upload)")
        #expect(!upload.stdoutText.contains(token) && !upload.stderr.contains(token), "\(upload)")
    }
}
