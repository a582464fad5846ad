@testable import DouctlCommands
import DouctlArguments
import DouctlCore
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Testing

/// `douctl shuo …` twice: argv → typed options (with the refusals `validate()` makes before
/// anything is read or sent), and options + a scripted transport → stdout, stderr, exit, in
/// process (no sockets, no sandbox).
@Suite struct ShuoCommandTests {
    static let base = ["--api-base", InProcessDouctl.scriptedBase]

    static let status = #"{"id":"1402640366","text":"你好","created_at":"2026-11-24 10:00:00"}"#

    // MARK: - argv → options

    @Test func postBindsTextPictureAndRecommendation() throws {
        let post = try boundOptions(["shuo", "post", "你好", "--image", "a.png", "--rec-url", "https://e.com", "--rec-title", "T",
                                     "--rec-desc", "D", "--rec-image", "https://e.com/i.png"], as: ShuoCommands.Post.self)
        #expect(post.text == "你好")
        #expect(post.image == "a.png")
        #expect(post.recommendation == StatusDraft.Recommendation(url: "https://e.com", title: "T", description: "D", image: "https://e.com/i.png"))
        let bare = try boundOptions(["shuo", "post"], as: ShuoCommands.Post.self)
        #expect(bare.text == nil && bare.image == nil && bare.recommendation.isEmpty)
        // --rec-* beside --image is the API style's to judge (a warning on Douban), not a refusal.
        #expect(try boundOptions(["shuo", "post", "x", "--image", "a.png", "--rec-url", "u"], as: ShuoCommands.Post.self).image == "a.png")
    }

    @Test func getBindsIDFlagsAndView() throws {
        let get = try boundOptions(["shuo", "get", "42", "--packed", "--save-images", "pics", "--images", "--format", "text"], as: ShuoCommands.Get.self)
        #expect(get.id == "42" && get.packed && get.images && get.saveImages == "pics")
        #expect(get.view.format == .text && !get.view.json)
        #expect(get.presentation.view?.format == .text)
        let plain = try boundOptions(["shuo", "get", "42"], as: ShuoCommands.Get.self)
        #expect(!plain.packed && !plain.images && plain.saveImages == nil && plain.view.format == nil)
    }

    @Test func timelineBindsItsOwnPaging() throws {
        let timeline = try boundOptions(["shuo", "timeline", "--user", "ahbei", "--count", "50", "--since-id", "7", "--until-id", "99",
                                         "--all", "--slurp", "--json"], as: ShuoCommands.Timeline.self)
        #expect(timeline.user == "ahbei" && timeline.count == 50 && timeline.sinceID == "7" && timeline.untilID == "99")
        #expect(timeline.all && timeline.slurp && !timeline.isPublic && timeline.view.json)
        #expect(timeline.paging.count == 50 && timeline.paging.all && timeline.paging.slurp && timeline.paging.start == nil)
        #expect(try boundOptions(["shuo", "timeline", "--public"], as: ShuoCommands.Timeline.self).isPublic)
        // No --start and no --parallel: an until_id walk has neither.
        #expect(throws: UsageError.self) { try boundOptions(["shuo", "timeline", "--start", "20"], as: ShuoCommands.Timeline.self) }
        #expect(throws: UsageError.self) { try boundOptions(["shuo", "timeline", "--all", "--parallel", "2"], as: ShuoCommands.Timeline.self) }
        #expect(throws: UsageError.self) { try boundOptions(["shuo", "timeline", "--count", "201"], as: ShuoCommands.Timeline.self) }
    }

    @Test func commentsBindPagingOfAtMost100() throws {
        let comments = try boundOptions(["shuo", "comments", "42", "--start", "10", "--count", "100", "--all", "--parallel", "2"], as: ShuoCommands.Comments.self)
        #expect(comments.id == "42" && comments.paging.start == 10 && comments.paging.count == 100 && comments.paging.all && comments.paging.parallel == 2)
        #expect(throws: UsageError.self) { try boundOptions(["shuo", "comments", "42", "--count", "101"], as: ShuoCommands.Comments.self) }
    }

