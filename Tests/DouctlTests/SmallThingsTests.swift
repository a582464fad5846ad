import DouctlJSON
import DouctlServer
import DouctlTestSupport
import Foundation
import Testing

/// Issue 24's small things, each as a user meets it: the built `douctl` against the sandbox
/// or a purpose-built server on 127.0.0.1.
@Suite("douctl: the small things people expect")
struct SmallThingsTests {
    func loggedIn() throws -> SandboxFixture {
        let fixture = try SandboxFixture()
        try fixture.login()
        return fixture
    }

    // MARK: -v

    @Test func verboseShowsTheAPIsOwnErrorCodeButStillMasksSecrets() throws {
        let server = try TestServer(status: 400, json: #"{"msg":"access_token_has_not_expired","code":124,"request":"POST /x"}"#)
        let result = try Douctl().run("-v", "api", "/x", "-f", "code=the-authorization-code", "-f", "text=hi", "--api-base", server.baseURL)
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains(#""code":124"#), "the API's error code is shown: \(result.stderr)")
        #expect(!result.stderr.contains(#""code":***"#))
        #expect(result.stderr.contains("code=***"), "an OAuth code in a form is still masked")
        #expect(!result.stderr.contains("the-authorization-code"))
        #expect(server.received.first?.form.first?.value == "the-authorization-code")
    }

    // MARK: profile

    @Test func profileShowPrintsCacheMaxMBAsANumber() throws {
        let douctl = Douctl()
        #expect(try douctl.run("profile", "add", "p", "--api-base", "http://127.0.0.1:9").status == 0)
        let shown = try douctl.run("profile", "show", "p")
        #expect(shown.status == 0, "\(shown)")
        #expect(try shown.json()["cache_max_mb"] == .number("50"), "\(shown)")
        #expect(try douctl.run("profile", "add", "q", "--api-base", "http://127.0.0.1:9", "--cache-max-mb", "0.5").status == 0)
        #expect(try douctl.run("profile", "show", "q").json()["cache_max_mb"] == .number("0.5"))
    }

    @Test func profileRemoveLeavesNoLockFileBehind() throws {
        let douctl = Douctl()
        let missing = try douctl.run("profile", "remove", "nope")
        #expect(missing.status == 2, "\(missing)")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: douctl.configDirectory)) ?? []
        #expect(!files.contains { $0.contains("nope") }, "nothing made for a profile that is not there: \(files)")

        #expect(try douctl.run("profile", "add", "p", "--api-base", "http://127.0.0.1:9").status == 0)
        try Data(#"{"cookies":[{"name":"s","value":"v","path":"/"}]}"#.utf8).write(to: URL(fileURLWithPath: douctl.configDirectory + "/cookies-p.json"))
        _ = FileManager.default.createFile(atPath: douctl.configDirectory + "/.cookies-p.lock", contents: nil)
        #expect(try douctl.run("profile", "remove", "p").status == 0)
        let after = (try? FileManager.default.contentsOfDirectory(atPath: douctl.configDirectory)) ?? []
        #expect(!after.contains { $0.contains("cookies-p") }, "jar and lock are gone: \(after)")
    }

    // MARK: shuo

    @Test func aNonNumericDoubanStatusIDIsRefusedLocally() throws {
        let fixture = try loggedIn()
        for arguments in [["shuo", "get", "abc"], ["shuo", "like", "12x"], ["shuo", "delete", "1", "abc"]] {
            let result = try fixture.douctl.run(arguments)
            #expect(result.status == 2, "\(arguments): \(result)")
            #expect(result.errorLine.contains("a Douban status id is a number"), "\(result)")
        }
        #expect(!fixture.sandbox.requests.contains { $0.path.hasPrefix("/shuo/v2/statuses/") }, "nothing was asked")
    }

    @Test func textStartingWithADashGetsAHintAboutDoubleDash() throws {
        let fixture = try loggedIn()
        let refused = try fixture.douctl.run("shuo", "post", "-1 分")
        #expect(refused.status == 2)
        #expect(refused.errorLine == "douctl: unknown option '-1' for 'douctl shuo post' (to pass TEXT that starts with '-', put -- before it)", "\(refused)")
        let posted = try fixture.douctl.run("shuo", "post", "--", "-1 分")
        #expect(posted.status == 0, "\(posted)")
        #expect(try posted.json()["text"]?.stringValue == "-1 分")
    }

    @Test func invalidUTF8OnStdinIsRefusedNamingTheOffset() throws {
        let fixture = try loggedIn()
        let latin1: [UInt8] = Array("caf".utf8) + [0xE9, 0x0A]  // "café" in Latin-1
        let result = try fixture.douctl.run(["shuo", "post", "-"], input: latin1)
        #expect(result.status == 3, "\(result)")
        #expect(result.errorLine.hasPrefix("douctl: standard input is not valid UTF-8 (byte 0xE9 at offset 3"), "\(result)")
        let truncated: [UInt8] = Array("好".utf8) + [0xE5, 0xA5]  // the first two bytes of 好
        let comment = try fixture.douctl.run(["shuo", "comment", "1", "-"], input: truncated)
        #expect(comment.status == 3, "\(comment)")
        #expect(comment.errorLine.contains("at offset 3"), "\(comment)")
        #expect(!fixture.sandbox.requests.contains { $0.method == "POST" }, "nothing was posted")
        let fine = try fixture.douctl.run(["shuo", "post", "-"], input: Array("好的 ✓\n".utf8))
        #expect(try fine.json()["text"]?.stringValue == "好的 ✓")
    }

    /// Every kind of ill-formed UTF-8 (RFC 3629) is refused at the start of its sequence,
    /// before douctl reads its config or contacts anything.
    @Test(arguments: [
        ([0x61, 0xC0, 0x80], 1),              // overlong NUL
        ([0x61, 0x62, 0xED, 0xA0, 0x80], 2),  // a UTF-16 surrogate
        ([0xF4, 0x90, 0x80, 0x80], 0),        // above U+10FFFF
        ([0x61, 0x80], 1),                    // a lone continuation byte
        ([0xE4, 0xB8, 0xAD, 0xFF], 3),        // 中 then 0xFF
    ] as [([UInt8], Int)])
    func illFormedUTF8IsRefusedAtItsOffset(_ bytes: [UInt8], offset: Int) throws {
        let result = try Douctl().run(["shuo", "post", "-"], input: bytes)
        #expect(result.status == 3, "\(result)")
        #expect(result.errorLine.contains(" at offset \(offset) "), "\(result)")
    }

    @Test func slurpHelpNamesTheCommandsOwnWalk() throws {
        let timeline = try Douctl().run("shuo", "timeline", "--help")
        #expect(timeline.stdoutText.contains("with --all: print one JSON array"), "\(timeline)")
        #expect(!timeline.stdoutText.contains("--paginate"), "shuo timeline has no --paginate")
        let api = try Douctl().run("api", "--help")
        #expect(api.stdoutText.contains("with --paginate: print one JSON array"))
    }

    @Test func theREADMEsUserSearchFindsSomeoneInTheSandbox() throws {
        let fixture = try loggedIn()
        let result = try fixture.douctl.run("user", "search", "豆瓣", "--all")
        #expect(result.status == 0, "\(result)")
        #expect(try result.lines().compactMap { $0["uid"]?.stringValue }.contains("ahbei"), "\(result)")
    }
}
