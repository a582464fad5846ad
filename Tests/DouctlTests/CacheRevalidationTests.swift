import DouctlJSON
import DouctlSystem
import Foundation
import Testing
import DouctlTestSupport

/// `--cache` past its duration: an entry with validators is revalidated (If-None-Match,
/// If-Modified-Since) and a 304 about it renews it (RFC 9111 §4.3); a 304 about anything
/// else is never taken as licence to serve what we hold; error replies and partial replies
/// are never stored; `cache info` counts hits, revalidations and misses across runs.
@Suite("Cache revalidation")
struct CacheRevalidationTests {
    /// nginx on plain HTTP serving `root` (etag on, its default), logging each request's
    /// status and If-None-Match.
    final class StaticNginx: @unchecked Sendable {
        let process: Process
        let port: UInt16
        let root: String

        init() throws {
            _ = try Tools.require("nginx")
            let root = TemporaryDirectory.make(prefix: "douctl-nginx-cache")
            self.root = root
            (process, port) = try NginxPeer.start(root: root) { port in """
              log_format validators '$status inm=[$http_if_none_match] ims=[$http_if_modified_since]';
              access_log \(root)/access.log validators;
              server {
                listen 127.0.0.1:\(port);
                etag on;
                root \(root);
              }
            """ }
        }