    @Test func theSmallVerbsBindTheirArguments() throws {
        #expect(try boundOptions(["shuo", "delete", "1", "2", "3"], as: ShuoCommands.Delete.self).ids == ["1", "2", "3"])
        let comment = try boundOptions(["shuo", "comment", "42", "好"], as: ShuoCommands.Comment.self)
        #expect(comment.id == "42" && comment.text == "好")
        // Issue 33: the status first, as comment has it; the older --status still binds.
        let uncomment = try boundOptions(["shuo", "uncomment", "42", "9"], as: ShuoCommands.Uncomment.self)
        #expect(uncomment.commentID == "9" && uncomment.statusID == "42" && uncomment.status == nil)
        let older = try boundOptions(["shuo", "uncomment", "9", "--status", "42"], as: ShuoCommands.Uncomment.self)
        #expect(older.commentID == "9" && older.statusID == "42")
        let douban = try boundOptions(["shuo", "uncomment", "9"], as: ShuoCommands.Uncomment.self)
        #expect(douban.commentID == "9" && douban.statusID == nil)
        #expect(throws: OptionError.self) { try boundOptions(["shuo", "uncomment", "42", "9", "--status", "42"], as: ShuoCommands.Uncomment.self) }
        for verb in ["like", "unlike", "reshare"] {
            #expect(try boundOptions(["shuo", verb, "42"], as: ShuoCommands.Target.self).id == "42")
        }
        #expect(throws: UsageError.self) { try boundOptions(["shuo", "delete"], as: ShuoCommands.Delete.self) }
    }

    /// Refused at parse time, before stdin is read or anything is sent.
    @Test(arguments: [
        (["shuo", "timeline", "--slurp"], "--slurp goes with --all (or api --paginate)"),
        (["shuo", "comments", "42", "--slurp"], "--slurp goes with --all (or api --paginate)"),
        (["shuo", "get", "42", "--save-images", ""], "invalid value '' for --save-images: expected a directory"),
    ])
    func refusals(argv: [String], message: String) throws {
        guard case .run(let parsed) = try ArgumentParser(root: Douctl.rootSpec).parse(argv),
              let prepare = Douctl.tree.find(parsed.path)?.prepare else { throw TestFailure("\(argv) is not a command") }
        #expect(throws: OptionError(message)) { try prepare(parsed) }
    }

    @Test func aRefusalSendsNothingAndShowsTheUsageLine() throws {
        let transport = ScriptedTransport()
        let result = try InProcessDouctl.scripted(transport).run(["shuo", "get", "1", "--save-images", ""] + Self.base)
        #expect(result.status == 2, "\(result)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("douctl: invalid value '' for --save-images: expected a directory"))
        #expect(result.stderr.contains("usage: douctl shuo get"))
        #expect(transport.requests.isEmpty)
    }

    // MARK: - options + scripted transport → output

    @Test func postTextSendsTheFormAndPrintsTheReply() throws {
        let transport = ScriptedTransport([.json(200, Self.status)])
        let result = try InProcessDouctl.scripted(transport).run(["shuo", "post", "你好 & hi", "--rec-url", "https://e.com"] + Self.base)
        #expect(result.status == 0, "\(result)")
        #expect(try result.json()["id"]?.stringValue == "1402640366")
        #expect(result.stderr.isEmpty)
        let request = try #require(transport.requests.first)
        #expect(request.method == "POST" && request.url == "http://api.test/shuo/v2/statuses/")
        #expect(request.header("Content-Type") == "application/x-www-form-urlencoded")
        #expect(request.form.map { "\($0.0)=\($0.1)" } == ["text=你好 & hi", "rec_url=https://e.com"])
    }

    @Test func postReadsTheTextFromStdin() throws {
        let transport = ScriptedTransport([.json(200, Self.status)])
        let result = try InProcessDouctl.scripted(transport).run(["shuo", "post", "-"] + Self.base, input: Array("从管道来的\n".utf8))
        #expect(result.status == 0, "\(result)")
        #expect(transport.requests.first?.formValue("text") == "从管道来的")
    }

