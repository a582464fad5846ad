import DouctlJSON
import DouctlSandbox
import DouctlTestSupport
import Foundation
import Testing

/// Many requests in one command ride one kept-alive connection (a TLS session too): the
/// sandbox counts the TCP connections it accepts.
@Suite("Connection reuse")
struct ConnectionReuseTests {
    @Test func aWalkUsesOneConnection() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        let before = fixture.sandbox.acceptedConnections
        let result = try fixture.douctl.run("shuo", "timeline", "--all", "--count", "2")
        #expect(result.status == 0)
        #expect(try result.lines().count > 4, "several pages")
        #expect(fixture.sandbox.acceptedConnections - before == 1)
        let api = try fixture.douctl.run("api", "/shuo/v2/statuses/home_timeline", "-f", "count=2", "--paginate")
        #expect(try api.lines().count > 4)
        #expect(fixture.sandbox.acceptedConnections - before == 2)
    }

    @Test func verboseSaysWhichProtocolAndWhetherTheConnectionWasReused() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        let result = try fixture.douctl.run("-v", "shuo", "timeline", "--all", "--count", "2")
        #expect(result.status == 0)
        let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("* HTTP/") }
        #expect(lines.count > 2, "one line per exchange")
        #expect(lines.first == "* HTTP/1.1 over a new connection")
        #expect(lines.dropFirst().allSatisfy { $0 == "* HTTP/1.1 over a reused connection" }, "\(lines)")
    }

    @Test func deletingSeveralUsesOneConnection() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        var ids: [String] = []
        for text in ["a", "b", "c"] {
            ids.append(try #require(try fixture.douctl.run("shuo", "post", text).json()["id"]?.scalarText))
        }
        let before = fixture.sandbox.acceptedConnections
        let result = try fixture.douctl.run(["shuo", "delete"] + ids)
        #expect(result.status == 0, "\(result)")
        #expect(fixture.sandbox.acceptedConnections - before == 1)
    }

    @Test func parallelUploadsKeepOneConnectionPerWorker() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        let files = try (0..<6).map { try TemporaryDirectory.file(named: "p\($0).png", bytes: PNGFixture.bytes) }
        let before = fixture.sandbox.acceptedConnections
        let result = try fixture.douctl.run(["upload", "--parallel", "2", "--yes"] + files)
        #expect(result.status == 0, "\(result)")
        #expect(try result.lines().count == 6)
        #expect(fixture.sandbox.acceptedConnections - before <= 2, "six files over two kept-alive connections")
    }

    @Test func refreshThenReplayUsesOneConnection() throws {
        let fixture = try SandboxFixture()
        try fixture.login(expiresAt: "2001-01-01T00:00:00Z")
        let before = fixture.sandbox.acceptedConnections
        let result = try fixture.douctl.run("user", "me")
        #expect(result.status == 0, "\(result)")
        #expect(fixture.sandbox.requests.contains { $0.path == "/service/auth2/token" }, "the token was refreshed first")
        #expect(fixture.sandbox.acceptedConnections - before == 1)
    }
}
