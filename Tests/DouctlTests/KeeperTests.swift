#if canImport(Glibc)
import Glibc
#endif
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 44: the connection keeper, through the built binary against an HTTPS server that
/// counts the TLS connections it accepts. Each test has its own runtime directory, so its
/// own keeper, and stops it at the end.
@Suite("Connection keeper")
struct KeeperTests {
    @Test func aSecondProcessRidesTheFirstsConnection() throws {
        let server = try KeeperPeer()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try KeeperPeer.startKeeper(douctl, base: server.base, cacert: server.pki.caCertificate)
        let before = try server.connections(douctl)
        let second = try douctl.run("-v", "api", server.base + "/one", "--cacert", server.pki.caCertificate)
        let third = try douctl.run("-v", "api", server.base + "/two", "--cacert", server.pki.caCertificate)
        #expect(second.status == 0 && third.status == 0, "\(second) \(third)")
        #expect(try second.json()["path"]?.scalarText == "/one")
        #expect(try third.json()["path"]?.scalarText == "/two")
        #expect(second.stderr.contains("* keeper: a new connection to 127.0.0.1:"), "\(second.stderr)")
        #expect(third.stderr.contains("* keeper: reusing its connection to 127.0.0.1:"), "\(third.stderr)")
        #expect(third.stderr.contains("* HTTP/1.1 over the keeper's connection (reused"), "\(third.stderr)")
        // Two processes, one TLS connection: the keeper's (and the /count run's own, direct).
        #expect(try second.json()["connection"] == third.json()["connection"], "the same connection served both")
        #expect(try server.connections(douctl) - before == 2, "one for the two runs, one for asking")
    }

    @Test func statusSaysWhatItHoldsAndStopEndsIt() throws {
        let server = try KeeperPeer()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        #expect(try KeeperPeer.status(douctl)["running"] == .bool(false))
        try KeeperPeer.startKeeper(douctl, base: server.base, cacert: server.pki.caCertificate)
        #expect(try douctl.run("api", server.base + "/x", "--cacert", server.pki.caCertificate).status == 0)
        let status = try KeeperPeer.status(douctl)
        #expect(status["running"] == .bool(true))
        #expect(status["held"]?.arrayValue?.first?.scalarText?.hasPrefix("127.0.0.1:") == true, "\(status)")
        #expect(status["served"]?.scalarText == "1", "\(status)")
        // The Accept-Encoding its libcurl sends, which it tells each client to ask for.
        #expect(status["accept_encoding"]?.scalarText?.contains("gzip") == true, "\(status)")
        let stop = try douctl.run("keeper", "stop")
        #expect(stop.status == 0 && stop.stderr.contains("keeper: stopped (pid"), "\(stop)")
        try KeeperPeer.waitFor("the socket to go") { !FileManager.default.fileExists(atPath: KeeperPeer.socketPath(douctl)) }
        #expect(try KeeperPeer.status(douctl)["running"] == .bool(false))
        // With none running, the next call goes direct and starts one again.
        let after = try douctl.run("-v", "api", server.base + "/y", "--cacert", server.pki.caCertificate)
        #expect(after.status == 0 && after.stderr.contains("started one"), "\(after)")
    }

