#if canImport(Glibc)
import Glibc
#endif
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 44: the keeper and an origin that speaks HTTP/2 (nginx with `http2`, H2KeeperPeer).
/// The keeper ends HTTP itself: each douctl speaks HTTP/1.1 to it, and their requests are
/// streams on the one TLS connection it holds, so parallel processes share it.
@Suite("Connection keeper over HTTP/2")
struct KeeperH2Tests {
    static func call(_ douctl: Douctl, _ peer: H2KeeperPeer, _ path: String, _ extra: [String] = []) throws -> Douctl.Result {
        try douctl.run(["-v", "api", peer.base + path, "--cacert", peer.pki.caCertificate] + extra)
    }

    /// The first call goes direct and starts the keeper; the second opens its HTTP/2 connection.
    static func warm(_ douctl: Douctl, _ peer: H2KeeperPeer) throws {
        try KeeperPeer.startKeeper(douctl, base: peer.base, cacert: peer.pki.caCertificate)
        let second = try call(douctl, peer, "/warm2")
        #expect(second.status == 0, "\(second)")
        #expect(second.stderr.contains("* keeper: a new connection to 127.0.0.1:\(peer.port) over HTTP/2 (new)"), "\(second.stderr)")
        #expect(second.stderr.contains("* HTTP/2 over the keeper's connection (new)"), "\(second.stderr)")
    }

    @Test func parallelProcessesShareOneConnectionAndGetWhatADirectCallGets() throws {
        let peer = try H2KeeperPeer()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try Self.warm(douctl, peer)
        let warmConnection = try peer.waitForLog("/warm2").connection
        // Eight processes at once (xargs -P8): each a stream on the keeper's one connection.
        let running = try (0..<8).map { index in
            try RunningDouctl(douctl, ["-v", "api", peer.base + "/item/\(index)", "--cacert", peer.pki.caCertificate])
        }
        let results = running.map { $0.finish(timeout: 30) }
        for (index, result) in results.enumerated() {
            #expect(result.status == 0, "\(index): \(result)")
            #expect(try result.json()["path"]?.scalarText == "/item/\(index)", "\(index)")
            #expect(result.stderr.contains("over HTTP/2"), "\(index): \(result.stderr)")
            #expect(result.stderr.contains("* HTTP/2 over the keeper's connection"), "\(index): \(result.stderr)")
        }
        let connections = Set(peer.requests().filter { $0.path.hasPrefix("/item/") }.map(\.connection))
        #expect(connections == [warmConnection], "one TLS connection for all eight: \(peer.requests())")
        let status = try KeeperPeer.status(douctl)
        #expect(status["held"]?.arrayValue?.first?.scalarText?.contains("HTTP/2, 9 streams") == true, "\(status)")
        #expect(status["held"]?.arrayValue?.first?.scalarText?.contains("1 connections opened") == true, "\(status)")
        // The bytes equal a direct call's, a HEAD's head too.
        let through = try Self.call(douctl, peer, "/same?q=1", ["--raw"])
        let direct = try Self.call(douctl, peer, "/same?q=1", ["--raw", "--no-keep"])
        #expect(through.status == 0 && direct.status == 0)
        #expect(through.stdout == direct.stdout, "\(through.stdoutText) vs \(direct.stdoutText)")
        #expect(direct.stderr.contains("* HTTP/2 over a new connection"), "\(direct.stderr)")
        let head = try Self.call(douctl, peer, "/h", ["-X", "HEAD", "-i"])
        #expect(head.status == 0, "\(head)")
        #expect(head.stderr.contains("HTTP/2 over the keeper's connection"), "\(head.stderr)")
        #expect(head.stdoutText.lowercased().contains("content-length: 42"), "\(head.stdoutText)")
        // -i shows the version the origin spoke, as a direct call does.
        let directHead = try Self.call(douctl, peer, "/h", ["-X", "HEAD", "-i", "--no-keep"])
        #expect(head.stdoutText.hasPrefix("HTTP/2 200\r\n") && directHead.stdoutText.hasPrefix("HTTP/2 200\r\n"), "\(head.stdoutText) vs \(directHead.stdoutText)")
    }

