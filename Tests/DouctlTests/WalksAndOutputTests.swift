#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlJSON
import DouctlServer
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 20: standard descriptors, walks that must stop (a closed pipe, the page cap,
/// --max-time), stalled replies, and the exit codes of malformed input and replies —
/// the built binary against real servers and raw hostile listeners on 127.0.0.1.
@Suite("Walks, output and hostile replies")
struct WalksAndOutputTests {
    let douctl = Douctl(environment: ["DOUCTL_TOKEN": "t"])

    // MARK: - standard descriptors

    static let fileBody: [UInt8] = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }

    func fileServer() throws -> TestServer {
        try TestServer { _ in
            HTTPServerResponse(status: 200, headers: [("Content-Type", "application/octet-stream")], body: .bytes(Self.fileBody))
        }
    }

    /// With stdout closed (`>&-`), the temp file of a download used to take fd 1, and the
    /// JSON line went into the file (exit 0, a sha256 that matched nothing). Now the file
    /// is exactly what was served, and the lost JSON line is a write error (exit 3).
    @Test func aClosedStdoutNeverLandsInADownloadedFile() throws {
        let server = try fileServer()
        let directory = try TemporaryDirectory()
        let target = directory.path + "/file.bin"
        let result = try spawn(["download", "\(server.baseURL)/file.bin", "-o", target], closing: [1])
        #expect(try FileIO.readFile(target) == Self.fileBody, "the file holds only the served bytes")
        #expect(result.status == 3, "\(result)")
        #expect(result.stderr == "douctl: write error on standard output (Bad file descriptor)\n")
    }

    /// With stderr closed (`2>&-`), progress text went into the downloaded file.
    @Test func aClosedStderrNeverLandsInADownloadedFile() throws {
        let server = try fileServer()
        let directory = try TemporaryDirectory()
        let target = directory.path + "/file.bin"
        let result = try spawn(["download", "\(server.baseURL)/file.bin", "-o", target, "--progress", "always"], closing: [2])
        #expect(result.status == 0, "\(result)")
        #expect(try FileIO.readFile(target) == Self.fileBody)
        let line = try JSONParser.parse(result.stdout)
        #expect(line["sha256"]?.stringValue == Digest.hex(Digest.sha256(Self.fileBody)))
    }

    /// Issue 30: with stdin closed (`<&-`), a body that must come from it was read from the
    /// /dev/null put in its place and sent empty, exit 0. Now: exit 3, one line, nothing sent.
    @Test(arguments: [
        (["--input", "-"], "--input -"),
        (["-F", "k=@-"], "-F k=@-"),
        (["--attach", "k=-"], "--attach k=-"),
    ])
    func aClosedStdinIsNoBody(body: [String], named: String) throws {
        let server = try TestServer(json: "{}")
        let result = try spawn(["api", "-X", "POST", "/x"] + body + ["--api-base", server.baseURL], closing: [0])
        #expect(result.status == 3, "\(result)")
        #expect(result.stderr == "douctl: \(named) reads standard input, which is closed (<&-); nothing was sent\n")
        #expect(result.stdout.isEmpty)
        #expect(server.received.isEmpty, "nothing sent")
    }

    /// Issue 30: `--max-time 2` stopped `--input -` reading a slow pipe, but `-F k=@-` and
    /// `--attach k=-` read on until the writer quit (15.6 s, then exit 7). Every read of a
    /// body from stdin now stops at the deadline: exit 7, nothing sent.
    @Test(arguments: [["--input", "-"], ["-F", "k=@-"], ["--attach", "k=-"]])
    func maxTimeStopsReadingABodyFromASlowStdin(body: [String]) throws {
        let server = try TestServer(json: "{}")
        let pipe = try FileIO.makePipe()
        let writing = LockedValue(true)
        let writer = Thread {
            // A byte every 0.2 s for up to 30 s, then the end.
            var left = 150
            while left > 0 && writing.value {
                _ = " ".withCString { write(pipe.write, $0, 1) }
                usleep(200_000)
                left -= 1
            }
            close(pipe.write)
        }
        writer.start()
        let started = Date()
        let child = try spawnProcess(["--max-time", "2", "api", "-X", "POST", "/x"] + body + ["--api-base", server.baseURL], stdinFD: pipe.read)
        close(pipe.read)
        let result = child.wait(timeout: 60)
        let elapsed = Date().timeIntervalSince(started)
        writing.withLock { $0 = false }
        #expect(result.status == 7, "\(result)")
        #expect(result.stderr == "douctl: timed out: the command ran longer than --max-time 2s\n", "\(result)")
        #expect(elapsed < 12, "stopped near the deadline, not when the writer quit (30 s): \(elapsed) s")
        #expect(server.received.isEmpty, "nothing sent")
    }

    /// A full disk on stdout was silent (exit 0): now one line and exit 3, like coreutils.
    @Test func apiToAFullDeviceIsAWriteError() throws {
        guard FileManager.default.fileExists(atPath: "/dev/full") else {
            try Test.cancel("skipped: needs /dev/full, which this system does not have")
        }
        let server = try TestServer(json: #"{"a":1}"#)
        let result = try spawn(["api", "/x", "--api-base", server.baseURL], stdoutPath: "/dev/full")
        #expect(result.status == 3, "\(result)")
        #expect(result.stderr == "douctl: write error on standard output (No space left on device)\n")
    }

    // MARK: - walks that must stop

    /// An endless list: `{"start","count","total","items":[…]}` pages of two, 400 items.
    /// `gate`, when given, holds the answer to page `gatedPage` until it is signalled.
    func listServer(total: Int = 400, gatedPage: Int? = nil, gate: DispatchSemaphore? = nil) throws -> TestServer {
        try TestServer { request in
            let start = Int(request.queryValue("start") ?? "0") ?? 0
            if let gate, let gatedPage, start == 2 * (gatedPage - 1) { _ = gate.wait(timeout: .now() + 120) }
            let ids = (start..<min(start + 2, total)).map { #"{"id":\#($0)}"# }.joined(separator: ",")
            let body = #"{"start":\#(start),"count":2,"total":\#(total),"items":[\#(ids)]}"#
            return HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(Array(body.utf8)))
        }
    }

    /// `api --paginate | head`: once the reader has gone, the next write fails (EPIPE) and
    /// the walk stops there, quietly, exit 141. Before: it fetched all 200 pages (a real
    /// API: hours of requests) and exited 0.
    @Test func aWalkStopsWhenItsReaderCloses() throws {
        let gate = DispatchSemaphore(value: 0)
        let server = try listServer(gatedPage: 2, gate: gate)
        defer { gate.signal() }
        // Both ends close-on-exec from the start: a child another test spawns meanwhile must
        // not inherit the read end, or the pipe stays open after `close(reader)` and douctl
        // writes on into its buffer (a flaky 13th request). The child gets the write end by dup2.
        let (reader, writer) = try FileIO.makePipe()
        let child = try spawnProcess(["api", "/list", "-f", "count=2", "--paginate", "--api-base", server.baseURL], stdoutFD: writer)
        close(writer)
        // Page 1's first line arrives; then the reader goes away, and only then is page 2 answered.
        var byte: UInt8 = 0
        var first: [UInt8] = []
        while read(reader, &byte, 1) == 1 && byte != 0x0A { first.append(byte) }
        #expect(String(decoding: first, as: UTF8.self) == #"{"id":0}"#)
        close(reader)
        gate.signal()
        let result = child.wait(timeout: 120)
        #expect(result.status == 141, "\(result)")
        #expect(result.stderr.isEmpty, "a closed pipe is not an error to report")
        // Four pages at a time (the default --parallel) fetch at most a window of 8 pages
        // ahead of the one being printed (and claim the next as one is taken): the walk
        // stops there, not after 200 pages.
        #expect((1...12).contains(server.received.count), "no page past the window after the one whose write failed (got \(server.received.count) requests)")
    }

    /// The same with --jq, whose program runs on its own thread and writes the results
    /// itself: once the reader has gone its write fails, and the walk stops within what a
    /// pipe would hold (64 KiB of input queued, the page window), exit 141.
    @Test func aWalkFilteredByJQStopsWhenItsReaderCloses() throws {
        let pad = String(repeating: "x", count: 2000)
        let server = try TestServer { request in
            let start = Int(request.queryValue("start") ?? "0") ?? 0
            let ids = (start..<min(start + 2, 2000)).map { #"{"id":\#($0),"pad":"\#(pad)"}"# }.joined(separator: ",")
            let body = #"{"start":\#(start),"count":2,"total":2000,"items":[\#(ids)]}"#
            return HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(Array(body.utf8)))
        }
        let (reader, writer) = try FileIO.makePipe()
        let child = try spawnProcess(["api", "/list", "-f", "count=2", "--paginate", "--api-base", server.baseURL, "--jq", ".pad"], stdoutFD: writer)
        close(writer)
        var byte: UInt8 = 0
        var first: [UInt8] = []
        while read(reader, &byte, 1) == 1 && byte != 0x0A { first.append(byte) }
        #expect(first.count == 2000)
        close(reader)
        let result = child.wait(timeout: 120)
        #expect(result.status == 141, "\(result)")
        #expect(result.stderr.isEmpty, "a closed pipe is not an error to report")
        #expect(server.received.count < 200, "the walk stopped, not after 1,000 pages (got \(server.received.count) requests)")
    }

    /// --max-time ending a walk said only "timed out": now the page it stopped at, too.
    @Test func maxTimeEndingAWalkNamesThePage() throws {
        let gate = DispatchSemaphore(value: 0)
        let server = try listServer(gatedPage: 3, gate: gate)
        defer { gate.signal() }
        let result = try douctl.run(["--max-time", "8", "api", "/list", "-f", "count=2", "--paginate", "--api-base", server.baseURL], timeout: 120)
        #expect(result.status == 7, "\(result)")
        let line = result.errorLine
        #expect(line.hasPrefix("douctl: timed out: the command ran longer than --max-time 8s (page "), "\(line)")
        #expect(line.contains(" failed; the ") && line.hasSuffix(" items before it were printed)"), "\(line)")
        // Pages 1 and 2 came back at once, so unless the machine is very slow it was page 3.
        if server.received.count == 3 { #expect(line.contains("(page 3 failed; the 4 items before it were printed)"), "\(line)") }
    }

    // MARK: - a reply that trickles

    /// 2 bytes a second never stalled libcurl's "no bytes moved" rule: the reply went on
    /// for as long as the server liked. Under 100 bytes a second for --timeout seconds is
    /// now a stall: exit 7.
    @Test func aTricklingReplyStallsUnderTimeout() throws {
        let listener = try HostileListener { connection, listener in
            guard HostileListener.send(connection, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2000\r\n\r\n[") else { return }
            for _ in 0..<1000 where !listener.isStopped {
                guard HostileListener.send(connection, "1") else { return }
                usleep(500_000)
            }
        }
        defer { listener.stop() }
        let result = try douctl.run(["--timeout", "3", "--no-retry", "api", "/slow", "--api-base", listener.baseURL], timeout: 240)
        #expect(result.status == 7, "\(result)")
        #expect(result.errorLine.hasPrefix("douctl: timed out: "), "\(result.errorLine)")
        #expect(result.errorLine.contains("100 bytes/sec"), "\(result.errorLine)")
        #expect(result.stdout.isEmpty)
    }

    // MARK: - exit codes of malformed input and replies

    @Test(arguments: [
        ("garbage, no status line", "garbage\r\n\r\n"),
        ("HTTP/0.9: a body without a head", #"{"a":1}"#),
        ("a malformed status line", "HTTP/1.1 2x0 OK\r\nContent-Length: 2\r\n\r\n{}"),
        ("an unknown HTTP version", "HTTP/7.3 200 OK\r\nContent-Length: 2\r\n\r\n{}"),
        ("a Content-Length that is not a number", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}"),
        ("a negative Content-Length", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: -5\r\n\r\n{}"),
        // RFC 9112 §6.3: unrecoverable; libcurl read on to the larger length (exit 7, "ended early").
        ("two different Content-Length headers", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 10\r\n\r\n{}"),
        ("a Content-Length list of different values", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2, 10\r\n\r\n{}"),
    ])
    func aReplyThatIsNotHTTPIsExit8(what: String, reply: String) throws {
        let listener = try HostileListener { connection, _ in HostileListener.send(connection, reply) }
        defer { listener.stop() }
        let result = try douctl.run(["api", "/x", "--api-base", listener.baseURL], timeout: 120)
        #expect(result.status == 8, "\(what): \(result)")
        #expect(result.errorLine.hasPrefix("douctl: the reply is not valid HTTP: "), "\(what): \(result.errorLine)")
        #expect(result.stderr.filter { $0 == "\n" }.count == 1, "one line")
        #expect(result.stdout.isEmpty)
    }

    /// The same value twice, or as a list, is that value (RFC 9110 §8.6); an interim or
    /// redirect reply's length is its own.
    @Test(arguments: [
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2, 2\r\n\r\n{}",
        "HTTP/1.1 100 Continue\r\nContent-Length: 7\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
        // Header lines are read as bytes: tabs are whitespace around values and list items,
        // and a value in UTF-8 (a Character boundary the byte-wise reader never looks for)
        // changes nothing.
        "HTTP/1.1 200 Ok \u{00E9}t\u{00E9}\r\nX-Note:\t caf\u{00E9}\u{0301} \u{4E2D}\t\r\nContent-Type:\tapplication/json\r\nContent-Length:\t2 ,\t2\t\r\n\r\n{}",
    ])
    func aRepeatedContentLengthOfOneValueIsThatValue(reply: String) throws {
        let listener = try HostileListener { connection, _ in HostileListener.send(connection, reply) }
        defer { listener.stop() }
        let result = try douctl.run(["api", "/x", "--api-base", listener.baseURL, "--compact"], timeout: 120)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == "{}\n")
    }

    /// The error is one line, whatever the value held; a refusal at parse time (a PATH with
    /// a space, a malformed -H: issue 31) has `api`'s usage line under it, as every option error does.
    static func isOneErrorLine(_ result: CommandResult) -> Bool {
        let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false)
        return result.stderr.hasSuffix("\n") && !result.stderr.contains("\r") && (lines.count == 2
            || (lines.count == 3 && lines[1].hasPrefix("usage: douctl api ")))
    }

    @Test(arguments: ["/a b", "/tab\there", "/x\ny", "http://[::1/x"])
    func aMalformedPathIsAUsageError(path: String) throws {
        let server = try TestServer(json: "{}")
        let result = try douctl.run(["api", path, "--api-base", server.baseURL])
        #expect(result.status == 2, "\(result)")
        #expect(result.errorLine.hasPrefix("douctl: invalid PATH '"), "\(result.errorLine)")
        #expect(Self.isOneErrorLine(result), "one line (then the usage line, when refused at parse time): \(result.stderr)")
        #expect(server.received.isEmpty)
    }

    @Test(arguments: ["bad\nline: x", "Na\nme: v", "no-colon\n", "\u{1B}[2J: v"])
    func aHeaderErrorIsOneLine(header: String) throws {
        let result = try douctl.run(["api", "/x", "-H", header, "--api-base", "http://127.0.0.1:9"])
        #expect(result.status == 2, "\(result)")
        #expect(result.stderr.hasPrefix("douctl: invalid header"), "\(result.stderr)")
        #expect(Self.isOneErrorLine(result), "one line, then the usage line: \(result.stderr)")
        #expect(!result.stderr.contains("\u{1B}"), "no raw escape sequence reaches the terminal")
    }

    /// Ctrl-C stops the same read: exit 130, nothing sent.
    @Test func ctrlCStopsReadingABodyFromASlowStdin() throws {
        let server = try TestServer(json: "{}")
        let pipe = try FileIO.makePipe()
        defer { close(pipe.write) }
        _ = " ".withCString { write(pipe.write, $0, 1) }
        let child = try spawnProcess(["api", "-X", "POST", "/x", "-F", "k=@-", "--api-base", server.baseURL], stdinFD: pipe.read)
        close(pipe.read)
        usleep(1_000_000)
        kill(child.pid, SIGINT)
        let result = child.wait(timeout: 30)
        #expect(result.status == 130, "\(result)")
        #expect(server.received.isEmpty, "nothing sent")
    }

    // MARK: - spawning with closed descriptors

    /// Foundation's Process cannot close a child's descriptor, so: posix_spawn with file actions.
    struct Child {
        let pid: pid_t
        let stdoutPath: String?
        let stderrPath: String

        func wait(timeout: Double) -> CommandResult {
            let deadline = Date().addingTimeInterval(timeout)
            var status: Int32 = 0
            while waitpid(pid, &status, WNOHANG) == 0 {
                if Date() > deadline {
                    kill(pid, SIGKILL)
                    Issue.record("douctl did not finish within \(timeout)s")
                    _ = waitpid(pid, &status, 0)
                    break
                }
                usleep(10_000)
            }
            let exited = (status & 0x7F) == 0
            let code = exited ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
            let out = stdoutPath.flatMap { try? FileIO.readFile($0) } ?? []
            let err = (try? FileIO.readFile(stderrPath)) ?? []
            return CommandResult(status: code, stdout: out, stderrBytes: err)
        }
    }

    /// Starts douctl with `closing` descriptors closed; stdout goes to `stdoutFD`, else to
    /// `stdoutPath`, else to a temporary file; stderr to a temporary file.
    func spawnProcess(_ arguments: [String], closing: Set<Int32> = [], stdinFD: Int32? = nil, stdoutFD: Int32? = nil, stdoutPath: String? = nil) throws -> Child {
        let scratch = TemporaryDirectory.make(prefix: "douctl-spawn")
        let outPath = stdoutFD == nil ? (stdoutPath ?? scratch + "/stdout") : nil
        let errPath = scratch + "/stderr"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let stdinFD {
            posix_spawn_file_actions_adddup2(&actions, stdinFD, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        if let stdoutFD {
            posix_spawn_file_actions_adddup2(&actions, stdoutFD, 1)
        } else if let outPath {
            posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        }
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        for fd in closing.sorted() { posix_spawn_file_actions_addclose(&actions, fd) }
        let argv = ([Douctl.binary] + arguments).map { strdup($0) }
        let envp = douctl.environment.map { strdup("\($0.key)=\($0.value)") }
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        var argvArray = argv + [nil]
        var envpArray = envp + [nil]
        let spawned = posix_spawn(&pid, Douctl.binary, &actions, nil, &argvArray, &envpArray)
        guard spawned == 0 else { throw SystemError("posix_spawn", errno: spawned) }
        // A stdout the caller named (/dev/full) is not read back.
        return Child(pid: pid, stdoutPath: stdoutPath == nil ? outPath : nil, stderrPath: errPath)
    }

    func spawn(_ arguments: [String], closing: Set<Int32> = [], stdoutPath: String? = nil) throws -> CommandResult {
        try spawnProcess(arguments, closing: closing, stdoutPath: stdoutPath).wait(timeout: 120)
    }
}
