import DouctlJSON
import DouctlSandbox
import DouctlTestSupport
import Foundation
import Testing

@Suite("douctl shuo")
struct ShuoTests {
    func loggedIn() throws -> SandboxFixture {
        let fixture = try SandboxFixture()
        try fixture.login()
        return fixture
    }

    // MARK: post

    @Test func postTextIsAFormBody() throws {
        let fixture = try loggedIn()
        let result = try fixture.douctl.run("shuo", "post", "你好 & hello")
        #expect(result.status == 0, "\(result)")
        let status = try result.json()
        #expect(status["text"]?.stringValue == "你好 & hello")
        #expect(status["id"]?.int64Value != nil)
        let request = try #require(fixture.sandbox.requests.last)
        #expect(request.method == "POST")
        #expect(request.path == "/shuo/v2/statuses/")
        #expect(request.contentType == "application/x-www-form-urlencoded")
        #expect(request.form.map { "\($0.name)=\($0.value)" } == ["text=你好 & hello"])
    }

    @Test func postTextFromStdin() throws {
        let fixture = try loggedIn()
        let result = try fixture.douctl.run(["shuo", "post", "-"], input: Array("从管道来的\n".utf8))
        #expect(try result.json()["text"]?.stringValue == "从管道来的")
    }

    @Test func postWithAPictureIsMultipart() throws {
        let fixture = try loggedIn()
        let picture = try TemporaryDirectory.file(named: "照片 1.png", bytes: PNGFixture.bytes)
        let result = try fixture.douctl.run("shuo", "post", "有图", "--image", picture)
        #expect(result.status == 0, "\(result)")
        let request = try #require(fixture.sandbox.requests.last { $0.path == "/shuo/v2/statuses/" })
        #expect(request.contentType?.hasPrefix("multipart/form-data; boundary=") == true)
        #expect(!request.isChunked && request.contentLength == request.bodySize)
        #expect(request.parts.map(\.name) == ["text", "image"])
        let image = try #require(request.parts.last)
        #expect(image.filename == "照片 1.png")
        #expect(image.contentType == "image/png")
        #expect(image.bytes == PNGFixture.bytes)
        // The picture is served back at the URL the status names.
        let src = try #require(try result.json()["attachments"]?[0]?["media"]?[0]?["src"]?.stringValue)
        let fetched = try fixture.douctl.run("api", src, "--raw")
        #expect(fetched.stdout == PNGFixture.bytes)
    }

    @Test func recommendationAndItsInteractionWithAPicture() throws {
        let fixture = try loggedIn()
        let rec = try fixture.douctl.run("shuo", "post", "看看这个", "--rec-url", "https://example.com/a", "--rec-title", "标题", "--rec-desc", "描述")
        #expect(rec.status == 0, "\(rec)")
        #expect(fixture.sandbox.requests.last?.form.map(\.name) == ["text", "rec_url", "rec_title", "rec_desc"])
        let picture = try TemporaryDirectory.file(named: "p.png", bytes: PNGFixture.bytes)
        let both = try fixture.douctl.run("shuo", "post", "图和链接", "--image", picture, "--rec-url", "https://example.com/b")
        #expect(both.status == 0, "\(both)")
        #expect(both.stderr.contains("douctl: warning: Douban ignores --rec-* when a picture is sent"))
        #expect(fixture.sandbox.requests.last?.parts.map(\.name) == ["text", "image"])
    }

    @Test(arguments: [
        ("missing", "cannot read MISSING: No such file or directory"),
        ("directory", "cannot upload DIRECTORY: not a regular file"),
        ("text", "TEXT is not a JPEG, GIF or PNG picture (Douban accepts only those)"),
        ("big", "BIG is 3.0 MiB (3145729 bytes); Douban accepts pictures up to 3.0 MiB (3145728 bytes)"),
    ])
    func picturesAreCheckedBeforeSending(kind: String, message: String) throws {
        let fixture = try loggedIn()
        let directory = TemporaryDirectory.make(prefix: "pictures")
        let paths = [
            "MISSING": directory + "/nope.png",
            "DIRECTORY": directory,
            "TEXT": try TemporaryDirectory.file(named: "fake.png", bytes: Array("not an image".utf8)),
            "BIG": try TemporaryDirectory.file(named: "big.jpg", bytes: [0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 7, count: 3 * 1024 * 1024 - 3)),
        ]
        let key = ["missing": "MISSING", "directory": "DIRECTORY", "text": "TEXT", "big": "BIG"][kind] ?? ""
        let path = try #require(paths[key])
        let result = try fixture.douctl.run("shuo", "post", "x", "--image", path)
        #expect(result.status == 3, "\(result)")
        #expect(result.errorLine == "douctl: " + message.replacingOccurrences(of: key, with: path))
        #expect(fixture.sandbox.requests.isEmpty, "nothing may be sent")
    }

    @Test func nothingToPost() throws {
        let fixture = try loggedIn()
        let result = try fixture.douctl.run("shuo", "post")
        #expect(result.status == 2)
        #expect(result.errorLine == "douctl: nothing to post: give TEXT, --image or --rec-url")
    }

    // MARK: get, delete

    @Test func getPackedAndMissing() throws {
        let fixture = try loggedIn()
        let id = try #require(try fixture.douctl.run("shuo", "post", "读我").json()["id"]?.scalarText)
        #expect(try fixture.douctl.run("shuo", "get", id).json()["text"]?.stringValue == "读我")
        let packed = try fixture.douctl.run("shuo", "get", id, "--packed").json()
        #expect(packed["status"]?["text"]?.stringValue == "读我")
        #expect(packed["comments"]?.arrayValue != nil)
        #expect(fixture.sandbox.requests.last?.query.map { "\($0.name)=\($0.value)" } == ["pack=true"])
        let missing = try fixture.douctl.run("shuo", "get", "1")
        #expect(missing.status == 5)
        #expect(missing.errorLine == "douctl: not found (uri_not_found, code 1001, GET /shuo/v2/statuses/1)")
    }