    @Test func postWithAPictureIsMultipartAndDropsRecWithAWarning() throws {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 7, count: 24)
        let picture = try TemporaryDirectory.file(named: "照片.png", bytes: png)
        let transport = ScriptedTransport([.json(200, Self.status)])
        let result = try InProcessDouctl.scripted(transport).run(["shuo", "post", "有图", "--image", picture, "--rec-url", "https://e.com"] + Self.base)
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr == "douctl: warning: Douban ignores --rec-* when a picture is sent; sending the text and picture only\n")
        let request = try #require(transport.requests.first)
        let contentType = try #require(request.header("Content-Type"))
        #expect(contentType.hasPrefix("multipart/form-data; boundary="))
        let boundary = String(contentType.dropFirst("multipart/form-data; boundary=".count))
        guard case .segments(let segments) = request.body else { throw TestFailure("not a multipart body: \(request.body)") }
        #expect(segments.contains(.file(path: picture, length: Int64(png.count))), "the picture is streamed from disk")
        let framing = segments.compactMap { segment -> String? in
            if case .bytes(let bytes) = segment { return String(decoding: bytes, as: UTF8.self) }
            return nil
        }.joined()
        #expect(framing.hasPrefix("--" + boundary + "\r\n"))
        #expect(framing.contains("name=\"text\"\r\n\r\n有图\r\n"))
        #expect(framing.contains("name=\"image\"; filename=\"照片.png\""))
        #expect(framing.contains("Content-Type: image/png"))
        #expect(framing.hasSuffix("--" + boundary + "--\r\n"))
        #expect(!framing.contains("rec_url"), "Douban ignores it beside a picture")
        #expect(request.header("Content-Length") == nil || request.header("Content-Length") == String(request.body.length ?? -1))
    }

    @Test func getPrintsTheStatus() throws {
        let packed = #"{"status":"# + Self.status + #","comments":[]}"#
        let transport = ScriptedTransport([.json(200, packed)])
        let result = try InProcessDouctl.scripted(transport).run(["shuo", "get", "1402640366", "--packed"] + Self.base)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == packed + "\n")
        #expect(transport.requests.map(\.url) == ["http://api.test/shuo/v2/statuses/1402640366?pack=true"])
    }

    @Test func getSaveImagesPrintsTheStatusAndOneLinePerPictureOnStderr() throws {
        let directory = try TemporaryDirectory(prefix: "shuo-save")
        let status = #"{"id":"42","text":"图","created_at":"2026-11-24 10:00:00","attachments":[{"media":[{"type":"image","src":"http://img.test/s/p1.jpg","original_src":"http://img.test/raw/p1.jpg"}]}]}"#
        let transport = ScriptedTransport([.json(200, status), .json(200, "picture")])
        let result = try InProcessDouctl.scripted(transport).run(["shuo", "get", "42", "--save-images", directory.path] + Self.base)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == status + "\n", "stdout stays the status alone")
        let line = try JSONParser.parse(Array(result.stderrBytes.prefix { $0 != 0x0A }))
        #expect(line["ok"] == .bool(true) && line["url"]?.stringValue == "http://img.test/raw/p1.jpg")
        #expect(line["path"]?.stringValue == directory.path + "/p1.jpg")
        #expect(try FileIO.readFile(directory.path + "/p1.jpg") == Array("picture".utf8))
        #expect(transport.requests.last?.header("Authorization") == nil, "the token goes only to the API's own origin")
    }

    @Test func getRefusesANonNumericDoubanIDBeforeSending() throws {
        let transport = ScriptedTransport()
        let result = try InProcessDouctl.scripted(transport).run(["shuo", "get", "abc"] + Self.base)
        #expect(result.status == 2, "\(result)")
        #expect(result.errorLine == "douctl: invalid status id 'abc': a Douban status id is a number")
        #expect(transport.requests.isEmpty)
    }

    @Test func deleteOfTwoIDsWhereOneFailsPrintsOneLineEachAndTheWorstExit() throws {
        let transport = ScriptedTransport([
            .json(200, Self.status),
            .json(404, #"{"code":5000,"msg":"status not found","request":"DELETE /shuo/v2/statuses/2"}"#),
        ])
        let result = try InProcessDouctl.scripted(transport).run(["shuo", "delete", "1402640366", "2"] + Self.base)
        #expect(result.status == 5, "\(result)")
        // Issue 33: every id gets its line, as upload's files do (the failed one had none).
        let lines = try result.lines()
        #expect(lines.count == 2)
        #expect(lines.first?["id"]?.stringValue == "1402640366")
        #expect(lines.first?["ok"] == .bool(true))
        #expect(lines.first?["deleted"] == .bool(true))
        #expect(lines.first?["status"]?["text"]?.stringValue == "你好")
        #expect(lines.last?["id"]?.stringValue == "2")
        #expect(lines.last?["ok"] == .bool(false))
        #expect(lines.last?["exit"] == .int(5))
        #expect(lines.last?["error"]?.stringValue?.contains("status not found") == true, "\(lines)")
        let errors = result.stderr.split(separator: "\n")
        #expect(errors.count == 1)
        #expect(errors.first?.hasPrefix("douctl: 2: ") == true, "\(result)")
        #expect(transport.requests.map(\.method) == ["DELETE", "DELETE"])
        #expect(transport.requests.map(\.url) == ["http://api.test/shuo/v2/statuses/1402640366", "http://api.test/shuo/v2/statuses/2"])
    }

    @Test func deleteAsTextSaysDeletedPerStatus() throws {
        let transport = ScriptedTransport([.json(204, ""), .json(204, "")])
        let result = try InProcessDouctl.scripted(transport).run(["shuo", "delete", "1", "2", "--format", "text", "--color", "never"] + Self.base)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == "deleted 1\ndeleted 2\n")
    }

    @Test func commentsAllWalksByOffset() throws {
        let transport = ScriptedTransport([
            .json(200, #"{"start":0,"count":2,"total":3,"comments":[{"id":"1"},{"id":"2"}]}"#),
            .json(200, #"{"start":2,"count":2,"total":3,"comments":[{"id":"3"}]}"#),
        ])
        let result = try InProcessDouctl.scripted(transport).run(["shuo", "comments", "42", "--all", "--count", "2", "--parallel", "1"] + Self.base)
        #expect(result.status == 0, "\(result)")
        #expect(try result.lines().compactMap { $0["id"]?.stringValue } == ["1", "2", "3"])
        #expect(transport.requests.map(\.path) == Array(repeating: "http://api.test/shuo/v2/statuses/42/comments", count: 2))
        #expect(transport.requests.map { $0.queryValue("start") } == [nil, "2"], "the first page as the API starts it")
    }

    @Test func deleteChecksEveryIDBeforeDeletingAny() throws {
        let transport = ScriptedTransport()
        let result = try InProcessDouctl.scripted(transport).run(["shuo", "delete", "1", "x"] + Self.base)
        #expect(result.status == 2, "\(result)")
        #expect(transport.requests.isEmpty)
    }

    @Test func timelineAllWalksBackWithUntilID() throws {
        let transport = ScriptedTransport([
            .json(200, #"[{"id":"30","text":"a"},{"id":"29","text":"b"}]"#),
            .json(200, #"[{"id":"25","text":"c"}]"#),
        ])
        let result = try InProcessDouctl.scripted(transport).run(["shuo", "timeline", "--all", "--count", "2"] + Self.base)
        #expect(result.status == 0, "\(result)")
        #expect(try result.lines().compactMap { $0["id"]?.stringValue } == ["30", "29", "25"])
        #expect(transport.requests.map(\.path) == Array(repeating: "http://api.test/shuo/v2/statuses/home_timeline", count: 2))
        #expect(transport.requests.first?.queryValue("until_id") == nil)
        #expect(transport.requests.last?.queryValue("until_id") == "28", "inclusive, so one below the last id")
        #expect(transport.requests.allSatisfy { $0.queryValue("count") == "2" })
    }

    @Test func timelineSlurpIsOneArray() throws {
        let transport = ScriptedTransport([.json(200, #"[{"id":"30"}]"#)])
        let result = try InProcessDouctl.scripted(transport).run(["shuo", "timeline", "--all", "--slurp", "--user", "ahbei"] + Self.base)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == #"[{"id":"30"}]"# + "\n")
        #expect(transport.requests.first?.path == "http://api.test/shuo/v2/statuses/user_timeline/ahbei")
    }

    @Test func timelineOnePagePrintsTheReply() throws {
        let transport = ScriptedTransport([.json(200, #"[{"id":"30"}]"#)])
        let result = try InProcessDouctl.scripted(transport).run(["shuo", "timeline", "--since-id", "7"] + Self.base)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == #"[{"id":"30"}]"# + "\n")
        #expect(transport.requests.first?.queryValue("since_id") == "7")
    }

    @Test(arguments: [
        (["like"], "POST", "/like", #"{"id":"42","liked":true}"#),
        (["unlike"], "DELETE", "/like", #"{"id":"42","liked":false}"#),
    ])
    func likeAndUnlikeSayWhatTheyDidWhenTheReplyIsEmpty(verb: [String], method: String, suffix: String, printed: String) throws {
        let transport = ScriptedTransport([.json(204, "")])
        let result = try InProcessDouctl.scripted(transport).run(["shuo"] + verb + ["42"] + Self.base)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == printed + "\n")
        #expect(transport.requests.map(\.method) == [method])
        #expect(transport.requests.map(\.url) == ["http://api.test/shuo/v2/statuses/42" + suffix])
    }

    @Test func resharePrintsTheReply() throws {
        let transport = ScriptedTransport([.json(200, Self.status)])
        let result = try InProcessDouctl.scripted(transport).run(["shuo", "reshare", "42"] + Self.base)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == Self.status + "\n")
        #expect(transport.requests.map { "\($0.method) \($0.url)" } == ["POST http://api.test/shuo/v2/statuses/42/reshare"])
    }

    @Test func commentFromStdinAndAnEmptyOneRefused() throws {
        let comment = #"{"id":"9","text":"好","created_at":"2026-11-24 10:00:00"}"#
        let transport = ScriptedTransport([.json(200, comment)])
        let douctl = try InProcessDouctl.scripted(transport)
        let result = try douctl.run(["shuo", "comment", "42", "-"] + Self.base, input: Array("好\n".utf8))
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == comment + "\n")
        #expect(transport.requests.first?.formValue("text") == "好")
        let empty = try douctl.run(["shuo", "comment", "42", "-"] + Self.base, input: [])
        #expect(empty.status == 2)
        #expect(empty.errorLine == "douctl: the comment is empty")
        #expect(transport.requests.count == 1)
    }

    @Test func uncommentSaysWhatItDeleted() throws {
        let transport = ScriptedTransport([.json(204, "")])
        let result = try InProcessDouctl.scripted(transport).run(["shuo", "uncomment", "9"] + Self.base)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == #"{"id":"9","deleted":true}"# + "\n")
        #expect(transport.requests.map { "\($0.method) \($0.url)" } == ["DELETE http://api.test/shuo/v2/statuses/comment/9"])
    }

    /// Issue 33: `uncomment ID COMMENT_ID`, the shape of `comment ID TEXT`; `--status` still
    /// works and says it is the older spelling.
    @Test func uncommentTakesTheStatusFirstAndTheOlderSpellingWarns() throws {
        let transport = ScriptedTransport([.json(200, #"{"code":0,"data":true}"#), .json(200, #"{"code":0,"data":true}"#)])
        let douctl = try InProcessDouctl.scripted(transport)
        #expect(try douctl.run("profile", "add", "c", "--api-base", InProcessDouctl.scriptedBase, "--style", "coding").status == 0)
        let result = try douctl.run("--profile", "c", "shuo", "uncomment", "42", "9")
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.isEmpty, "\(result)")
        let older = try douctl.run("--profile", "c", "shuo", "uncomment", "9", "--status", "42")
        #expect(older.status == 0, "\(older)")
        #expect(older.stderr == "douctl: warning: --status is deprecated; give the status first: douctl shuo uncomment 42 9\n")
        #expect(transport.requests.map { "\($0.method) \($0.path)" } == Array(repeating: "DELETE http://api.test/api/tweet/42/comment/9", count: 2))
        let missing = try douctl.run("--profile", "c", "shuo", "uncomment", "9")
        #expect(missing.status == 2)
        #expect(missing.errorLine == "douctl: on Coding, deleting a comment needs its tweet: douctl shuo uncomment TWEET_ID COMMENT_ID")
    }
}
