import DouctlJSON
import DouctlSandbox
import DouctlSystem
import Testing

@Suite struct FaultParsingTests {
    @Test func parsesTheDocumentedExample() throws {
        let faults = try SandboxFault.parseList("503:0.2,latency:200ms,reset:0.05,slow-body,slow-down:1")
        #expect(faults.map(\.kind) == [.status(503, probability: 0.2), .latency(0.2), .reset(probability: 0.05),
                                       .slowBody(pause: 0.05), .slowDown(polls: 1)])
        #expect(try SandboxFault.parseList("429:1, latency:1.5s ,slow-body:10ms,500").map(\.kind)
            == [.status(429, probability: 1), .latency(1.5), .slowBody(pause: 0.01), .status(500, probability: 1)])
        for fault in faults {
            #expect(try SandboxFault.parse(fault.description) == fault)
        }
        #expect(SandboxFault.faultHelp.contains("slow-down"))
        #expect(Sandbox.faultHelp == SandboxFault.faultHelp)
    }

    @Test(arguments: ["404:0.5", "503:1.5", "503:x", "latency", "latency:fast", "reset:-1", "slow-down:-2", "explode", "",
                      "503:0.2,,reset", "slow-body:abc"])
    func rejectsMalformedSpecs(_ spec: String) {
        #expect(throws: SandboxError.self) { try SandboxFault.parseList(spec) }
        do {
            _ = try SandboxFault.parseList(spec)
        } catch let error as SandboxError {
            #expect(error.message.contains("--fault"))
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }
}

@Suite struct FaultInjectionTests {
    @Test func statusFault503CarriesRetryAfter() throws {
        let harness = try Harness { $0.faults = try! SandboxFault.parseList("503:1.0") }
        defer { harness.stop() }
        let token = harness.token()
        let reply = try harness.get("/shuo/v2/statuses/home_timeline", token: token)
        #expect(reply.status == 503)
        #expect(reply.header("Retry-After") == "1")
        // The request was not acted on.
        let post = try harness.post("/shuo/v2/statuses/", form: [("text", "不会发出")], token: token)
        #expect(post.status == 503)
        #expect(harness.sandbox.requests.last?.status == 503)
        #expect(harness.sandbox.requests.last?.formValue("text") == "不会发出")
        #expect(try harness.tokenRequest(Harness.client + [("grant_type", "refresh_token"), ("refresh_token", "x")]).status == 503)
    }

    @Test func statusFault429And500() throws {
        let rateLimited = try Harness { $0.faults = try! SandboxFault.parseList("429") }
        defer { rateLimited.stop() }
        let reply = try rateLimited.get("/v2/user/ahbei")
        #expect(reply.status == 429)
        #expect(reply.code == 111)
        #expect(reply.header("Retry-After") == "1")
        let broken = try Harness { $0.faults = try! SandboxFault.parseList("500:1") }
        defer { broken.stop() }
        let failure = try broken.get("/v2/user/ahbei")
        #expect(failure.status == 500)
        #expect(failure.code == 999)
    }

    @Test func seededProbabilitiesAreReproducible() throws {
        func outcomes() throws -> [Int] {
            let harness = try Harness {
                $0.faults = try! SandboxFault.parseList("502:0.5")
                $0.faultSeed = 42
            }
            defer { harness.stop() }
            return try (0..<24).map { _ in try harness.get("/v2/user/ahbei").status }
        }
        let first = try outcomes()
        #expect(try outcomes() == first)
        #expect(first.contains(502) && first.contains(200))
        #expect(Set(first) == [200, 502])
    }

    @Test func latencyDelaysEveryReply() throws {
        let harness = try Harness { $0.faults = try! SandboxFault.parseList("latency:300ms") }
        defer { harness.stop() }
        let reply = try harness.get("/v2/user/ahbei")
        #expect(reply.status == 200)
        #expect(reply.elapsed >= 0.3)
        #expect(reply.elapsed < 10)
    }

    @Test func resetCutsTheReplyShortAfterActing() throws {
        let harness = try Harness { $0.faults = try! SandboxFault.parseList("reset:1") }
        defer { harness.stop() }
        let token = harness.token()
        let reply = try harness.post("/shuo/v2/statuses/", form: [("text", "发出去了吗？")], token: token)
        #expect(reply.status == 200)
        #expect(!reply.isComplete)
        let declared = try #require(reply.header("Content-Length").flatMap { Int($0) })
        #expect(reply.body.count < declared)
        #expect((try? reply.json()) == nil)
        // The status was created even though the reply was lost.
        let recorded = try #require(harness.sandbox.requests.last)
        #expect(recorded.status == 200)
        // Half of a one-status timeline still shows its text (it comes early in the object).
        let check = try harness.get("/shuo/v2/statuses/home_timeline?count=1", token: token)
        #expect(!check.isComplete)
        #expect(check.text.contains("发出去了吗？"))
    }

    @Test func slowBodyStillDeliversTheWholeBody() throws {
        let harness = try Harness { $0.faults = try! SandboxFault.parseList("slow-body:20ms") }
        defer { harness.stop() }
        let reply = try harness.get("/shuo/v2/statuses/home_timeline", token: harness.token())
        #expect(reply.status == 200)
        #expect(reply.isComplete)
        #expect(reply.body.count > 64 * 3)
        #expect(try reply.json().arrayValue?.isEmpty == false)
        #expect(reply.elapsed >= 0.04)  // at least three pieces, two pauses
        #expect(reply.elapsed < 20)
    }

    @Test func stopIsPromptEvenWithLongLatency() throws {
        let harness = try Harness { $0.faults = try! SandboxFault.parseList("latency:30s") }
        let port = harness.port
        let thread = try JoinableThreadBox { _ = try? TestHTTP.request(port: port, method: "GET", target: "/v2/user/ahbei") }
        TestClock.sleep(0.3)
        let started = TestClock.now()
        harness.stop()
        #expect(TestClock.now() - started < 5)
        thread.join()
    }
}

/// A thread for a blocking call in a test.
final class JoinableThreadBox {
    private let thread: JoinableThread
    init(_ body: @escaping @Sendable () -> Void) throws { thread = try JoinableThread(body) }
    func join() { thread.join() }
}