    @Test func aLargeReplyStreamsAtFlatMemoryToASlowReader() throws {
        let peer = try H2KeeperPeer()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try Self.warm(douctl, peer)
        let pid = try KeeperPeer.status(douctl)["pid"]?.scalarText ?? ""
        let before = Self.peakMemory(pid)
        // 96 MiB into a pipe read slowly: the keeper pauses the stream, never holds the reply.
        let command = "\(Douctl.binary) -v api \(peer.base)/big?mb=96 --cacert \(peer.pki.caCertificate) --raw 2>\(TemporaryDirectory.make(prefix: "h2-big"))/err | (sleep 3; wc -c)"
        let slow = Process()
        slow.executableURL = URL(fileURLWithPath: "/bin/sh")
        slow.arguments = ["-c", command]
        slow.environment = douctl.environment
        let slowOutput = Pipe()
        slow.standardOutput = slowOutput
        try slow.runAlone()
        // While that stream is paused, another process's call on the same connection is not held up.
        try KeeperPeer.waitFor("the big reply to start") { peer.backend.log.contains("GET /big?mb=96") }
        Thread.sleep(forTimeInterval: 0.5)
        let started = Date()
        let beside = try Self.call(douctl, peer, "/beside")
        #expect(beside.status == 0 && beside.stderr.contains("more in flight"), "on the same connection, beside the paused stream: \(beside)")
        #expect(Date().timeIntervalSince(started) < 2, "not held up by the paused stream")
        let counted = String(decoding: slowOutput.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        slow.waitUntilExit()
        #expect(counted.trimmingCharacters(in: .whitespacesAndNewlines) == String(96 << 20), "\(counted)")
        let after = Self.peakMemory(pid)
        #expect(before > 0 && after - before < 40 << 10, "keeper peak \(before) KiB -> \(after) KiB")
        // And into a file: the same bytes as sent.
        let out = TemporaryDirectory.make(prefix: "h2-big-file") + "/big.bin"
        let file = try Self.call(douctl, peer, "/big?mb=8", ["-o", out])
        #expect(file.status == 0 && file.stderr.contains("HTTP/2 over the keeper's connection"), "\(file)")
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: out)))
        #expect(bytes.count == 8 << 20 && bytes.enumerated().allSatisfy { $0.element == UInt8(truncatingIfNeeded: $0.offset) })
    }

    /// VmHWM of a process, KiB.
    static func peakMemory(_ pid: String) -> Int {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = text.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    @Test func uploadsByLengthAndChunkedGoThroughAsStreams() throws {
        let peer = try H2KeeperPeer()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try Self.warm(douctl, peer)
        var bytes = [UInt8](repeating: 0, count: 5 << 20)
        for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: index &* 31 &+ index >> 9) }
        let file = try TemporaryDirectory.file(named: "upload.bin", bytes: bytes)
        for (method, arguments) in [("POST", ["--input", file]), ("PUT", ["--input", "-"])] {
            let result = try douctl.run(["-v", "api", peer.base + "/upload", "-X", method, "-H", "Content-Type: application/octet-stream", "--cacert", peer.pki.caCertificate] + arguments,
                                        input: arguments.last == "-" ? bytes : nil)
            #expect(result.status == 0, "\(arguments): \(result)")
            #expect(result.stderr.contains("* HTTP/2 over the keeper's connection (reused"), "\(result.stderr)")
            #expect(try result.json()["bytes"]?.scalarText == String(bytes.count), "\(arguments)")
            #expect(try result.json()["sha256"]?.scalarText == Digest.hex(Digest.sha256(bytes)), "\(arguments)")
            #expect(try result.json()["method"]?.scalarText == method)
        }
        // 64 MiB up at flat keeper memory: it reads ahead of libcurl only a little.
        let pid = try KeeperPeer.status(douctl)["pid"]?.scalarText ?? ""
        let before = Self.peakMemory(pid)
        let big = TemporaryDirectory.make(prefix: "h2-upload") + "/big.bin"
        #expect(FileManager.default.createFile(atPath: big, contents: Data(count: 64 << 20)))
        let large = try douctl.run(["-v", "api", peer.base + "/upload", "-X", "PUT", "--input", big, "-H", "Content-Type: application/octet-stream", "--cacert", peer.pki.caCertificate])
        #expect(large.status == 0 && large.stderr.contains("* HTTP/2 over the keeper's connection"), "\(large)")
        #expect(try large.json()["bytes"]?.scalarText == String(64 << 20))
        let after = Self.peakMemory(pid)
        #expect(before > 0 && after - before < 24 << 10, "keeper peak \(before) KiB -> \(after) KiB")
    }

    /// --max-time on a stalled stream stops that call within a second; another process's
    /// stream on the same connection completes, and the connection serves the next call.
    @Test func maxTimeOnAStalledStreamLeavesTheConnectionToTheOthers() throws {
        let peer = try H2KeeperPeer()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try Self.warm(douctl, peer)
        let connection = try peer.waitForLog("/warm2").connection
        let late = try RunningDouctl(douctl, ["-v", "api", peer.base + "/late?s=2", "--cacert", peer.pki.caCertificate])
        let started = Date()
        let stalled = try Self.call(douctl, peer, "/slow", ["--max-time", "1"])
        #expect(Date().timeIntervalSince(started) < 2.5, "stopped within a second of its limit")
        #expect(stalled.status == 7, "\(stalled)")
        #expect(stalled.stdout.isEmpty)
        #expect(stalled.stderr.contains("over HTTP/2"), "\(stalled.stderr)")
        let other = late.finish(timeout: 20)
        #expect(other.status == 0, "\(other)")
        #expect(other.stdoutText.contains("\"late\""), "\(other)")
        let next = try Self.call(douctl, peer, "/after")
        #expect(next.status == 0 && next.stderr.contains("reusing its connection"), "\(next)")
        #expect(try peer.waitForLog("/late?s=2").connection == connection)
        #expect(try peer.waitForLog("/after").connection == connection, "the stream was reset, not the connection: \(peer.requests())")
    }

    /// The keeper killed mid-call: a GET that got nothing is sent again (the retry finds the
    /// socket stale, starts a new keeper and goes direct) and gets its reply; a POST is not
    /// sent twice: it fails with one line and nothing on stdout (and the next call finds the
    /// socket stale). Later calls ride the new keeper.
    @Test(arguments: ["GET", "POST"])
    func aKeeperThatDiesMidCallLosesNothingItMayNotRepeat(method: String) throws {
        let peer = try H2KeeperPeer()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try Self.warm(douctl, peer)
        let pid = Int32(try KeeperPeer.status(douctl)["pid"]?.scalarText ?? "") ?? 0
        #expect(pid > 0)
        let running = try RunningDouctl(douctl, ["api", peer.base + "/late?s=3", "-X", method, "--cacert", peer.pki.caCertificate])
        Thread.sleep(forTimeInterval: 0.8)
        kill(pid, SIGKILL)
        let result = running.finish(timeout: 20)
        if method == "GET" {
            #expect(result.status == 0, "\(result)")
            #expect(result.stdoutText.contains("\"late\""), "\(result)")
            #expect(result.stderr.contains("connection lost: the server closed the connection without replying; trying again"), "\(result.stderr)")
        } else {
            #expect(result.status != 0 && result.stdout.isEmpty, "\(result)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        }
        if method == "POST" {
            // Its socket is stale: the next call says so, goes direct and starts a new keeper.
            let direct = try Self.call(douctl, peer, "/direct")
            #expect(direct.status == 0 && direct.stderr.contains("nothing answers") && direct.stderr.contains("* HTTP/2 over a new connection"), "\(direct)")
        }
        try KeeperPeer.waitFor("a new keeper") { (try? KeeperPeer.status(douctl)["running"]) == .bool(true) }
        let after = try Self.call(douctl, peer, "/after")
        #expect(after.status == 0, "\(after)")
        #expect(after.stderr.contains("* HTTP/2 over the keeper's connection (new)"), "\(after.stderr)")
    }

    /// A request the HTTP/2 path cannot carry (here HTTP/1.0, which douctl never sends) is
    /// not refused: the keeper relays it over an HTTP/1.1 connection of its own.
    @Test func aRequestTheHTTP2PathCannotCarryIsRelayedOverHTTP1() throws {
        let peer = try H2KeeperPeer()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try Self.warm(douctl, peer)
        let python = try Tools.require("python3")
        let script = """
        import socket, sys
        s = socket.socket(socket.AF_UNIX)
        s.connect(sys.argv[1])
        s.sendall(b"douctl-keeper 1 0.1.0\\nconnect\\nhost 127.0.0.1\\nport %s\\ncafile %s\\n\\n" % (sys.argv[2].encode(), sys.argv[3].encode()))
        answer = b""
        while answer.count(b"\\n") < 2:
            answer += s.recv(100)
        sys.stdout.write(answer.decode())
        s.sendall(b"GET /old HTTP/1.0\\r\\nHost: 127.0.0.1\\r\\n\\r\\n")
        reply = b""
        while True:
            data = s.recv(65536)
            if not data:
                break
            reply += data
        sys.stdout.write(reply.decode("latin-1"))
        """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", script, KeeperPeer.socketPath(douctl), String(peer.port), peer.pki.caCertificate]
        let output = Pipe()
        process.standardOutput = output
        try process.runAlone()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(text.contains("ok h2 reused"), "it was handed to the HTTP/2 side first: \(text)")
        #expect(text.contains("HTTP/1.1 200 OK") && text.contains("\"path\": \"/old\""), "\(text)")
        #expect(try peer.waitForLog("/old").connection != peer.waitForLog("/warm2").connection, "a connection of its own: \(peer.requests())")
    }

    /// The origin gone after the keeper's connection to it was made: the call is told what
    /// a direct call is (it goes direct once the keeper finds it unreachable), not that a
    /// connection closed.
    @Test func anOriginThatIsGoneFailsAsADirectCallDoes() throws {
        let peer = try H2KeeperPeer()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try Self.warm(douctl, peer)
        NginxPeer.stop(peer.nginx)
        let direct = try Self.call(douctl, peer, "/x", ["--no-keep", "--retry", "0"])
        let through = try Self.call(douctl, peer, "/x")
        #expect(direct.status != 0 && through.status == direct.status, "\(direct)\n\(through)")
        // libcurl's words, but for how long it tried ("after 4 ms").
        func said(_ result: Douctl.Result) -> String {
            let line = String(result.stderr.split(separator: "\n").last { $0.hasPrefix("douctl:") } ?? "?")
            return line.replacingOccurrences(of: #"after [0-9]+ ms"#, with: "after N ms", options: .regularExpression)
        }
        #expect(said(through) == said(direct), "\(through.stderr)")
        #expect(said(direct).contains("cannot connect"), "\(direct.stderr)")
        #expect(through.stderr.contains("over HTTP/2 (reused"), "it went to the keeper's HTTP/2 connection first: \(through.stderr)")
    }

    /// Eight processes at once to an origin the keeper has not met: each asks, and the
    /// keeper starts one HTTP/2 connection they all ride (not one each).
    @Test func aColdBurstSharesOneConnection() throws {
        let peer = try H2KeeperPeer()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try KeeperPeer.startKeeper(douctl, base: peer.base, cacert: peer.pki.caCertificate)
        let running = try (0..<8).map { index in
            try RunningDouctl(douctl, ["-v", "api", peer.base + "/burst/\(index)", "--cacert", peer.pki.caCertificate])
        }
        let results = running.map { $0.finish(timeout: 30) }
        for (index, result) in results.enumerated() {
            #expect(result.status == 0, "\(index): \(result)")
            #expect(result.stderr.contains("* HTTP/2 over the keeper's connection"), "\(index): \(result.stderr)")
        }
        _ = try peer.waitForLog("/burst/7")
        let connections = Set(peer.requests().filter { $0.path.hasPrefix("/burst/") }.map(\.connection))
        #expect(peer.requests().filter { $0.path.hasPrefix("/burst/") }.count == 8)
        #expect(connections.count == 1, "\(peer.requests())")
    }
}
