@testable import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Numbered walks whose first reply gives the total fetch the rest several pages at a time
/// (issue 23): items still come out in page order, and the walk stops at the first page
/// that fails, with nothing after it handed over.
@Suite("Parallel pages")
struct ParallelPagesTests {
    /// A thread-safe list server shared by every worker's client: a Douban start/count list
    /// (or a Coding Pageable) of `total` items in pages of `pageSize`. `holdUntilAnswered`
    /// holds a page's answer until another page has been answered (or 20 s passed), so
    /// replies arrive out of order; `failing` pages answer 500.
    final class ListTransport: HTTPTransport, @unchecked Sendable {
        let total: Int
        let pageSize: Int
        let coding: Bool
        let holdUntilAnswered: [Int: Int]
        let failing: Set<Int>
        private let lock = NSCondition()
        private var inFlight = 0
        private(set) var mostInFlight = 0
        private(set) var answered: [Int] = []
        private(set) var asked: [Int] = []

        init(total: Int, pageSize: Int, coding: Bool = false, holdUntilAnswered: [Int: Int] = [:], failing: Set<Int> = []) {
            self.total = total
            self.pageSize = pageSize
            self.coding = coding
            self.holdUntilAnswered = holdUntilAnswered
            self.failing = failing
        }

        func send(_ request: HTTPRequest, progress: ((TransferProgress) -> Void)?, restartSink: (() -> SinkRestart)?,
                  head: ((HTTPResponseHead) -> Void)?, sink: (UnsafeRawBufferPointer) -> Bool) throws(TransportError) -> HTTPResponseHead {
            let page = coding ? Int(request.queryValue("page") ?? "1") ?? 1 : (Int(request.queryValue("start") ?? "0") ?? 0) / pageSize + 1
            lock.lock()
            asked.append(page)
            inFlight += 1
            mostInFlight = max(mostInFlight, inFlight)
            lock.broadcast()
            // Until two requests have been in progress at once (or 5 s passed, so walks one
            // page at a time still finish), later pages wait for company.
            let soon = Date().addingTimeInterval(5)
            while page > 1, inFlight < 2, mostInFlight < 2, lock.wait(until: soon) {}
            if let other = holdUntilAnswered[page] {
                let deadline = Date().addingTimeInterval(20)
                while !answered.contains(other), lock.wait(until: deadline) {}
            }
            inFlight -= 1
            answered.append(page)
            lock.broadcast()
            lock.unlock()
            let first = (page - 1) * pageSize
            let ids = (first..<min(first + pageSize, total)).map { #"{"id":\#($0)}"# }.joined(separator: ",")
            let status = failing.contains(page) ? 500 : 200
            let text = status == 500 ? #"{"msg":"boom","code":500}"#
                : coding ? #"{"code":0,"data":{"list":[\#(ids)],"page":\#(page),"pageSize":\#(pageSize),"totalPage":\#((total + pageSize - 1) / pageSize)}}"#
                : #"{"start":\#(first),"count":\#(pageSize),"total":\#(total),"users":[\#(ids)]}"#
            let responseHead = HTTPResponseHead(status: status, headers: [HTTPHeader("Content-Type", "application/json")], url: request.url)
            head?(responseHead)
            _ = Array(text.utf8).withUnsafeBytes { sink($0) }
            return responseHead
        }

        var snapshot: (asked: [Int], answered: [Int], mostInFlight: Int) {
            lock.lock()
            defer { lock.unlock() }
            return (asked, answered, mostInFlight)
        }
    }

    struct Walked {
        var ids: [Int]
        var error: DouctlError?
    }

    func walk(_ transport: ListTransport, width: Int, coding: Bool = false) throws -> Walked {
        let profile = coding ? try TestProfiles.coding() : try TestProfiles.douban()
        var paginator = Paginator(client: APIClient(profile: profile, http: transport, tokens: FixedToken("t")))
        paginator.parallel = ParallelPaging(width: width) { () throws(DouctlError) -> APIClient in
            APIClient(profile: profile, http: transport, tokens: FixedToken("t"))
        }
        var walked = Walked(ids: [])
        let request = coding ? APIRequest(path: "/api/list", query: [("pageSize", String(transport.pageSize))])
            : APIRequest(path: "/v2/list", query: [("count", String(transport.pageSize))])
        do {
            try paginator.walk(request, scheme: coding ? .pageNumber() : .offset()) { (item: JSON) throws(DouctlError) in
                walked.ids.append(Int(item["id"]?.scalarText ?? "") ?? -1)
            }
        } catch {
            walked.error = error
        }
        return walked
    }

