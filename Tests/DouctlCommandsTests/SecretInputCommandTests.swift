import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// Issue 39 point 2, in process: every secret key takes -, @FILE or '$VAR', one rule for
/// all; a secret typed in argv is refused with the safe forms named, and nothing written.
@Suite("secrets never in argv, never lost")
struct SecretInputCommandTests {
    @Test func configSetClientSecretFromStdinStoresTheSecretNotADash() throws {
        let douctl = try InProcessDouctl()
        #expect(try douctl.run("profile", "add", "work", "--preset", "douban").status == 0)
        let set = try douctl.run("config", "set", "client_secret", "-", "--profile", "work", input: "from-stdin-123\n")
        #expect(set.status == 0, "\(set)")
        #expect(try douctl.run("config", "get", "client_secret", "--show-secrets", "--profile", "work").stdoutText == "from-stdin-123\n")
    }

    @Test func profileAddClientSecretFromStdinAndFromAFile() throws {
        let douctl = try InProcessDouctl()
        let added = try douctl.run("profile", "add", "a", "--preset", "douban", "--client-secret", "-", input: "piped-secret-1\n")
        #expect(added.status == 0, "\(added)")
        #expect(try douctl.run("profile", "show", "a", "--show-secrets").json()["client_secret"]?.stringValue == "piped-secret-1")

        let file = try TemporaryDirectory()
        let path = file.path + "/secret.txt"
        try "file-secret-2\n".write(toFile: path, atomically: true, encoding: .utf8)
        let fromFile = try douctl.run("profile", "add", "b", "--preset", "douban", "--client-secret", "@" + path)
        #expect(fromFile.status == 0, "\(fromFile)")
        #expect(try douctl.run("profile", "show", "b", "--show-secrets").json()["client_secret"]?.stringValue == "file-secret-2")

        let missing = try douctl.run("profile", "add", "c", "--preset", "douban", "--client-secret", "@" + file.path + "/none")
        #expect(missing.status == 3, "\(missing)")
        #expect(missing.stderr.contains("cannot read the secret from"), "\(missing)")
        #expect(try douctl.run("profile", "show", "c").status == 2, "nothing written")
    }

    @Test(arguments: [["profile", "add", "x", "--preset", "douban", "--client-secret", "s3cret-in-argv"],
                      ["config", "set", "client_secret", "s3cret-in-argv", "--profile", "douban"],
                      ["profile", "add", "x", "--preset", "douban", "--signing-secret", "s3cret-in-argv"]])
    func aSecretInArgvIsRefusedWithTheSafeFormsNamed(argv: [String]) throws {
        let douctl = try InProcessDouctl()
        let refused = try douctl.run(argv)
        #expect(refused.status == 2, "\(refused)")
        #expect(refused.stderr.contains("a secret is never taken from the command line") && refused.stderr.contains("@FILE") && refused.stderr.contains("'$VAR'"), "\(refused)")
        #expect(!refused.stderr.contains("s3cret-in-argv"))
        #expect(try douctl.run("profile", "show", "x").status == 2, "nothing written")
    }

    /// '$VAR' is stored as the reference and read when the secret is used: the token
    /// request carries the variable's value.
    @Test func anEnvironmentReferenceIsReadWhenTheSecretIsUsed() throws {
        let transport = ScriptedTransport([.json(200, #"{"access_token":"cc-token-1","token_type":"Bearer","expires_in":60}"#)])
        let douctl = try InProcessDouctl(environment: ["CI_CLIENT_SECRET": "from-the-environment"], transport: transport)
        #expect(try douctl.run("profile", "add", "ci", "--api-base", "https://api.example", "--token-url", "https://auth.example/token",
                               "--client-id", "cid", "--client-secret", "$CI_CLIENT_SECRET", "--token-auth", "post").status == 0)
        let login = try douctl.run("--profile", "ci", "auth", "login", "--client-credentials")
        #expect(login.status == 0, "\(login)")
        #expect(transport.requests.first?.formValue("client_secret") == "from-the-environment")
        let stored = try String(contentsOfFile: douctl.configDirectory + "/config.json", encoding: .utf8)
        #expect(stored.contains("$CI_CLIENT_SECRET") && !stored.contains("from-the-environment"))
    }
}
