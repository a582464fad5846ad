#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlCommands
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSandbox
import DouctlSystem
import DouctlTestSupport
import Testing

/// Cancellation and time as values of the context (issue 21): a run gets its own
/// `Cancellation` and `RunClock` through its `ProcessContext`, so Ctrl-C, `--max-time`, a
/// rate-limit wait and a token's lifetime are tested in process, without signals or sleeping.
/// (The signal path itself stays proven by the binary-level tests: `SIGINT`, `--max-time`.)
@Suite("Cancellation and clocks, in process")
struct CancellationCommandTests {
    /// A transport that, like libcurl's (`HTTPClient`), refuses to go on once the run's
    /// cancellation is requested — read from the configuration the session built, so a
    /// pass proves the context's cancellation reached the transport.
    final class CancellableTransport: HTTPTransport, @unchecked Sendable {
        let configuration: HTTPClientConfiguration
        let scripted: ScriptedTransport

        init(_ configuration: HTTPClientConfiguration, _ scripted: ScriptedTransport) {
            self.configuration = configuration
            self.scripted = scripted
        }

        func send(
            _ request: HTTPRequest, progress: ((TransferProgress) -> Void)?, restartSink: (() -> SinkRestart)?,
            head: ((HTTPResponseHead) -> Void)?, sink: (UnsafeRawBufferPointer) -> Bool
        ) throws(TransportError) -> HTTPResponseHead {
            if configuration.cancellation.isRequested { throw .stopped(configuration.cancellation.stopReason) }
            return try scripted.send(request, progress: progress, restartSink: restartSink, head: head, sink: sink)
        }
    }

