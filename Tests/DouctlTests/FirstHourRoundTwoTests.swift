import DouctlJSON
import DouctlSandbox
import DouctlServer
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 33, round two (and one from issue 32): what a new user hit in the first hour, one
/// test each, the built binary against the sandbox or a purpose-built server.
@Suite("The first hour, round two")
struct FirstHourRoundTwoTests {
    // MARK: - an interrupted download can be resumed

    /// A file served with a validator (a strong ETag, or Last-Modified) that honours
    /// `Range` with `If-Range` as RFC 9110 §13.1.5 says; `cut(request)` ends that reply
    /// after so many body bytes: with a reset, or by closing early (a truncated body).
    final class ValidatedFile: Sendable {
        let server: TestServer
        var baseURL: String { server.baseURL }

        init(_ body: [UInt8], validator: (name: String, value: String) = ("ETag", "\"v1\""), truncate: Bool = false,
             stallAfter: Int? = nil, cut: @escaping @Sendable (Int) -> Int? = { _ in nil }) throws {
            let count = LockedValue(0)
            server = try TestServer { received in
                let number = count.withLock { value -> Int in
                    defer { value += 1 }
                    return value
                }
                var start = 0
                var status = 200
                var headers: [(String, String)] = [("Content-Type", "application/octet-stream"), ("Accept-Ranges", "bytes"),
                                                   (validator.name, validator.value)]
                if let range = received.header("Range"), range.hasPrefix("bytes="), range.hasSuffix("-"),
                   received.header("If-Range").map({ $0 == validator.value }) ?? true,
                   let first = Int(range.dropFirst(6).dropLast()), first < body.count {
                    start = first
                    status = 206
                    headers.append(("Content-Range", "bytes \(first)-\(body.count - 1)/\(body.count)"))
                }
                let rest = Array(body[start...])
                let limit = cut(number)
                return HTTPServerResponse(status: status, headers: headers, body: .stream(length: Int64(rest.count)) { writer in
                    if let stallAfter, number == 0 {
                        try writer.write(Array(rest.prefix(stallAfter)))
                        Thread.sleep(forTimeInterval: 20)  // until the client is interrupted or times out
                        return
                    }
                    guard let limit, limit < rest.count else {
                        try writer.write(rest)
                        return
                    }
                    try writer.write(Array(rest.prefix(limit)))
                    Thread.sleep(forTimeInterval: 0.3)  // let the client read them first
                    if !truncate { try writer.abortConnection() }
                    // Truncated: the producer returns short, the server closes the connection.
                })
            }
        }
    }

    @Test(arguments: [("ETag", "\"v1\"", false), ("ETag", "\"v1\"", true), ("Last-Modified", "Tue, 03 Nov 2026 10:00:00 GMT", false)])
    func aRetryAfterABrokenTransferAsksForTheRestWithIfRange(name: String, value: String, truncate: Bool) throws {
        let body = DownloadTests.content(800_000)
        let server = try ValidatedFile(body, validator: (name, value), truncate: truncate) { $0 == 0 ? 300_000 : nil }
        let directory = TemporaryDirectory.make(prefix: "dl-retry-range")
        let result = try Douctl().run("download", server.baseURL + "/big.bin", "-d", directory)
        #expect(result.status == 0, "\(result)")
        let requests = server.server.received
        #expect(requests.count == 2, "\(requests.map { $0.header("Range") ?? "-" })")
        #expect(requests.first?.header("Range") == nil)
        let range = try #require(requests.last?.header("Range"), "the retry asks for the rest (\(name), truncated: \(truncate))")
        let from = try #require(Int(range.dropFirst(6).dropLast()))
        #expect(from > 0 && from <= 300_000)
        #expect(requests.last?.header("If-Range") == value)
        #expect(DownloadTests.read(directory + "/big.bin") == body, "byte-identical")
        let line = try #require(try result.lines().first)
        #expect(line["sha256"]?.stringValue == DownloadTests.sha256(body))
        #expect(line["bytes"]?.intValue == body.count)
        #expect(line["resumed_from"] == nil, "nothing came from an earlier run")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["big.bin"])
    }