    @Test func deleteReportsEachIdAndTheWorstExitCode() throws {
        let fixture = try loggedIn()
        let first = try #require(try fixture.douctl.run("shuo", "post", "一").json()["id"]?.scalarText)
        let second = try #require(try fixture.douctl.run("shuo", "post", "二").json()["id"]?.scalarText)
        let result = try fixture.douctl.run("shuo", "delete", first, "1", second)
        #expect(result.status == 5, "\(result)")
        let lines = try result.lines()
        // Every id has its line, the failed one too (issue 33; it had none).
        #expect(lines.map { $0["id"]?.stringValue } == [first, "1", second])
        #expect(lines.map { $0["deleted"]?.boolValue } == [true, nil, true])
        #expect(lines[1]["ok"]?.boolValue == false && lines[1]["exit"]?.intValue == 5)
        #expect(result.errorLine == "douctl: 1: not found (uri_not_found, code 1001, DELETE /shuo/v2/statuses/1)")
        #expect(fixture.sandbox.requests.filter { $0.method == "DELETE" }.map(\.path) == ["/shuo/v2/statuses/\(first)", "/shuo/v2/statuses/1", "/shuo/v2/statuses/\(second)"])
    }

    @Test func cannotDeleteSomeoneElsesStatus() throws {
        let fixture = try loggedIn()
        let others = try fixture.douctl.run("shuo", "timeline", "--user", "linglu", "--count", "1").json()
        let id = try #require(others[0]?["id"]?.scalarText)
        let result = try fixture.douctl.run("shuo", "delete", id)
        #expect(result.status == 4)
        #expect(result.errorLine.contains("need_permission, code 1000"))
    }

    // MARK: timelines

    @Test func timelineParameters() throws {
        let fixture = try loggedIn()
        #expect(try fixture.douctl.run("shuo", "timeline").status == 0)
        try fixture.douctl.run("shuo", "timeline", "--user", "linglu", "--count", "5", "--since-id", "10", "--until-id", "9999999999")
        let requests = fixture.sandbox.requests
        #expect(requests.first?.path == "/shuo/v2/statuses/home_timeline")
        #expect(requests.last?.path == "/shuo/v2/statuses/user_timeline/linglu")
        #expect(requests.last?.query.map { "\($0.name)=\($0.value)" } == ["count=5", "since_id=10", "until_id=9999999999"])
        let bad = try fixture.douctl.run("shuo", "timeline", "--count", "500")
        #expect(bad.status == 2)
    }

    @Test func timelineAllWalksEveryStatusOnceWhileNewOnesArrive() throws {
        let fixture = try loggedIn()
        _ = fixture.sandbox.seedStatuses(count: 230, user: "ahbei")
        let expected = try fixture.douctl.run("shuo", "timeline", "--user", "ahbei", "--count", "200").json().arrayValue?.count ?? 0
        #expect(expected == 200)
        let result = try fixture.douctl.run("shuo", "timeline", "--user", "ahbei", "--count", "50", "--all")
        #expect(result.status == 0, "\(result)")
        let ids = try result.lines().compactMap { $0["id"]?.int64Value }
        #expect(ids.count >= 230)
        #expect(Set(ids).count == ids.count, "no duplicates")
        #expect(ids == ids.sorted(by: >), "newest first, no reordering")
        let untils = fixture.sandbox.requests.filter { $0.path.hasPrefix("/shuo/v2/statuses/user_timeline") }.compactMap { $0.query.first { $0.name == "until_id" }?.value }
        #expect(untils.count == ids.count / 50)
    }

    // MARK: comments, likes, reshare

    @Test func commentsLikesAndReshares() throws {
        let fixture = try loggedIn()
        let id = try #require(try fixture.douctl.run("shuo", "post", "评论我").json()["id"]?.scalarText)
        let comment = try fixture.douctl.run("shuo", "comment", id, "第一")
        #expect(comment.status == 0, "\(comment)")
        #expect(fixture.sandbox.requests.last?.form.map { "\($0.name)=\($0.value)" } == ["text=第一"])
        try fixture.douctl.run(["shuo", "comment", id, "-"], input: Array("第二\n".utf8))
        let all = try fixture.douctl.run("shuo", "comments", id, "--count", "1", "--all").lines()
        #expect(all.map { $0["text"]?.stringValue } == ["第一", "第二"])
        let commentID = try #require(try comment.json()["id"]?.scalarText)
        #expect(try fixture.douctl.run("shuo", "uncomment", commentID).status == 0)
        #expect(fixture.sandbox.requests.last.map { "\($0.method) \($0.path)" } == "DELETE /shuo/v2/statuses/comment/\(commentID)")

        #expect(try fixture.douctl.run("shuo", "like", id).json()["liked"]?.boolValue == true)
        #expect(fixture.sandbox.requests.last.map { "\($0.method) \($0.path)" } == "POST /shuo/v2/statuses/\(id)/like")
        #expect(try fixture.douctl.run("shuo", "unlike", id).json()["liked"]?.boolValue == false)
        #expect(fixture.sandbox.requests.last.map { "\($0.method) \($0.path)" } == "DELETE /shuo/v2/statuses/\(id)/like")
        let reshared = try fixture.douctl.run("shuo", "reshare", id)
        #expect(reshared.status == 0, "\(reshared)")
        #expect(try reshared.json()["reshared_status"]?["id"]?.scalarText == id)
    }
}
