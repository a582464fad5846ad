import DouctlJSON
import DouctlSandbox
import DouctlServer
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 40, round three (items 5–8, 11): the built binary against the sandbox or a
/// purpose-built server on 127.0.0.1, one test per behaviour a user sees.
@Suite("The first hour, round three")
struct FirstHourRoundThreeTests {
    // MARK: 5. the sandbox keeps quiet when asked

    func startSandbox(_ douctl: Douctl, _ extra: [String]) throws -> (RunningDouctl, String) {
        let running = try RunningDouctl(douctl, ["sandbox"] + extra)
        let firstLine = try running.waitForStdout { $0.contains("\n") }
        return (running, String(firstLine.prefix { $0 != "\n" }))
    }

    @Test func sandboxLogGoesToItsFileWithTheLoginCodes() throws {
        let douctl = Douctl()
        let directory = TemporaryDirectory.make(prefix: "sandbox-log")
        let log = directory + "/sandbox.log"
        let (sandbox, _) = try startSandbox(douctl, ["--log", log])
        defer { sandbox.kill(SIGTERM) }
        let me = try douctl.run("--profile", "sandbox", "api", "/v2/user/ahbei")
        #expect(me.status == 0, "\(me)")
        let captcha = try douctl.run("--profile", "coding-sandbox", "api", "/api/getCaptcha", "-o", directory + "/c.png")
        #expect(captcha.status == 0, "\(captcha)")
        let deadline = Date().addingTimeInterval(10)
        var text = ""
        while Date() < deadline {
            text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if text.contains("coding captcha for session ") && text.contains("GET /v2/user/ahbei 200") { break }
            usleep(50_000)
        }
        #expect(text.contains("douctl sandbox listening on"), "\(text)")
        #expect(text.contains("GET /v2/user/ahbei 200"), "\(text)")
        #expect(text.contains("coding captcha for session "), "\(text)")
        sandbox.kill(SIGTERM)
        let result = sandbox.finish()
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.isEmpty, "nothing on the terminal: \(result.stderr)")
        let mode = try FileManager.default.attributesOfItem(atPath: log)[.posixPermissions] as? Int
        #expect(mode == 0o600, "the log holds login codes")
    }

    @Test func quietSandboxLogsOnlyTheCodes() throws {
        let douctl = Douctl()
        let directory = TemporaryDirectory.make(prefix: "sandbox-quiet")
        let (sandbox, _) = try startSandbox(douctl, ["--quiet"])
        defer { sandbox.kill(SIGTERM) }
        #expect(try douctl.run("--profile", "sandbox", "api", "/v2/user/ahbei").status == 0)
        #expect(try douctl.run("--profile", "coding-sandbox", "api", "/api/getCaptcha", "-o", directory + "/c.png").status == 0)
        let stderr = try sandbox.waitForStderr { $0.contains("coding captcha for session ") }
        sandbox.kill(SIGTERM)
        let result = sandbox.finish()
        #expect(result.status == 0, "\(result)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines.first?.hasPrefix("coding captcha for session ") == true, "only the code: \(stderr)")
    }

    // MARK: 6. one -o rule; 7. pictures checked first

    @Test func apiAndDownloadShareTheOutputRule() throws {
        let server = try TestServer(json: #"{"a":1}"#)
        let douctl = Douctl()
        let directory = TemporaryDirectory.make(prefix: "one-o-rule")
        let file = directory + "/reply.json"
        try Data("old".utf8).write(to: URL(fileURLWithPath: file))
        for command in [["api", server.baseURL + "/x"], ["download", server.baseURL + "/x"]] {
            let refused = try douctl.run(command + ["-o", file])
            #expect(refused.status == 3, "\(command): \(refused)")
            #expect(refused.stderr.contains("\(file) already exists; not overwriting it (use --force to replace it)"), "\(command): \(refused)")
            #expect(try String(contentsOfFile: file, encoding: .utf8) == "old")
        }
        #expect(server.received.isEmpty, "refused before anything is sent")
        let forced = try douctl.run("api", server.baseURL + "/x", "-o", file, "--force")
        #expect(forced.status == 0, "\(forced)")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == #"{"a":1}"#)
        let intoDirectory = try douctl.run("download", server.baseURL + "/x", "-o", directory, "--force")
        #expect(intoDirectory.status == 3, "\(intoDirectory)")
        #expect(intoDirectory.stderr.contains("\(directory) is a directory; use -d \(directory)"), "\(intoDirectory)")
        if FileManager.default.fileExists(atPath: "/dev/full") {
            for command in [["api", server.baseURL + "/x"], ["download", server.baseURL + "/x"]] {
                let full = try douctl.run(command + ["-o", "/dev/full"])
                #expect(full.status == 3, "\(command): \(full)")
            }
        }
    }

    @Test func uploadChecksEveryPictureBeforePostingAny() throws {
        let fixture = try SandboxFixture()
        defer { fixture.stop() }
        try fixture.login()
        let directory = TemporaryDirectory.make(prefix: "upload-check")
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 7, count: 91)
        let good = directory + "/a.png"
        let big = directory + "/big.png"
        try Data(png).write(to: URL(fileURLWithPath: good))
        try Data(png + Array(repeating: 0, count: 3 * 1024 * 1024)).write(to: URL(fileURLWithPath: big))
        let before = try fixture.douctl.run("api", "/shuo/v2/statuses/home_timeline")
        let result = try fixture.douctl.run("upload", good, big, "--yes")
        #expect(result.status == 3, "\(result)")
        #expect(result.stderr.contains("nothing was posted"), "\(result)")
        let after = try fixture.douctl.run("api", "/shuo/v2/statuses/home_timeline")
        #expect(before.status == 0 && after.stdoutText == before.stdoutText, "no status was posted: \(after)")
        let second = try fixture.douctl.run("shuo", "post", "x", "--image", good, "--image", big)
        #expect(second.status == 2, "\(second)")
        #expect(second.stderr.contains("usage: douctl shuo post"), "\(second)")
    }

    // MARK: 8. first steps; 11. small lies

    @Test func aFreshInstallsFirstCommandNamesTheWaysIn() throws {
        let douctl = Douctl()
        let result = try douctl.run("user", "me")
        #expect(result.status == 4, "\(result)")
        #expect(result.stderr.contains("douctl demo") && result.stderr.contains("douctl sandbox") && result.stderr.contains("profile add"), "\(result)")
    }

    @Test func smallLiesAtTheBinary() throws {
        let douctl = Douctl()
        let conflict = try douctl.run("user", "me", "--format", "text", "--json")
        #expect(conflict.status == 2 && conflict.stderr.contains("\nusage: douctl user me"), "\(conflict)")
        #expect(try douctl.run("profile", "add", "x1", "--api-base", "http://x").status == 0)
        #expect(try douctl.run("config", "set", "scopes", "read write", "--profile", "x1").status == 0)
        #expect(try douctl.run("config", "get", "scopes", "--profile", "x1").stdoutText == "read,write\n")
        let dry = try douctl.run("download", "http://127.0.0.1:9/f.bin", "-o", "out.bin", "--dry-run")
        #expect(dry.stdoutText.hasSuffix(" -o out.bin\n") && !dry.stdoutText.contains("application/json"), "\(dry)")
        let walk = try douctl.run("api", "http://127.0.0.1:9/list", "--paginate", "--dry-run")
        #expect(walk.status == 0 && walk.stderr.isEmpty, "\(walk)")
    }
}