    /// libcurl reads http_proxy for the http URL it is given for the keeper: it must not.
    @Test func anHttpProxyVariableDoesNotTakeTheKeepersRequest() throws {
        let server = try KeeperPeer()
        let douctl = KeeperPeer.douctl(extra: ["http_proxy": "http://127.0.0.1:9"])
        defer { _ = try? douctl.run("keeper", "stop") }
        try KeeperPeer.startKeeper(douctl, base: server.base, cacert: server.pki.caCertificate)
        let result = try douctl.run("-v", "api", server.base + "/x", "--cacert", server.pki.caCertificate)
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.contains("* keeper: a new connection"), "\(result.stderr)")
    }

    @Test func noKeepAndDouctlKeep0GoDirect() throws {
        let server = try KeeperPeer()
        for (arguments, environment) in [(["--no-keep"], [String: String]()), ([], ["DOUCTL_KEEP": "0"])] {
            let douctl = KeeperPeer.douctl(extra: environment)
            let result = try douctl.run(["-v", "api", server.base + "/x", "--cacert", server.pki.caCertificate] + arguments)
            #expect(result.status == 0, "\(result)")
            #expect(!result.stderr.contains("keeper"), "\(arguments) \(environment): \(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: KeeperPeer.socketPath(douctl)), "no keeper was started")
        }
    }

    /// What sits at the socket path is not a keeper of ours: the call goes direct and succeeds.
    @Test(arguments: ["stale socket", "garbage", "another version", "another user"])
    func aListenerThatIsNotOurKeeperIsIgnored(kind: String) throws {
        let server = try KeeperPeer()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        let path = KeeperPeer.socketPath(douctl)
        mkdir((path as NSString).deletingLastPathComponent, 0o700)
        var listener: FakeKeeper?
        switch kind {
        case "stale socket": try FakeKeeper.staleSocket(at: path)
        case "garbage": listener = try FakeKeeper(path: path, says: "HTTP/1.1 400 Bad Request\r\n\r\n")
        case "another version": listener = try FakeKeeper(path: path, says: "douctl-keeper 1 9.9.9\nok new\n")
        default:
            guard geteuid() == 0 else { try Test.cancel("skipped: listening as another user needs root") }
            listener = try FakeKeeper(path: path, says: "douctl-keeper 1 0.1.0\nok new\n", asUser: 65534)
        }
        let result = try douctl.run("-v", "api", server.base + "/x", "--cacert", server.pki.caCertificate)
        #expect(result.status == 0, "\(kind): \(result)")
        #expect(try result.json()["path"]?.scalarText == "/x", "\(kind)")
        let said = ["stale socket": "nothing answers", "garbage": "is not a douctl keeper", "another version": "another douctl version", "another user": "is not this user's"][kind] ?? "?"
        #expect(result.stderr.contains(said), "\(kind): \(result.stderr)")
        #expect(result.stderr.contains("* HTTP/1.1 over a new connection"), "direct: \(result.stderr)")
        _ = listener
    }

    @Test func maxTimeThroughTheKeeperStopsAndTheConnectionIsNotLentAgain() throws {
        let server = try KeeperPeer()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try KeeperPeer.startKeeper(douctl, base: server.base, cacert: server.pki.caCertificate)
        #expect(try douctl.run("api", server.base + "/x", "--cacert", server.pki.caCertificate).status == 0)
        let started = Date()
        let slow = try douctl.run("-v", "api", server.base + "/slow", "--cacert", server.pki.caCertificate, "--max-time", "1")
        #expect(slow.status == 7, "\(slow)")
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(slow.stderr.contains("* keeper: reusing its connection"), "it went through the keeper: \(slow.stderr)")
        #expect(slow.stdout.isEmpty)
        // The connection left mid-exchange (its reply still to come) is closed, never lent.
        let next = try douctl.run("-v", "api", server.base + "/after", "--cacert", server.pki.caCertificate)
        #expect(next.status == 0, "\(next)")
        #expect(try next.json()["path"]?.scalarText == "/after")
        #expect(next.stderr.contains("* keeper: a new connection"), "\(next.stderr)")
    }

    @Test func aLargeReplyStreamsThroughTheKeeper() throws {
        let server = try KeeperPeer()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try KeeperPeer.startKeeper(douctl, base: server.base, cacert: server.pki.caCertificate)
        let out = TemporaryDirectory.make(prefix: "keeper-big") + "/big.bin"
        let result = try douctl.run("-v", "api", server.base + "/big?mb=48", "--cacert", server.pki.caCertificate, "-o", out)
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.contains("* keeper:"), "\(result.stderr)")
        let size = (try FileManager.default.attributesOfItem(atPath: out)[.size] as? NSNumber)?.intValue
        #expect(size == 48 << 20)
    }

    @Test func anUploadGoesThroughTheKeeper() throws {
        let server = try KeeperPeer()
        let douctl = KeeperPeer.douctl()
        defer { _ = try? douctl.run("keeper", "stop") }
        try KeeperPeer.startKeeper(douctl, base: server.base, cacert: server.pki.caCertificate)
        var bytes = [UInt8](repeating: 0, count: 3 << 20)
        for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: index &* 31 &+ index >> 9) }
        let file = try TemporaryDirectory.file(named: "upload.bin", bytes: bytes)
        for arguments in [["--input", file], ["--input", "-"]] {
            let result = try douctl.run(["-v", "api", server.base + "/upload", "-X", "POST", "-H", "Content-Type: application/octet-stream", "--cacert", server.pki.caCertificate] + arguments,
                                        input: arguments.last == "-" ? bytes : nil)
            #expect(result.status == 0, "\(arguments): \(result)")
            #expect(result.stderr.contains("* keeper:"), "\(result.stderr)")
            #expect(try result.json()["bytes"]?.scalarText == String(bytes.count), "\(arguments)")
            #expect(try result.json()["sha256"]?.scalarText == Digest.hex(Digest.sha256(bytes)), "\(arguments)")
        }
    }

    /// The keeper holds connections, never credentials: the token a run was given is not in
    /// the environment of the keeper it started, and --config-dir's keeper is the one found.
    @Test func theKeeperStartsWithoutTheRunsSecrets() throws {
        let server = try KeeperPeer()
        let token = "tok-keeper-3c1d"
        let elsewhere = TemporaryDirectory.make(prefix: "keeper-config")
        let douctl = KeeperPeer.douctl(extra: ["DOUCTL_TOKEN": token, "XDG_RUNTIME_DIR": "", "DOUCTL_CLIENT_SECRET": "cs-keeper-9f"])
        defer { _ = try? douctl.run("--config-dir", elsewhere, "keeper", "stop") }
        let first = try douctl.run("--config-dir", elsewhere, "api", server.base + "/x", "--cacert", server.pki.caCertificate)
        #expect(first.status == 0, "\(first)")
        var pid = ""
        try KeeperPeer.waitFor("the keeper") {
            pid = try KeeperPeer.status(douctl, ["--config-dir", elsewhere])["pid"]?.scalarText ?? ""
            return !pid.isEmpty
        }
        #expect(FileManager.default.fileExists(atPath: elsewhere + "/keeper/keeper-0.1.0.sock"))
        let environment = try String(decoding: Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ")), as: UTF8.self)
        #expect(!environment.isEmpty)
        #expect(!environment.contains(token) && !environment.contains("cs-keeper-9f"), "\(environment)")
        let second = try douctl.run("--config-dir", elsewhere, "-v", "api", server.base + "/y", "--cacert", server.pki.caCertificate)
        #expect(second.stderr.contains("* keeper: a new connection"), "\(second.stderr)")
    }

    @Test func theKeeperExitsWhenIdle() throws {
        let server = try KeeperPeer()
        let douctl = KeeperPeer.douctl(idle: "1s")
        defer { _ = try? douctl.run("keeper", "stop") }
        try KeeperPeer.startKeeper(douctl, base: server.base, cacert: server.pki.caCertificate)
        // Gone by itself; the bound is generous, the idle time is one second.
        try KeeperPeer.waitFor("the keeper to exit", within: 30) { !FileManager.default.fileExists(atPath: KeeperPeer.socketPath(douctl)) }
        #expect(try KeeperPeer.status(douctl)["running"] == .bool(false))
    }
}

/// Something at the keeper's socket path that is not this user's douctl keeper.
final class FakeKeeper: @unchecked Sendable {
    private let process: Process

    /// A socket file with no listener (a keeper that was killed).
    static func staleSocket(at path: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() where index < raw.count - 1 { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if bound != 0 { throw TestFailure("bind \(path): \(errno)") }
    }

    /// A python3 listener at `path` answering every connection with `says`, listening as
    /// `asUser` when given (so its SO_PEERCRED is that user's).
    init(path: String, says: String, asUser: UInt32? = nil) throws {
        let python = try Tools.require("python3")
        let script = """
        import os, socket, sys, time
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(sys.argv[1])
        if len(sys.argv) > 3:
            os.setuid(int(sys.argv[3]))
        s.listen(8)
        print("ready", flush=True)
        while True:
            c, _ = s.accept()
            c.sendall(sys.argv[2].encode())
            time.sleep(0.2)
            c.close()
        """
        process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", script, path, says] + (asUser.map { [String($0)] } ?? [])
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.runAlone()
        _ = output.fileHandleForReading.readData(ofLength: 6)
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