    /// Six pages; page 2's answer waits for page 5's. The items come out 0…59 in order, and
    /// the requests overlapped. One at a time (before), page 2 was alone in flight: page 5
    /// could not be answered first, and mostInFlight was 1.
    @Test(arguments: [false, true])
    func pagesAnsweredOutOfOrderAreHandedOverInOrder(coding: Bool) throws {
        let transport = ListTransport(total: 60, pageSize: 10, coding: coding, holdUntilAnswered: [2: 5])
        let walked = try walk(transport, width: 4, coding: coding)
        #expect(walked.error == nil)
        #expect(walked.ids == Array(0..<60))
        let seen = transport.snapshot
        #expect(seen.mostInFlight >= 2, "requests overlapped")
        #expect(seen.asked.sorted() == [1, 2, 3, 4, 5, 6], "each page asked for once")
        #expect(seen.answered.firstIndex(of: 5) ?? 99 < seen.answered.firstIndex(of: 2) ?? -1, "page 5 was answered before page 2: \(seen.answered)")
    }

    /// Page 4 fails after page 5 has been answered: pages 1–3 are handed over, the error
    /// names page 4 and the 30 items before it, and nothing of pages 5 and 6 is handed over.
    @Test func theFirstFailingPageEndsTheWalkWithNothingAfterIt() throws {
        let transport = ListTransport(total: 60, pageSize: 10, holdUntilAnswered: [4: 5], failing: [4])
        let walked = try walk(transport, width: 4)
        #expect(walked.ids == Array(0..<30))
        let message = walked.error.map { String(describing: $0) } ?? ""
        #expect(message.contains("page 4 failed; the 30 items before it were printed"), "\(message)")
        #expect(!transport.snapshot.asked.contains(where: { $0 > 8 }), "no page past the window is fetched")
    }

    /// A 100-page walk holds at most a window of pages: with width 2 the reader's pace
    /// bounds how far ahead the workers go (each page is asked for once, in order of claim).
    @Test func workersStayWithinTheWindow() throws {
        let transport = ListTransport(total: 1000, pageSize: 10)
        let walked = try walk(transport, width: 2)
        #expect(walked.ids == Array(0..<1000))
        #expect(transport.snapshot.asked.sorted() == Array(1...100))
        #expect(transport.snapshot.mostInFlight <= 2)
    }

    /// Every worker's client goes through the profile's `rate_limit`, the limiter shared with
    /// other douctl processes through the config directory: each of the 6 pages is counted
    /// in its state file, so a parallel walk cannot go over the quota.
    @Test func everyPageGoesThroughTheSharedRateLimiter() throws {
        let directory = try TemporaryDirectory()
        let quota = try #require(RateQuota("100/1h"))
        let profile = try TestProfiles.douban()
        let transport = ListTransport(total: 60, pageSize: 10)
        let limiter = ClientRateLimiter(quota: quota, directory: ConfigDirectory(path: directory.path), profile: "p")
        let limited: @Sendable () -> APIClient = {
            var options = APIClientOptions()
            options.rateLimiter = limiter
            return APIClient(profile: profile, http: transport, tokens: FixedToken("t"), options: options)
        }
        var paginator = Paginator(client: limited())
        paginator.parallel = ParallelPaging(width: 4) { () throws(DouctlError) -> APIClient in limited() }
        var count = 0
        try paginator.walk(APIRequest(path: "/v2/list", query: [("count", "10")]), scheme: .offset()) { (_: JSON) throws(DouctlError) in count += 1 }
        #expect(count == 60)
        let state = try #require(try ConfigDirectory(path: directory.path).readJSONFile(directory.path + "/.ratelimit-p.json"))
        #expect(state["sent"]?.arrayValue?.count == 6)
    }

    /// `--parallel 1`, a first page without a total, or a short first page: one at a time.
    @Test func withoutATotalTheWalkStaysSequential() throws {
        let profile = try TestProfiles.douban()
        let page = Paginator.page(of: try JSONParser.parse(Array(#"{"start":0,"count":2,"users":[{"id":1},{"id":2}]}"#.utf8)))
        let request = APIRequest(path: "/v2/list", query: [("count", "2")])
        let payload = JSON.null
        #expect(NumberedPages.plan(after: page, payload: payload, items: page.items ?? [], of: request, scheme: .offset(), maximumPages: 100) == nil)
        var withTotal = page
        withTotal.total = 7
        let plan = NumberedPages.plan(after: withTotal, payload: payload, items: page.items ?? [], of: request, scheme: .offset(), maximumPages: 100)
        #expect(plan?.count == 3)
        #expect(plan?.request(2).value("start") == "6")
        // A total of Int.max pages is more than the page cap: one at a time, to the cap's error.
        withTotal.total = Int.max
        #expect(NumberedPages.plan(after: withTotal, payload: payload, items: page.items ?? [], of: request, scheme: .offset(), maximumPages: 100) == nil)
        #expect(NumberedPages.plan(after: withTotal, payload: payload, items: page.items ?? [], of: request, scheme: .cursor(), maximumPages: 100) == nil)
        _ = profile
    }
}
