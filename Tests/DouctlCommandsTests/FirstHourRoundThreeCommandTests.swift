@testable import DouctlCommands
import DouctlArguments
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 40 (items 5–8, 11), in process: argv → options, and options + a scripted transport →
/// stdout, stderr, exit. Each of these failed before its fix.
@Suite struct FirstHourRoundThreeCommandTests {
    static let base = ["--api-base", InProcessDouctl.scriptedBase]

    // MARK: 7. pictures

    @Test func aSecondImageIsRefusedAtParseTime() throws {
        #expect(throws: OptionError.self) { try boundOptions(["shuo", "post", "x", "--image", "a.png", "--image", "b.png"], as: ShuoCommands.Post.self) }
        let transport = ScriptedTransport()
        let result = try InProcessDouctl.scripted(transport).run(["shuo", "post", "x", "--image", "a.png", "--image", "b.png"] + Self.base)
        #expect(result.status == 2, "\(result)")
        #expect(result.stderr.hasPrefix("douctl: --image given 2 times: a status carries one picture"), "\(result)")
        #expect(result.stderr.contains("\nusage: douctl shuo post"), "\(result)")
        #expect(transport.requests.isEmpty)
    }

    @Test func uploadProgressCountsTheFileNotTheMultipartBody() {
        // 99 bytes of file in a 266-byte body: the headers before it count for nothing.
        #expect(UploadBatch.fileBytesSent(0, of: 266, fileSize: 99) == 0)
        #expect(UploadBatch.fileBytesSent(100, of: 266, fileSize: 99) == 0)
        #expect(UploadBatch.fileBytesSent(217, of: 266, fileSize: 99) == 50)
        #expect(UploadBatch.fileBytesSent(266, of: 266, fileSize: 99) == 99)
        #expect(UploadBatch.fileBytesSent(5, of: 0, fileSize: 99) == 0)
    }

    // MARK: 6. one -o rule