    @Test func aRetryWhoseFileChangedStartsOverNeverSplices() throws {
        let old = DownloadTests.content(400_000)
        let new = Array(DownloadTests.content(450_000).reversed())
        let count = LockedValue(0)
        let server = try TestServer { received in
            let number = count.withLock { value -> Int in
                defer { value += 1 }
                return value
            }
            // The first reply (version 1) dies; by the retry the file is version 2, whose
            // server lies: a 206 from where the client asked, but of the new version.
            let body = number == 0 ? old : new
            var headers: [(String, String)] = [("ETag", number == 0 ? "\"v1\"" : "\"v2\"")]
            var rest = body[...]
            var status = 200
            if number == 1, let range = received.header("Range"), let first = Int(range.dropFirst(6).dropLast()) {
                status = 206
                rest = body[first...]
                headers.append(("Content-Range", "bytes \(first)-\(body.count - 1)/\(body.count)"))
            }
            let bytes = Array(rest)
            return HTTPServerResponse(status: status, headers: headers, body: .stream(length: Int64(bytes.count)) { writer in
                if number == 0 {
                    try writer.write(Array(bytes.prefix(150_000)))
                    Thread.sleep(forTimeInterval: 0.3)
                    try writer.abortConnection()
                }
                try writer.write(bytes)
            })
        }
        let directory = TemporaryDirectory.make(prefix: "dl-retry-changed")
        let result = try Douctl().run("download", server.baseURL + "/doc.bin", "-d", directory)
        #expect(result.status == 0, "\(result)")
        #expect(server.received[1].header("If-Range") == "\"v1\"")
        #expect(server.received.last?.header("Range") == nil, "the whole file again")
        #expect(DownloadTests.read(directory + "/doc.bin") == new)
        #expect(try result.lines().first?["sha256"]?.stringValue == DownloadTests.sha256(new))
    }

    @Test func ctrlCKeepsThePartialAndContinueResumesItByteIdentical() throws {
        let body = DownloadTests.content(600_000)
        let server = try ValidatedFile(body, stallAfter: 200_000)
        let directory = TemporaryDirectory.make(prefix: "dl-sigint")
        let url = server.baseURL + "/big.iso"
        let running = try RunningDouctl(Douctl(), ["download", url, "-d", directory])
        var partial: String?
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let name = DownloadTests.partials(directory).first, (DownloadTests.read(directory + "/" + name)?.count ?? 0) >= 200_000 {
                partial = directory + "/" + name
                break
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        let path = try #require(partial)
        running.kill(SIGINT)
        let stopped = running.finish(timeout: 10)
        #expect(stopped.status == 130, "\(stopped)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/big.iso"), "never a final file")
        #expect(DownloadTests.read(path) == Array(body.prefix(200_000)), "the bytes received are kept")
        #expect(stopped.stderr.contains("kept the 200000 bytes received in \(path); run the same command with --continue to resume it"),
                "\(stopped.stderr)")
        let line = try #require(try stopped.lines().first)
        #expect(line["exit"]?.intValue == 130)
        #expect(line["partial"]?.stringValue == path)
        #expect(line["partial_bytes"]?.intValue == 200_000)

        let resumed = try Douctl().run("download", url, "-d", directory, "--continue")
        #expect(resumed.status == 0, "\(resumed)")
        #expect(server.server.received.last?.header("Range") == "bytes=200000-")
        #expect(server.server.received.last?.header("If-Range") == "\"v1\"")
        #expect(DownloadTests.read(directory + "/big.iso") == body, "byte-identical")
        let done = try #require(try resumed.lines().first)
        #expect(done["resumed_from"]?.intValue == 200_000)
        #expect(done["sha256"]?.stringValue == DownloadTests.sha256(body))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["big.iso"], "no temp files left")
    }

    // MARK: - --max-time: the result line says what the exit says (issue 32)

    @Test func maxTimeResultLineSaysTimeoutLikeTheExit() throws {
        let server = try ValidatedFile(DownloadTests.content(300_000), stallAfter: 50_000)
        let directory = TemporaryDirectory.make(prefix: "dl-maxtime")
        let result = try Douctl().run("download", "--max-time", "2", server.baseURL + "/slow.bin", "-d", directory)
        #expect(result.status == 7, "\(result)")
        let line = try #require(try result.lines().first)
        #expect(line["ok"]?.boolValue == false)
        #expect(line["exit"]?.intValue == 7, "\(line)")
        #expect(line["error"]?.stringValue?.contains("--max-time 2s") == true, "\(line)")
        #expect(result.errorLine == "douctl: timed out: the command ran longer than --max-time 2s", "\(result.stderr)")
        #expect(!result.stderr.contains("interrupted"), "\(result.stderr)")
    }

