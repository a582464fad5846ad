#if canImport(Glibc)
import Glibc
#endif
import DouctlJSON
import DouctlSandbox
import Testing

/// Beijing time (UTC+8) of `epoch`, formatted by the C library: an independent check.
func beijingTime(_ epoch: Int) -> String {
    var seconds = time_t(epoch + 8 * 3600)
    var parts = tm()
    gmtime_r(&seconds, &parts)
    var buffer = [CChar](repeating: 0, count: 32)
    let count = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M:%S", &parts)
    return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Checks the §6.1 Status shape; returns problems found.
func statusShapeProblems(_ status: JSON) -> [String] {
    var problems: [String] = []
    if !isNumber(status["id"]) { problems.append("id is not a number") }
    for key in ["category", "type", "title", "text"] where !isString(status[key]) { problems.append("\(key) not a string") }
    if !isDoubanTime(status["created_at"]?.stringValue) { problems.append("created_at format") }
    for key in ["reshared_count", "like_count", "comments_count", "can_reply", "layout"] where !isNumber(status[key]) {
        problems.append("\(key) not a number")
    }
    for key in ["liked", "is_follow", "has_photo"] where !isBool(status[key]) { problems.append("\(key) not a bool") }
    if !isString(status["source"]?["title"]) || !isString(status["source"]?["href"]) { problems.append("source") }
    for key in ["user_mentions", "topics", "urls"] where status["entities"]?[key]?.arrayValue == nil {
        problems.append("entities.\(key)")
    }
    if status["attachments"]?.arrayValue == nil { problems.append("attachments not an array") }
    let user = status["user"]
    if !isString(user?["id"]) { problems.append("user.id is not a string") }
    for key in ["uid", "screen_name", "type", "description", "small_avatar", "large_avatar"] where !isString(user?[key]) {
        problems.append("user.\(key)")
    }
    return problems
}

@Suite struct StatusEndpointTests {
    @Test func postTextStatus() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.token()
        let before = TestClock.wallSeconds()
        let reply = try harness.post("/shuo/v2/statuses/", form: [("text", "你好，沙盒！ #命令行# 第一条"), ("source", Sandbox.clientID)],
                                     token: token)
        let after = TestClock.wallSeconds()
        #expect(reply.status == 200)
        let status = try reply.json()
        let createdAt = try #require(status["created_at"]?.stringValue)
        #expect((before...after).map(beijingTime).contains(createdAt), "\(createdAt)")
        #expect(statusShapeProblems(status) == [])
        #expect(status["text"] == .string("你好，沙盒！ #命令行# 第一条"))
        #expect(status["user"]?["id"] == .string("1000001"))
        #expect(status["user"]?["uid"] == .string("ahbei"))
        #expect(status["liked"] == false)
        #expect(status["like_count"] == .number("0"))
        #expect(status["has_photo"] == false)
        #expect(status["attachments"] == [])
        #expect(status["entities"]?["topics"] == [["text": "命令行", "indices": [7, 12]]])
        let id = try #require(status["id"]?.int64Value)
        #expect(id > 1_402_640_300)
        let home = try harness.get("/shuo/v2/statuses/home_timeline", token: token).json()
        #expect(home[0]?["id"] == status["id"])
        let mine = try harness.get("/shuo/v2/statuses/user_timeline/ahbei", token: token).json()
        #expect(mine[0]?["id"] == status["id"])
        #expect(try harness.get("/shuo/v2/statuses/\(id)", token: token).json() == status)
    }

    @Test func postRecommendation() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let reply = try harness.post("/shuo/v2/statuses/", form: [("rec_title", "豆瓣读书"), ("rec_url", "https://book.douban.com/"),
                                                                  ("rec_desc", "读书的地方"), ("rec_image", "https://img.example/x.png")],
                                     token: harness.token())
        #expect(reply.status == 200)
        let status = try reply.json()
        #expect(statusShapeProblems(status) == [])
        #expect(status["title"] == .string("推荐网址"))
        let attachment = try #require(status["attachments"]?[0])
        #expect(status["attachments"]?.arrayValue?.count == 1)
        #expect(attachment["title"] == .string("豆瓣读书"))
        #expect(attachment["href"] == .string("https://book.douban.com/"))
        #expect(attachment["expaned_href"] == .string("https://book.douban.com/"))
        #expect(attachment["description"] == .string("读书的地方"))
        #expect(attachment["media"]?[0]?["src"] == .string("https://img.example/x.png"))
    }

    @Test func emptyStatusIs1005() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.token()
        for form in [[("text", "")], [("text", "  \n ")], []] {
            let reply = try harness.post("/shuo/v2/statuses/", form: form, token: token)
            #expect(reply.status == 400)
            #expect(try reply.json() == ["msg": "input_too_short", "code": 1005, "request": "POST /shuo/v2/statuses/"])
        }
    }

    @Test func packedStatus() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.token()
        // Seed status 1402640305 (ahbei's "#douctl#") has two comments and one like.
        let packed = try harness.get("/shuo/v2/statuses/1402640305?pack=true", token: token).json()
        #expect(packed.objectValue?.keys == ["status", "reshare_users", "comments", "like_users"])
        #expect(statusShapeProblems(try #require(packed["status"])) == [])
        #expect(packed["comments"]?.arrayValue?.count == 2)
        #expect(packed["like_users"]?.arrayValue?.count == 1)
        #expect(packed["like_users"]?[0]?["uid"] == .string("sunxiaomei"))
        #expect(isString(packed["like_users"]?[0]?["id"]))
        #expect(packed["reshare_users"] == [])
        let plain = try harness.get("/shuo/v2/statuses/1402640305", token: token).json()
        #expect(plain["comments_count"] == .number("2"))
        #expect(plain["status"] == nil)
    }

    @Test func deleteOwnStatusOnly() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.token()
        let status = try harness.postStatus("要删掉的广播", token: token)
        let id = try #require(status["id"]?.int64Value)
        let others = try harness.delete("/shuo/v2/statuses/\(id)", token: harness.token("linglu"))
        #expect(others.status == 403)
        #expect(others.code == 1000)
        #expect(others.msg == "need_permission")
        let deleted = try harness.delete("/shuo/v2/statuses/\(id)", token: token)
        #expect(deleted.status == 200)
        #expect(try deleted.json()["id"] == status["id"])
        let gone = try harness.get("/shuo/v2/statuses/\(id)", token: token)
        #expect(gone.status == 404)
        #expect(gone.code == 1001)
        #expect(try harness.delete("/shuo/v2/statuses/\(id)", token: token).code == 1001)
        let seeded = try harness.delete("/shuo/v2/statuses/1402640301", token: token)  // linglu's
        #expect(seeded.status == 403)
    }

    @Test func commentsListCreateGetDelete() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let ahbei = harness.token()
        let linglu = harness.token("linglu")
        let chenmo = harness.token("chenmo")
        let seeded = try harness.get("/shuo/v2/statuses/1402640305/comments", token: ahbei).json()
        #expect(seeded.arrayValue?.compactMap { $0["user"]?["uid"]?.stringValue } == ["linglu", "chenmo"])  // oldest first
        let comment = try #require(seeded[0])
        #expect(isNumber(comment["id"]))
        #expect(isString(comment["text"]) && isString(comment["source"]))
        #expect(isDoubanTime(comment["created_at"]?.stringValue))
        #expect(isString(comment["user"]?["id"]))
        #expect(comment["entities"]?["topics"]?.arrayValue != nil)

        let status = try harness.postStatus("来评论吧", token: ahbei)
        let id = try #require(status["id"]?.int64Value)
        let created = try harness.post("/shuo/v2/statuses/\(id)/comments", form: [("text", "沙发！")], token: linglu)
        #expect(created.status == 201)
        let newComment = try created.json()
        #expect(newComment["text"] == .string("沙发！"))
        #expect(newComment["user"]?["uid"] == .string("linglu"))
        let commentID = try #require(newComment["id"]?.int64Value)
        #expect(try harness.get("/shuo/v2/statuses/comment/\(commentID)", token: chenmo).json() == newComment)
        #expect(try harness.get("/shuo/v2/statuses/\(id)", token: ahbei).json()["comments_count"] == .number("1"))
        let paged = try harness.get("/shuo/v2/statuses/1402640305/comments?start=1&count=1", token: ahbei).json()
        #expect(paged.arrayValue?.count == 1)
        #expect(paged[0] == seeded[1])

        // A third user may not delete it; the status owner may.
        #expect(try harness.delete("/shuo/v2/statuses/comment/\(commentID)", token: chenmo).code == 1000)
        let deleted = try harness.delete("/shuo/v2/statuses/comment/\(commentID)", token: ahbei)
        #expect(deleted.status == 200)
        #expect(try deleted.json()["text"] == .string("沙发！"))
        #expect(try harness.get("/shuo/v2/statuses/comment/\(commentID)", token: ahbei).code == 1001)
        // The author may delete their own comment on someone else's status.
        let mine = try harness.post("/shuo/v2/statuses/1402640301/comments", form: [("text", "风大")], token: ahbei).json()
        #expect(try harness.delete("/shuo/v2/statuses/comment/\(mine["id"]?.int64Value ?? 0)", token: ahbei).status == 200)

        let empty = try harness.post("/shuo/v2/statuses/\(id)/comments", form: [("text", "")], token: ahbei)
        #expect(empty.code == 1005)
        #expect(try harness.post("/shuo/v2/statuses/42/comments", form: [("text", "x")], token: ahbei).code == 1001)
        #expect(try harness.get("/shuo/v2/statuses/42/comments", token: ahbei).status == 404)
    }

    @Test func likeUnlikeAndLikers() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.token()
        let before = try harness.get("/shuo/v2/statuses/1402640307", token: token).json()
        #expect(before["liked"] == false)
        let liked = try harness.post("/shuo/v2/statuses/1402640307/like", token: token)
        #expect(liked.status == 200)
        let json = try liked.json()
        #expect(json["liked"] == true)
        #expect(json["like_count"] == .number("1"))
        #expect(try harness.post("/shuo/v2/statuses/1402640307/like", token: token).json()["like_count"] == .number("1"))
        #expect(try harness.post("/shuo/v2/statuses/1402640307/like", token: harness.token("linglu")).json()["like_count"] == .number("2"))
        let likers = try harness.get("/shuo/v2/statuses/1402640307/like", token: token).json()
        #expect(likers.arrayValue?.compactMap { $0["uid"]?.stringValue } == ["linglu", "ahbei"])  // newest first
        #expect(isNumber(likers[0]?["followers_count"]))
        // `liked` is relative to the caller.
        #expect(try harness.get("/shuo/v2/statuses/1402640307", token: harness.token("wangdali")).json()["liked"] == false)
        let unliked = try harness.delete("/shuo/v2/statuses/1402640307/like", token: token)
        #expect(unliked.status == 200)
        #expect(try unliked.json()["liked"] == false)
        #expect(try unliked.json()["like_count"] == .number("1"))
        #expect(try harness.post("/shuo/v2/statuses/7/like", token: token).code == 1001)
    }

    @Test func reshareAndResharers() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.token()
        let reply = try harness.post("/shuo/v2/statuses/1402640304/reshare", token: token)
        #expect(reply.status == 200)
        let reshare = try reply.json()
        #expect(statusShapeProblems(reshare) == [])
        #expect(reshare["user"]?["uid"] == .string("ahbei"))
        #expect(reshare["reshared_status"]?["id"] == .number("1402640304"))
        #expect(statusShapeProblems(try #require(reshare["reshared_status"])) == [])
        #expect(reshare["reshared_status"]?["reshared_count"] == .number("1"))
        let resharers = try harness.get("/shuo/v2/statuses/1402640304/reshare", token: token).json()
        #expect(resharers.arrayValue?.compactMap { $0["uid"]?.stringValue } == ["ahbei"])
        // Resharing a reshare reshares the original.
        let reshareID = try #require(reshare["id"]?.int64Value)
        let again = try harness.post("/shuo/v2/statuses/\(reshareID)/reshare", token: harness.token("linglu")).json()
        #expect(again["reshared_status"]?["id"] == .number("1402640304"))
        #expect(try harness.get("/shuo/v2/statuses/1402640304", token: token).json()["reshared_count"] == .number("2"))
        // The reshare is a status of the resharer.
        let mine = try harness.get("/shuo/v2/statuses/user_timeline/ahbei", token: token).json()
        #expect(mine[0]?["id"] == reshare["id"])
        // Undo = delete the reshare status; DELETE …/reshare does not exist on Douban.
        #expect(try harness.delete("/shuo/v2/statuses/1402640304/reshare", token: token).code == 1001)
        #expect(try harness.delete("/shuo/v2/statuses/\(reshareID)", token: token).status == 200)
        #expect(try harness.post("/shuo/v2/statuses/5/reshare", token: token).code == 1001)
    }

    @Test func userTimelineByIdUidOrSelf() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.token()
        let byUID = try harness.get("/shuo/v2/statuses/user_timeline/linglu", token: token).json()
        let id = try #require(harness.sandbox.userID(of: "linglu"))
        let byID = try harness.get("/shuo/v2/statuses/user_timeline/\(id)", token: token).json()
        #expect(byUID == byID)
        #expect(byUID.arrayValue?.allSatisfy { $0["user"]?["uid"] == .string("linglu") } == true)
        #expect(byUID.arrayValue?.count == 2)
        let own = try harness.get("/shuo/v2/statuses/user_timeline", token: token).json()
        #expect(own.arrayValue?.allSatisfy { $0["user"]?["uid"] == .string("ahbei") } == true)
        #expect(try harness.get("/shuo/v2/statuses/user_timeline/nobody", token: token).code == 1001)
        // A seeded reshare carries the original.
        #expect(byUID[0]?["reshared_status"]?["user"]?["uid"] == .string("sunxiaomei"))
    }

    @Test func firstHomeTimelineIsNotEmpty() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let home = try harness.get("/shuo/v2/statuses/home_timeline", token: harness.token())
        #expect(home.status == 200)
        let list = try #require(try home.json().arrayValue)
        #expect(list.count >= 5)
        #expect(list.allSatisfy { statusShapeProblems($0) == [] })
        let authors = Set(list.compactMap { $0["user"]?["uid"]?.stringValue })
        #expect(authors == ["ahbei", "linglu", "chenmo"])
        #expect(list.contains { ($0["text"]?.stringValue ?? "").unicodeScalars.contains { $0.value >= 0x4E00 } })
    }
}
