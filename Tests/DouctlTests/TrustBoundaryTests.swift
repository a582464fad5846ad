#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlJSON
import DouctlServer
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 30: nothing a server or another local user controls steers douctl. The built binary
/// against servers written to lie: text meant for the terminal, URLs meant for the browser,
/// token replies meant to break or switch the login, and output paths that are not files.
@Suite("Trust boundaries: terminals, browsers, token replies, output paths")
struct TrustBoundaryTests {
    static func json(_ status: Int, _ text: String) -> HTTPServerResponse {
        .bytes(status, Array(text.utf8), contentType: "application/json")
    }

    /// Bytes a terminal acts on: ESC, BEL, C1 CSI/OSC, bidi overrides and isolates.
    static func terminalControls(in text: String) -> [UInt32] {
        text.unicodeScalars.map(\.value).filter { value in
            (value < 0x20 && value != 0x0A && value != 0x09) || (0x7F...0x9F).contains(value)
                || (0x202A...0x202E).contains(value) || (0x2066...0x2069).contains(value)
        }
    }

    // MARK: - output paths that are not regular files

    /// A character device that is not the machine's /dev/null: as root, a node of our own
    /// (so the code before this fix, which renamed over it, cannot break the machine);
    /// otherwise /dev/null itself, which a normal user cannot rename over.
    static func characterDevice() throws -> String {
        guard geteuid() == 0 else { return "/dev/null" }
        let path = TemporaryDirectory.make(prefix: "douctl-dev") + "/null"
        try #require(mknod(path, S_IFCHR | 0o666, dev_t(1 << 8 | 3)) == 0, "mknod: \(String(cString: strerror(errno)))")
        return path
    }

    static func isCharacterDevice(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFCHR
    }

