@testable import DouctlCommands
import DouctlArguments
import DouctlJSON
import DouctlTestSupport
import Testing

/// `douctl user …` twice: argv → typed options, and options + a scripted transport →
/// stdout, stderr, exit, in process (no sockets, no sandbox).
@Suite struct UserCommandTests {
    // MARK: argv → options

    @Test func searchBindsQueryPagingAndView() throws {
        let options = try boundOptions(["user", "search", "阿北", "--count", "50", "--all", "--slurp", "--parallel", "2", "--json"], as: UserCommands.Search.self)
        #expect(options.query == "阿北")
        #expect(options.paging.count == 50)
        #expect(options.paging.all && options.paging.slurp)
        #expect(options.paging.parallel == 2)
        #expect(options.view.json)
        let plain = try boundOptions(["user", "search", "x"], as: UserCommands.Search.self)
        #expect(plain.paging.count == nil && !plain.paging.all && plain.paging.parallel == 4 && plain.view.format == nil)
    }

    @Test func slurpWithoutAllIsRefusedAtParseTime() throws {
        #expect(throws: OptionError("--slurp goes with --all (or api --paginate)")) {
            try boundOptions(["user", "following", "ahbei", "--slurp"], as: UserCommands.Relations.self)
        }
    }

    @Test func searchTakesAtMost100PerPage() throws {
        #expect(throws: UsageError.self) { try boundOptions(["user", "search", "x", "--count", "101"], as: UserCommands.Search.self) }
        #expect(try boundOptions(["user", "following", "x", "--count", "200"], as: UserCommands.Relations.self).paging.count == 200)
    }

    // MARK: options + scripted transport → output

    @Test func meAsksTheAPIOnceAndPrintsTheReply() throws {
        let transport = ScriptedTransport([.json(200, #"{"id":"1000001","uid":"ahbei","name":"阿北"}"#)])
        let douctl = try InProcessDouctl(environment: ["DOUCTL_TOKEN": "t0ken"], transport: transport)
        let result = try douctl.run("user", "me", "--api-base", "http://api.test")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == #"{"id":"1000001","uid":"ahbei","name":"阿北"}"# + "\n")
        #expect(result.stderr.isEmpty)
        #expect(transport.requests.map(\.url) == ["http://api.test/v2/user/~me"])
        #expect(transport.requests.first?.header("Authorization") == "Bearer t0ken")
    }

    @Test func followersWalksEveryPageAsNDJSON() throws {
        let transport = ScriptedTransport([
            .json(200, #"{"start":0,"count":2,"total":3,"users":[{"id":"1"},{"id":"2"}]}"#),
            .json(200, #"{"start":2,"count":2,"total":3,"users":[{"id":"3"}]}"#),
        ])
        let douctl = try InProcessDouctl(environment: ["DOUCTL_TOKEN": "t"], transport: transport)
        let result = try douctl.run("user", "followers", "ahbei", "--all", "--count", "2", "--parallel", "1", "--api-base", "http://api.test")
        #expect(result.status == 0, "\(result)")
        #expect(try result.lines().compactMap { $0["id"]?.stringValue } == ["1", "2", "3"])
        #expect(transport.requests.count == 2)
    }

    @Test func anAuthErrorIsExit4WithOneLine() throws {
        let transport = ScriptedTransport([.json(400, #"{"code":103,"msg":"invalid_access_token: t","request":"GET /v2/user/~me"}"#)])
        let douctl = try InProcessDouctl(environment: ["DOUCTL_TOKEN": "t"], transport: transport)
        let result = try douctl.run("user", "me", "--api-base", "http://api.test")
        #expect(result.status == 4, "\(result)")
        #expect(result.stdout.isEmpty)
        #expect(result.errorLine.hasPrefix("douctl: "))
        #expect(result.stderr.split(separator: "\n").count == 1)
    }
}
