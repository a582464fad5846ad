#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import DouctlCommands
import DouctlHTTP
import DouctlSystem
import DouctlTestSupport
import Testing

/// `--cache` in process on the scripted transport: a cached reply goes only to the identity
/// and the variant that fetched it, over the same socket; a cache another user could write is
/// refused before anything is sent.
@Suite("Response cache in process")
struct CacheCommandTests {
    static let base = InProcessDouctl.scriptedBase

    static func who(_ name: String, _ headers: [HTTPHeader] = []) -> ScriptedTransport.Answer {
        .json(200, #"{"who":"\#(name)"}"#, headers: headers)
    }

    @Test func anAuthorizationHeaderIsAnIdentity() throws {
        let transport = ScriptedTransport([Self.who("alice"), Self.who("bob")])
        let douctl = try InProcessDouctl.scripted(transport)
        let alice = try douctl.run("api", "/me", "--api-base", Self.base, "-H", "Authorization: Bearer alice", "--cache", "5m")
        let bob = try douctl.run("api", "/me", "--api-base", Self.base, "-H", "Authorization: Bearer bob", "--cache", "5m")
        #expect(alice.stdoutText == #"{"who":"alice"}"# + "\n", "\(alice)")
        #expect(bob.stdoutText == #"{"who":"bob"}"# + "\n", "Bob gets Bob's reply: \(bob)")
        #expect(transport.requests.count == 2)
        let again = try douctl.run("api", "/me", "--api-base", Self.base, "-H", "Authorization: Bearer alice", "--cache", "5m")
        #expect(again.stdoutText == alice.stdoutText, "Alice's own entry still serves her")
        #expect(transport.requests.count == 2)
    }

    @Test func anAPIKeyFromCommonHeadersIsAnIdentity() throws {
        let transport = ScriptedTransport([Self.who("key-a"), Self.who("key-b")])
        let douctl = try InProcessDouctl.scripted(transport)
        #expect(try douctl.run("config", "set", "common_headers", "X-API-Key=$API_KEY").status == 0)
        let first = try douctl.run(["api", "/me", "--api-base", Self.base, "--cache", "5m"], environment: ["API_KEY": "a"])
        let second = try douctl.run(["api", "/me", "--api-base", Self.base, "--cache", "5m"], environment: ["API_KEY": "b"])
        #expect(first.stdoutText.contains("key-a") && second.stdoutText.contains("key-b"), "\(first)\n\(second)")
        #expect(transport.requests.map { $0.header("X-API-Key") } == ["a", "b"])
    }

    /// token_header with a name that says nothing of keys: the token is one of the request's
    /// secrets, so its header is part of the key whatever its name.
    @Test func aTokenHeaderOfAnyNameIsAnIdentity() throws {
        let transport = ScriptedTransport([Self.who("one"), Self.who("two")])
        let douctl = try InProcessDouctl.scripted(transport)
        #expect(try douctl.run("config", "set", "token_header", "X-Ident").status == 0)
        let one = try douctl.run(["api", "/me", "--api-base", Self.base, "--cache", "5m"], environment: ["DOUCTL_TOKEN": "one"])
        let two = try douctl.run(["api", "/me", "--api-base", Self.base, "--cache", "5m"], environment: ["DOUCTL_TOKEN": "two"])
        #expect(one.stdoutText.contains("one") && two.stdoutText.contains("two"), "\(one)\n\(two)")
        #expect(transport.requests.map { $0.header("X-Ident") } == ["one", "two"])
    }

    @Test func aVariedReplyGoesOnlyToItsVariant() throws {
        let vary = [HTTPHeader("Vary", "Accept")]
        let transport = ScriptedTransport([Self.who("json", vary), .reply(HTTPResponse(
            head: HTTPResponseHead(status: 200, headers: [HTTPHeader("Content-Type", "text/csv"), HTTPHeader("Vary", "Accept")]), body: Array("who\ncsv\n".utf8)))])
        let douctl = try InProcessDouctl.scripted(transport)
        let json = try douctl.run("api", "/list", "--api-base", Self.base, "--cache", "5m")
        let csv = try douctl.run("api", "/list", "--api-base", Self.base, "-H", "Accept: text/csv", "--cache", "5m")
        #expect(json.stdoutText.contains("json"), "\(json)")
        #expect(csv.stdoutText == "who\ncsv\n", "Accept: text/csv is not served the JSON entry: \(csv)")
        #expect(transport.requests.map { $0.header("Accept") } == ["application/json", "text/csv"])
    }

    @Test func aNoStoreInASecondCacheControlLineIsHonoured() throws {
        let lines = [HTTPHeader("Cache-Control", "max-age=600"), HTTPHeader("Cache-Control", "no-store")]
        let transport = ScriptedTransport([Self.who("first", lines), Self.who("second", lines)])
        let douctl = try InProcessDouctl.scripted(transport)
        _ = try douctl.run("api", "/me", "--api-base", Self.base, "--cache", "5m")
        let second = try douctl.run("api", "/me", "--api-base", Self.base, "--cache", "5m")
        #expect(second.stdoutText.contains("second"), "\(second)")
        #expect(transport.requests.count == 2)
    }

    /// An AF_UNIX socket bound at a fresh path (`--unix-socket` checks that PATH is one); the
    /// scripted transport answers instead of it.
    static func boundSocket() throws -> (path: String, fd: Int32) {
        let path = TemporaryDirectory.make(prefix: "cache-sock") + "/api.sock"
        #if canImport(Glibc)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw SystemError("socket") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw TestFailure("socket path too long: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw SystemError("bind", path: path) }
        return (path, fd)
    }

    @Test func aSocketsReplyIsNotServedOverTCP() throws {
        let socket = try Self.boundSocket()
        defer { close(socket.fd) }
        let transport = ScriptedTransport([Self.who("socket"), Self.who("tcp")])
        let douctl = try InProcessDouctl.scripted(transport)
        let viaSocket = try douctl.run("api", "/info", "--api-base", Self.base, "--unix-socket", socket.path, "--cache", "5m")
        #expect(viaSocket.stdoutText.contains("socket"), "\(viaSocket)")
        let viaTCP = try douctl.run("api", "/info", "--api-base", Self.base, "--cache", "5m")
        #expect(viaTCP.stdoutText.contains("tcp"), "\(viaTCP)")
        #expect(transport.requests.count == 2)
    }

    @Test func aCacheOthersCanWriteIsRefusedBeforeAnythingIsSent() throws {
        let transport = ScriptedTransport([Self.who("mine")])
        let douctl = try InProcessDouctl.scripted(transport)
        #expect(try douctl.run("api", "/me", "--api-base", Self.base, "--cache", "5m").status == 0)
        let directory = douctl.home.path + "/cache/douctl"
        #expect(chmod(directory, 0o777) == 0)
        let refused = try douctl.run("api", "/me", "--api-base", Self.base, "--cache", "5m")
        #expect(refused.status == 3, "\(refused)")
        #expect(refused.stdout.isEmpty, "\(refused)")
        #expect(refused.stderr == "douctl: bad owner or permissions on the cache directory \(directory) (it is writable by other users (mode 777)); refusing to use it. Fix it with: chmod go-w \(directory)\n", "\(refused)")
        #expect(transport.requests.count == 1, "nothing more was sent")
    }
}