    @Test func outputToADeviceWritesIntoItAndNeverReplacesIt() throws {
        let server = try TestServer(json: #"{"ok":true}"#)
        let douctl = Douctl()
        let device = try Self.characterDevice()
        for arguments in [["api", server.baseURL + "/x", "-o", device], ["download", server.baseURL + "/x", "-o", device]] {
            let result = try douctl.run(arguments)
            // Before: root renamed a regular file over the device; a user got "Permission denied".
            #expect(result.status == 0, "\(arguments): \(result)")
            #expect(Self.isCharacterDevice(device), "\(arguments) replaced \(device)")
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: (device as NSString).deletingLastPathComponent)
            .filter { $0.contains(".tmp-") || $0.contains("douctl-part") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test func outputToDevStdoutAndAFIFOReachTheReader() throws {
        let body = #"{"text":"到达","n":1}"#
        let server = try TestServer(json: body)
        let douctl = Douctl()
        // /dev/stdout is a link to /proc/self/fd/1, here a pipe: before, "No such file or
        // directory" (a rename over /dev/stdout) or a regular file in its place.
        for command in ["api", "download"] {
            let result = try douctl.run([command, server.baseURL + "/x", "-o", "/dev/stdout"])
            #expect(result.status == 0, "\(command): \(result)")
            #expect(result.stdoutText == body, "\(command): \(result)")
        }
        // A FIFO (what >(…) gives): the reader gets the body, the FIFO stays a FIFO.
        let fifo = TemporaryDirectory.make(prefix: "douctl-fifo") + "/pipe"
        try #require(mkfifo(fifo, 0o600) == 0)
        let reader = open(fifo, O_RDONLY | O_NONBLOCK)
        try #require(reader >= 0)
        defer { close(reader) }
        let result = try douctl.run(["api", server.baseURL + "/x", "-o", fifo])
        #expect(result.status == 0, "\(result)")
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(reader, &buffer, buffer.count)
        #expect(count > 0 && String(decoding: buffer.prefix(max(count, 0)), as: UTF8.self) == body)
        var info = stat()
        #expect(lstat(fifo, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "the FIFO was replaced")
    }

    @Test func aLinkToARegularFileIsReplacedAndItsTargetLeftAlone() throws {
        let server = try TestServer(json: #"{"new":true}"#)
        let directory = TemporaryDirectory.make(prefix: "douctl-link")
        let target = directory + "/target.json"
        try Data("old".utf8).write(to: URL(fileURLWithPath: target))
        try FileManager.default.createSymbolicLink(atPath: directory + "/out.json", withDestinationPath: target)
        // A link counts as an existing file: refused without --force (issue 40's one -o rule)…
        let refused = try Douctl().run(["api", server.baseURL + "/x", "-o", directory + "/out.json"])
        #expect(refused.status == 3, "\(refused)")
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "old")
        // …and with it the link itself is replaced, never written through.
        let result = try Douctl().run(["api", server.baseURL + "/x", "-o", directory + "/out.json", "--force"])
        #expect(result.status == 0, "\(result)")
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "old")
        #expect(try String(contentsOfFile: directory + "/out.json", encoding: .utf8) == #"{"new":true}"#)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/out.json")) == nil, "the link itself is replaced")
    }

    // MARK: - text for the terminal

    @Test func theSandboxLogNeitherObeysNorForgesWhatAPathSays() throws {
        let douctl = Douctl()
        let running = try RunningDouctl(douctl, ["sandbox"])
        let base = String(try running.waitForStdout { $0.contains("\n") }.prefix { $0 != "\n" })
        guard let port = base.split(separator: ":").last.flatMap({ UInt16($0) }) else { throw TestFailure("no URL: \(base)") }
        for target in ["/%1b%5d0%3bPWNED%07", "/a%0d%0aGET%20/v2/user/forged%20200%201ms", "/%c2%9b2J%e2%80%ae"] {
            let client = try RawClient(port: port)
            try client.send("GET \(target) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            _ = try client.readResponse()
        }
        let log = try running.waitForStderr { $0.contains("%e2") || $0.contains("\\u202E") }
        running.kill(SIGTERM)
        _ = running.finish()
        #expect(Self.terminalControls(in: log).isEmpty, "\(log.debugDescription)")
        #expect(!log.split(separator: "\n").contains { $0.hasPrefix("GET /v2/user/forged") }, "a forged log line: \(log)")
        #expect(log.contains(#"GET /\x1B]0;PWNED\x07 "#), "\(log)")
        #expect(log.contains(#"GET /a\r\nGET /v2/user/forged 200 1ms "#), "\(log)")
    }

    @Test func verboseLogsAndErrorLinesShowNoControlAServerSends() throws {
        // A header value no well-behaved server sends: raw ESC, BEL, C1 CSI and a bidi override.
        let listener = try HostileListener { connection, _ in
            HostileListener.send(connection, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n"
                + "X-Evil: a\u{1B}]0;PWNED\u{07}\u{9B}2J\u{202E}b\r\nConnection: close\r\n\r\n{\"ok\":true}")
        }
        let server = try TestServer { _ in
            Self.json(400, #"{"error":"invalid_request","error_description":"bad\u009b2J\u009d8;;http://evil\u009c \u202egnp.exe"}"#)
        }
        let douctl = Douctl()
        let verbose = try douctl.run("-v", "api", listener.baseURL + "/ok")
        #expect(verbose.status == 0, "\(verbose)")
        // Before: the header value reached the terminal raw.
        #expect(Self.terminalControls(in: verbose.stderr).isEmpty, "\(verbose.stderr.debugDescription)")
        #expect(verbose.stderr.contains(#"< X-Evil: a\x1B]0;PWNED\x07\u009B2J\u202Eb"#), "\(verbose.stderr)")
        let failed = try douctl.run("api", server.baseURL + "/bad")
        #expect(failed.status == 1, "\(failed)")
        // Before: C1 CSI and OSC passed the error escaper, which knew C0 only.
        #expect(Self.terminalControls(in: failed.stderr).isEmpty, "\(failed.stderr.debugDescription)")
        #expect(failed.stderr.contains(#"bad\u009B2J\u009D8;;http://evil\u009C \u202Egnp.exe"#), "\(failed.stderr)")
    }

    /// A device-flow provider that puts terminal and browser attacks in every field it
    /// controls, then grants a token whose user name carries a window-title escape.
    static func hostileDeviceServer(tokenReply: String = #"{"access_token":"tok-1","token_type":"Bearer","expires_in":3600}"#) throws -> TestServer {
        let polls = LockedValue(0)
        return try TestServer { received in
            switch received.path {
            case "/device":
                return json(200, #"""
                    {"device_code":"d","user_code":"AB\u001b]52;c;ZXZpbA==\u0007CD\u202e",
                     "verification_uri":"javascript:alert(1)//\u009d8;;http://evil\u009c",
                     "verification_uri_complete":"--renderer-cmd-prefix=/tmp/pwn",
                     "expires_in":60,"interval":1}
                    """#)
            case "/token":
                let first = polls.withLock { count in count += 1; return count == 1 }
                return first
                    ? json(503, #"{"error":"temporarily_unavailable","error_description":"wait\u009b2J\u001b[1A\n* forged line"}"#)
                    : json(200, tokenReply)
            default:
                return json(200, #"{"id":"7","name":"evil\u001b]0;PWNED\u0007\u202eexe.txt"}"#)
            }
        }
    }

    static func deviceProfile(_ douctl: Douctl, base: String) throws {
        let added = try douctl.run("profile", "add", "p", "--api-base", base, "--token-url", base + "/token",
                                   "--device-authorization-url", base + "/device", "--client-id", "x", "--user-url", "/user")
        try #require(added.status == 0, "\(added)")
    }

    @Test func aDeviceLoginShowsServerTextEscapedAndOpensNoHostileURL() throws {
        try Tools.require("python3")
        let server = try Self.hostileDeviceServer()
        let douctl = Douctl()
        try Self.deviceProfile(douctl, base: server.baseURL)
        let directory = TemporaryDirectory.make(prefix: "douctl-opener")
        let record = directory + "/opened"
        let opener = directory + "/opener.sh"
        try Data("#!/bin/sh\nprintf '%s\\n' \"$@\" >> \(record)\n".utf8).write(to: URL(fileURLWithPath: opener))
        chmod(opener, 0o755)
        let result = try douctl.run(["auth", "login", "--device", "--profile", "p", "--wait", "20"], environment: ["BROWSER": opener], timeout: 90)
        #expect(result.status == 0, "\(result)")
        // Before: ESC]52 (a clipboard write), C1 OSC 8 (a hidden link), CSI 2J and the user
        // name's title escape all reached the terminal; javascript: went to the browser.
        #expect(Self.terminalControls(in: result.stderr).isEmpty, "\(result.stderr.debugDescription)")
        #expect(!result.stderr.split(separator: "\n").contains { $0.hasPrefix("* forged line") }, "\(result.stderr)")
        #expect(result.stderr.contains(#"AB\x1B]52;c;ZXZpbA==\x07CD\u202E"#), "\(result.stderr)")
        #expect(result.stderr.contains("Not opened in a browser"), "\(result.stderr)")
        #expect(result.stderr.contains(#"as evil\x1B]0;PWNED\x07\u202Eexe.txt (7)"#), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: record), "the opener ran: \((try? String(contentsOfFile: record, encoding: .utf8)) ?? "")")
    }

    @Test func aWebLoginNeverHandsAConfiguredNonHTTPURLToTheBrowser() throws {
        let douctl = Douctl()
        let directory = TemporaryDirectory.make(prefix: "douctl-opener")
        let record = directory + "/opened"
        let opener = directory + "/opener.sh"
        try Data("#!/bin/sh\nprintf '%s\\n' \"$@\" >> \(record)\n".utf8).write(to: URL(fileURLWithPath: opener))
        chmod(opener, 0o755)
        // Written by hand (or by another user, or a tool): `config set` refuses these URLs,
        // but a config file can say anything.
        for authorize in ["file:///etc/passwd", "--renderer-cmd-prefix=x://y", "smb://host/share"] {
            let config = #"{"profiles":{"w":{"api_base":"http://127.0.0.1:9","authorize_url":"\#(authorize)","token_url":"http://127.0.0.1:9/t","client_id":"x"}}}"#
            try Data(config.utf8).write(to: URL(fileURLWithPath: douctl.configDirectory + "/config.json"))
            chmod(douctl.configDirectory + "/config.json", 0o600)
            let result = try douctl.run(["auth", "login", "--web", "--profile", "w", "--wait", "1"], environment: ["BROWSER": opener], timeout: 60)
            #expect(result.status != 0, "\(result)")
            #expect(result.stderr.contains("Not opened in a browser: only http and https URLs"), "\(authorize): \(result)")
        }
        #expect(!FileManager.default.fileExists(atPath: record), "the opener ran: \((try? String(contentsOfFile: record, encoding: .utf8)) ?? "")")
    }

    // MARK: - token replies

    @Test(arguments: [
        (#"{"access_token":"tok-mac","token_type":"mac","mac_key":"k"}"#, "token_type 'mac'"),
        (#"{"access_token":"tok-dpop","token_type":"DPoP"}"#, "token_type 'DPoP'"),
        (#"{"access_token":"tok\r\nX-Injected: 1","token_type":"bearer"}"#, "access_token holds bytes"),
    ])
    func aTokenReplyDouctlCannotUseIsRefusedAndNothingIsStored(reply: String, reason: String) throws {
        let server = try Self.hostileDeviceServer(tokenReply: reply)
        let douctl = Douctl()
        try Self.deviceProfile(douctl, base: server.baseURL)
        let result = try douctl.run(["auth", "login", "--device", "--no-browser", "--profile", "p", "--wait", "20"], timeout: 90)
        // Before: "Logged in", exit 0; then every request sent it as Bearer, or failed with exit 3.
        #expect(result.status == 8, "\(result)")
        #expect(result.errorLine.contains("the token endpoint's reply was refused: ") && result.errorLine.contains(reason), "\(result)")
        let status = try douctl.run("auth", "status", "--profile", "p")
        #expect(status.status == 4, "nothing stored: \(status)")
    }

    @Test func aRefreshThatNamesAnotherUserKeepsTheLogin() throws {
        let server = try TestServer { received in
            received.path == "/token"
                ? Self.json(200, #"{"access_token":"tok-other","refresh_token":"r-2","expires_in":3600,"douban_user_id":"666"}"#)
                : Self.json(401, #"{"error":"invalid_token"}"#)
        }
        let douctl = Douctl()
        try douctl.run("profile", "add", "p", "--api-base", server.baseURL, "--token-url", server.baseURL + "/token", "--client-id", "x")
        let stored = #"{"profiles":{"p":{"access_token":"tok-mine","refresh_token":"r-1","expires_at":"2000-01-01T00:00:00Z","user_id":"42","user_name":"me"}}}"#
        try Data(stored.utf8).write(to: URL(fileURLWithPath: douctl.configDirectory + "/credentials.json"))
        chmod(douctl.configDirectory + "/credentials.json", 0o600)
        let result = try douctl.run("api", "/x", "--profile", "p")
        // Before: exit 0 as user 666, the profile silently someone else's.
        #expect(result.status == 4, "\(result)")
        #expect(result.errorLine.contains("the refresh answered for another account (user '666', where this login is '42')"), "\(result)")
        let credentials = try String(contentsOfFile: douctl.configDirectory + "/credentials.json", encoding: .utf8)
        #expect(credentials.contains("tok-mine") && !credentials.contains("tok-other"), "\(credentials)")
        #expect(server.received.filter { $0.path == "/x" }.isEmpty, "no request went out as the other user")
    }
}