        /// The access log's lines so far (nginx writes each one when the request ends).
        var log: [String] {
            ((try? String(contentsOfFile: root + "/access.log", encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        func write(_ name: String, _ text: String, modified: Date) throws {
            let path = root + "/" + name
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: path)
        }

        deinit { NginxPeer.stop(process) }
    }

    static func douctl() -> Douctl {
        Douctl(environment: ["XDG_CACHE_HOME": TemporaryDirectory.make(prefix: "cache")])
    }

    static func counts(_ douctl: Douctl) throws -> [String: Int] {
        let info = try douctl.run("cache", "info", "--json")
        var counts: [String: Int] = [:]
        for name in ["entries", "hits", "revalidations", "misses"] {
            counts[name] = try info.json()[name]?.intValue ?? -1
        }
        return counts
    }

    @Test func aStaleEntryIsRevalidatedAgainstNginxAndA304ServesItsBody() throws {
        let nginx = try StaticNginx()
        try nginx.write("data.json", #"{"version":1}"#, modified: Date(timeIntervalSince1970: 1_700_000_000))
        let url = "http://127.0.0.1:\(nginx.port)/data.json"
        let douctl = Self.douctl()

        let first = try douctl.run("api", url, "--cache", "1h")
        #expect(first.status == 0, "\(first)")
        #expect(try first.json()["version"]?.intValue == 1)
        let fresh = try douctl.run("api", url, "--cache", "1h")
        #expect(fresh.stdout == first.stdout, "\(fresh)")
        #expect(nginx.log.count == 1, "a fresh entry sends nothing: \(nginx.log)")

        // Stale (older than 0s): asked again with the validators, answered 304, served.
        let revalidated = try douctl.run("api", url, "--cache", "0s")
        #expect(revalidated.status == 0, "\(revalidated)")
        #expect(revalidated.stdout == first.stdout, "\(revalidated)")
        let log = nginx.log
        #expect(log.count == 2 && log[1].hasPrefix("304 inm=[\\x22"), "\(log)")
        #expect(log.last?.contains("ims=[Tue, 14 Nov 2023") == true, "\(log)")
        #expect(try Self.counts(douctl) == ["entries": 1, "hits": 1, "revalidations": 1, "misses": 1])

        // The file changes: the ETag no longer matches, the new body is fetched and kept.
        try nginx.write("data.json", #"{"version":2,"longer":true}"#, modified: Date(timeIntervalSince1970: 1_700_000_500))
        let changed = try douctl.run("api", url, "--cache", "0s")
        #expect(try changed.json()["version"]?.intValue == 2, "\(changed)")
        #expect(nginx.log.last?.hasPrefix("200 inm=[\\x22") == true, "\(nginx.log)")
        let after = try douctl.run("api", url, "--cache", "1h")
        #expect(try after.json()["version"]?.intValue == 2, "\(after)")
        #expect(try Self.counts(douctl) == ["entries": 1, "hits": 2, "revalidations": 1, "misses": 2])
    }

    /// A server answering each request in turn from `replies` (the last one repeats).
    static func scripted(_ replies: [String]) throws -> HostileListener {
        let next = LockedValue(0)
        return try HostileListener { connection, _ in
            let index = next.withLock { value in
                defer { value += 1 }
                return min(value, replies.count - 1)
            }
            HostileListener.send(connection, replies[index])
        }
    }

    static func ok(_ body: String, _ headers: String = "") -> String {
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\(headers)Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
    }

    static func notModified(_ headers: String = "") -> String {
        "HTTP/1.1 304 Not Modified\r\n\(headers)Connection: close\r\n\r\n"
    }

    @Test func a304NamingAnotherETagIsNotTakenAsLicenceToServeTheCopy() throws {
        let server = try Self.scripted([
            Self.ok(#"{"mine":1}"#, "ETag: \"v1\"\r\n"),
            Self.notModified("ETag: \"v2\"\r\n"),
            Self.ok(#"{"theirs":3}"#, "ETag: \"v3\"\r\n"),
        ])
        let douctl = Self.douctl()
        let url = server.baseURL + "/thing"
        #expect(try douctl.run("api", url, "--cache", "1h").status == 0)
        let result = try douctl.run("api", url, "--cache", "0s")
        #expect(result.status == 0, "\(result)")
        #expect(try result.json()["theirs"]?.intValue == 3, "the whole reply was fetched again: \(result)")
        #expect(!result.stdoutText.contains("mine"), "\(result)")
        #expect(result.stderr.contains("304 Not Modified for a version douctl does not hold"), "\(result.stderr)")
        let heads = server.heads
        #expect(heads.count == 3, "\(heads)")
        #expect(heads.count == 3 && heads[1].contains("If-None-Match: \"v1\""), "\(heads)")
        #expect(heads.count == 3 && !heads[2].contains("If-None-Match"), "the refetch is unconditional: \(heads)")
        #expect(try Self.counts(douctl)["revalidations"] == 0)
    }

    @Test func a304WithoutAnETagDoesNotConfirmAnEntryThatHadOne() throws {
        let server = try Self.scripted([
            Self.ok(#"{"mine":1}"#, "ETag: \"v1\"\r\n"),
            Self.notModified(),
            Self.ok(#"{"fresh":2}"#, "ETag: \"v2\"\r\n"),
        ])
        let douctl = Self.douctl()
        #expect(try douctl.run("api", server.baseURL + "/t", "--cache", "1h").status == 0)
        let result = try douctl.run("api", server.baseURL + "/t", "--cache", "0s")
        #expect(try result.json()["fresh"]?.intValue == 2, "\(result)")
    }

    @Test func aWeakETagRevalidatesByWeakComparison() throws {
        let server = try Self.scripted([
            Self.ok(#"{"weak":1}"#, "ETag: W/\"w1\"\r\n"),
            Self.notModified("ETag: W/\"w1\"\r\n"),
        ])
        let douctl = Self.douctl()
        let first = try douctl.run("api", server.baseURL + "/w", "--cache", "1h")
        let again = try douctl.run("api", server.baseURL + "/w", "--cache", "0s")
        #expect(again.status == 0, "\(again)")
        #expect(again.stdout == first.stdout, "\(again)")
        #expect(server.heads.last?.contains("If-None-Match: W/\"w1\"") == true, "\(server.heads)")
        #expect(try Self.counts(douctl)["revalidations"] == 1)
    }

    @Test func a304ToAnUnconditionalRequestServesNothing() throws {
        let server = try Self.scripted([Self.notModified("ETag: \"guess\"\r\n")])
        let douctl = Self.douctl()
        let result = try douctl.run("api", server.baseURL + "/never-fetched", "--cache", "1h")
        #expect(result.status != 0, "\(result)")
        #expect(result.stdout.isEmpty, "\(result)")
        #expect(result.stderr.contains("304 Not Modified"), "\(result.stderr)")
        #expect(!(server.heads.first?.contains("If-None-Match") ?? true), "\(server.heads)")
        #expect(try Self.counts(douctl)["entries"] == 0)
    }

    @Test func errorRepliesAreNeverStoredSoNeverServed() throws {
        let server = try Self.scripted([
            "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nCache-Control: max-age=3600\r\nContent-Length: 14\r\nConnection: close\r\n\r\n{\"error\":\"no\"}",
            "HTTP/1.1 503 Busy\r\nContent-Type: application/json\r\nContent-Length: 16\r\nConnection: close\r\n\r\n{\"error\":\"busy\"}",
            Self.ok(#"{"good":true}"#),
        ])
        let douctl = Self.douctl()
        let url = server.baseURL + "/e"
        #expect(try douctl.run("api", url, "--cache", "1h").status == 4)
        #expect(try douctl.run("--no-retry", "api", url, "--cache", "1h").status != 0)
        #expect(try Self.counts(douctl)["entries"] == 0, "neither the 401 nor the 503 was kept")
        let good = try douctl.run("api", url, "--cache", "1h")
        #expect(try good.json()["good"]?.boolValue == true, "\(good)")
        #expect(server.requestCount == 3)
    }

    @Test func aPartialReplyIsNeitherStoredNorAnsweredFromTheCache() throws {
        let server = try Self.scripted([
            "HTTP/1.1 206 Partial Content\r\nContent-Type: text/plain\r\nContent-Range: bytes 0-3/10\r\nETag: \"p\"\r\nContent-Length: 4\r\nConnection: close\r\n\r\n0123",
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nETag: \"p\"\r\nContent-Length: 10\r\nConnection: close\r\n\r\n0123456789",
        ])
        let douctl = Self.douctl()
        let url = server.baseURL + "/p"
        let part = try douctl.run("api", url, "-H", "Range: bytes=0-3", "--cache", "1h")
        #expect(part.stdoutText.hasPrefix("0123") && !part.stdoutText.contains("4"), "\(part)")
        let whole = try douctl.run("api", url, "--cache", "1h")
        #expect(whole.stdoutText.hasPrefix("0123456789"), "the part was not served as the whole: \(whole)")
        #expect(server.requestCount == 2)
    }
}
