import DouctlJSON
import DouctlServer
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// The built douctl with `--cache` against a real server on 127.0.0.1 (issue 38, the cache):
/// a cached reply goes only to the identity and the variant that fetched it, over the same
/// socket; every Cache-Control line counts; a cache another user could write is refused as
/// config files are, and a planted `.counts.lock` link is never followed.
@Suite("Cache identities")
struct CacheIdentityTests {
    /// Answers with who asked: the Authorization and X-API-Key it received, and the Accept;
    /// `/vary` says `Vary: Accept`, `/nostore` says no-store in a second Cache-Control line.
    static func echo() throws -> TestServer {
        try TestServer { received in
            var object = JSONObject()
            object["auth"] = .string(received.header("Authorization") ?? "")
            object["key"] = .string(received.header("X-API-Key") ?? "")
            object["accept"] = .string(received.header("Accept") ?? "")
            var headers = [("Content-Type", "application/json")]
            if received.path == "/vary" { headers.append(("Vary", "Accept")) }
            if received.path == "/nostore" { headers += [("Cache-Control", "max-age=600"), ("Cache-Control", "no-store")] }
            return HTTPServerResponse(status: 200, headers: headers, body: .bytes(JSON.object(object).serialized(.compact)))
        }
    }

    static func douctl() -> (Douctl, cacheHome: String) {
        let cacheHome = TemporaryDirectory.make(prefix: "cache-identity")
        return (Douctl(environment: ["XDG_CACHE_HOME": cacheHome]), cacheHome)
    }