    // MARK: - the sandbox answers HEAD wherever it answers GET

    @Test func headOnTheSandboxIsGetWithoutTheBody() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        let head = try fixture.douctl.run("api", "-I", "/v2/user/~me")
        #expect(head.status == 0, "\(head)")
        #expect(fixture.sandbox.requests.last?.method == "HEAD", "the journal says what was sent")
        // The same status and headers as GET (Content-Length that of the GET's body), no body.
        func statusAndLength(_ text: String) -> [String] {
            text.components(separatedBy: "\r\n").filter { $0.hasPrefix("HTTP/") || $0.hasPrefix("Content-Length:") || $0.hasPrefix("Content-Type:") }
        }
        for path in ["/v2/user/~me", "/v2/user/ahbei", "/v2/user/nobody", "/shuo/v2/statuses/home_timeline?count=2"] {
            let head = try fixture.douctl.run("api", "-I", path)
            let get = try fixture.douctl.run("api", "--include", path)
            #expect(head.status == (path.contains("nobody") ? 5 : 0), "\(path): \(head)")
            #expect(statusAndLength(head.stdoutText).count == 3, "\(path): \(head.stdoutText)")
            // (An error reply's head and body go to stderr in a pipe.)
            #expect(statusAndLength(head.stdoutText) == statusAndLength(get.stdoutText + get.stderr), "\(path): \(head.stdoutText) vs \(get)")
            #expect(head.stdoutText.hasSuffix("\r\n\r\n") && !head.stdoutText.contains("{"), "no body: \(head.stdoutText)")
        }
    }

    // MARK: - record, then replay, with the typed commands

    /// Records a session against a sandbox: a device login, then `user me` and `shuo
    /// timeline`; returns the recording directory and the commands' stdout.
    func recordSession(login: Bool) throws -> (directory: String, me: String, timeline: String) {
        let fixture = try SandboxFixture()
        defer { fixture.stop() }
        let directory = TemporaryDirectory.make(prefix: "session")
        if login {
            let result = try fixture.douctl.run("--record", directory, "auth", "login", "--device", "--no-browser")
            #expect(result.status == 0, "\(result)")
        } else {
            try fixture.login()
        }
        let me = try fixture.douctl.run("--record", directory, "user", "me")
        #expect(me.status == 0, "\(me)")
        let timeline = try fixture.douctl.run("--record", directory, "shuo", "timeline")
        #expect(timeline.status == 0, "\(timeline)")
        return (directory, me.stdoutText, timeline.stdoutText)
    }

    @Test(arguments: [true, false])
    func aRecordedSessionReplaysWithTheTypedCommands(recordedLogin: Bool) throws {
        let session = try recordSession(login: recordedLogin)
        if recordedLogin {
            let names = try FileManager.default.contentsOfDirectory(atPath: session.directory)
            #expect(names.contains { $0.contains("POST-service_auth2_token") }, "the login is recorded: \(names.sorted())")
            let recorded = try names.map { try String(contentsOfFile: session.directory + "/" + $0, encoding: .utf8) }.joined()
            #expect(!recorded.contains(Sandbox.clientSecret), "the client secret is scrubbed")
        }
        // A fresh config directory, as on another machine.
        let douctl = Douctl()
        let replay = try RunningDouctl(douctl, ["sandbox", "--replay", session.directory])
        defer {
            replay.kill(SIGTERM)
            _ = replay.finish()
        }
        let notes = try replay.waitForStderr { $0.contains("Replaying") }
        #expect(!notes.contains("logins are approved as ahbei."), "\(notes)")
        #expect(notes.contains("douctl auth login --profile sandbox, then run the recorded commands with --profile sandbox"), "\(notes)")

        let login = try douctl.run("--profile", "sandbox", "auth", "login", "--device", "--no-browser")
        #expect(login.status == 0, "\(login)")
        let me = try douctl.run("--profile", "sandbox", "user", "me")
        #expect(me.status == 0, "\(me)")
        #expect(me.stdoutText == session.me)
        let timeline = try douctl.run("--profile", "sandbox", "shuo", "timeline")
        #expect(timeline.status == 0, "\(timeline)")
        #expect(timeline.stdoutText == session.timeline)
        let missing = try douctl.run("--profile", "sandbox", "user", "get", "nobody-recorded")
        #expect(missing.status == 5, "\(missing)")
        #expect(missing.stderr.contains("no_recording"), "\(missing)")
    }
}
