import DouctlJSON
import DouctlServer
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 23: the built douctl walks a numbered list whose first reply gives the total
/// several pages at a time, against a real server on 127.0.0.1 that counts the requests
/// it holds at once (not time): items in order, and a failing page ends the walk cleanly.
@Suite("Parallel walks")
struct ParallelWalkTests {
    let douctl = Douctl(environment: ["DOUCTL_TOKEN": "t"])

    /// Requests in progress at the server, the most at once, and the order of answers.
    final class Gauge: @unchecked Sendable {
        let lock = NSCondition()
        var inFlight = 0
        var most = 0
        var answered: [Int] = []
    }

    /// A Douban-style list of 60 items in pages of 10 (`{"start","count","total","users"}`).
    /// Each page after the first is held until a second request is in progress or 5 s
    /// pass (so one-at-a-time walks still finish); page 2 also waits for page 5's answer;
    /// `failing` pages answer 500.
    func listServer(_ gauge: Gauge, failing: Int? = nil) throws -> TestServer {
        try TestServer { request in
            let start = Int(request.queryValue("start") ?? "0") ?? 0
            let page = start / 10 + 1
            gauge.lock.lock()
            gauge.inFlight += 1
            gauge.most = max(gauge.most, gauge.inFlight)
            gauge.lock.broadcast()
            let deadline = Date().addingTimeInterval(5)
            if page > 1 {
                while gauge.inFlight < 2, gauge.most < 2, gauge.lock.wait(until: deadline) {}
            }
            if page == 2 || page == failing {
                while !gauge.answered.contains(5), gauge.lock.wait(until: deadline) {}
            }
            gauge.inFlight -= 1
            gauge.answered.append(page)
            gauge.lock.broadcast()
            gauge.lock.unlock()
            if page == failing {
                return HTTPServerResponse(status: 500, headers: [("Content-Type", "application/json")], body: .bytes(Array(#"{"msg":"boom","code":500}"#.utf8)))
            }
            let ids = (start..<min(start + 10, 60)).map { #"{"id":\#($0)}"# }.joined(separator: ",")
            let body = #"{"start":\#(start),"count":10,"total":60,"users":[\#(ids)]}"#
            return HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(Array(body.utf8)))
        }
    }

    func ids(_ result: Douctl.Result) throws -> [Int] {
        try result.lines().map { Int($0["id"]?.scalarText ?? "") ?? -1 }
    }

    /// Before: one page at a time (the server never held two requests; page 5 could not be
    /// answered before page 2). Now the default (4 at a time) overlaps them, and the
    /// NDJSON is still 0…59 in order.
    @Test func aNumberedWalkFetchesSeveralPagesAtOnceInOrder() throws {
        let gauge = Gauge()
        let server = try listServer(gauge)
        let result = try douctl.run(["api", "/list", "-f", "count=10", "--paginate", "--api-base", server.baseURL], timeout: 120)
        #expect(result.status == 0, "\(result)")
        #expect(try ids(result) == Array(0..<60))
        #expect(gauge.most >= 2, "requests overlapped at the server")
        #expect(server.received.count == 6)
        #expect((gauge.answered.firstIndex(of: 5) ?? 99) < (gauge.answered.firstIndex(of: 2) ?? -1), "\(gauge.answered)")
    }

    /// `--parallel 1` walks one page at a time, as before.
    @Test func parallelOneWalksOnePageAtATime() throws {
        let gauge = Gauge()
        let server = try listServer(gauge)
        let result = try douctl.run(["api", "/list", "-f", "count=10", "--paginate", "--parallel", "1", "--api-base", server.baseURL], timeout: 120)
        #expect(result.status == 0, "\(result)")
        #expect(try ids(result) == Array(0..<60))
        #expect(gauge.most == 1)
    }

    /// Page 4 fails after page 5 was answered: pages 1–3 are printed, the one error line
    /// names page 4, and nothing of pages 5 and 6 is printed.
    @Test func aFailingPageEndsTheWalkWithNothingAfterIt() throws {
        let gauge = Gauge()
        let server = try listServer(gauge, failing: 4)
        let result = try douctl.run(["api", "/list", "-f", "count=10", "--paginate", "--no-retry", "--api-base", server.baseURL], timeout: 120)
        #expect(result.status != 0, "\(result)")
        #expect(try ids(result) == Array(0..<30))
        #expect(result.errorLine.contains("page 4 failed; the 30 items before it were printed"), "\(result.errorLine)")
    }
}
