@testable import DouctlCore
import DouctlTestSupport
import DouctlHTTP
import DouctlJSON
import Testing

/// `Paginator.walk` against scripted pages: which requests it sends, when it stops, what
/// it hands over.
@Suite("Pagination")
struct PaginatorTests {
    func walk(_ pages: [ScriptedTransport.Answer], _ request: APIRequest, scheme: PageScheme? = nil, coding: Bool = false,
              maximumPages: Int? = nil) throws -> (items: [JSON], requests: [HTTPRequest]) {
        let transport = ScriptedTransport(pages)
        let profile = coding ? try TestProfiles.coding() : try TestProfiles.douban()
        var paginator = Paginator(client: APIClient(profile: profile, http: transport, tokens: FixedToken("t")))
        if let maximumPages { paginator.maximumPages = maximumPages }
        var items: [JSON] = []
        try paginator.walk(request, scheme: scheme) { (item: JSON) throws(DouctlError) in items.append(item) }
        #expect(transport.unused == 0, "every scripted page was asked for")
        return (items, transport.requests)
    }

    /// A Douban list page: `{"start","count","total","users":[{"id":…}]}`.
    static func doubanPage(_ ids: [Int], start: Int, count: Int, total: Int? = nil) -> ScriptedTransport.Answer {
        let users = ids.map { #"{"id":"\#($0)"}"# }.joined(separator: ",")
        let totalField = total.map { #","total":\#($0)"# } ?? ""
        return .json(200, #"{"start":\#(start),"count":\#(count)\#(totalField),"users":[\#(users)]}"#)
    }

    static func ids(_ items: [JSON]) -> [String] { items.compactMap { $0["id"]?.scalarText } }

    @Test func startAndCountWalkStopsAtTheTotal() throws {
        let (items, requests) = try walk([
            Self.doubanPage([1, 2], start: 0, count: 2, total: 5),
            Self.doubanPage([3, 4], start: 2, count: 2, total: 5),
            Self.doubanPage([5], start: 4, count: 2, total: 5),
        ], APIRequest(path: "/v2/user", query: [("q", "a"), ("count", "2")]), scheme: .offset())
        #expect(Self.ids(items) == ["1", "2", "3", "4", "5"])
        #expect(requests.map { $0.queryValue("start") } == [nil, "2", "4"])
        #expect(requests.allSatisfy { $0.queryValue("count") == "2" && $0.queryValue("q") == "a" })
    }

    @Test func aFullLastPageStopsAtTheTotalWithoutAnotherRequest() throws {
        let (items, requests) = try walk([
            Self.doubanPage([1, 2], start: 0, count: 2, total: 4),
            Self.doubanPage([3, 4], start: 2, count: 2, total: 4),
        ], APIRequest(path: "/v2/user", query: [("count", "2")]), scheme: .offset())
        #expect(Self.ids(items) == ["1", "2", "3", "4"])
        #expect(requests.count == 2)
    }

    @Test func withoutATotalAShortPageIsTheLast() throws {
        let (items, requests) = try walk([
            .json(200, #"[{"id":1},{"id":2}]"#),
            .json(200, #"[{"id":3}]"#),
        ], APIRequest(path: "/v2/things", query: [("count", "2")]))
        #expect(Self.ids(items) == ["1", "2", "3"])
        #expect(requests.map { $0.queryValue("start") } == [nil, "2"])
    }

    @Test func anEmptyPageEndsTheWalk() throws {
        let (items, requests) = try walk([.json(200, "[]")], APIRequest(path: "/v2/things"))
        #expect(items.isEmpty)
        #expect(requests.count == 1)
    }

    @Test func itemsSeenBeforeAreSkippedWhenTheListShifts() throws {
        let (items, _) = try walk([
            .json(200, #"[{"id":1},{"id":2}]"#),
            .json(200, #"[{"id":2},{"id":3}]"#), // a new item arrived at the top: 2 moved down
            .json(200, "[]"),
        ], APIRequest(path: "/v2/things", query: [("count", "2")]))
        #expect(Self.ids(items) == ["1", "2", "3"])
    }

    @Test func aServerThatIgnoresPagingDoesNotLoopForever() throws {
        let page = ScriptedTransport.Answer.json(200, #"[{"id":1},{"id":2}]"#)
        let (items, requests) = try walk([page, page], APIRequest(path: "/v2/things", query: [("count", "2")]))
        #expect(Self.ids(items) == ["1", "2"])
        #expect(requests.count == 2)
    }

    /// Reaching the cap is not the end of the list: the walk fails (exit 8) and says so,
    /// with what it printed. (Before: it returned as if the list had ended, exit 0.)
    @Test func maximumPagesStopsARunawayWalkAndSaysSo() throws {
        let pages = (0..<3).map { page in ScriptedTransport.Answer.json(200, #"[{"id":\#(2 * page)},{"id":\#(2 * page + 1)}]"#) }
        let transport = ScriptedTransport(pages)
        var paginator = Paginator(client: APIClient(profile: try TestProfiles.douban(), http: transport, tokens: FixedToken("t")))
        paginator.maximumPages = 3
        var items: [JSON] = []
        #expect(throws: DouctlError.badReply("stopped after 3 pages without reaching the last one (the page cap; 6 items were printed; GET /v2/things)")) {
            try paginator.walk(APIRequest(path: "/v2/things", query: [("count", "2")])) { (item: JSON) throws(DouctlError) in items.append(item) }
        }
        #expect(items.count == 6)
        #expect(transport.requests.count == 3, "no page past the cap is asked for")
    }

    @Test func aWalkWhoseLastPageIsExactlyTheCapSucceeds() throws {
        let (items, requests) = try walk([
            .json(200, #"[{"id":1},{"id":2}]"#),
            .json(200, #"[{"id":3}]"#),
        ], APIRequest(path: "/v2/things", query: [("count", "2")]), maximumPages: 2)
        #expect(items.count == 3)
        #expect(requests.count == 2)
    }

    @Test func theDefaultCapIsAHundredThousandPages() throws {
        #expect(Paginator.defaultMaximumPages == 100_000)
    }

    @Test func codingPageableWalksByPageNumberToTotalPage() throws {
        let (items, requests) = try walk([
            .json(200, #"{"code":0,"data":{"list":[{"id":1},{"id":2}],"page":1,"pageSize":2,"totalPage":2}}"#),
            .json(200, #"{"code":0,"data":{"list":[{"id":3},{"id":4}],"page":2,"pageSize":2,"totalPage":2}}"#),
        ], APIRequest(path: "/api/user/coder/followers"), coding: true)
        #expect(Self.ids(items) == ["1", "2", "3", "4"])
        #expect(requests.map { $0.queryValue("page") } == [nil, "2"])
    }

    @Test func codingTimelinesWalkByTheLastIdUntilAnEmptyPage() throws {
        let (items, requests) = try walk([
            .json(200, #"{"code":0,"data":[{"id":30},{"id":20}]}"#),
            .json(200, #"{"code":0,"data":[{"id":10}]}"#),
            .json(200, #"{"code":0,"data":[]}"#),
        ], APIRequest(path: "/api/tweet/public_tweets"), scheme: .cursor(first: "99999999"), coding: true)
        #expect(Self.ids(items) == ["30", "20", "10"])
        #expect(requests.map { $0.queryValue("last_id") } == ["99999999", "20", "10"])
    }

    @Test func untilWalksStepBelowTheLastIdAndKeepSince() throws {
        let (items, requests) = try walk([
            .json(200, #"[{"id":"100"},{"id":"90"}]"#),
            .json(200, #"[{"id":"80"}]"#),
        ], APIRequest(path: "/shuo/v2/statuses/home_timeline", query: [("since_id", "5")]), scheme: .until(pageSize: 2))
        #expect(Self.ids(items) == ["100", "90", "80"])
        #expect(requests.map { $0.queryValue("until_id") } == [nil, "89"])
        #expect(requests.allSatisfy { $0.queryValue("since_id") == "5" }, "since_id bounds every page")
    }

    @Test func untilStopsAtTheBottomOfTheIdRange() {
        #expect(Paginator.untilValue(below: "90") == "89")
        #expect(Paginator.untilValue(below: "-9223372036854775808") == nil)
        #expect(Paginator.untilValue(below: "abc") == "abc")
    }

    @Test func aFailureAfterTheFirstPageSaysHowFarTheWalkGot() throws {
        #expect(throws: DouctlError.transport(.connectionLost("reset (page 2 failed; the 2 items before it were printed)"))) {
            try walk([
                .json(200, #"[{"id":1},{"id":2}]"#),
                .failure(.connectionLost("reset")),
            ], APIRequest(path: "/v2/things", query: [("count", "2")]))
        }
    }

    @Test func aFailureOnTheFirstPageIsReportedAsIs() throws {
        #expect(throws: DouctlError.transport(.connectionLost("reset"))) {
            try walk([.failure(.connectionLost("reset"))], APIRequest(path: "/v2/things"))
        }
    }

    /// Issue 33: `api /user --paginate` printed nothing and exited 8; gh prints the object.
    @Test func aLoneObjectThatLinksNowhereIsTheWalksOneItem() throws {
        let (items, requests) = try walk([.json(200, #"{"uid":"ahbei"}"#)], APIRequest(path: "/v2/user/~me"))
        #expect(items == [["uid": "ahbei"]])
        #expect(requests.count == 1)
        // A bare scalar is a lone document too.
        #expect(try walk([.json(200, "42")], APIRequest(path: "/v2/answer")).items == [42])
    }

    @Test func aReplyThatIsNotAListAfterTheFirstPageCannotBeWalked() throws {
        do {
            _ = try walk([.json(200, #"[{"id":1},{"id":2}]"#), .json(200, #"{"uid":"ahbei"}"#)],
                         APIRequest(path: "/v2/things", query: [("count", "2")]), scheme: .offset())
            Issue.record("walked past a page that is not a list")
        } catch let error as DouctlError {
            guard case .badReply(let text, _) = error else { Issue.record("\(error)"); return }
            #expect(text.hasPrefix("cannot paginate: the reply is not a list (GET /v2/things"), "\(text)")
        }
    }

    @Test func aLoneObjectWithANextLinkCannotBeWalked() throws {
        #expect(throws: DouctlError.badReply("cannot paginate: the reply is not a list (GET /v2/user/~me); name the key of its items with --items KEY")) {
            try walk([.json(200, #"{"uid":"ahbei"}"#, headers: [HTTPHeader("Link", #"</v2/user/~me?page=2>; rel="next""#)])],
                     APIRequest(path: "/v2/user/~me"))
        }
    }
}

/// Issue 23: what a walk keeps in memory is bounded, whatever the length of the walk.
@Suite("Pagination memory")
struct PaginationMemoryTests {
    @Test func deduplicationRemembersTheLastTwoPagesOnly() throws {
        // Id 1 comes back on the next page (a shifted list): skipped. It comes back again
        // four pages later: by then it is outside the window and is printed (before issue 23
        // every id of the walk was kept, so it was skipped and the set grew without bound).
        let (items, _) = try PaginatorTests().walk([
            .json(200, #"[{"id":1},{"id":2}]"#),
            .json(200, #"[{"id":3},{"id":1}]"#),
            .json(200, #"[{"id":4},{"id":5}]"#),
            .json(200, #"[{"id":6},{"id":7}]"#),
            .json(200, #"[{"id":8},{"id":9}]"#),
            .json(200, #"[{"id":1}]"#),
        ], APIRequest(path: "/v2/things", query: [("count", "2")]))
        #expect(PaginatorTests.ids(items) == ["1", "2", "3", "4", "5", "6", "7", "8", "9", "1"])
    }

    @Test func theWindowHoldsAtMostTwoPagesOfIDs() throws {
        var seen = Paginator.SeenItems()
        for page in 0..<1000 {
            let items = (0..<20).map { JSON.object(JSONObject([("id", .string("\(page * 20 + $0)"))])) }
            try seen.emitUnseen(items) { (_: JSON) throws(DouctlError) in }
            #expect(seen.windowCount <= 40)
        }
        #expect(seen.emitted == 20_000)
    }

    @Test func aReplyLargerThanTheBoundIsAnErrorAndAnErrorReplyIsCut() throws {
        let big = "[" + String(repeating: #"{"id":1},"#, count: 10) + #"{"id":2}]"#
        let request = HTTPRequest(method: "GET", url: "https://api.douban.com/v2/x")
        let tooLarge = Result { try ScriptedTransport([.json(200, big)]).fetch(request, limit: 16) }
        guard case .failure(let error as TransportError) = tooLarge, case .replyTooLarge(let detail) = error else {
            Issue.record("expected replyTooLarge, got \(tooLarge)")
            return
        }
        #expect(detail.contains("larger than"))
        let errorReply = try ScriptedTransport([.json(503, String(repeating: "x", count: 100_000))]).fetch(request)
        #expect(errorReply.status == 503)
        #expect(errorReply.body.count == HTTPResponse.maximumErrorBodyBytes)
    }
}