    @Test func apiOutputRefusesAnExistingFileUnlessForce() throws {
        let directory = try TemporaryDirectory(prefix: "api-o")
        let path = directory.path + "/reply.json"
        #expect(FileManager.default.createFile(atPath: path, contents: Data("old".utf8)))
        let transport = ScriptedTransport([.json(200, #"{"a":1}"#)])
        let douctl = try InProcessDouctl.scripted(transport)
        let refused = try douctl.run(["api", "/x", "-o", path] + Self.base)
        #expect(refused.status == 3, "\(refused)")
        #expect(refused.stderr == "douctl: \(path) already exists; not overwriting it (use --force to replace it)\n", "\(refused)")
        #expect(transport.requests.isEmpty, "refused before anything is sent")
        #expect(try FileIO.readFile(path) == Array("old".utf8))
        let forced = try douctl.run(["api", "/x", "-o", path, "--force"] + Self.base)
        #expect(forced.status == 0, "\(forced)")
        #expect(try FileIO.readFile(path) == Array(#"{"a":1}"#.utf8))
        let alone = try douctl.run(["api", "/x", "--force"] + Self.base)
        #expect(alone.status == 2 && alone.stderr.hasPrefix("douctl: --force goes with -o FILE"), "\(alone)")
    }

    @Test func downloadIntoADirectoryWithOSaysUseD() throws {
        let directory = try TemporaryDirectory(prefix: "download-o-dir")
        let transport = ScriptedTransport([.json(200, "x")])
        let result = try InProcessDouctl.scripted(transport).run(["download", "http://api.test/a.txt", "-o", directory.path, "--force"] + Self.base)
        #expect(result.status == 3, "\(result)")
        #expect(result.stderr.contains("\(directory.path) is a directory; use -d \(directory.path)"), "\(result)")
        #expect(!result.stderr.contains("--force"), "no advice that cannot help: \(result)")
    }

    @Test func aFailedWriteToAFileExits3InDownloadAsInAPI() throws {
        let full = "/dev/full"
        guard FileIO.fileExists(full) else { return }
        for argv in [["api", "/x", "-o", full], ["download", "http://api.test/a", "-o", full]] {
            let transport = ScriptedTransport([.json(200, #"{"a":1}"#)])
            let result = try InProcessDouctl.scripted(transport).run(argv + Self.base)
            #expect(result.status == 3, "\(argv): \(result)")
            #expect(result.stderr.contains("cannot write /dev/full ("), "\(argv): \(result)")
        }
    }

    // MARK: 8. first steps

    @Test func aFreshInstallPointsAtTheDemoTheSandboxAndProfileAdd() throws {
        let douctl = try InProcessDouctl()
        for argv in [["user", "me"], ["auth", "login"]] {
            let result = try douctl.run(argv)
            #expect(result.status != 0, "\(argv): \(result)")
            for hint in ["douctl demo", "douctl sandbox", "douctl profile add NAME --api-base URL", "Douban admits no new apps"] {
                #expect(result.stderr.contains(hint), "\(argv) names \(hint): \(result)")
            }
        }
        // A profile that can log in keeps the one-line advice.
        let plain = try InProcessDouctl()
        #expect(try plain.run("profile", "add", "gh", "--api-base", "https://api.github.example", "--user-url", "/user").status == 0)
        let result = try plain.run(["--profile", "gh", "user", "me"])
        #expect(result.stderr == "douctl: not logged in to gh; run: douctl auth login --profile gh\n", "\(result)")
    }

    // MARK: 11. small lies

    @Test func formatTextWithJSONIsRefused() throws {
        #expect(throws: OptionError.self) { try boundOptions(["user", "me", "--format", "text", "--json"], as: UserCommands.ViewOnly.self) }
        let result = try InProcessDouctl.scripted(ScriptedTransport()).run(["user", "me", "--format", "text", "--json"] + Self.base)
        #expect(result.status == 2, "\(result)")
        #expect(result.stderr.hasPrefix("douctl: --json and --format text contradict each other; give one\nusage: douctl user me"), "\(result)")
        // --format json --json say the same thing: accepted.
        #expect(throws: Never.self) { try boundOptions(["user", "me", "--format", "json", "--json"], as: UserCommands.ViewOnly.self) }
    }

    @Test func scopesSplitOnSpacesAndCommas() throws {
        #expect(try ProfileKey.scopes.parse("read write") == .list(["read", "write"]))
        #expect(try ProfileKey.scopes.parse("a,b c") == .list(["a", "b", "c"]))
        let douctl = try InProcessDouctl()
        #expect(try douctl.run("config", "set", "scopes", "read write", "--profile", "douban").status == 0)
        let got = try douctl.run("config", "get", "scopes", "--profile", "douban")
        #expect(got.stdoutText == "read,write\n", "\(got)")
    }

    @Test func apiBaseTakesSingleLabelHostsOfAnyLength() throws {
        #expect(try ProfileKey.apiBase.parse("http://x") == .text("http://x"))
        #expect(try ProfileKey.apiBase.parse("http://docker") == .text("http://docker"))
        #expect(try ProfileKey.apiBase.parse("https://u@h:8/p") == .text("https://u@h:8/p"))
        for bad in ["http://", "https:///p", "http://:80", "x.test"] {
            #expect(throws: DouctlError.self, "\(bad)") { try ProfileKey.apiBase.parse(bad) }
        }
        let douctl = try InProcessDouctl()
        let result = try douctl.run("profile", "add", "x1", "--api-base", "http://x")
        #expect(result.status == 0, "\(result)")
    }

    @Test func oneItemIsOneItem() {
        #expect(Paginator.items(0) == "0 items")
        #expect(Paginator.items(1) == "1 item")
        #expect(Paginator.items(2) == "2 items")
    }

    @Test func paginateUnderDryRunWarnsAboutNothing() throws {
        let douctl = try InProcessDouctl(transport: ScriptedTransport())
        let result = try douctl.run(["api", "/list", "--paginate", "--dry-run"] + Self.base)
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.isEmpty, "no '0 items' warning: \(result)")
    }

    @Test func downloadDryRunPrintsTheDownloadItWouldMake() throws {
        let douctl = try InProcessDouctl(transport: ScriptedTransport())
        let result = try douctl.run(["download", "http://api.test/files/a.txt", "-d", "pics", "--dry-run"] + Self.base)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText.hasSuffix(" -o pics/a.txt\n"), "\(result)")
        #expect(result.stdoutText.contains("-H 'Accept: */*'"), "\(result)")
        #expect(!result.stdoutText.contains("application/json"), "\(result)")
        let named = try douctl.run(["download", "http://api.test/files/a.txt", "-o", "b.bin", "--dry-run"] + Self.base)
        #expect(named.stdoutText.hasSuffix(" -o b.bin\n"), "\(named)")
    }

    @Test func upperCaseHTTPProxyIsExplainedUnderVerbose() throws {
        #expect(NetworkSettings.ignoredProxyNote(environment: ["HTTP_PROXY": "http://p:3128"], proxyGiven: false)?.contains("HTTP_PROXY") == true)
        #expect(NetworkSettings.ignoredProxyNote(environment: ["HTTP_PROXY": "http://p:3128", "http_proxy": "http://q:1"], proxyGiven: false) == nil)
        #expect(NetworkSettings.ignoredProxyNote(environment: ["HTTP_PROXY": "http://p:3128"], proxyGiven: true) == nil)
        #expect(NetworkSettings.ignoredProxyNote(environment: [:], proxyGiven: false) == nil)
        let transport = ScriptedTransport([.json(200, "{}"), .json(200, "{}")])
        let douctl = try InProcessDouctl.scripted(transport)
        let verbose = try douctl.run(["-v", "api", "/x"] + Self.base, environment: ["HTTP_PROXY": "http://proxy.test:3128"])
        #expect(verbose.status == 0, "\(verbose)")
        #expect(verbose.stderr.contains("* HTTP_PROXY (http://proxy.test:3128) is ignored, as curl ignores it (httpoxy): set http_proxy"), "\(verbose)")
        let quiet = try douctl.run(["api", "/x"] + Self.base, environment: ["HTTP_PROXY": "http://proxy.test:3128"])
        #expect(quiet.stderr.isEmpty, "only -v says it: \(quiet)")
    }

    @Test func cacheSaysOnceWhyANoStoreReplyIsNotKept() throws {
        let noStore = [HTTPHeader("Cache-Control", "no-store")]
        let transport = ScriptedTransport([.json(200, "{}", headers: noStore), .json(200, "{}", headers: noStore)])
        let douctl = try InProcessDouctl.scripted(transport)
        let first = try douctl.run(["api", "/x", "--cache", "1m"] + Self.base)
        #expect(first.status == 0, "\(first)")
        #expect(first.stderr.contains("the reply says Cache-Control: no-store, so --cache keeps no copy of it (GET /x)"), "\(first)")
        #expect(first.stderr.split(separator: "\n").count == 1, "said once: \(first)")
        let second = try douctl.run(["api", "/x", "--cache", "1m"] + Self.base)
        #expect(transport.requests.count == 2, "nothing was cached")
        #expect(second.stderr.contains("no-store"), "\(second)")
    }
}
