import DouctlServer
import DouctlTestSupport
import Foundation
import Testing

/// Issue 38, points 2 (Basic) and 8, with the built binary: a hostile server that echoes
/// every secret it is sent gets none of them back into douctl's stderr; the README's
/// dry-run recipe (`DOUCTL_TOKEN=$(douctl auth token) sh -c "$(douctl api … --dry-run)"`)
/// run by a real shell and curl for a Bearer, a Basic and both API-key profiles.
@Suite("Basic and sent secrets (binary)", .serialized)
struct BasicAndSentSecretsTests {
    static func reply(_ status: Int, _ json: String) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: [("Content-Type", "application/json")], body: .bytes(Array(json.utf8)))
    }

    /// A JSON string's text for `text` (the server quotes what it echoes).
    static func quoted(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }

    /// The server repeats the Basic password (decoded), the client secret of the token
    /// form and the bearer token in `detail` / `error_description` / its body. Before: the
    /// Basic login said "Logged in" (exit 0) and the others printed the secret in the error line.
    @Test func aHostileServerEchoingSecretsGetsNoneBackOnStderr() throws {
        let password = "hunter2-pass"
        let clientSecret = "cl1ent-secret-x"
        let token = "bearer-t0ken-77"
        let server = try TestServer { request in
            if request.path == "/token" {
                let sent = request.form.first { $0.name == "client_secret" }?.value ?? ""
                return Self.reply(401, #"{"error":"invalid_client","error_description":"\#(Self.quoted(sent)) is wrong"}"#)
            }
            let authorization = request.header("Authorization") ?? ""
            if authorization.hasPrefix("Basic "), let data = Data(base64Encoded: String(authorization.dropFirst(6))) {
                let pair = String(decoding: data, as: UTF8.self)
                return Self.reply(401, #"{"detail":"\#(Self.quoted(pair)) and \#(Self.quoted(String(pair.drop { $0 != ":" }.dropFirst()))) do not match"}"#)
            }
            return Self.reply(401, #"{"message":"\#(Self.quoted(authorization)) refused","token":"\#(Self.quoted(String(authorization.drop { $0 != " " }.dropFirst())))"}"#)
        }
        let douctl = Douctl(environment: ["DOUCTL_CLIENT_SECRET": clientSecret])
        #expect(try douctl.run("profile", "add", "h", "--api-base", server.baseURL, "--user-url", "/me",
                               "--token-url", server.baseURL + "/token", "--client-id", "cid", "--token-auth", "post").status == 0)
        let secrets = [password, "ann:" + password, Data("ann:\(password)".utf8).base64EncodedString(), clientSecret, token]
        for errorFormat in ["text", "json"] {
            let runs = [
                try douctl.run(["--profile", "h", "auth", "login", "--basic", "--error-format", errorFormat], input: Array("ann:\(password)\n".utf8)),
                try douctl.run(["--profile", "h", "auth", "login", "--client-credentials", "--error-format", errorFormat]),
                try douctl.run(["--profile", "h", "api", "/things", "--error-format", errorFormat], environment: ["DOUCTL_TOKEN": token]),
            ]
            for run in runs {
                #expect(run.status == 4, "\(run)")
                #expect(run.stdout.isEmpty, "\(run)")
                #expect(run.stderr.contains("***"), "the echo is there, masked: \(run)")
                for secret in secrets { #expect(!run.stderr.contains(secret), "\(secret) in \(run.stderr)") }
            }
            #expect(runs[0].stderr.contains("the server refused the user name or password (HTTP 401"), "\(runs[0])")
        }
        #expect(try douctl.run("--profile", "h", "auth", "status", "--no-check").status == 4, "the refused Basic login was not stored")
    }

    /// The README's recipe, as a shell runs it, with douctl on PATH: the printed curl line,
    /// its `$DOUCTL_TOKEN` filled in by `douctl auth token`, is accepted by a server that
    /// checks the credential where the profile puts it. Before, for a Basic profile:
    /// `Authorization: Bearer` with an empty token, 401.
    @Test(arguments: [("bearer", [String]()), ("basic", []), ("header", ["--token-header", "X-API-Key"]), ("query", ["--token-query", "key"])])
    func theREADMEsDryRunRecipeWorksForEveryKindOfCredential(kind: String, options: [String]) throws {
        try Tools.require("curl")
        let secret = kind == "basic" ? "ann:pa55-w0rd" : "k3y-0123456789"
        let basic = "Basic " + Data(secret.utf8).base64EncodedString()
        let server = try TestServer { request in
            let accepted: Bool
            switch kind {
            case "bearer": accepted = request.header("Authorization") == "Bearer " + secret
            case "basic": accepted = request.header("Authorization") == basic
            case "header": accepted = request.header("X-API-Key") == secret
            default: accepted = request.queryValue("key") == secret
            }
            return Self.reply(accepted ? 200 : 401, accepted ? #"{"ok":true,"id":1}"# : #"{"error":"who"}"#)
        }
        let douctl = Douctl()
        #expect(try douctl.run(["profile", "add", "r", "--api-base", server.baseURL, "--user-url", "/me"] + options).status == 0)
        let login = try douctl.run(["--profile", "r", "auth", "login", kind == "basic" ? "--basic" : "--with-token"], input: Array((secret + "\n").utf8))
        #expect(login.status == 0, "\(login)")
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-ec", #"DOUCTL_TOKEN=$(douctl --profile r auth token) sh -c "$(douctl --profile r api /things --dry-run)""#]
        var environment = douctl.environment
        environment["PATH"] = URL(fileURLWithPath: Douctl.binary).deletingLastPathComponent().path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        shell.environment = environment
        let output = Pipe()
        shell.standardOutput = output
        try shell.runAlone()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        shell.waitUntilExit()
        #expect(shell.terminationStatus == 0)
        #expect(String(decoding: printed, as: UTF8.self) == #"{"ok":true,"id":1}"#, "\(kind): \(server.received.last.map { "\($0.target) \($0.headers)" } ?? "nothing received")")
    }
}
