import DouctlJSON
import DouctlSandbox
import DouctlSystem
import Testing

@Suite struct TimelineTests {
    private func ids(_ reply: TestResponse) throws -> [Int64] {
        guard let list = try reply.json().arrayValue else { throw TestFailure("not a bare array: \(reply.text.prefix(200))") }
        return list.compactMap { $0["id"]?.int64Value }
    }

    @Test func newestFirstWithDefaultAndClampedCounts() throws {
        let harness = try Harness()
        defer { harness.stop() }
        harness.sandbox.seedStatuses(count: 250, user: "linglu")
        let token = harness.token()
        let page = try ids(try harness.get("/shuo/v2/statuses/home_timeline", token: token))
        #expect(page.count == 20)
        #expect(page == page.sorted(by: >))
        let large = try ids(try harness.get("/shuo/v2/statuses/home_timeline?count=500", token: token))
        #expect(large.count == 200)
        let all = try ids(try harness.get("/shuo/v2/statuses/user_timeline/linglu?count=200&start=200", token: token))
        #expect(all.count == 52)  // 250 seeded + 2 of the seed data
        #expect(try harness.get("/shuo/v2/statuses/home_timeline?count=0", token: token).json().arrayValue?.count == 20)
    }

    @Test func sinceIdIsStrictAndUntilIdInclusive() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let seeded = harness.sandbox.seedStatuses(count: 30, user: "ahbei")
        let token = harness.token()
        let pivot = seeded[10]
        let newer = try ids(try harness.get("/shuo/v2/statuses/home_timeline?since_id=\(pivot)&count=200", token: token))
        #expect(newer == Array(seeded[11...].reversed()))
        let older = try ids(try harness.get("/shuo/v2/statuses/home_timeline?until_id=\(pivot)&count=5", token: token))
        #expect(older == Array(seeded[6...10].reversed()))
        let window = try ids(try harness.get("/shuo/v2/statuses/user_timeline/ahbei?since_id=\(seeded[3])&until_id=\(seeded[8])",
                                             token: token))
        #expect(window == Array(seeded[4...8].reversed()))
        let startCount = try ids(try harness.get("/shuo/v2/statuses/home_timeline?start=5&count=10", token: token))
        let full = try ids(try harness.get("/shuo/v2/statuses/home_timeline?count=200", token: token))
        #expect(startCount == Array(full[5..<15]))
    }

    @Test func walkingWithUntilIdHasNoDuplicatesOrGaps() throws {
        let harness = try Harness()
        defer { harness.stop() }
        harness.sandbox.seedStatuses(count: 95, user: "chenmo")
        let token = harness.token()
        let everything = try ids(try harness.get("/shuo/v2/statuses/home_timeline?count=200", token: token))
        var walked: [Int64] = []
        var target = "/shuo/v2/statuses/home_timeline?count=20"
        for _ in 0..<20 {
            let page = try ids(try harness.get(target, token: token))
            if page.isEmpty { break }
            walked += page
            target = "/shuo/v2/statuses/home_timeline?count=20&until_id=\(page.last! - 1)"
        }
        #expect(walked == everything)
        #expect(Set(walked).count == walked.count)
    }

    @Test func tenThousandStatusesStayFast() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let started = TestClock.now()
        let ids = harness.sandbox.seedStatuses(count: 10_000, user: "ahbei")
        #expect(ids.count == 10_000)
        #expect(Set(ids).count == 10_000)
        let token = harness.token()
        let page = try harness.get("/shuo/v2/statuses/home_timeline?count=200&until_id=\(ids[5000])", token: token).json()
        #expect(page.arrayValue?.count == 200)
        #expect(page[0]?["id"]?.int64Value == ids[5000])
        #expect(TestClock.now() - started < 30)
    }

    @Test func concurrentClientsSeeConsistentState() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let port = harness.port
        let tokens = (0..<6).map { harness.token(["ahbei", "linglu", "chenmo"][$0 % 3]) }
        let failures = LockedValue(0)
        runConcurrently(count: 6, width: 6) { worker in
            for index in 0..<15 {
                let body = Form.encode([("text", "并发 \(worker)-\(index)")])
                let posted = try? TestHTTP.request(port: port, method: "POST", target: "/shuo/v2/statuses/",
                                                   headers: [("Authorization", "Bearer \(tokens[worker])"),
                                                             ("Content-Type", "application/x-www-form-urlencoded")],
                                                   body: body)
                let liked = try? TestHTTP.request(port: port, method: "POST", target: "/shuo/v2/statuses/1402640300/like",
                                                  headers: [("Authorization", "Bearer \(tokens[worker])")])
                let read = try? TestHTTP.request(port: port, method: "GET", target: "/shuo/v2/statuses/home_timeline",
                                                 headers: [("Authorization", "Bearer \(tokens[worker])")])
                if posted?.status != 200 || liked?.status != 200 || read?.status != 200 { failures.withLock { $0 += 1 } }
            }
        }
        #expect(failures.value == 0)
        let token = harness.token()
        var mine: [Int64] = []
        for uid in ["ahbei", "linglu", "chenmo"] {
            let list = try harness.get("/shuo/v2/statuses/user_timeline/\(uid)?count=200", token: token).json()
            mine += list.arrayValue?.filter { $0["text"]?.stringValue?.hasPrefix("并发") == true }.compactMap { $0["id"]?.int64Value } ?? []
        }
        #expect(mine.count == 90)
        #expect(Set(mine).count == 90)
        // Likes are per user, however often each asked: linglu and chenmo (seeded) and ahbei.
        let likers = try harness.get("/shuo/v2/statuses/1402640300/like", token: token).json()
        #expect(Set(likers.arrayValue?.compactMap { $0["uid"]?.stringValue } ?? []) == ["linglu", "chenmo", "ahbei"])
        #expect(likers.arrayValue?.count == 3)
    }

    @Test func listsAreBareArrays() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.token()
        for target in ["/shuo/v2/statuses/home_timeline", "/shuo/v2/statuses/user_timeline/ahbei",
                       "/shuo/v2/statuses/1402640305/comments", "/shuo/v2/statuses/1402640300/like",
                       "/shuo/v2/statuses/1402640303/reshare", "/shuo/v2/users/ahbei/following",
                       "/shuo/v2/users/ahbei/followers"] {
            let reply = try harness.get(target, token: token)
            #expect(reply.status == 200, "\(target)")
            #expect(try reply.json().arrayValue != nil, "\(target)")
        }
    }
}
