import DouctlCommands
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Testing

/// A typed stop (issue 38, point 4): the transport throws why it stopped (`StopReason`:
/// Ctrl-C, `--max-time`, the reader gone, a bound that refused the reply), once; one place
/// (`DouctlCommands.ExitStatus`) gives it its code; the `--max-time` deadline runs on the run's clock.
@Suite("Stops carry their reason")
struct StopReasonTests {
    /// The one mapping, reason by reason: the code and the words of the error line.
    @Test(arguments: [
        (StopReason.interrupt, DouctlCommands.ExitStatus.interrupted, "interrupted"),
        (.deadline(3), .network, "timed out: the command ran longer than --max-time 3s"),
        (.deadline(0.5), .network, "timed out: the command ran longer than --max-time 0.5s"),
        (.readerClosed, .outputClosed, "the output was closed"),
        (.refused("the reply decodes past the bound"), .badReply, "the reply decodes past the bound"),
    ])
    func eachReasonHasOneCodeAndItsOwnWords(reason: StopReason, status: DouctlCommands.ExitStatus, message: String) {
        #expect(DouctlCommands.ExitStatus(reason) == status)
        let error = DouctlError.stopped(reason)
        #expect(DouctlCommands.ExitStatus(error) == status)
        #expect(error.message == message)
        #expect(error.stopReason == reason)
    }

    /// Where a walk stopped is said after the reason's words; Ctrl-C says nothing more.
    @Test func aDeadlineOrABoundSaysWhereItStruckAnInterruptDoesNot() {
        let note = "page 3 failed; the 4 items before it were printed"
        #expect(DouctlError.stopped(.deadline(2)).annotated(note).message == "timed out: the command ran longer than --max-time 2s (\(note))")
        #expect(DouctlError.stopped(.refused("refused")).annotated(note).message == "refused (\(note))")
        #expect(DouctlError.interrupted.annotated(note) == .interrupted)
        #expect(DouctlCommands.ExitStatus(DouctlError.stopped(.deadline(2)).annotated(note)) == .network)
    }

    /// A stop seen without its reason (a wait that only saw the run cancelled) takes the
    /// run's: the deadline wins; an interrupt stays one; other errors are left alone.
    @Test func aStopWithoutItsReasonTakesTheRuns() {
        let timedOut = Cancellation()
        timedOut.request(.deadline(4))
        #expect(DouctlError.interrupted.withStopReason(of: timedOut) == .stopped(.deadline(4)))
        #expect(DouctlError.stopped(.refused("x")).withStopReason(of: timedOut) == .stopped(.refused("x")))
        #expect(DouctlError.badReply("x").withStopReason(of: timedOut) == .badReply("x"))
        let interrupted = Cancellation()
        interrupted.request()
        #expect(DouctlError.interrupted.withStopReason(of: interrupted) == .interrupted)
        #expect(DouctlError.interrupted.withStopReason(of: Cancellation()) == .interrupted)
    }

    /// `--max-time`'s deadline is on the run's clock: a virtual clock moved past it stops
    /// the run (no thread, no real time); an interrupt that came first stays the reason.
    @Test func theDeadlineRunsOnTheRunsClock() {
        let clock = VirtualClock()
        let cancellation = Cancellation()
        cancellation.expire(after: 10, clock: clock.run)
        #expect(!cancellation.isRequested)
        clock.advance(9.5)
        #expect(!cancellation.isRequested && cancellation.reason == nil)
        clock.advance(1)
        #expect(cancellation.isRequested)
        #expect(cancellation.reason == .deadline(10))

        let first = Cancellation()
        first.expire(after: 10, clock: clock.run)
        first.request(.interrupt)
        clock.advance(60)
        #expect(first.reason == .interrupt, "Ctrl-C came first")
    }

    /// In a run: `--max-time 5` on a virtual clock that a 30-second rate-limit wait moves
    /// on. The wait is cut by the deadline, nothing more is sent, exit 7 with the deadline's
    /// line — without sleeping. Before, the timer slept on real time and this run waited.
    @Test func maxTimeStopsARunOnItsVirtualClock() throws {
        let scripted = ScriptedTransport([
            .json(429, #"{"msg":"rate_limit_exceeded2","code":112,"request":"GET /v2/user/~me"}"#, headers: [HTTPHeader("Retry-After", "30")]),
            .json(200, #"{"id":"1"}"#),
        ])
        let clock = VirtualClock()
        let cancellation = Cancellation()
        var douctl = try InProcessDouctl(environment: ["DOUCTL_TOKEN": "t"])
        douctl.configure = { process in
            process.clock = clock.run
            process.cancellation = cancellation
            process.makeTransport = { CancellationCommandTests.CancellableTransport($0, scripted) }
        }
        let result = try douctl.run("user", "me", "--wait-on-rate-limit", "--no-retry", "--max-time", "5", "--api-base", "http://api.test")
        #expect(result.status == 7, "\(result)")
        #expect(result.stdout.isEmpty)
        #expect(result.errorLine == "douctl: timed out: the command ran longer than --max-time 5s", "\(result.stderr)")
        #expect(scripted.requests.count == 1, "the retry after the wait was never sent")
        #expect(cancellation.reason == .deadline(5))
    }

    /// A transport that stops a reply with a bound's refusal, as libcurl's does for a
    /// decompression bomb (`HTTPResponse.decompressionBomb`).
    final class RefusingTransport: HTTPTransport, @unchecked Sendable {
        let words: String
        init(_ words: String) { self.words = words }

        func send(
            _ request: HTTPRequest, progress: ((TransferProgress) -> Void)?, restartSink: (() -> SinkRestart)?,
            head: ((HTTPResponseHead) -> Void)?, sink: (UnsafeRawBufferPointer) -> Bool
        ) throws(TransportError) -> HTTPResponseHead {
            head?(HTTPResponseHead(status: 200, headers: [HTTPHeader("Content-Type", "application/json")], url: request.url))
            _ = Array("[1,".utf8).withUnsafeBytes { sink($0) }
            throw .stopped(.refused(words))
        }
    }

    /// `api` (--raw, reformatted, -o) stopped by a bound: the bound's own words, exit 8 —
    /// not "connection lost" (7); `-o FILE` leaves no file.
    @Test(arguments: [["--raw"], [], ["-o", "FILE"]])
    func aBoundsRefusalIsItsOwnLineAndExit8(options: [String]) throws {
        let directory = try TemporaryDirectory(prefix: "stop-bound")
        let words = "the reply decodes to more than 200 times the 5 bytes received (past 64 MiB): refused as a decompression bomb"
        var douctl = try InProcessDouctl(environment: ["DOUCTL_TOKEN": "t"])
        douctl.configure = { process in process.makeTransport = { _ in RefusingTransport(words) } }
        let arguments = options.map { $0 == "FILE" ? directory.path + "/out.json" : $0 }
        let result = try douctl.run(["api", "/x", "--api-base", "http://api.test"] + arguments)
        #expect(result.status == 8, "\(result)")
        #expect(result.stderr == "douctl: \(words)\n")
        #expect(try FileIO.listDirectory(directory.path).isEmpty, "no file, no temp file")
    }
}
