import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 38's table of features × promises, at the level of the built binary against servers
/// on 127.0.0.1: each test is a cell, named feature_promise, that fails when the promise
/// breaks through that feature. The many cases of each layer run in process
/// (`RequestPathTests`, the cache's and --jq's suites); here, one real exchange per cell.
///
/// Promises: credential (only to its origin, an explicit one wins); cache (only to the
/// identity and variant that fetched it); stop (--max-time and SIGINT within a second);
/// stdout (empty on an error); terminal (server text escaped); secret (none in our lines);
/// said (every wait and retry said on stderr).
@Suite("Features × promises")
struct PromiseTableTests {
    static func reply(_ status: String, _ headers: String = "", _ body: String = #"{"ok":true}"#) -> String {
        "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\n\(headers)Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
    }

    /// The Authorization lines of each request the listener saw.
    static func authorizations(_ server: HostileListener) -> [[String]] {
        server.heads.map { head in
            head.split(separator: "\r\n").filter { $0.lowercased().hasPrefix("authorization:") }.map { String($0.dropFirst("authorization:".count)).trimmingCharacters(in: .whitespaces) }
        }
    }

    // MARK: credentials

    @Test func api_credential_anExplicitAuthorizationIsSentAloneAndVerboseSaysSo() throws {
        let server = try HostileListener { connection, _ in _ = HostileListener.send(connection, Self.reply("200 OK")) }
        let douctl = Douctl(environment: ["DOUCTL_TOKEN": "tok123"])
        let result = try douctl.run("api", "/me", "--api-base", server.baseURL, "-H", "Authorization: Bearer override", "-v")
        #expect(result.status == 0, "\(result)")
        // Before: "Bearer tok123" and "Bearer override" both went, and the server took the first.
        #expect(Self.authorizations(server) == [["Bearer override"]], "\(server.heads)")
        #expect(result.stderr.contains("the Authorization header given with the request is sent"), "\(result.stderr)")
        #expect(!result.stderr.contains("tok123"))
        let stored = try douctl.run("api", "/me", "--api-base", server.baseURL)
        #expect(stored.status == 0 && Self.authorizations(server).last == ["Bearer tok123"], "\(server.heads)")
    }

    @Test func redirects_credential_theTokenStaysWithItsOrigin() throws {
        let elsewhere = try HostileListener { connection, _ in _ = HostileListener.send(connection, Self.reply("200 OK")) }
        let api = try HostileListener { connection, _ in
            _ = HostileListener.send(connection, Self.reply("302 Found", "Location: \(elsewhere.baseURL)/landed\r\n", ""))
        }
        let result = try Douctl(environment: ["DOUCTL_TOKEN": "tok123"]).run("api", "/hop", "--api-base", api.baseURL)
        #expect(result.status == 0, "\(result)")
        #expect(Self.authorizations(api) == [["Bearer tok123"]])
        #expect(Self.authorizations(elsewhere) == [[]], "no credential crosses to another origin: \(elsewhere.heads)")
    }

    // MARK: quota and retries

    @Test func quota_said_a429WithoutWaitingIsExit6AtOnce() throws {
        let server = try HostileListener { connection, _ in
            _ = HostileListener.send(connection, Self.reply("429 Too Many Requests", "Retry-After: 9\r\n", #"{"error":"slow down"}"#))
        }
        let started = Date()
        let result = try Douctl().run("api", "/x", "--api-base", server.baseURL)
        // Before: retried for about 9 s without a word, then succeeded or failed.
        #expect(result.status == 6, "\(result)")
        #expect(server.requestCount == 1)
        #expect(Date().timeIntervalSince(started) < 5, "no silent wait")
        #expect(result.stdout.isEmpty)
    }

    @Test func quota_credential_aResetAnnouncedByAnotherOriginNeverBlocksTheAPI() throws {
        let cdn = try HostileListener { connection, _ in
            _ = HostileListener.send(connection, Self.reply("429 Too Many Requests", "Retry-After: 3600\r\n", #"{"error":"cdn quota"}"#))
        }
        let api = try HostileListener { connection, listener in
            if listener.requestCount == 1 {
                _ = HostileListener.send(connection, Self.reply("302 Found", "Location: \(cdn.baseURL)/file\r\n", ""))
            } else {
                _ = HostileListener.send(connection, Self.reply("200 OK"))
            }
        }
        let douctl = Douctl()
        #expect(try douctl.run("api", "/redirected", "--api-base", api.baseURL).status == 6)
        let next = try douctl.run("api", "/own", "--api-base", api.baseURL)
        // Before: the CDN's hour blocked the profile: exit 6, nothing sent.
        #expect(next.status == 0, "\(next)")
        #expect(api.requestCount == 2)
    }

    @Test func quota_said_kintosBackoffPacesTheNextProcess() throws {
        let server = try HostileListener { connection, _ in
            _ = HostileListener.send(connection, Self.reply("200 OK", "Backoff: 120\r\n"))
        }
        let douctl = Douctl()
        #expect(try douctl.run("api", "/buckets", "--api-base", server.baseURL).status == 0)
        let next = try douctl.run("api", "/buckets", "--api-base", server.baseURL)
        #expect(next.status == 6, "\(next)")
        #expect(next.stderr.contains("Backoff: 120") && next.stderr.contains("nothing was sent"), "\(next.stderr)")
        #expect(server.requestCount == 1)
    }

    @Test func retry_said_everyRetryIsOneLineUnlessQuiet() throws {
        for quiet in [false, true] {
            let server = try HostileListener { connection, listener in
                let answer = listener.requestCount < 3 ? Self.reply("503 Service Unavailable", "Retry-After: 0\r\n", #"{"error":"busy"}"#) : Self.reply("200 OK")
                _ = HostileListener.send(connection, answer)
            }
            let result = try Douctl().run(["api", "/x", "--api-base", server.baseURL] + (quiet ? ["--quiet"] : []))
            #expect(result.status == 0, "\(result)")
            #expect(server.requestCount == 3)
            let lines = result.stderr.split(separator: "\n").filter { $0.contains("trying again") }
            if quiet {
                #expect(lines.isEmpty, "\(result.stderr)")
            } else {
                // Before: silent (only -v said it).
                #expect(lines.count == 2, "\(result.stderr)")
                #expect(lines.first?.contains("HTTP 503") == true && lines.first?.contains("try 2 of 3") == true, "\(result.stderr)")
            }
        }
    }

    @Test func retry_said_aDeadServerSaysEachTry() throws {
        // A port that accepts nothing: each try fails at once; each retry is said.
        let port = refusingPort()
        let result = try Douctl().run("api", "http://127.0.0.1:\(port)/x", "--retry", "1")
        #expect(result.status == 7, "\(result)")
        #expect(result.stderr.split(separator: "\n").filter { $0.contains("trying again") && $0.contains("try 2 of 2") }.count == 1, "\(result.stderr)")
    }
}