    static func files(_ cacheHome: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: cacheHome + "/douctl")) ?? []).map { cacheHome + "/douctl/" + $0 }
    }

    @Test func bobIsNeverServedAlicesReply() throws {
        let server = try Self.echo()
        let (douctl, cacheHome) = Self.douctl()
        let url = server.baseURL + "/me"
        let alice = try douctl.run("api", url, "-H", "Authorization: Bearer alice", "--cache", "5m")
        let bob = try douctl.run("api", url, "-H", "Authorization: Bearer bob", "--cache", "5m")
        #expect(alice.status == 0 && bob.status == 0, "\(alice)\n\(bob)")
        #expect(try alice.json()["auth"]?.stringValue == "Bearer alice", "\(alice)")
        #expect(try bob.json()["auth"]?.stringValue == "Bearer bob", "Bob gets Bob's reply: \(bob)")
        #expect(server.received.count == 2, "both reached the server")
        let aliceAgain = try douctl.run("api", url, "-H", "Authorization: Bearer alice", "--cache", "5m")
        #expect(aliceAgain.stdout == alice.stdout)
        #expect(server.received.count == 2, "Alice's own entry served her")
        // The entries' heads hold no credential (their bodies are what the server echoed).
        for file in Self.files(cacheHome) where file.hasSuffix(".reply") {
            let head = String(decoding: try FileIO.readFile(file).prefix { $0 != 0x0A }, as: UTF8.self)
            #expect(!head.contains("alice") && !head.contains("bob"), "\(file) holds a credential: \(head)")
        }
    }

    @Test func theReadmesAPIKeyRecipeKeepsKeysApart() throws {
        let server = try Self.echo()
        let (douctl, _) = Self.douctl()
        #expect(try douctl.run("profile", "add", "keyed", "--preset", "douban", "--api-base", server.baseURL).status == 0)
        #expect(try douctl.run("config", "set", "common_headers", "X-API-Key=$MY_API_KEY", "--profile", "keyed").status == 0)
        let first = try douctl.run(["--profile", "keyed", "api", "/items", "--cache", "5m"], environment: ["MY_API_KEY": "key-one"])
        let second = try douctl.run(["--profile", "keyed", "api", "/items", "--cache", "5m"], environment: ["MY_API_KEY": "key-two"])
        #expect(try first.json()["key"]?.stringValue == "key-one", "\(first)")
        #expect(try second.json()["key"]?.stringValue == "key-two", "\(second)")
        #expect(server.received.count == 2)
        let firstAgain = try douctl.run(["--profile", "keyed", "api", "/items", "--cache", "5m"], environment: ["MY_API_KEY": "key-one"])
        #expect(firstAgain.stdout == first.stdout)
        #expect(server.received.count == 2)
    }

    @Test func aCSVRequestIsNotServedTheJSONEntry() throws {
        let server = try Self.echo()
        let (douctl, _) = Self.douctl()
        let url = server.baseURL + "/vary"
        let json = try douctl.run("api", url, "--cache", "5m")
        let csv = try douctl.run("api", url, "-H", "Accept: text/csv", "--cache", "5m")
        #expect(try json.json()["accept"]?.stringValue == "application/json", "\(json)")
        #expect(try csv.json()["accept"]?.stringValue == "text/csv", "\(csv)")
        #expect(server.received.count == 2)
        let csvAgain = try douctl.run("api", url, "-H", "Accept: text/csv", "--cache", "5m")
        #expect(csvAgain.stdout == csv.stdout)
        #expect(server.received.count == 2, "its own variant is served")
    }

    @Test func aNoStoreInTheSecondCacheControlLineIsHonoured() throws {
        let server = try Self.echo()
        let (douctl, cacheHome) = Self.douctl()
        #expect(try douctl.run("api", server.baseURL + "/nostore", "--cache", "5m").status == 0)
        #expect(try douctl.run("api", server.baseURL + "/nostore", "--cache", "5m").status == 0)
        #expect(server.received.count == 2)
        #expect(!Self.files(cacheHome).contains { $0.hasSuffix(".reply") })
    }

    @Test func aSocketsReplyIsNotServedOverTCP() throws {
        let unix = try UnixSocketTests.UnixServer()
        defer { unix.stop() }
        let server = try Self.echo()
        let (douctl, _) = Self.douctl()
        let url = server.baseURL + "/info"
        let viaSocket = try douctl.run("api", url, "--unix-socket", unix.path, "--cache", "5m")
        #expect(try viaSocket.json()["path"]?.stringValue == "/info", "python3 on the socket answered: \(viaSocket)")
        let viaTCP = try douctl.run("api", url, "--cache", "5m")
        #expect(try viaTCP.json()["accept"]?.stringValue == "application/json", "the TCP server answered: \(viaTCP)")
        #expect(server.received.count == 1)
    }

    /// A cache directory another user can write: the reply they planted is not served; exit
    /// 3 and one line naming the fix, as for config.json.
    @Test func aPlantedReplyInADirectoryOthersCanWriteIsRefused() throws {
        let server = try Self.echo()
        let (douctl, cacheHome) = Self.douctl()
        let url = server.baseURL + "/me"
        #expect(try douctl.run("api", url, "--cache", "5m").status == 0)
        let directory = cacheHome + "/douctl"
        let entry = try #require(Self.files(cacheHome).first { $0.hasSuffix(".reply") })
        var bytes = try FileIO.readFile(entry)
        let newline = try #require(bytes.firstIndex(of: 0x0A))
        bytes = Array(bytes[...newline]) + Array(#"{"planted":true}"#.utf8)
        try Data(bytes).write(to: URL(fileURLWithPath: entry))
        #expect(chmod(directory, 0o777) == 0)
        let refused = try douctl.run("api", url, "--cache", "5m")
        #expect(refused.status == 3, "\(refused)")
        #expect(refused.stdout.isEmpty, "\(refused)")
        #expect(refused.stderr == "douctl: bad owner or permissions on the cache directory \(directory) (it is writable by other users (mode 777)); refusing to use it. Fix it with: chmod go-w \(directory)\n", "\(refused)")
        // Fixed as it says: the user's own entry (the planted body, written by the test as
        // this user) is the cache's again.
        #expect(chmod(directory, 0o700) == 0)
        #expect(try douctl.run("api", url, "--cache", "5m").status == 0)
        #expect(server.received.count == 1)
    }

    @Test func aPlantedEntryLinkOrOtherOwnerIsRefused() throws {
        let server = try Self.echo()
        let (douctl, cacheHome) = Self.douctl()
        let url = server.baseURL + "/me"
        #expect(try douctl.run("api", url, "--cache", "5m").status == 0)
        let entry = try #require(Self.files(cacheHome).first { $0.hasSuffix(".reply") })
        let planted = TemporaryDirectory.make(prefix: "planted") + "/reply"
        try FileManager.default.moveItem(atPath: entry, toPath: planted)
        try FileManager.default.createSymbolicLink(atPath: entry, withDestinationPath: planted)
        let linked = try douctl.run("api", url, "--cache", "5m")
        #expect(linked.status == 3, "\(linked)")
        #expect(linked.errorLine == "douctl: the cached reply \(entry) is a symbolic link; refusing to use it. Remove it: rm \(entry)", "\(linked)")
        if geteuid() == 0 {
            // Another owner (root can give it away): refused as config.json is.
            try FileManager.default.removeItem(atPath: entry)
            try FileManager.default.moveItem(atPath: planted, toPath: entry)
            #expect(chown(entry, 65534, 65534) == 0)
            let foreign = try douctl.run("api", url, "--cache", "5m")
            #expect(foreign.status == 3, "\(foreign)")
            #expect(foreign.errorLine.contains("(it is owned by another user (uid 65534, not 0))"), "\(foreign)")
        }
        #expect(server.received.count == 1)
    }

    /// Root running douctl must not create the file a planted `.counts.lock` link names.
    @Test func aPlantedCountsLockLinkIsNeverFollowed() throws {
        let server = try Self.echo()
        let (douctl, cacheHome) = Self.douctl()
        let directory = cacheHome + "/douctl"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let chosen = TemporaryDirectory.make(prefix: "chosen") + "/created-by-douctl"
        try FileManager.default.createSymbolicLink(atPath: directory + "/.counts.lock", withDestinationPath: chosen)
        let result = try douctl.run("api", server.baseURL + "/me", "--cache", "5m")
        #expect(result.status == 0, "counting never fails a command: \(result)")
        #expect(!FileManager.default.fileExists(atPath: chosen), "douctl created the file the link names")
        #expect(try douctl.run("cache", "clear").status == 0)
        #expect(!FileManager.default.fileExists(atPath: chosen))
    }
}
