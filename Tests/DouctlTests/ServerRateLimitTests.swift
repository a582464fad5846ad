import DouctlJSON
import DouctlSystem
import Foundation
import Testing
import DouctlTestSupport

/// Pacing by what the server says: GitHub's 403 with `X-RateLimit-Remaining: 0`, the IETF
/// `RateLimit` field, GitLab's `RateLimit-*`, `Retry-After` — remembered across processes,
/// so the next douctl waits (`--wait-on-rate-limit`) or stops with exit 6 before sending.
@Suite("Server rate limits")
struct ServerRateLimitTests {
    static func reply(_ status: String, _ headers: String, _ body: String) -> String {
        "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\n\(headers)Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
    }

    static var epoch: Int { Int(Date().timeIntervalSince1970) }

    @Test func aGitHub403WithNothingLeftIsExit6AndTheNextProcessDoesNotSend() throws {
        let served = LockedValue(0)
        let server = try HostileListener { connection, _ in
            let number = served.withLock { value in
                value += 1
                return value
            }
            if number == 1 {
                HostileListener.send(connection, Self.reply("403 Forbidden", "X-RateLimit-Limit: 60\r\nX-RateLimit-Remaining: 0\r\nX-RateLimit-Reset: \(Self.epoch + 3)\r\n", #"{"message":"API rate limit exceeded"}"#))
            } else {
                HostileListener.send(connection, Self.reply("200 OK", "X-RateLimit-Remaining: 59\r\n", #"{"ok":true}"#))
            }
        }
        let douctl = Douctl()
        let first = try douctl.run("api", "/repos", "--api-base", server.baseURL)
        #expect(first.status == 6, "403 with X-RateLimit-Remaining: 0 is rate limited: \(first)")
        let second = try douctl.run("api", "/repos", "--api-base", server.baseURL)
        #expect(second.status == 6, "\(second)")
        #expect(second.stderr.contains("nothing was sent") && second.stderr.contains("--wait-on-rate-limit"), "\(second.stderr)")
        #expect(server.requestCount == 1, "the second process waited for no reply to learn it")
        let waited = try douctl.run("--wait-on-rate-limit", "api", "/repos", "--api-base", server.baseURL)
        #expect(waited.status == 0, "\(waited)")
        #expect(waited.stderr.contains("X-RateLimit-Reset"), "says what it waits for: \(waited.stderr)")
        #expect(server.requestCount == 2)
        // A URL outside the profile's API neither spends nor waits for its quota.
        served.withLock { $0 = 0 }
        #expect(try douctl.run("api", "/repos", "--api-base", server.baseURL).status == 6)
        #expect(try douctl.run("api", server.baseURL + "/elsewhere").status == 0, "another origin is not blocked")
    }

    @Test func theIETFFieldOnASuccessPacesTheNextRequest() throws {
        let server = try HostileListener { connection, _ in
            HostileListener.send(connection, Self.reply("200 OK", "RateLimit-Policy: \"default\";q=1;w=2\r\nRateLimit: \"default\";r=0;t=2\r\n", #"{"ok":true}"#))
        }
        let douctl = Douctl()
        #expect(try douctl.run("api", "/a", "--api-base", server.baseURL).status == 0)
        let refused = try douctl.run("api", "/b", "--api-base", server.baseURL)
        #expect(refused.status == 6, "\(refused)")
        #expect(server.requestCount == 1)
        let waited = try douctl.run("--wait-on-rate-limit", "api", "/c", "--api-base", server.baseURL)
        #expect(waited.status == 0, "\(waited)")
        #expect(waited.stderr.contains("RateLimit: \"default\";r=0;t=2"), "\(waited.stderr)")
        #expect(server.requestCount == 2)
    }

    @Test func aResetInThePastOrGarbageIsIgnoredAndOneFarAheadIsCapped() throws {
        let mode = LockedValue("past")
        let server = try HostileListener { connection, _ in
            switch mode.value {
            case "past": HostileListener.send(connection, Self.reply("200 OK", "X-RateLimit-Remaining: 0\r\nX-RateLimit-Reset: 1000000001\r\n", "{}"))
            case "garbage": HostileListener.send(connection, Self.reply("200 OK", "RateLimit-Remaining: 0\r\nRateLimit-Reset: soon\r\nRateLimit: \"x\";r=zero;t=-4\r\n", "{}"))
            default: HostileListener.send(connection, Self.reply("429 Too Many Requests", "X-RateLimit-Remaining: 0\r\nX-RateLimit-Reset: \(Self.epoch + 30 * 86400)\r\n", #"{"message":"slow down"}"#))
            }
        }
        let douctl = Douctl()
        #expect(try douctl.run("api", "/q", "--api-base", server.baseURL).status == 0)
        #expect(try douctl.run("api", "/q", "--api-base", server.baseURL).status == 0, "a reset in the past blocks nothing")
        mode.withLock { $0 = "garbage" }
        #expect(try douctl.run("api", "/q", "--api-base", server.baseURL).status == 0)
        #expect(try douctl.run("api", "/q", "--api-base", server.baseURL).status == 0, "garbage blocks nothing")
        #expect(server.requestCount == 4)
        mode.withLock { $0 = "far" }
        #expect(try douctl.run("--no-retry", "api", "/q", "--api-base", server.baseURL).status == 6)
        let capped = try douctl.run("api", "/q", "--api-base", server.baseURL)
        #expect(capped.status == 6, "\(capped)")
        #expect(capped.stderr.contains("capped at 1h"), "\(capped.stderr)")
        #expect(!capped.stderr.contains("29 days") && !capped.stderr.contains("30 days"), "\(capped.stderr)")
        #expect(server.requestCount == 5)
    }

    /// Processes sharing one profile against a server that allows three requests per
    /// three-second window, then says 0 left until the window ends (429 with Retry-After to
    /// anyone who asks anyway): three run one after another and spend the window; five
    /// started then all wait for the reset instead of each spending a request to learn of
    /// it, and none fails.
    @Test func severalProcessesSharingAQuotaAllWaitAndNoneFails() throws {
        struct Window { var start = 0.0, index = -1, used = 0, tooManyInFirst = 0, tooMany = 0 }
        let window = LockedValue(Window())
        let server = try HostileListener { connection, _ in
            let now = Date().timeIntervalSince1970
            let (left, reset) = window.withLock { state -> (Int, Double) in
                if state.index < 0 || now >= state.start + 3 {
                    state.start = now
                    state.index += 1
                    state.used = 0
                }
                state.used += 1
                let left = 3 - state.used
                if left < 0 {
                    state.tooMany += 1
                    if state.index == 0 { state.tooManyInFirst += 1 }
                }
                return (left, state.start + 3 - now)
            }
            let seconds = max(1, Int(reset.rounded(.up)))
            if left >= 0 {
                HostileListener.send(connection, Self.reply("200 OK", "RateLimit-Limit: 3\r\nRateLimit-Remaining: \(left)\r\nRateLimit-Reset: \(seconds)\r\n", #"{"ok":true}"#))
            } else {
                HostileListener.send(connection, Self.reply("429 Too Many Requests", "Retry-After: \(seconds)\r\nRateLimit-Remaining: 0\r\n", #"{"message":"too many"}"#))
            }
        }
        let douctl = Douctl()
        for index in 0..<3 {
            #expect(try douctl.run("--wait-on-rate-limit", "api", "/first/\(index)", "--api-base", server.baseURL).status == 0)
        }
        let results = LockedValue<[Int32]>([])
        DispatchQueue.concurrentPerform(iterations: 5) { index in
            let status = (try? douctl.run(["--wait-on-rate-limit", "api", "/item/\(index)", "--api-base", server.baseURL], timeout: 120).status) ?? -1
            results.withLock { $0.append(status) }
        }
        #expect(results.value == Array(repeating: 0, count: 5), "\(results.value)")
        #expect(window.value.tooManyInFirst == 0, "no process asked during the spent window: \(window.value)")
        #expect(window.value.index >= 1, "\(window.value)")
    }
}
