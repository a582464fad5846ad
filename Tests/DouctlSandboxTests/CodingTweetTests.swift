import DouctlJSON
import DouctlSandbox
import Testing

/// Coding's users and tweets (冒泡): shapes, ownership, likes, comments.
@Suite struct CodingTweetTests {
    @Test func userByGlobalKey() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.codingToken()
        let reply = try harness.codingGet("/api/user/key/devmei", token: token)
        #expect(reply.status == 200)
        let user = try #require(reply.data)
        #expect(codingUserProblems(user) == [])
        #expect(user["global_key"] == "devmei")
        #expect(user["name"] == "前端小美")
        #expect(user["email"] == "")  // not the caller's own
        #expect(user["followed"] == true)  // coder follows devmei
        #expect(user["follow"] == true)  // and devmei follows coder
        #expect(user["tweets_count"] == 2)
        let avatar = try harness.get(try target(of: user["avatar"]?.stringValue ?? "", base: harness.base))
        #expect(avatar.status == 200)
        let unknown = try harness.codingGet("/api/user/key/nobody", token: token)
        #expect(unknown.status == 404)
        #expect(try unknown.json() == ["code": 1, "msg": ["user_not_exists": "用户不存在"]])
    }

    @Test func postedTweetHasTheDocumentedShapeAndRenderedContent() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.codingToken()
        let content = "第一段 <b>不是标签</b>\n第二行\n\n看图 ![图片](http://127.0.0.1/x.png) 和[链接](https://coding.net/)"
        let reply = try harness.codingPost("/api/tweet", form: [("content", content), ("location", "深圳"),
                                                                ("coord", "22.54,114.05,0"), ("address", "南山区"),
                                                                ("device", "douctl")], token: token)
        #expect(reply.status == 200)
        let body = try reply.json()
        #expect(body["code"] == 0)
        let tweet = try #require(body["data"])
        #expect(tweetProblems(tweet) == [])
        #expect(tweet["content"] == .string(
            "<p>第一段 &lt;b&gt;不是标签&lt;/b&gt;<br />第二行</p><p>看图 <img src=\"http://127.0.0.1/x.png\" alt=\"图片\"> 和"
                + "<a href=\"https://coding.net/\" target=\"_blank\" rel=\"nofollow\">链接</a></p>"))
        #expect(tweet["location"] == "深圳")
        #expect(tweet["coord"] == "22.54,114.05,0")
        #expect(tweet["address"] == "南山区")
        #expect(tweet["device"] == "douctl")
        #expect(tweet["owner"]?["global_key"] == "coder")
        #expect(tweet["comments"] == 0)
        #expect(tweet["likes"] == 0)
        #expect(tweet["liked"] == false)
        let created = try #require(tweet["created_at"]?.int64Value)
        let sortTime = try #require(tweet["sort_time"]?.int64Value)
        #expect(created > 1_700_000_000_000)
        #expect(sortTime >= created)
        // Detail, under the owner's global_key only.
        let id = try #require(tweet["id"]?.int64Value)
        let detail = try harness.codingGet("/api/tweet/coder/\(id)", token: token)
        #expect(detail.data?["id"] == tweet["id"])
        #expect(detail.data?["content"] == tweet["content"])
        let notFound: JSON = ["code": 1101, "msg": ["tweet_not_exist": "冒泡不存在"]]
        let wrongOwner = try harness.codingGet("/api/tweet/devmei/\(id)", token: token)
        #expect(wrongOwner.status == 404)
        #expect(try wrongOwner.json() == notFound)
        let unknown = try harness.codingGet("/api/tweet/coder/99999", token: token)
        #expect(unknown.status == 404)
        #expect(try unknown.json() == notFound)
        // Empty content is refused.
        let empty = try harness.codingPost("/api/tweet", form: [("content", "  \n ")], token: token)
        #expect(empty.code == 1)
        #expect(empty.codingMsg["content_empty"] != nil)
    }

    @Test func deletingIsForTheOwnerOnly() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let mine = harness.codingToken()
        let theirs = harness.codingToken("devmei")
        let id = try #require(try harness.postTweet("马上删除", token: mine)["id"]?.int64Value)
        let refused = try harness.codingDelete("/api/tweet/\(id)", token: theirs)
        #expect(refused.status == 200)
        #expect(try refused.json() == ["code": 1102, "msg": ["permission_denied": "权限不足"]])
        let deleted = try harness.codingDelete("/api/tweet/\(id)", token: mine)
        #expect(try deleted.json() == ["code": 0])
        #expect(try harness.codingGet("/api/tweet/coder/\(id)", token: mine).code == 1101)
        let again = try harness.codingDelete("/api/tweet/\(id)", token: mine)
        #expect(again.status == 404)
        #expect(again.code == 1101)
    }

    @Test func likeUnlikeAndLikers() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let coder = harness.codingToken()
        let devmei = harness.codingToken("devmei")
        let id = try #require(try harness.postTweet("点个赞吧", token: coder)["id"]?.int64Value)
        #expect(try harness.codingPost("/api/tweet/\(id)/like", token: devmei).json() == ["code": 0])
        #expect(try harness.codingPost("/api/tweet/\(id)/like", token: devmei).code == 0)  // idempotent
        #expect(try harness.codingPost("/api/tweet/\(id)/like", token: coder).code == 0)
        let seenByDevmei = try harness.codingGet("/api/tweet/coder/\(id)", token: devmei).data
        #expect(seenByDevmei?["likes"] == 2)
        #expect(seenByDevmei?["liked"] == true)
        #expect(seenByDevmei?["like_users"]?.arrayValue?.compactMap { $0["global_key"]?.stringValue } == ["coder", "devmei"])
        let likers = try harness.codingGet("/api/tweet/\(id)/likes", token: devmei, query: [("page", "1"), ("pageSize", "500")])
        #expect(pageableProblems(likers.data) == [])
        #expect(likers.data?["totalRow"] == 2)
        #expect(likers.data?["pageSize"] == 500)
        #expect(likers.data?["list"]?.arrayValue?.map { codingUserProblems($0) } == [[], []])
        #expect(try harness.codingPost("/api/tweet/\(id)/unlike", token: devmei).json() == ["code": 0])
        let after = try harness.codingGet("/api/tweet/coder/\(id)", token: devmei).data
        #expect(after?["likes"] == 1)
        #expect(after?["liked"] == false)
        #expect(try harness.codingPost("/api/tweet/424242/like", token: devmei).code == 1101)
        #expect(try harness.codingGet("/api/tweet/424242/likes", token: devmei).status == 404)
    }

    @Test func commentsAddListAndDelete() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let coder = harness.codingToken()
        let devmei = harness.codingToken("devmei")
        let opszhang = harness.codingToken("opszhang")
        let id = try #require(try harness.postTweet("欢迎评论", token: coder)["id"]?.int64Value)
        let added = try harness.codingPost("/api/tweet/\(id)/comment", form: [("content", "沙发")], token: devmei)
        #expect(added.code == 0)
        let comment = try #require(added.data)
        #expect(isNumber(comment["id"]))
        #expect(comment["content"] == "<p>沙发</p>")
        #expect(comment["owner"]?["global_key"] == "devmei")
        #expect(comment["tweet_id"] == .int(id))
        #expect(isNumber(comment["created_at"]))
        let second = try harness.codingPost("/api/tweet/\(id)/comment", form: [("content", "板凳")], token: opszhang)
        let list = try harness.codingGet("/api/tweet/\(id)/comments", token: coder)
        #expect(pageableProblems(list.data) == [])
        #expect(list.data?["page"] == 1)
        #expect(list.data?["pageSize"] == 20)
        #expect(list.data?["totalRow"] == 2)
        #expect(list.data?["totalPage"] == 1)
        #expect(list.data?["list"]?.arrayValue?.compactMap { $0["content"]?.stringValue } == ["<p>板凳</p>", "<p>沙发</p>"])
        let tweet = try harness.codingGet("/api/tweet/coder/\(id)", token: coder).data
        #expect(tweet?["comments"] == 2)
        #expect(tweet?["comment_list"]?.arrayValue?.count == 2)

        let commentID = try #require(comment["id"]?.int64Value)
        let secondID = try #require(second.data?["id"]?.int64Value)
        // Neither the comment's author nor the tweet's owner: refused.
        #expect(try harness.codingDelete("/api/tweet/\(id)/comment/\(commentID)", token: opszhang).json()
            == ["code": 1102, "msg": ["permission_denied": "权限不足"]])
        // The author may.
        #expect(try harness.codingDelete("/api/tweet/\(id)/comment/\(commentID)", token: devmei).json() == ["code": 0])
        // The tweet's owner may delete others' comments.
        #expect(try harness.codingDelete("/api/tweet/\(id)/comment/\(secondID)", token: coder).code == 0)
        let gone = try harness.codingDelete("/api/tweet/\(id)/comment/\(secondID)", token: coder)
        #expect(gone.status == 404)
        #expect(try gone.json() == ["code": 1103, "msg": ["comment_not_exist": "评论不存在"]])
        #expect(try harness.codingGet("/api/tweet/\(id)/comments", token: coder).data?["totalRow"] == 0)
        #expect(try harness.codingPost("/api/tweet/\(id)/comment", form: [("content", "")], token: coder).code == 1)
        #expect(try harness.codingPost("/api/tweet/777/comment", form: [("content", "?")], token: coder).code == 1101)
    }

    @Test func seededWorldIsThere() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.codingToken()
        let timeline = try harness.codingGet("/api/tweet/public_tweets", token: token, query: [("sort", "time"), ("last_id", "99999999")])
        let tweets = try #require(timeline.data?.arrayValue)
        #expect(tweets.count == 8)
        #expect(tweets.allSatisfy { tweetProblems($0) == [] })
        #expect(tweets.contains { $0["content"]?.stringValue?.contains("冒泡沙盒") == true })
        let welcome = try #require(tweets.last)
        #expect(welcome["likes"] == 3)
        #expect(welcome["comments"] == 2)
        #expect(welcome["comment_list"]?.arrayValue?.count == 2)
        #expect(Sandbox.codingSeededUsers.allSatisfy { harness.sandbox.codingUserID(of: $0) != nil })
    }
}
