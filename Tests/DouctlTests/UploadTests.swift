import DouctlJSON
import DouctlSandbox
import DouctlServer
import Foundation
import Testing
import DouctlTestSupport

@Suite("douctl upload")
struct UploadTests {
    @Test func defaultTargetIsTheStatusPicture() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        let picture = try TemporaryDirectory.file(named: "a.png", bytes: PNGFixture.bytes)
        let result = try fixture.douctl.run("upload", picture, "-f", "text=批量")
        #expect(result.status == 0, "\(result)")
        let line = try #require(try result.lines().first)
        #expect(line["file"]?.stringValue == picture)
        #expect(line["ok"]?.boolValue == true)
        #expect(line["reply"]?["text"]?.stringValue == "批量")
        let request = try #require(fixture.sandbox.requests.last)
        #expect(request.path == "/shuo/v2/statuses/")
        #expect(request.parts.map(\.name) == ["text", "image"])
        #expect(request.parts.last?.bytes == PNGFixture.bytes)
        #expect(!request.isChunked)
    }

    @Test func namesTypesAndFraming() throws {
        let server = try TestServer(json: "{}")
        let directory = TemporaryDirectory.make(prefix: "names")
        let tricky = directory + "/a\"b\nc 中.jpg"
        try Data(PNGFixture.bytes).write(to: URL(fileURLWithPath: tricky)) // PNG bytes, .jpg name
        let text = directory + "/notes.txt"
        try Data("hello".utf8).write(to: URL(fileURLWithPath: text))
        let result = try Douctl().run("upload", tricky, text, "--to", "/files", "--field", "file", "--api-base", server.baseURL)
        #expect(result.status == 0, "\(result)")
        let bodies = server.received.sorted { $0.bodyText.contains("a%22b") && !$1.bodyText.contains("a%22b") }
        let first = try #require(multipartParts(bodies[0].body, contentType: bodies[0].header("Content-Type"))?.first)
        #expect(first.disposition == #"Content-Disposition: form-data; name="file"; filename="a%22b%0Ac 中.jpg""#)
        #expect(first.contentType == "image/png") // magic bytes first
        let second = try #require(multipartParts(bodies[1].body, contentType: bodies[1].header("Content-Type"))?.first)
        #expect(second.contentType == "text/plain") // then the extension
        for request in server.received {
            #expect(!request.isChunked)
            #expect(request.contentLength == Int64(request.body.count))
        }
    }

    @Test func parallelResultsComeInTheOrderGivenDespiteLatency() throws {
        let active = Gauge()
        let server = try TestServer { received in
            active.enter()
            defer { active.leave() }
            // Earlier files answer more slowly, so completion order is the reverse of the given one.
            let name = received.bodyText.range(of: #"filename="f(\d)"#, options: .regularExpression).map { String(received.bodyText[$0].last ?? "0") } ?? "0"
            Thread.sleep(forTimeInterval: 0.1 * Double(6 - (Int(name) ?? 0)))
            return .bytes(200, Array(#"{"name":"f\#(name)"}"#.utf8), contentType: "application/json")
        }
        let directory = TemporaryDirectory.make(prefix: "parallel")
        let files = (1...5).map { index -> String in
            let path = directory + "/f\(index)"
            try? Data([UInt8](repeating: UInt8(index), count: 1000)).write(to: URL(fileURLWithPath: path))
            return path
        }
        let result = try Douctl().run(["upload"] + files + ["--to", "/up", "--parallel", "4", "--api-base", server.baseURL])
        #expect(result.status == 0, "\(result)")
        let lines = try result.lines()
        #expect(lines.map { $0["file"]?.stringValue } == files)
        #expect(lines.map { $0["reply"]?["name"]?.stringValue } == ["f1", "f2", "f3", "f4", "f5"])
        #expect(active.maximum >= 3, "uploads ran concurrently")
        #expect(result.stderr.isEmpty, "no progress without a terminal")
    }

    @Test func oneFailureDoesNotStopTheOthers() throws {
        let fixture = try SandboxFixture()
        try fixture.login()
        let good = try TemporaryDirectory.file(named: "good.png", bytes: PNGFixture.bytes)
        let notPicture = try TemporaryDirectory.file(named: "doc.png", bytes: Array("text".utf8))
        // To the status endpoint every file is checked first (issue 40): a batch that would
        // fail part-way posts nothing.
        let checked = try fixture.douctl.run("upload", good, "/nonexistent.png", notPicture, good)
        #expect(checked.status == 3, "\(checked)")
        #expect(checked.stdout.isEmpty, "\(checked)")
        #expect(checked.stderr == "douctl: cannot read /nonexistent.png: No such file or directory (2 of 4 files failed the check; nothing was posted: every file is checked before the first is sent)\n", "\(checked)")
        #expect(fixture.sandbox.requests.filter { $0.path == "/shuo/v2/statuses/" }.isEmpty)
        // Elsewhere (--to), a file that cannot be read is its own line; the others go.
        let result = try fixture.douctl.run("upload", good, "/nonexistent.png", good, "--to", "/shuo/v2/statuses/")
        #expect(result.status == 3, "\(result)")
        let lines = try result.lines()
        #expect(lines.map { $0["ok"]?.boolValue } == [true, false, true])
        #expect(lines.count == 3 && lines[1]["error"]?.stringValue == "cannot read /nonexistent.png: No such file or directory")
        #expect(lines.count == 3 && lines[1]["exit"]?.intValue == 3)
        #expect(fixture.sandbox.requests.filter { $0.path == "/shuo/v2/statuses/" }.count == 2)
        #expect(result.stderr.contains("douctl: cannot read /nonexistent.png: No such file or directory\n"), "the file is named once")
    }

    @Test func serverErrorsTakeTheWorstExitCode() throws {
        let server = try TestServer { received in
            received.bodyText.contains("filename=\"bad\"")
                ? .bytes(404, Array(#"{"msg":"uri_not_found","code":1001}"#.utf8), contentType: "application/json")
                : .bytes(200, Array("{}".utf8), contentType: "application/json")
        }
        let directory = TemporaryDirectory.make(prefix: "worst")
        for name in ["ok", "bad"] { try Data("x".utf8).write(to: URL(fileURLWithPath: directory + "/" + name)) }
        let result = try Douctl().run("upload", directory + "/ok", directory + "/bad", "--to", "/u", "--api-base", server.baseURL)
        #expect(result.status == 5)
        #expect(try result.lines().map { $0["exit"]?.intValue } == [nil, 5])
    }

    @Test func progressOnlyOnATerminalAndNeverOnStdout() throws {
        let server = try TestServer { _ in
            Thread.sleep(forTimeInterval: 0.3)
            return .bytes(200, Array("{}".utf8), contentType: "application/json")
        }
        let file = try TemporaryDirectory.file(named: "big.bin", bytes: [UInt8](repeating: 1, count: 4 << 20))
        let douctl = Douctl()
        let output = TemporaryDirectory.make(prefix: "pty") + "/stdout.json"
        // `script` gives douctl a pseudo-terminal for stderr; stdout goes to a file.
        let command = "\(Douctl.binary) upload \(file) --to /u --api-base \(server.baseURL) > \(output)"
        let pty = try runUnderScript(command, environment: douctl.environment)
        #expect(pty.contains("big.bin"))
        #expect(pty.contains("done, 4.0 MiB"))
        #expect(pty.contains("\u{1B}[2K"), "redrawn in place")
        let stdout = try String(contentsOfFile: output, encoding: .utf8)
        #expect(stdout.hasPrefix("{\"file\":"))
        #expect(!stdout.contains("\u{1B}"))
        #expect(!stdout.contains("MiB"))
        // Not a terminal: nothing, unless --progress always (then plain lines).
        #expect(try douctl.run("upload", file, "--to", "/u", "--api-base", server.baseURL).stderr.isEmpty)
        let always = try douctl.run("upload", file, "--to", "/u", "--api-base", server.baseURL, "--progress", "always")
        #expect(always.stderr.contains("big.bin"))
        #expect(!always.stderr.contains("\u{1B}"))
        // A terminal with --progress never, and the rest of the rule: TerminalViewInProcessTests.
    }

    @Test func interruptStopsCleanlyAndReportsWhatCompleted() throws {
        let server = try TestServer { received in
            if !received.bodyText.contains("filename=\"first\"") { Thread.sleep(forTimeInterval: 30) }
            return .bytes(200, Array("{}".utf8), contentType: "application/json")
        }
        let directory = TemporaryDirectory.make(prefix: "interrupt")
        for name in ["first", "second", "third"] { try Data("x".utf8).write(to: URL(fileURLWithPath: directory + "/" + name)) }
        let douctl = Douctl()
        let running = try RunningDouctl(douctl, ["upload", directory + "/first", directory + "/second", directory + "/third", "--to", "/u", "--api-base", server.baseURL])
        let deadline = Date().addingTimeInterval(10)
        while server.received.count < 2 && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        Thread.sleep(forTimeInterval: 0.3)
        running.kill(SIGINT)
        let result = running.finish(timeout: 10)
        #expect(result.status == 130, "\(result)")
        #expect(result.stderr.contains("interrupted; 1 of 3 files uploaded: \(directory)/first"))
        #expect(try result.lines().first?["file"]?.stringValue == directory + "/first")
    }
}

/// Tracks how many handlers run at once.
final class Gauge: @unchecked Sendable {
    private let lock = NSLock()
    private var current = 0
    private(set) var maximum = 0
    func enter() {
        lock.lock()
        current += 1
        maximum = max(maximum, current)
        lock.unlock()
    }
    func leave() {
        lock.lock()
        current -= 1
        lock.unlock()
    }
}

/// Runs a shell command under `script`, which gives it a pseudo-terminal; returns what the
/// terminal showed.
func runUnderScript(_ command: String, environment: [String: String], input: String? = nil) throws -> String {
    let script = try Tools.require("script")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: script)
    process.arguments = ["-qec", command, "/dev/null"]
    process.environment = environment
    let pipe = Pipe()
    process.standardOutput = pipe
    let stdin = Pipe()
    process.standardInput = input == nil ? FileHandle.nullDevice : stdin
    try process.runAlone()
    if let input {
        // Typed once the prompt is up; the pipe stays open until the command ends.
        DispatchQueue.global().asyncAfter(deadline: .now() + 1.5) {
            try? stdin.fileHandleForWriting.write(contentsOf: Data(input.utf8))
        }
    }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}