    static func page(_ start: Int, _ ids: [Int]) -> ScriptedTransport.Answer {
        .json(200, #"{"start":\#(start),"count":2,"total":6,"users":[\#(ids.map { #"{"id":"\#($0)"}"# }.joined(separator: ","))]}"#)
    }

    /// douctl over a scripted API whose run is cancelled for `reason` when page 2 is sent.
    static func walkCancelled(_ reason: Cancellation.Reason) throws -> (CommandResult, ScriptedTransport, Cancellation) {
        let scripted = ScriptedTransport([page(0, [1, 2]), page(2, [3, 4]), page(4, [5, 6])])
        let cancellation = Cancellation()
        scripted.observe = { request in
            if request.url.contains("start=2") { cancellation.request(reason) }
        }
        var douctl = try InProcessDouctl(environment: ["DOUCTL_TOKEN": "t"])
        douctl.configure = { process in
            process.cancellation = cancellation
            process.makeTransport = { CancellableTransport($0, scripted) }
        }
        let result = try douctl.run("user", "followers", "ahbei", "--all", "--count", "2", "--parallel", "1", "--api-base", "http://api.test")
        return (result, scripted, cancellation)
    }

    @Test func aWalkCancelledThroughItsContextExits130AndKeepsWhatItPrinted() throws {
        let (result, scripted, cancellation) = try Self.walkCancelled(.interrupt)
        #expect(result.status == 130, "\(result)")
        // Pages 1 and 2 were answered and printed; page 3 was never sent.
        #expect(try result.lines().compactMap { $0["id"]?.stringValue } == ["1", "2", "3", "4"])
        #expect(scripted.requests.count == 2)
        #expect(scripted.unused == 1)
        #expect(cancellation.reason == .interrupt)
        #expect(!result.stderr.contains("max-time"), "\(result.stderr)")
        // The process's cancellation was never touched.
        #expect(!Cancellation.process.isRequested)
    }

    @Test func aWalkStoppedByTheMaxTimeBudgetIsATimeoutExit7() throws {
        let (result, scripted, _) = try Self.walkCancelled(.deadline(2))
        #expect(result.status == 7, "\(result)")
        #expect(try result.lines().compactMap { $0["id"]?.stringValue } == ["1", "2", "3", "4"])
        #expect(scripted.requests.count == 2)
        #expect(result.errorLine.hasPrefix("douctl: timed out: the command ran longer than --max-time 2s (page 3"), "\(result.errorLine)")
    }

    /// One request, cancelled before it is sent: the exit status says why.
    @Test(arguments: [
        (Cancellation.Reason.interrupt, Int32(130), ""),
        (.deadline(1.5), 7, "douctl: timed out: the command ran longer than --max-time 1.5s"),
        (.deadline(30), 7, "douctl: timed out: the command ran longer than --max-time 30s"),
    ])
    func aCancelledRequestExitsWithTheReasonsStatus(reason: Cancellation.Reason, status: Int32, line: String) throws {
        let scripted = ScriptedTransport([.json(200, #"{"id":"1"}"#)])
        let cancellation = Cancellation()
        cancellation.request(reason)
        var douctl = try InProcessDouctl(environment: ["DOUCTL_TOKEN": "t"])
        douctl.configure = { process in
            process.cancellation = cancellation
            process.makeTransport = { CancellableTransport($0, scripted) }
        }
        let result = try douctl.run("user", "me", "--api-base", "http://api.test")
        #expect(result.status == status, "\(result)")
        #expect(result.stdout.isEmpty)
        #expect(scripted.requests.isEmpty)
        if !line.isEmpty { #expect(result.errorLine == line) }
    }

    /// A transport whose reply breaks off after `delivered` body bytes because the run is
    /// stopped for `reason` (what libcurl's does when Ctrl-C or --max-time strikes mid-body).
    final class StoppedMidBody: HTTPTransport, @unchecked Sendable {
        let cancellation: Cancellation
        let reason: Cancellation.Reason
        init(_ cancellation: Cancellation, _ reason: Cancellation.Reason) {
            self.cancellation = cancellation
            self.reason = reason
        }

        func send(
            _ request: HTTPRequest, progress: ((TransferProgress) -> Void)?, restartSink: (() -> SinkRestart)?,
            head: ((HTTPResponseHead) -> Void)?, sink: (UnsafeRawBufferPointer) -> Bool
        ) throws(TransportError) -> HTTPResponseHead {
            if cancellation.isRequested { throw .stopped(cancellation.stopReason) }
            head?(HTTPResponseHead(status: 200, headers: [HTTPHeader("Content-Length", "10"), HTTPHeader("ETag", "\"e\"")], url: request.url))
            _ = Array("first".utf8).withUnsafeBytes { sink($0) }
            cancellation.request(reason)
            throw .stopped(cancellation.stopReason)
        }
    }

    /// A download stopped mid-body: its JSON line says what the exit says (--max-time: a
    /// timeout, 7; Ctrl-C: 130), and the bytes received stay in the temp file, named.
    @Test(arguments: [(Cancellation.Reason.interrupt, Int32(130), "interrupted"),
                      (.deadline(3), 7, "timed out: the command ran longer than --max-time 3s")])
    func aStoppedDownloadsLineSaysWhyAndWhereItsBytesAre(reason: Cancellation.Reason, status: Int32, error: String) throws {
        let directory = try TemporaryDirectory(prefix: "stopped-download")
        let cancellation = Cancellation()
        var douctl = try InProcessDouctl()
        douctl.configure = { process in
            process.cancellation = cancellation
            process.makeTransport = { _ in StoppedMidBody(cancellation, reason) }
        }
        let result = try douctl.run("download", "http://api.test/f.bin", "-d", directory.path, "--api-base", "http://api.test")
        #expect(result.status == status, "\(result)")
        let line = try #require(try result.lines().first)
        #expect(line["exit"]?.int64Value == Int64(status), "\(line)")
        #expect(line["error"]?.stringValue == error)
        let partial = try #require(line["partial"]?.stringValue)
        #expect(partial.hasPrefix(directory.path + "/.f.bin.") && partial.hasSuffix(".douctl-part"))
        #expect(line["partial_bytes"]?.int64Value == 5)
        #expect(try FileIO.readFile(partial) == Array("first".utf8))
        #expect((try? FileIO.readFile(partial + "-validator")) == Array("\"e\"".utf8), "saved for If-Range")
        #expect(result.stderr.contains("douctl: http://api.test/f.bin: kept the 5 bytes received in \(partial); run the same command with --continue to resume it"),
                "\(result.stderr)")
        #expect(result.stderr.contains("interrupted") == (status == 130), "\(result.stderr)")
    }

    @Test func cancellationReasonsAndTheDeadlineMessage() {
        let cancellation = Cancellation()
        #expect(!cancellation.isRequested && cancellation.reason == nil && cancellation.deadlineMessage == nil)
        cancellation.request()
        #expect(cancellation.isRequested && cancellation.reason == .interrupt && !cancellation.deadlineExpired)
        // The deadline wins: however the command unwound, a spent budget is a timeout.
        cancellation.request(.deadline(8))
        #expect(cancellation.reason == .deadline(8))
        #expect(cancellation.deadlineMessage == "the command ran longer than --max-time 8s")
        cancellation.reset()
        #expect(!cancellation.isRequested && cancellation.reason == nil)
    }

    // MARK: - the clock

    /// `--wait-on-rate-limit` waits on the context's clock: with a virtual one the 30 s of
    /// Retry-After pass at once, and the wait is asserted on instead of timed.
    @Test func theRateLimitWaitUsesTheContextsClock() throws {
        let scripted = ScriptedTransport([
            .json(429, #"{"msg":"rate_limit_exceeded2","code":112,"request":"GET /v2/user/~me"}"#, headers: [HTTPHeader("Retry-After", "30")]),
            .json(200, #"{"id":"1000001","uid":"ahbei","name":"阿北"}"#),
        ])
        let clock = VirtualClock()
        var douctl = try InProcessDouctl(environment: ["DOUCTL_TOKEN": "t"], transport: scripted)
        douctl.configure = { $0.clock = clock.run }
        let result = try douctl.run("user", "me", "--wait-on-rate-limit", "--no-retry", "--api-base", "http://api.test")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == #"{"id":"1000001","uid":"ahbei","name":"阿北"}"# + "\n")
        #expect(clock.waits == [30])
        #expect(clock.now == 1_800_000_030)
        #expect(result.stderr == "douctl: rate limited (Retry-After: 30; before try 2); waiting 30s\n")
        #expect(scripted.requests.count == 2)
    }

    /// A reset announced as a date (`Retry-After:` an HTTP-date) is counted from the
    /// context's clock, as the wait is. Before issue 31 the client read the system's clock
    /// beside the injected one: on a virtual clock "30 s from now" was weeks away, and the
    /// run gave up, exit 6.
    @Test func aRetryAfterDateIsCountedOnTheContextsClock() throws {
        let clock = VirtualClock()
        let date = HTTPDate.format(secondsSinceEpoch: time_t(clock.now + 30))
        let scripted = ScriptedTransport([
            .json(429, #"{"msg":"rate_limit_exceeded2","code":112,"request":"GET /v2/user/~me"}"#, headers: [HTTPHeader("Retry-After", date)]),
            .json(200, #"{"id":"1000001","uid":"ahbei","name":"阿北"}"#),
        ])
        var douctl = try InProcessDouctl(environment: ["DOUCTL_TOKEN": "t"], transport: scripted)
        douctl.configure = { $0.clock = clock.run }
        let result = try douctl.run("user", "me", "--wait-on-rate-limit", "--no-retry", "--api-base", "http://api.test")
        #expect(result.status == 0, "\(result)")
        #expect(clock.waits == [30])
        #expect(scripted.requests.count == 2)
    }

    /// A stored token's lifetime is read on the context's clock: expired there, it is
    /// refreshed before the request, and `auth status` calls it expired (before issue 31
    /// both read the system's clock, where it had a month left).
    @Test func aStoredTokenExpiresOnTheContextsClock() throws {
        let clock = VirtualClock()
        let scripted = ScriptedTransport([
            .json(200, #"{"access_token":"fresh","refresh_token":"r2","expires_in":3600,"token_type":"Bearer"}"#),
            .json(200, #"{"id":"1000001","uid":"ahbei","name":"阿北"}"#),
        ])
        var douctl = try InProcessDouctl(transport: scripted)
        douctl.configure = { $0.clock = clock.run }
        try SandboxProfiles.write(base: "http://api.test", in: douctl.configDirectory)
        try Credentials.write(["sandbox": "stale"], in: douctl.configDirectory, expiresAt: Timestamp.rfc3339(clock.now - 60), refreshTokens: ["sandbox": "r1"])
        let status = try douctl.run("auth", "status", "--no-check", "--json")
        #expect(try status.json()["expired"]?.boolValue == true, "\(status)")
        let me = try douctl.run("user", "me")
        #expect(me.status == 0, "\(me)")
        #expect(scripted.requests.first?.url == "http://api.test/service/auth2/token", "refreshed first")
        #expect(scripted.requests.last?.header("Authorization") == "Bearer fresh")
    }

    /// A run cancelled during the wait does not send the request again.
    @Test func aCancelledRateLimitWaitSendsNothingMore() throws {
        let scripted = ScriptedTransport([
            .json(429, #"{"msg":"rate_limit_exceeded2","code":112,"request":"GET /v2/user/~me"}"#, headers: [HTTPHeader("Retry-After", "30")]),
        ])
        let cancellation = Cancellation()
        // The clock's wait is where Ctrl-C arrives.
        let clock = RunClock(now: { 1_800_000_000 }, sleep: { _, _ in cancellation.request() })
        var douctl = try InProcessDouctl(environment: ["DOUCTL_TOKEN": "t"], transport: scripted)
        douctl.configure = { process in
            process.clock = clock
            process.cancellation = cancellation
        }
        let result = try douctl.run("user", "me", "--wait-on-rate-limit", "--no-retry", "--api-base", "http://api.test")
        #expect(result.status == 130, "\(result)")
        #expect(scripted.requests.count == 1)
        #expect(result.stdout.isEmpty)
    }

    // MARK: - the sandbox's clock

    /// The sandbox's tokens expire on its clock: advanced past the lifetime, the stored
    /// token is refused as expired, and douctl refreshes and replays — no sleeping.
    @Test func aSandboxTokenExpiresWhenItsClockIsAdvanced() throws {
        let clock = VirtualClock()
        var configuration = SandboxConfiguration()
        configuration.tokenTTL = 60
        configuration.clock = SandboxClock(now: clock.read)
        let run = try SandboxRun(configuration: configuration)
        defer { run.stop() }
        let token = try run.login()
        func refreshes() -> Int {
            run.sandbox.requests.filter { request in
                request.form.contains { $0.name == "grant_type" && $0.value == "refresh_token" }
            }.count
        }

        clock.advance(59)
        let fresh = try run.douctl.run("user", "me")
        #expect(fresh.status == 0, "\(fresh)")
        #expect(refreshes() == 0)

        clock.advance(2)
        let expired = try run.douctl.run("user", "me")
        #expect(expired.status == 0, "\(expired)")
        #expect(try expired.json()["uid"]?.stringValue == "ahbei")
        #expect(refreshes() == 1)
        let stored = try JSONParser.parse(FileIO.readFile(run.douctl.configDirectory + "/credentials.json"))
        #expect(stored["profiles"]?["sandbox"]?["access_token"]?.stringValue != token)
    }

    // MARK: - a body from standard input (issue 30)

    /// A stdin that was closed when douctl started (it holds /dev/null) is no body: exit 3,
    /// one line naming the option, nothing sent, whatever the descriptor would read.
    @Test(arguments: [
        (["--input", "-"], "--input -"), (["-F", "k=@-"], "-F k=@-"), (["--attach", "k=-"], "--attach k=-"),
    ])
    func aClosedStdinIsRefusedForABody(body: [String], named: String) throws {
        let scripted = ScriptedTransport([.json(200, "{}")])
        var douctl = try InProcessDouctl(environment: ["DOUCTL_TOKEN": "t"], transport: scripted)
        douctl.configure = { $0.standardInputClosed = true }
        let result = try douctl.run(["api", "-X", "POST", "/x"] + body + ["--api-base", "http://api.test"])
        #expect(result.status == 3, "\(result)")
        #expect(result.stderr == "douctl: \(named) reads standard input, which is closed (<&-); nothing was sent\n")
        #expect(scripted.requests.isEmpty)
    }

    /// A pipe whose writer stays silent: the read of a body from it ends when the run is
    /// stopped (here the deadline, requested from another thread), exit 7, nothing sent.
    /// (The writer's end is closed after 20 s, so a read that ignored the stop would end
    /// then, sending an empty body.)
    @Test(arguments: [["--input", "-"], ["-F", "k=@-"], ["--attach", "k=-"]])
    func aStdinBodyReadStopsWhenTheRunIsStopped(body: [String]) throws {
        let scripted = ScriptedTransport([.json(200, "{}")])
        let pipe = try FileIO.makePipe()
        defer { close(pipe.read) }
        let cancellation = Cancellation()
        try startDetachedThread(stackSize: 64 << 10) {
            usleep(200_000)
            cancellation.request(.deadline(2))
            usleep(20_000_000)
            close(pipe.write)
        }
        var douctl = try InProcessDouctl(environment: ["DOUCTL_TOKEN": "t"], transport: scripted)
        douctl.configure = { process in
            process.standardInput = pipe.read
            process.cancellation = cancellation
        }
        let result = try douctl.run(["api", "-X", "POST", "/x"] + body + ["--api-base", "http://api.test"])
        #expect(result.status == 7, "\(result)")
        #expect(result.errorLine == "douctl: timed out: the command ran longer than --max-time 2s")
        #expect(scripted.requests.isEmpty)
    }
}
