#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import DouctlCommands
import DouctlCore
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Testing

/// Issue 39, point 4, in process: the profile is chosen by --profile, DOUCTL_PROFILE, a
/// .douctl file upward from the working directory, the URL rule, then the default — and
/// nothing global is written to choose it; `expect_user` refuses another account.
@Suite struct ProfileChoiceCommandTests {
    /// Profiles a (http://a.test, the default) and b (http://b.test), each logged in with a
    /// token of its own; `home`/work/deep is a directory below a .douctl naming b.
    static func douctl(_ transport: ScriptedTransport) throws -> (InProcessDouctl, String) {
        let douctl = try InProcessDouctl(transport: transport)
        for (name, base) in [("a", "http://a.test"), ("b", "http://b.test")] {
            let add = try douctl.run(["profile", "add", name, "--api-base", base])
            #expect(add.status == 0, "\(add)")
        }
        #expect(try douctl.run("profile", "use", "a").status == 0)
        try Credentials.write(["a": "token-a", "b": "token-b"], in: douctl.configDirectory)
        let work = douctl.home.path + "/work"
        #expect(mkdir(work, 0o700) == 0 && mkdir(work + "/deep", 0o700) == 0)
        return (douctl, work)
    }

    static func write(_ text: String, to path: String, mode: mode_t = 0o600) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw SystemError("open", path: path) }
        defer { close(fd) }
        try FileIO.writeAll(fd, Array(text.utf8))
        fchmod(fd, mode)
    }

    static func explain(_ douctl: InProcessDouctl, in directory: String, _ extra: [String] = [], environment: [String: String] = [:]) throws -> JSONObject {
        var douctl = douctl
        douctl.configure = { $0.workingDirectory = directory }
        let result = try douctl.run(extra + ["auth", "status", "--explain", "--no-check", "--json"], environment: environment)
        #expect(result.status == 0, "\(result)")
        guard case .object(let object) = try result.json() else { throw TestFailure("not an object: \(result)") }
        return object
    }

    @Test func eachRuleInItsOrderAndStatusExplainSaysWhich() throws {
        let (douctl, work) = try Self.douctl(ScriptedTransport())
        let configBefore = try FileIO.readFile(douctl.configDirectory + "/config.json")
        let deep = work + "/deep"

        var status = try Self.explain(douctl, in: deep)
        #expect(status["profile"]?.stringValue == "a")
        #expect(status["chosen_by"]?.stringValue == "default_profile in config.json")
        #expect(status["origin"]?.stringValue == "http://a.test")

        try Self.write("# this checkout's account\nb\n", to: work + "/.douctl")
        status = try Self.explain(douctl, in: deep)
        #expect(status["profile"]?.stringValue == "b", "the .douctl two levels up: \(status)")
        #expect(status["chosen_by"]?.stringValue == "the file \(work)/.douctl")
        #expect(status["origin"]?.stringValue == "http://b.test")

        status = try Self.explain(douctl, in: deep, environment: ["DOUCTL_PROFILE": "a"])
        #expect(status["profile"]?.stringValue == "a")
        #expect(status["chosen_by"]?.stringValue == "DOUCTL_PROFILE")

        status = try Self.explain(douctl, in: deep, ["--profile", "a"], environment: ["DOUCTL_PROFILE": "b"])
        #expect(status["profile"]?.stringValue == "a")
        #expect(status["chosen_by"]?.stringValue == "--profile")

        // Choosing never wrote anything global.
        #expect(try FileIO.readFile(douctl.configDirectory + "/config.json") == configBefore)
    }

    @Test func anAbsoluteURLPicksTheProfileOfItsOriginUnlessARuleAboveDecided() throws {
        let transport = ScriptedTransport([.json(200, "{}"), .json(200, "{}"), .json(200, "{}")])
        let (douctl, work) = try Self.douctl(transport)
        var inWork = douctl
        inWork.configure = { $0.workingDirectory = work }

        #expect(try inWork.run("api", "http://b.test/things").status == 0)
        #expect(transport.requests.last?.header("Authorization") == "Bearer token-b", "the URL rule picked b")
        #expect(try inWork.run("api", "/things").status == 0)
        #expect(transport.requests.last?.url == "http://a.test/things", "a path: the default")
        #expect(transport.requests.last?.header("Authorization") == "Bearer token-a")

        // A .douctl naming a decides before the URL rule: a's token does not go to b.test.
        try Self.write("a\n", to: work + "/.douctl")
        let status = try Self.explain(douctl, in: work)
        #expect(status["chosen_by"]?.stringValue == "the file \(work)/.douctl")
        _ = try inWork.run("api", "http://b.test/things")
        #expect(transport.requests.last?.header("Authorization") != "Bearer token-a", "\(transport.requests.map(\.url))")
    }

    @Test(arguments: ["link", "group-writable", "empty", "bad-name", "unknown"])
    func aDouctlFileThatCannotBeTrustedOrReadIsRefusedAndNothingIsSent(_ kind: String) throws {
        let transport = ScriptedTransport()
        let (made, work) = try Self.douctl(transport)
        var douctl = made
        let file = work + "/.douctl"
        switch kind {
        case "link":
            try Self.write("b\n", to: work + "/elsewhere")
            #expect(symlink(work + "/elsewhere", file) == 0)
        case "group-writable": try Self.write("b\n", to: file, mode: 0o664)
        case "empty": try Self.write("\n# nothing\n", to: file)
        case "bad-name": try Self.write("../x\n", to: file)
        default: try Self.write("nosuch\n", to: file)
        }
        douctl.configure = { $0.workingDirectory = work + "/deep" }
        let result = try douctl.run("api", "/things")
        #expect(transport.requests.isEmpty)
        #expect(result.stderr.split(separator: "\n").count == 1, "one line: \(result)")
        #expect(result.stderr.contains(file), "names the file: \(result)")
        #expect(result.status == (kind == "unknown" ? 2 : 3), "\(result)")
        print("refused .douctl (\(kind)): \(result.errorLine)")
    }

    @Test func aLoginForAnotherAccountThanExpectUserIsExit4AndStoresNothing() throws {
        let transport = ScriptedTransport([.json(200, #"{"id": 2, "login": "bob"}"#), .json(200, #"{"id": 1, "login": "ann"}"#)])
        let douctl = try InProcessDouctl(transport: transport)
        #expect(try douctl.run("profile", "add", "p", "--api-base", "http://api.test", "--user-url", "/user").status == 0)
        #expect(try douctl.run("config", "set", "expect_user", "ann", "--profile", "p").status == 0)

        let wrong = try douctl.run(["--profile", "p", "auth", "login", "--with-token"], input: Array("bobs-token\n".utf8))
        #expect(wrong.status == 4, "\(wrong)")
        #expect(wrong.stderr == "douctl: the login is for 'bob', but profile 'p' expects 'ann' (expect_user); nothing was stored; log in as ann, or change the pin: douctl config set expect_user NAME --profile p\n")
        #expect(try douctl.run("--profile", "p", "auth", "status", "--no-check").status == 4, "nothing was stored")

        let right = try douctl.run(["--profile", "p", "auth", "login", "--with-token"], input: Array("anns-token\n".utf8))
        #expect(right.status == 0, "\(right)")
        let status = try douctl.run("--profile", "p", "auth", "status", "--no-check", "--explain", "--json")
        guard case .object(let object) = try status.json() else { throw TestFailure("\(status)") }
        #expect(object["expect_user"]?.stringValue == "ann")
        #expect(object["user_name"]?.stringValue == "ann")
    }
}
