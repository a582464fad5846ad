import DouctlJSON
import DouctlSandbox
import DouctlTestSupport
import Foundation
import Testing

/// The built douctl against a sandbox that misbehaves on purpose (`--fault`): whatever the
/// server does, douctl ends with the documented exit code and one clear error line, never
/// prints half a JSON document, never replays a POST, and never damages the stored tokens.
/// Fault draws are seeded, so every run sees the same sequence.
@Suite("fault battery")
struct FaultBatteryTests {
    func fixture(_ spec: String, seed: UInt64 = 13, _ configure: (inout SandboxConfiguration) -> Void = { _ in }) throws -> SandboxFixture {
        let fixture = try SandboxFixture { configuration in
            configuration.faults = (try? SandboxFault.parseList(spec)) ?? []
            configuration.faultSeed = seed
            configure(&configuration)
        }
        #expect(!spec.isEmpty)
        return fixture
    }

    /// A failure is one line on stderr, `douctl: …`, and nothing on stdout.
    func expectCleanFailure(_ result: Douctl.Result, exit: Int32, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == exit, "\(result)", sourceLocation: sourceLocation)
        #expect(result.stdout.isEmpty, "\(result)", sourceLocation: sourceLocation)
        #expect(result.errorLine.hasPrefix("douctl: "), "\(result)", sourceLocation: sourceLocation)
        #expect(!result.errorLine.contains("\n"), "\(result)", sourceLocation: sourceLocation)
    }

    func posts(_ fixture: SandboxFixture) -> [RecordedRequest] {
        fixture.sandbox.requests.filter { $0.method == "POST" && $0.path == "/shuo/v2/statuses/" }
    }

    // MARK: - the server misbehaves

    @Test func a503StormIsRetriedForReadsAndNeverForPosts() throws {
        let fixture = try fixture("503:0.6")
        try fixture.login()
        var outcomes: [Int32] = []
        for _ in 0..<12 {
            let result = try fixture.douctl.run("user", "get", "ahbei")
            if result.status == 0 {
                #expect(try result.json()["uid"]?.stringValue == "ahbei")
            } else {
                // The status decides (issue 22): a 503 is exit 1 whatever its body.
                expectCleanFailure(result, exit: 1)
                #expect(result.errorLine.contains("HTTP 503"), "\(result)")
            }
            outcomes.append(result.status)
        }
        let reads = fixture.sandbox.requests.filter { $0.path == "/v2/user/ahbei" }.map(\.status)
        #expect(reads.count > 12, "503s were retried")
        #expect(reads.count <= 36, "at most three tries each")
        #expect(outcomes.filter { $0 == 0 }.count == reads.filter { $0 == 200 }.count)
        #expect(outcomes.contains(0), "retries got through the storm: \(outcomes)")

        var created = 0
        for index in 0..<8 {
            let result = try fixture.douctl.run("shuo", "post", "风暴 \(index)")
            if result.status == 0 { created += 1 } else { expectCleanFailure(result, exit: 1) }
        }
        #expect(posts(fixture).count == 8, "each POST sent exactly once")
        #expect(posts(fixture).filter { $0.status == 200 }.count == created)
    }

    @Test func resetsMidReplyAreNetworkErrorsAndPostsAreNotReplayed() throws {
        let fixture = try fixture("reset:0.5")
        try fixture.login()
        var succeeded = 0
        for _ in 0..<10 {
            let result = try fixture.douctl.run("user", "get", "ahbei")
            if result.status == 0 {
                succeeded += 1
                #expect(try result.json()["uid"]?.stringValue == "ahbei")
            } else {
                expectCleanFailure(result, exit: 7)
            }
        }
        #expect(succeeded > 0)
        #expect(fixture.sandbox.requests.filter { $0.path == "/v2/user/ahbei" }.count > 10, "resets were retried")

        for index in 0..<6 {
            let result = try fixture.douctl.run("shuo", "post", "断开 \(index)")
            if result.status != 0 { expectCleanFailure(result, exit: 7) }
        }
        #expect(posts(fixture).count == 6, "a POST whose reply was cut off is not sent again")
    }

    @Test func truncatedJSONIsExitEightWithNothingOnStdout() throws {
        let fixture = try fixture("truncate")
        try fixture.login()
        fixture.sandbox.seedStatuses(count: 30, user: "ahbei")
        for arguments in [["user", "get", "ahbei"], ["api", "/v2/user/ahbei"], ["api", "/v2/user/ahbei", "--pretty"],
                          ["shuo", "timeline", "--count", "30"], ["api", "/shuo/v2/statuses/home_timeline", "--paginate"]] {
            let result = try fixture.douctl.run(arguments)
            expectCleanFailure(result, exit: 8)
        }
        // A POST that was acted on but whose reply was cut: reported, not replayed.
        let post = try fixture.douctl.run("shuo", "post", "截断")
        expectCleanFailure(post, exit: 8)
        #expect(posts(fixture).count == 1)
    }

    @Test func truncateIsDocumentedAndParsed() throws {
        let help = try Douctl().run("sandbox", "--help").stdoutText
        #expect(help.contains("truncate[:P]"))
        #expect(try SandboxFault.parseList("truncate:0.5,503") == [SandboxFault(.truncate(probability: 0.5)), SandboxFault(.status(503, probability: 1))])
        #expect(try SandboxFault.parse("truncate") == SandboxFault(.truncate(probability: 1)))
        #expect(SandboxFault(.truncate(probability: 0.25)).description == "truncate:0.25")
        #expect(throws: (any Error).self) { try SandboxFault.parse("truncate:2") }
    }

    @Test func latencyWithinTheTimeoutIsFineBeyondItIsANetworkError() throws {
        let slow = try fixture("latency:300ms")
        try slow.login()
        let result = try slow.douctl.run("user", "get", "ahbei")
        #expect(result.status == 0, "\(result)")

        let stalled = try fixture("latency:3s")
        try stalled.login()
        let timedOut = try stalled.douctl.run("--timeout", "0.5", "--no-retry", "user", "get", "ahbei")
        expectCleanFailure(timedOut, exit: 7)
    }

    @Test func slowBodiesArriveWhole() throws {
        let plain = try SandboxFixture()
        try plain.login()
        plain.sandbox.seedStatuses(count: 40, user: "ahbei")
        let expected = try plain.douctl.run("shuo", "timeline", "--count", "40")
        #expect(expected.status == 0, "\(expected)")

        let slow = try fixture("slow-body:40ms")
        try slow.login()
        slow.sandbox.seedStatuses(count: 40, user: "ahbei")
        // Bytes keep moving, so a timeout shorter than the whole reply but longer than any
        // pause does not fire.
        let result = try slow.douctl.run("--timeout", "2", "shuo", "timeline", "--count", "40")
        #expect(result.status == 0, "\(result)")
        let items = try #require(try result.json().arrayValue)
        #expect(items.count == 40)
        #expect(items.count == (try expected.json().arrayValue)?.count)
    }

    // MARK: - a token expires in the middle of a parallel upload

    @Test func tokenExpiringDuringAParallelUploadOf64FilesRefreshesExactlyOnce() throws {
        let fixture = try fixture("latency:30ms")
        try fixture.login()
        let directory = TemporaryDirectory.make(prefix: "upload64")
        let files = (0..<64).map { index -> String in
            let path = directory + "/p\(index).png"
            _ = FileManager.default.createFile(atPath: path, contents: Data(PNGFixture.bytes))
            return path
        }
        // Expire every token once 16 uploads have gone through, while the rest are in flight.
        let expired = LockedFlag()
        let watcher = Thread {
            // Generous: under ThreadSanitizer on a busy machine 64 uploads take minutes.
            let deadline = Date().addingTimeInterval(600)
            while Date() < deadline {
                if fixture.sandbox.requests.filter({ $0.path == "/shuo/v2/statuses/" && $0.status == 200 }).count >= 16 {
                    fixture.sandbox.expireAccessTokens()
                    expired.set()
                    return
                }
                Thread.sleep(forTimeInterval: 0.002)
            }
        }
        watcher.start()
        let result = try fixture.douctl.run(["upload", "--parallel", "8", "--progress", "never"] + files, timeout: 600)
        #expect(expired.value, "the tokens were expired mid-run")
        #expect(result.status == 0, "\(result)")
        let lines = try result.lines()
        #expect(lines.count == 64)
        #expect(lines.map { $0["file"]?.stringValue } == files.map { Optional($0) }, "in the order given")
        #expect(lines.allSatisfy { $0["ok"]?.boolValue == true }, "\(result)")
        let refreshes = fixture.sandbox.requests.filter { request in
            request.path == "/service/auth2/token" && request.form.contains { $0.name == "grant_type" && $0.value == "refresh_token" }
        }
        #expect(refreshes.count == 1, "exactly one refresh for eight workers")
        let uploads = posts(fixture)
        #expect(uploads.filter { $0.status == 200 }.count == 64, "every file succeeds")
        #expect(uploads.contains { $0.status == 400 }, "some uploads met the expired token and were replayed")
        #expect(uploads.filter { $0.status == 400 }.count <= 8, "only those in flight")
        #expect(try JSONParser.parse(fixture.credentials)["profiles"]?["sandbox"]?["refresh_token"]?.stringValue != nil)
    }

    // MARK: - Ctrl-C

    /// Temp files the atomic writer would leave if it were interrupted halfway.
    func leftovers(_ fixture: SandboxFixture) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: fixture.douctl.configDirectory)) ?? []).filter { $0.contains(".tmp") }
    }

    /// Every stdout line is a whole JSON value.
    func expectWholeLines(_ result: Douctl.Result, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.stdout.isEmpty || result.stdout.last == UInt8(ascii: "\n"), "\(result)", sourceLocation: sourceLocation)
        #expect((try? result.lines()) != nil, "\(result)", sourceLocation: sourceLocation)
    }

    @Test func ctrlCDuringAParallelUpload() throws {
        let fixture = try fixture("latency:400ms")
        try fixture.login()
        let before = fixture.credentials
        let directory = TemporaryDirectory.make(prefix: "upload-int")
        let files = (0..<64).map { index -> String in
            let path = directory + "/p\(index).png"
            _ = FileManager.default.createFile(atPath: path, contents: Data(PNGFixture.bytes))
            return path
        }
        let running = try RunningDouctl(fixture.douctl, ["upload", "--parallel", "8", "--progress", "never"] + files)
        let deadline = Date().addingTimeInterval(30)
        while posts(fixture).count < 8 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        running.kill(SIGINT)
        let result = running.finish(timeout: 15)
        #expect(result.status == 130, "\(result)")
        #expect(result.stderr.contains("interrupted"), "\(result)")
        expectWholeLines(result)
        #expect(try result.lines().count < 64)
        #expect(fixture.credentials == before)
        #expect(leftovers(fixture).isEmpty)
    }

    @Test func ctrlCDuringAPaginatedWalk() throws {
        let fixture = try fixture("latency:200ms")
        try fixture.login()
        fixture.sandbox.seedStatuses(count: 400, user: "ahbei")
        let before = fixture.credentials
        for arguments in [["api", "/shuo/v2/statuses/home_timeline", "-f", "count=20", "--paginate"],
                          ["shuo", "timeline", "--count", "20", "--all"]] {
            let running = try RunningDouctl(fixture.douctl, arguments)
            try running.waitForStdout { $0.split(separator: "\n").count >= 20 }
            running.kill(SIGINT)
            let result = running.finish(timeout: 15)
            #expect(result.status == 130, "\(result)")
            #expect(result.errorLine.hasPrefix("douctl: "), "\(result)")
            expectWholeLines(result)
            #expect(try result.lines().count < 400)
        }
        #expect(fixture.credentials == before)
        #expect(leftovers(fixture).isEmpty)
    }

    @Test(arguments: [["--device", "--no-browser"], ["--web", "--no-browser"]])
    func ctrlCDuringLoginKeepsTheStoredCredentials(flow: [String]) throws {
        let fixture = try SandboxFixture { $0.approval = .manual }
        try fixture.login()
        let before = fixture.credentials
        #expect(!before.isEmpty)
        let running = try RunningDouctl(fixture.douctl, ["auth", "login"] + flow, environment: ["BROWSER": "/bin/false"])
        try running.waitForStderr { $0.contains("http://127.0.0.1") }
        Thread.sleep(forTimeInterval: 0.3)
        running.kill(SIGINT)
        let result = running.finish(timeout: 15)
        #expect(result.status == 130, "\(result)")
        // The prompt came first; the last line is the one error line.
        #expect(result.errorLine.split(separator: "\n").last?.hasPrefix("douctl: ") == true, "\(result)")
        #expect(fixture.credentials == before, "the stored credentials are intact")
        #expect(leftovers(fixture).isEmpty)
        #expect(try fixture.douctl.run("user", "me").status == 0)
    }
}

final class LockedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var flag = false
    func set() { lock.lock(); flag = true; lock.unlock() }
    var value: Bool { lock.lock(); defer { lock.unlock() }; return flag }
}
