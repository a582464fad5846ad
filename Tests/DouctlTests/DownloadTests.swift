import DouctlJSON
import DouctlServer
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

@Suite("douctl download")
struct DownloadTests {
    /// Deterministic, non-repeating bytes (a reordering or a gap changes the digest).
    static func content(_ count: Int) -> [UInt8] {
        var state: UInt32 = 2_463_534_242
        return (0..<count).map { _ in
            state ^= state << 13
            state ^= state >> 17
            state ^= state << 5
            return UInt8(truncatingIfNeeded: state)
        }
    }

    static func sha256(_ bytes: [UInt8]) -> String { Digest.hex(Digest.sha256(bytes)) }

    static func read(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { [UInt8]($0) }
    }

    /// The temp files (`.NAME.HASH.douctl-part`) in `directory`.
    static func partials(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".douctl-part") }
    }

    // MARK: - the sandbox

    @Test func aPicturePostedToTheSandboxComesBackByteExact() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        let picture = try TemporaryDirectory.file(named: "p.png", bytes: PNGFixture.bytes)
        let posted = try fixture.douctl.run("shuo", "post", "图", "--image", picture)
        #expect(posted.status == 0, "\(posted)")
        let src = try #require(try posted.json()["attachments"]?[0]?["media"]?[0]?["src"]?.stringValue)
        let path = String(src.dropFirst(fixture.sandbox.baseURL.count))  // the same picture as a PATH under api_base

        let directory = TemporaryDirectory.make(prefix: "dl-sandbox")
        let result = try fixture.douctl.run("download", src, "-d", directory)
        #expect(result.status == 0, "\(result)")
        let line = try #require(try result.lines().first)
        let saved = try #require(line["path"]?.stringValue)
        #expect(saved == directory + "/" + FileIO.baseName(src))
        #expect(Self.read(saved) == PNGFixture.bytes)
        #expect(line["url"]?.stringValue == src)
        #expect(line["ok"]?.boolValue == true)
        #expect(line["bytes"]?.intValue == PNGFixture.bytes.count)
        #expect(line["mime"]?.stringValue == "image/png")
        #expect(line["sha256"]?.stringValue == Self.sha256(PNGFixture.bytes))
        #expect(Self.partials(directory).isEmpty)

        let byPath = try fixture.douctl.run("download", path, "-o", directory + "/again.png")
        #expect(byPath.status == 0, "\(byPath)")
        #expect(Self.read(directory + "/again.png") == PNGFixture.bytes)
        #expect(try byPath.lines().first?["url"]?.stringValue == src)
    }

    @Test func shuoGetSavesTheStatusPictures() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        let picture = try TemporaryDirectory.file(named: "p.png", bytes: PNGFixture.bytes)
        let posted = try fixture.douctl.run("shuo", "post", "有图", "--image", picture)
        let id = try #require(try posted.json()["id"]?.intValue)
        let directory = TemporaryDirectory.make(prefix: "dl-shuo") + "/pics"  // created on demand

        let result = try fixture.douctl.run("shuo", "get", String(id), "--save-images", directory)
        #expect(result.status == 0, "\(result)")
        #expect(try result.json()["text"]?.stringValue == "有图", "stdout is the status alone")
        let reports = try result.stderr.split(separator: "\n").map { try JSONParser.parse(String($0)) }
        #expect(reports.count == 1)
        let saved = try #require(reports.first?["path"]?.stringValue)
        #expect(saved.hasPrefix(directory + "/"))
        #expect(Self.read(saved) == PNGFixture.bytes)
        #expect(reports.first?["sha256"]?.stringValue == Self.sha256(PNGFixture.bytes))

        // Again: the file exists, so it is refused (exit 3), and stdout is still the status.
        let again = try fixture.douctl.run("shuo", "get", String(id), "--save-images", directory)
        #expect(again.status == 3, "\(again)")
        #expect(try again.json()["id"]?.intValue == id)
        #expect(again.stderr.contains(#""ok":false"#))

        // A status without pictures saves nothing and succeeds.
        let plain = try fixture.douctl.run("shuo", "post", "无图")
        let plainID = try #require(try plain.json()["id"]?.intValue)
        let none = try fixture.douctl.run("shuo", "get", String(plainID), "--save-images", directory)
        #expect(none.status == 0, "\(none)")
        #expect(none.stderr.isEmpty)
    }

    @Test func shuoGetSavesACodingTweetsPictures() throws {
        let fixture = try SandboxFixture()
        try fixture.douctl.run("profile", "use", "coding-sandbox")
        let tokens = fixture.sandbox.issueCodingToken(user: "coder")
        try Credentials.write(["coding-sandbox": tokens.accessToken], in: fixture.douctl.configDirectory,
                              expiresAt: "2099-01-01T00:00:00Z", refreshTokens: ["coding-sandbox": tokens.refreshToken])
        let picture = try TemporaryDirectory.file(named: "pic.png", bytes: PNGFixture.bytes)
        let posted = try fixture.douctl.run("shuo", "post", "冒泡", "--image", picture)
        #expect(posted.status == 0, "\(posted)")
        let id = try #require(try posted.json()["id"]?.scalarText)
        let directory = TemporaryDirectory.make(prefix: "dl-coding")

        let result = try fixture.douctl.run("shuo", "get", id, "--save-images", directory)
        #expect(result.status == 0, "\(result)")
        let report = try JSONParser.parse(result.errorLine)
        let saved = try #require(report["path"]?.stringValue)
        #expect(Self.read(saved) == PNGFixture.bytes)
        #expect(report["mime"]?.stringValue == "image/png")
    }

    // MARK: - naming and destinations

    @Test func namesComeFromContentDispositionThenTheURL() throws {
        let server = try TestServer { received in
            var headers: [(String, String)] = [("Content-Type", "text/plain")]
            switch received.path {
            case "/cd": headers.append(("Content-Disposition", #"attachment; filename="fallback.txt"; filename*=UTF-8''%E4%BD%A0%E5%A5%BD.txt"#))
            case "/evil": headers.append(("Content-Disposition", #"attachment; filename="../../.bashrc""#))
            case "/dots": headers.append(("Content-Disposition", #"attachment; filename="..""#))
            default: break
            }
            return HTTPServerResponse(status: 200, headers: headers, body: .bytes(Array("body of \(received.path)".utf8)))
        }
        let directory = TemporaryDirectory.make(prefix: "dl-names")
        let base = server.baseURL
        let result = try Douctl().run("download", base + "/cd", base + "/evil", base + "/dots", base + "/files/report%20final.pdf?x=1#top", base + "/", "-d", directory)
        #expect(result.status == 0, "\(result)")
        let paths = try result.lines().map { $0["path"]?.stringValue }
        #expect(paths == ["你好.txt", "bashrc", "dots", "report final.pdf", "download"].map { directory + "/" + $0 })
        #expect(Self.read(directory + "/bashrc") == Array("body of /evil".utf8))
        #expect(Self.read(directory + "/report final.pdf") == Array("body of /files/report final.pdf".utf8))
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: directory)).count == 5, "nothing else was written")
    }

    @Test func outputFileStdoutAndTheCurrentDirectory() throws {
        let body = Self.content(300_000)
        let server = try TestServer { _ in .bytes(200, body) }
        let directory = TemporaryDirectory.make(prefix: "dl-output")
        let file = try Douctl().run("download", server.baseURL + "/x.bin", "-o", directory + "/named.bin")
        #expect(file.status == 0, "\(file)")
        #expect(Self.read(directory + "/named.bin") == body)
        #expect(try file.lines().first?["path"]?.stringValue == directory + "/named.bin")

        let stdout = try Douctl().run("download", server.baseURL + "/x.bin", "-o", "-")
        #expect(stdout.status == 0)
        #expect(stdout.stdout == body, "the body alone, no JSON line")

        let here = try runIn(directory, ["download", server.baseURL + "/plain.bin"])
        #expect(here.status == 0, "\(here)")
        #expect(Self.read(directory + "/plain.bin") == body)

        let twoToOne = try Douctl().run("download", server.baseURL + "/a", server.baseURL + "/b", "-o", directory + "/one")
        #expect(twoToOne.status == 2)
        #expect(twoToOne.errorLine.contains("-o names one file"))
        let both = try Douctl().run("download", server.baseURL + "/a", "-o", "f", "-d", directory)
        #expect(both.status == 2)
        let nowhere = try Douctl().run("download", server.baseURL + "/a", "-o", directory + "/missing/f")
        #expect(nowhere.status == 3)
        #expect(nowhere.errorLine.contains("no such directory"), "\(nowhere)")
        let scheme = try Douctl().run("download", "ftp://127.0.0.1/x", "-d", directory)
        #expect(scheme.status == 2, "\(scheme)")
    }

    @Test func anExistingFileIsNeverReplacedWithoutForce() throws {
        let server = try TestServer { _ in .bytes(200, Array("new".utf8)) }
        let directory = TemporaryDirectory.make(prefix: "dl-clobber")
        let target = directory + "/f.txt"
        try Data("old".utf8).write(to: URL(fileURLWithPath: target))

        for arguments in [["-d", directory], ["-o", target]] {
            let refused = try Douctl().run(["download", server.baseURL + "/f.txt"] + arguments)
            #expect(refused.status == 3, "\(refused)")
            #expect(refused.errorLine.contains("already exists"))
            let line = try #require(try refused.lines().first)
            #expect(line["ok"]?.boolValue == false)
            #expect(line["exit"]?.intValue == 3)
            #expect(Self.read(target) == Array("old".utf8))
            #expect(Self.partials(directory).isEmpty)
        }
        let forced = try Douctl().run("download", server.baseURL + "/f.txt", "-d", directory, "--force")
        #expect(forced.status == 0, "\(forced)")
        #expect(Self.read(target) == Array("new".utf8))
    }

    @Test func parallelDownloadsReportInTheOrderGiven() throws {
        let active = Gauge()
        let server = try TestServer { received in
            active.enter()
            defer { active.leave() }
            let number = Int(received.path.dropFirst(2)) ?? 0  // "/f3"
            Thread.sleep(forTimeInterval: 0.1 * Double(6 - number))  // earlier files finish later
            return .bytes(200, Array(repeating: UInt8(number), count: 10_000 * number))
        }
        let directory = TemporaryDirectory.make(prefix: "dl-parallel")
        let urls = (1...5).map { server.baseURL + "/f\($0)" }
        let result = try Douctl().run(["download"] + urls + ["--parallel", "4", "-d", directory])
        #expect(result.status == 0, "\(result)")
        let lines = try result.lines()
        #expect(lines.map { $0["url"]?.stringValue } == urls)
        #expect(lines.map { $0["bytes"]?.intValue } == [10_000, 20_000, 30_000, 40_000, 50_000])
        #expect(active.maximum >= 3, "downloads ran concurrently")
        #expect(result.stderr.isEmpty, "no progress without a terminal")
        for number in 1...5 {
            #expect(Self.read(directory + "/f\(number)") == Array(repeating: UInt8(number), count: 10_000 * number))
        }
    }

    @Test func httpErrorsMapToExitCodesAndTheOthersStillRun() throws {
        let server = try TestServer { received in
            received.path == "/missing"
                ? .json(404, #"{"msg":"uri_not_found","code":1001,"request":"GET /missing"}"#)
                : .bytes(200, Array("ok".utf8))
        }
        let directory = TemporaryDirectory.make(prefix: "dl-errors")
        let result = try Douctl().run("download", server.baseURL + "/missing", server.baseURL + "/fine", "-d", directory)
        #expect(result.status == 5, "\(result)")
        let lines = try result.lines()
        #expect(lines.map { $0["ok"]?.boolValue } == [false, true])
        #expect(lines.first?["exit"]?.intValue == 5)
        #expect(lines.first?["error"]?.stringValue?.contains("uri_not_found") == true)
        #expect(!FileManager.default.fileExists(atPath: directory + "/missing"))
        #expect(Self.partials(directory).isEmpty)
    }

    @Test func a206ForTheWholeFileIsAcceptedAndAnyOtherRangeRefused() throws {
        let server = try TestServer { received in
            let range = received.path == "/whole" ? "bytes 0-2/3" : "bytes 1-2/3"
            return HTTPServerResponse(status: 206, headers: [("Content-Range", range)], body: .bytes(Array("abc".utf8)))
        }
        let directory = TemporaryDirectory.make(prefix: "dl-206")
        let result = try Douctl().run("download", server.baseURL + "/whole", server.baseURL + "/part", "-d", directory)
        #expect(result.status == 8, "\(result)")
        #expect(try result.lines().map { $0["ok"]?.boolValue } == [true, false])
        #expect(Self.read(directory + "/whole") == Array("abc".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["whole"])
    }

    // MARK: - tokens

    @Test func theTokenGoesToTheAPIOriginOnly() throws {
        let body = Array("picture".utf8)
        let api = try TestServer { _ in .bytes(200, body) }
        let elsewhere = try TestServer { _ in .bytes(200, body) }
        let douctl = Douctl(environment: ["DOUCTL_TOKEN": "secret-token-1"])
        try writeConfig(douctl, profiles: [
            "header": #"{"preset":"sandbox","api_base":"\#(api.baseURL)"}"#,
            "query": #"{"preset":"sandbox","api_base":"\#(api.baseURL)","token_placement":"query"}"#,
        ])
        let directory = TemporaryDirectory.make(prefix: "dl-token")
        for profile in ["header", "query"] {
            let result = try douctl.run("--profile", profile, "download", "/own/\(profile).jpg", elsewhere.baseURL + "/other/\(profile)-elsewhere.jpg", "-d", directory)
            #expect(result.status == 0, "\(result)")
        }
        let own = api.received
        #expect(own.count == 2)
        #expect(own.first?.header("Authorization") == "Bearer secret-token-1")
        #expect(own.last?.queryValue("access_token") == "secret-token-1")
        #expect(elsewhere.received.count == 2)
        for request in elsewhere.received {
            #expect(request.header("Authorization") == nil)
            #expect(request.queryValue("access_token") == nil)
            #expect(!request.target.contains("secret"))
        }
    }

    @Test func anExpiredTokenIsRefreshedAndTheDownloadReplayed() throws {
        let fixture = try SandboxFixture()
        let before = try fixture.login()
        fixture.sandbox.expireAccessTokens()
        let directory = TemporaryDirectory.make(prefix: "dl-refresh")
        let result = try fixture.douctl.run("download", "/v2/user/~me", "-o", directory + "/me.json")
        #expect(result.status == 0, "\(result)")
        let trail = fixture.sandbox.requests.map { "\($0.method) \($0.path) \($0.status)" }
        #expect(trail == ["GET /v2/user/~me 400", "POST /service/auth2/token 200", "GET /v2/user/~me 200"])
        let saved = try JSONParser.parse(Self.read(directory + "/me.json") ?? [])
        #expect(saved["uid"]?.stringValue == "ahbei", "the error reply never reached the file")
        #expect(!fixture.credentials.contains(before.access))
    }

    @Test func noLoginIsNeeded() throws {
        let fixture = try SandboxFixture()  // a sandbox profile, never logged in
        let server = try TestServer { _ in .bytes(200, Array("x".utf8)) }
        let result = try fixture.douctl.run("download", server.baseURL + "/x", "-d", TemporaryDirectory.make(prefix: "dl-anon"))
        #expect(result.status == 0, "\(result)")
        #expect(server.received.first?.header("Authorization") == nil)
    }

    // MARK: - resuming

    @Test func aResumedDownloadIsByteExactAfterAResetMidTransfer() throws {
        let body = Self.content(1_000_000)
        let server = try RangeServer(body) { request, _ in request == 0 ? 400_000 : nil }  // the first reply dies after 400 KB
        let directory = TemporaryDirectory.make(prefix: "dl-resume")
        let url = server.baseURL + "/data/big.bin"

        let broken = try Douctl().run("download", url, "-d", directory, "--continue", "--no-retry")
        #expect(broken.status == 7, "\(broken)")
        #expect(try broken.lines().first?["ok"]?.boolValue == false)
        #expect(!FileManager.default.fileExists(atPath: directory + "/big.bin"), "never a half-written final file")
        let partial = try #require(Self.partials(directory).first)
        #expect(partial.hasPrefix(".big.bin."))
        let kept = try #require(Self.read(directory + "/" + partial))
        #expect(kept.count > 0 && kept.count <= 400_000)
        #expect(kept == Array(body.prefix(kept.count)))

        let resumed = try Douctl().run("download", url, "-d", directory, "--continue")
        #expect(resumed.status == 0, "\(resumed)")
        #expect(server.server.received.last?.header("Range") == "bytes=\(kept.count)-")
        #expect(Self.read(directory + "/big.bin") == body)
        let line = try #require(try resumed.lines().first)
        #expect(line["sha256"]?.stringValue == Self.sha256(body))
        #expect(line["bytes"]?.intValue == body.count)
        #expect(line["resumed_from"]?.intValue == kept.count)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["big.bin"], "no temp files left")
    }

    @Test func aFileThatChangedMeanwhileIsFetchedWholeNotSpliced() throws {
        let old = Self.content(200_000)
        let new = Array(Self.content(250_000).reversed())
        let version = LockedValue(1)
        let server = try TestServer { received in
            let current = version.value
            let body = current == 1 ? old : new
            let etag = "\"v\(current)\""
            var headers: [(String, String)] = [("Content-Type", "application/octet-stream"), ("ETag", etag)]
            var rest = body[...]
            var status = 200
            if let range = received.header("Range"), received.header("If-Range") == etag,
               let first = Int(range.dropFirst(6).dropLast()), first < body.count {
                status = 206
                rest = body[first...]
                headers.append(("Content-Range", "bytes \(first)-\(body.count - 1)/\(body.count)"))
            }
            let bytes = Array(rest)
            return HTTPServerResponse(status: status, headers: headers, body: .stream(length: Int64(bytes.count)) { writer in
                if current == 1 {  // the first version's reply dies halfway
                    try writer.write(Array(bytes.prefix(100_000)))
                    Thread.sleep(forTimeInterval: 0.3)
                    try writer.abortConnection()
                }
                try writer.write(bytes)
            })
        }
        let directory = TemporaryDirectory.make(prefix: "dl-ifrange")
        let url = server.baseURL + "/doc.bin"
        let broken = try Douctl().run("download", url, "-d", directory, "--continue", "--no-retry")
        #expect(broken.status == 7, "\(broken)")
        version.withLock { $0 = 2 }
        let result = try Douctl().run("download", url, "-d", directory, "--continue")
        #expect(result.status == 0, "\(result)")
        #expect(server.received.last?.header("If-Range") == "\"v1\"")
        #expect(server.received.last?.header("Range") != nil)
        #expect(Self.read(directory + "/doc.bin") == new)
        #expect(try result.lines().first?["sha256"]?.stringValue == Self.sha256(new))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["doc.bin"], "no temp files left")
    }

    @Test func withoutContinueABrokenDownloadKeepsItsBytesForContinue() throws {
        let body = Self.content(500_000)
        let server = try RangeServer(body) { request, _ in request == 0 ? 100_000 : nil }  // the first reply dies
        let directory = TemporaryDirectory.make(prefix: "dl-broken")
        let url = server.baseURL + "/x.bin"
        let result = try Douctl().run("download", url, "-d", directory, "--no-retry")
        #expect(result.status == 7, "\(result)")
        // No final file; the bytes received stay in the temp file, and stderr says how to go on.
        let partial = try #require(Self.partials(directory).first)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == [partial])
        let kept = try #require(Self.read(directory + "/" + partial))
        #expect(kept.count > 0 && kept == Array(body.prefix(kept.count)))
        #expect(result.stderr.contains("douctl: \(url): kept the \(kept.count) bytes received in \(directory)/\(partial); run the same command with --continue to resume it"),
                "\(result.stderr)")
        // No validator: --continue asks for the rest with Range alone, and checks Content-Range.
        let resumed = try Douctl().run("download", url, "-d", directory, "--continue")
        #expect(resumed.status == 0, "\(resumed)")
        #expect(server.server.received.last?.header("Range") == "bytes=\(kept.count)-")
        #expect(Self.read(directory + "/x.bin") == body)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["x.bin"])
    }

    @Test func aRetryAfterAResetStartsOverCleanly() throws {
        let body = Self.content(600_000)
        let server = try RangeServer(body) { request, _ in request == 0 ? 250_000 : nil }
        let directory = TemporaryDirectory.make(prefix: "dl-retry")
        let result = try Douctl().run("download", server.baseURL + "/x.bin", "-d", directory)
        #expect(result.status == 0, "\(result)")
        #expect(server.server.received.count == 2)
        #expect(Self.read(directory + "/x.bin") == body)
        #expect(try result.lines().first?["sha256"]?.stringValue == Self.sha256(body))
    }

    @Test func aServerIgnoringRangeRestartsFromZero() throws {
        let body = Self.content(300_000)
        let server = try RangeServer(body, honoursRange: false) { request, _ in request == 0 ? 120_000 : nil }
        let directory = TemporaryDirectory.make(prefix: "dl-norange")
        let url = server.baseURL + "/x.bin"
        _ = try Douctl().run("download", url, "-d", directory, "--continue", "--no-retry")
        #expect(Self.partials(directory).count == 1)
        let result = try Douctl().run("download", url, "-d", directory, "--continue")
        #expect(result.status == 0, "\(result)")
        #expect(server.server.received.last?.header("Range") != nil)
        #expect(Self.read(directory + "/x.bin") == body)
        #expect(try result.lines().first?["sha256"]?.stringValue == Self.sha256(body))
        #expect(try result.lines().first?["resumed_from"] == nil)
    }

    @Test func a416ForACompletePartialFinishesIt() throws {
        let body = Self.content(50_000)
        let server = try RangeServer(body) { _, _ in nil }
        let directory = TemporaryDirectory.make(prefix: "dl-416")
        let url = server.baseURL + "/x.bin"
        // A previous run that stopped after the last byte, before the rename.
        let tag = Digest.hex(Array(Digest.sha256(Array(url.utf8)).prefix(4)))
        try Data(body).write(to: URL(fileURLWithPath: "\(directory)/.x.bin.\(tag).douctl-part"))
        let result = try Douctl().run("download", url, "-d", directory, "--continue")
        #expect(result.status == 0, "\(result)")
        #expect(server.server.received.first?.header("Range") == "bytes=50000-")
        #expect(Self.read(directory + "/x.bin") == body)
        #expect(try result.lines().first?["sha256"]?.stringValue == Self.sha256(body))
        #expect(Self.partials(directory).isEmpty)
    }

    // MARK: - progress

    @Test func progressOnlyOnATerminalAndNeverOnStdout() throws {
        let server = try TestServer { _ in
            HTTPServerResponse(status: 200, headers: [("Content-Type", "application/octet-stream")], body: .stream(length: 1 << 20) { writer in
                for _ in 0..<4 {
                    try writer.write([UInt8](repeating: 1, count: 1 << 18))
                    Thread.sleep(forTimeInterval: 0.25)
                }
            })
        }
        let directory = TemporaryDirectory.make(prefix: "dl-pty")
        let output = directory + "/stdout.json"
        let command = "\(Douctl.binary) download \(server.baseURL)/big.bin -d \(directory) > \(output)"
        let pty = try runUnderScript(command, environment: Douctl().environment)
        #expect(pty.contains("big.bin"))
        #expect(pty.contains("done, 1.0 MiB"))
        #expect(pty.contains("\u{1B}[2K"), "redrawn in place")
        let stdout = try String(contentsOfFile: output, encoding: .utf8)
        #expect(stdout.hasPrefix(#"{"url":"#))
        #expect(!stdout.contains("\u{1B}"))
        let piped = try Douctl().run("download", server.baseURL + "/big.bin", "-o", directory + "/again.bin")
        #expect(piped.status == 0)
        #expect(piped.stderr.isEmpty, "no progress without a terminal")
    }

    // MARK: - Ctrl-C

    @Test(arguments: [false, true])
    func interruptLeavesNoFinalFileAndKeepsThePartial(resume: Bool) throws {
        let server = try TestServer { _ in
            HTTPServerResponse(status: 200, headers: [("Content-Type", "application/octet-stream")], body: .stream(length: 1_000_000) { writer in
                try writer.write([UInt8](repeating: 7, count: 100_000))
                Thread.sleep(forTimeInterval: 15)  // then the client is interrupted
            })
        }
        let directory = TemporaryDirectory.make(prefix: "dl-interrupt")
        var arguments = ["download", server.baseURL + "/slow.bin", "-d", directory]
        if resume { arguments.append("--continue") }
        let running = try RunningDouctl(Douctl(), arguments)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let partial = Self.partials(directory).first, (Self.read(directory + "/" + partial)?.count ?? 0) >= 100_000 { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        running.kill(SIGINT)
        let result = running.finish(timeout: 10)
        #expect(result.status == 130, "\(result)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/slow.bin"))
        #expect(Self.partials(directory).count == 1, "kept for --continue, with or without it")
        server.stop()
    }

    /// Interrupts `arguments` (writing into `directory`) with `signal` once 100 kB of a slow
    /// reply are on disk; the exit status and the names left in the directory.
    static func stopMidReply(_ arguments: (String, String) -> [String], with signal: Int32) throws -> (status: Int32, left: [String], result: CommandResult) {
        let server = try TestServer { _ in
            HTTPServerResponse(status: 200, headers: [("Content-Type", "application/octet-stream")], body: .stream(length: 13_000_000) { writer in
                try writer.write([UInt8](repeating: 7, count: 100_000))
                Thread.sleep(forTimeInterval: 15)  // then the client is stopped
            })
        }
        defer { server.stop() }
        let directory = TemporaryDirectory.make(prefix: "dl-signal")
        let running = try RunningDouctl(Douctl(), arguments(server.baseURL + "/slow.bin", directory))
        let deadline = Date().addingTimeInterval(20)
        func onDisk() -> Int {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            return names.map { Self.read(directory + "/" + $0)?.count ?? 0 }.max() ?? 0
        }
        while Date() < deadline, onDisk() < 100_000 { Thread.sleep(forTimeInterval: 0.05) }
        running.kill(signal)
        let result = running.finish(timeout: 20)
        let left = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
        return (result.status, left, result)
    }

    /// A closed terminal or SSH session (SIGHUP) stops douctl the way SIGTERM and Ctrl-C
    /// do: exit 130, and `download` leaves what SIGTERM leaves, `api -o` no temp file.
    /// Before: killed by the signal, a 13 MB download's `.NAME.HASH.douctl-part` or `api
    /// -o`'s `.out.bin.tmp-…` left behind.
    @Test func hangupStopsLikeSIGTERM() throws {
        let download: (String, String) -> [String] = { ["download", $0, "-d", $1] }
        let hangup = try Self.stopMidReply(download, with: SIGHUP)
        let terminate = try Self.stopMidReply(download, with: SIGTERM)
        #expect(terminate.status == 130, "\(terminate.result)")
        #expect(hangup.status == terminate.status, "\(hangup.result)")
        #expect(hangup.left.map { $0.hasSuffix(".douctl-part") } == terminate.left.map { $0.hasSuffix(".douctl-part") },
                "SIGHUP left \(hangup.left), SIGTERM \(terminate.left)")
        #expect(!hangup.left.contains("slow.bin"))

        let api: (String, String) -> [String] = { ["api", $0, "-o", $1 + "/out.bin"] }
        let apiHangup = try Self.stopMidReply(api, with: SIGHUP)
        #expect(apiHangup.status == 130, "\(apiHangup.result)")
        #expect(apiHangup.left.isEmpty, "left: \(apiHangup.left)")
    }

    /// `nohup douctl …` asked to outlive the terminal: a SIGHUP it ignores stays ignored,
    /// and the download finishes whole.
    @Test func hangupUnderNohupIsStillIgnored() throws {
        let nohup = try Tools.require("nohup")
        let release = DispatchSemaphore(value: 0)
        let server = try TestServer { _ in
            HTTPServerResponse(status: 200, headers: [("Content-Type", "application/octet-stream")], body: .stream(length: 200_000) { writer in
                try writer.write([UInt8](repeating: 7, count: 100_000))
                _ = release.wait(timeout: .now() + 30)
                try writer.write([UInt8](repeating: 8, count: 100_000))
            })
        }
        defer { server.stop() }
        let directory = TemporaryDirectory.make(prefix: "dl-nohup")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: nohup)
        process.arguments = [Douctl.binary, "download", server.baseURL + "/kept.bin", "-d", directory]
        process.environment = Douctl().environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.runAlone()
        let deadline = Date().addingTimeInterval(20)
        func onDisk() -> Int {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            return names.map { Self.read(directory + "/" + $0)?.count ?? 0 }.max() ?? 0
        }
        while Date() < deadline, onDisk() < 100_000 { Thread.sleep(forTimeInterval: 0.05) }
        kill(process.processIdentifier, SIGHUP)
        Thread.sleep(forTimeInterval: 0.5)
        release.signal()
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0, "status \(process.terminationStatus)")
        #expect(Self.read(directory + "/kept.bin")?.count == 200_000)
    }

    // MARK: - helpers

    /// Runs douctl with `directory` as its working directory.
    func runIn(_ directory: String, _ arguments: [String]) throws -> Douctl.Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Douctl.binary)
        process.arguments = arguments
        process.environment = Douctl().environment
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let stdout = Pipe(), stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        try process.runAlone()
        let collected = Collector(stdout: stdout.fileHandleForReading, stderr: stderr.fileHandleForReading)
        process.waitUntilExit()
        let (out, err) = collected.finish()
        return Douctl.Result(status: process.terminationStatus, stdout: out, stderrBytes: err)
    }

    func writeConfig(_ douctl: Douctl, profiles: [String: String]) throws {
        let entries = profiles.map { #""\#($0.key)":\#($0.value)"# }.joined(separator: ",")
        let path = douctl.configDirectory + "/config.json"
        try Data(#"{"profiles":{\#(entries)}}"#.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
    }
}

/// Serves one body with `Range: bytes=N-` support (206 / 416, or a plain 200 when
/// `honoursRange` is false); `cut(requestNumber, offset)` may end a reply after that many
/// body bytes with a connection reset.
final class RangeServer: Sendable {
    let server: TestServer
    var baseURL: String { server.baseURL }

    init(_ body: [UInt8], honoursRange: Bool = true, cut: @escaping @Sendable (Int, Int) -> Int?) throws {
        let count = LockedValue(0)
        server = try TestServer { received in
            let number = count.withLock { value -> Int in
                defer { value += 1 }
                return value
            }
            var start = 0
            var status = 200
            var headers: [(String, String)] = [("Content-Type", "application/octet-stream"), ("Accept-Ranges", "bytes")]
            if honoursRange, let range = received.header("Range"), range.hasPrefix("bytes="), range.hasSuffix("-"),
               let first = Int(range.dropFirst(6).dropLast()) {
                guard first < body.count else {
                    return HTTPServerResponse(status: 416, headers: [("Content-Range", "bytes */\(body.count)")])
                }
                start = first
                status = 206
                headers.append(("Content-Range", "bytes \(first)-\(body.count - 1)/\(body.count)"))
            }
            let rest = Array(body[start...])
            let limit = cut(number, start)
            return HTTPServerResponse(status: status, headers: headers, body: .stream(length: Int64(rest.count)) { writer in
                guard let limit, limit < rest.count else {
                    try writer.write(rest)
                    return
                }
                try writer.write(Array(rest.prefix(limit)))
                Thread.sleep(forTimeInterval: 0.3)  // let the client read them before the reset
                try writer.abortConnection()
            })
        }
    }
}
