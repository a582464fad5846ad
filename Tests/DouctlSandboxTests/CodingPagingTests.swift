import DouctlJSON
import DouctlSandbox
import Testing

/// Tweet timelines (bare arrays, `last_id` / `last_time` cursors) and Pageable lists.
@Suite struct CodingPagingTests {
    /// Walks a timeline with one cursor until an empty page; returns the tweets in order.
    static func walkTweets(_ harness: Harness, _ path: String, token: String, query: [(String, String)] = [],
                           cursor: String, pageSize: Int) throws -> [JSON] {
        var tweets: [JSON] = []
        var next = cursor == "last_id" ? "99999999" : nil
        for _ in 0..<1000 {
            var fields = query + [("pageSize", String(pageSize))]
            if let next { fields.append((cursor, next)) }
            let reply = try harness.codingGet(path, token: token, query: fields)
            guard reply.status == 200, reply.code == 0 else { throw TestFailure("\(path): \(reply.status) \(reply.text)") }
            guard case .array(let page) = try #require(reply.data) else { throw TestFailure("data is not a bare array") }
            if page.isEmpty { return tweets }
            #expect(page.count <= pageSize)
            tweets += page
            let last = try #require(page.last)
            next = cursor == "last_id" ? last["id"]?.scalarText : last["sort_time"]?.scalarText
        }
        throw TestFailure("the walk did not end")
    }

    static func walk(_ harness: Harness, _ path: String, token: String, query: [(String, String)] = [],
                     cursor: String, pageSize: Int) throws -> [Int64] {
        try walkTweets(harness, path, token: token, query: query, cursor: cursor, pageSize: pageSize).compactMap { $0["id"]?.int64Value }
    }

    @Test func cursorWalksCoverEveryTweetOnceNewestFirst() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.codingToken()
        let seeded = harness.sandbox.seedTweets(count: 95, user: "devmei")
        #expect(seeded.count == 95)
        let everyone = try harness.codingGet("/api/tweet/public_tweets", token: token, query: [("pageSize", "100")])
        let expected = try #require(everyone.data?.arrayValue).compactMap { $0["id"]?.int64Value }
        #expect(expected.count == 100)  // at most 100 a page; 103 exist
        for cursor in ["last_id", "last_time"] {
            let ids = try Self.walk(harness, "/api/tweet/public_tweets", token: token, query: [("sort", "time")],
                                    cursor: cursor, pageSize: 20)
            #expect(ids.count == 95 + 8, "\(cursor)")
            #expect(Set(ids).count == ids.count, "\(cursor): duplicates")
            #expect(ids == ids.sorted(by: >), "\(cursor): not newest first")
            #expect(Array(ids.prefix(100)) == expected)
            #expect(Set(seeded).isSubset(of: Set(ids)))
        }
        // Sort times are unique and follow the ids.
        let page = try #require(try harness.codingGet("/api/tweet/public_tweets", token: token, query: [("pageSize", "100")]).data?.arrayValue)
        let times = page.compactMap { $0["sort_time"]?.int64Value }
        #expect(times == times.sorted(by: >))
        #expect(Set(times).count == times.count)
    }

    @Test func pageSizeDefaultsTo20AndIsCappedAt100() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.codingToken()
        harness.sandbox.seedTweets(count: 150, user: "coder")
        #expect(try harness.codingGet("/api/tweet/public_tweets", token: token).data?.arrayValue?.count == 20)
        #expect(try harness.codingGet("/api/tweet/public_tweets", token: token, query: [("pageSize", "500")]).data?.arrayValue?.count == 100)
        #expect(try harness.codingGet("/api/tweet/public_tweets", token: token, query: [("pageSize", "3")]).data?.arrayValue?.count == 3)
        let bad = try harness.codingGet("/api/tweet/public_tweets", token: token, query: [("last_id", "abc")])
        #expect(bad.status == 400)
        #expect(bad.codingMsg["param_error"] != nil)
    }

    @Test func friendsAndUserTimelines() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let coder = harness.codingToken()
        let twofaTweet = try harness.postTweet("老李的新冒泡", token: harness.codingToken("twofa"))
        // coder follows devmei and opszhang, not twofa.
        let friendTweets = try Self.walkTweets(harness, "/api/activities/user_tweet", token: coder, cursor: "last_time", pageSize: 2)
        let friends = friendTweets.compactMap { $0["id"]?.int64Value }
        #expect(friends.count == 7)
        #expect(Set(friendTweets.compactMap { $0["owner"]?["global_key"]?.stringValue }) == ["coder", "devmei", "opszhang"])
        #expect(!friends.contains(try #require(twofaTweet["id"]?.int64Value)))
        let mine = try Self.walk(harness, "/api/tweet/user_public", token: coder, query: [("global_key", "devmei")],
                                 cursor: "last_id", pageSize: 1)
        #expect(mine.count == 2)
        let byID = try harness.codingGet("/api/tweet/user_public", token: coder,
                                         query: [("user_id", String(try #require(harness.sandbox.codingUserID(of: "devmei"))))])
        #expect(byID.data?.arrayValue?.count == 2)
        #expect(try harness.codingGet("/api/tweet/user_public", token: coder, query: [("global_key", "nobody")]).code == 1)
        #expect(try harness.codingGet("/api/tweet/user_public", token: coder).status == 400)
    }

    @Test func hotSortIsOnePage() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.codingToken()
        let hot = try #require(try harness.codingGet("/api/tweet/public_tweets", token: token, query: [("sort", "hot")]).data?.arrayValue)
        #expect(hot.count == 8)
        let scores = hot.map { ($0["likes"]?.intValue ?? 0) + ($0["comments"]?.intValue ?? 0) }
        #expect(scores == scores.sorted(by: >))
        #expect(scores.first == 5)
        let last = try #require(hot.last?["id"]?.scalarText)
        #expect(try harness.codingGet("/api/tweet/public_tweets", token: token, query: [("sort", "hot"), ("last_id", last)]).data == [])
    }

    @Test func pageableWalkOfComments() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.codingToken()
        let id = try #require(try harness.postTweet("评论很多的冒泡", token: token)["id"]?.int64Value)
        for index in 1...23 {
            #expect(try harness.codingPost("/api/tweet/\(id)/comment", form: [("content", "评论\(index)")], token: token).code == 0)
        }
        var seen: [String] = []
        var page = 1
        while true {
            let reply = try harness.codingGet("/api/tweet/\(id)/comments", token: token, query: [("page", String(page)), ("pageSize", "5")])
            let data = try #require(reply.data)
            #expect(pageableProblems(data) == [])
            #expect(data["page"] == .int(page))
            #expect(data["pageSize"] == 5)
            #expect(data["totalRow"] == 23)
            #expect(data["totalPage"] == 5)
            seen += data["list"]?.arrayValue?.compactMap { $0["content"]?.stringValue } ?? []
            guard page < (data["totalPage"]?.intValue ?? 0) else { break }
            page += 1
        }
        #expect(seen == (1...23).reversed().map { "<p>评论\($0)</p>" })
        let beyond = try harness.codingGet("/api/tweet/\(id)/comments", token: token, query: [("page", "9"), ("pageSize", "5")])
        #expect(beyond.data?["list"] == [])
        #expect(beyond.data?["totalRow"] == 23)
    }
}
