#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import DouctlCommands
import DouctlArguments
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Testing

/// Issue 32, part two, in process: typed commands on a plain profile, --items and NDJSON
/// pages, a non-JSON 2xx, stdin bodies with a Content-Length.
@Suite struct OtherAPICommandTests {
    /// A douctl with a plain profile `api` on http://api.test (extra `profile add` flags).
    func plain(_ transport: ScriptedTransport, _ extra: [String] = []) throws -> InProcessDouctl {
        let douctl = try InProcessDouctl(environment: ["DOUCTL_TOKEN": "t"], transport: transport)
        let added = try douctl.run(["profile", "add", "api", "--api-base", "http://api.test"] + extra)
        #expect(added.status == 0, "\(added)")
        return douctl
    }

    // MARK: user me, shuo and upload on a plain profile

    @Test func userMeOnAPlainProfileIsItsUserURL() throws {
        let transport = ScriptedTransport([.json(200, #"{"id":7,"login":"ann"}"#)])
        let douctl = try plain(transport, ["--user-url", "/user"])
        let result = try douctl.run("--profile", "api", "user", "me")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == #"{"id":7,"login":"ann"}"# + "\n")
        #expect(transport.requests.map(\.url) == ["http://api.test/user"])
    }

    @Test func userMeWithoutUserURLIsRefusedNamingIt() throws {
        let transport = ScriptedTransport([])
        let douctl = try plain(transport)
        let result = try douctl.run("--profile", "api", "user", "me")
        #expect(result.status == 2, "\(result)")
        #expect(result.errorLine.contains("no user_url") && result.errorLine.contains("douctl config set user_url /user --profile api"), "\(result)")
        #expect(transport.requests.isEmpty, "nothing is sent to Douban's /v2/user/~me")
    }

    @Test(arguments: [
        ["shuo", "timeline"], ["shuo", "get", "1"], ["shuo", "post", "hi"], ["shuo", "delete", "1", "2"],
        ["shuo", "comments", "1"], ["shuo", "like", "1"], ["shuo", "reshare", "1"], ["shuo", "post", "-"],
    ])
    func shuoOnAPlainProfileIsRefusedBeforeAnythingIsSent(argv: [String]) throws {
        let transport = ScriptedTransport([])
        let douctl = try plain(transport)
        let result = try douctl.run(["--profile", "api"] + argv, input: Array("from stdin".utf8))
        #expect(result.status == 2, "\(result)")
        #expect(result.stderr == "douctl: shuo is Douban's and Coding's; profile 'api' is a plain OAuth2 API, which douctl api serves (e.g. douctl --profile api api /PATH)\n", "\(result)")
        #expect(result.stdout.isEmpty)
        #expect(transport.requests.isEmpty)
    }

    @Test func uploadOnAPlainProfileNeedsTo() throws {
        let transport = ScriptedTransport([])
        let douctl = try plain(transport)
        let file = douctl.home.path + "/a.png"
        try writeFile(file, [0x89, 0x50, 0x4E, 0x47])
        let result = try douctl.run("--profile", "api", "upload", file, "--yes")
        #expect(result.status == 2, "\(result)")
        #expect(result.errorLine.contains("upload needs --to PATH"), "\(result)")
        #expect(transport.requests.isEmpty)
    }

    // MARK: paging by a named key, and NDJSON pages

    @Test func itemsNamesTheKeyOfAPagesItems() throws {
        let transport = ScriptedTransport([
            .json(200, #"{"columns":["id"],"data":{"rows":[[1],[2]]},"next_url":"http://api.test/t?_next=2"}"#),
            .json(200, #"{"columns":["id"],"data":{"rows":[[3]]},"next_url":null}"#),
        ])
        let douctl = try plain(transport)
        let result = try douctl.run("--profile", "api", "api", "/t", "--paginate", "--items", "data.rows")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == "[1]\n[2]\n[3]\n")
        #expect(transport.requests.map(\.url) == ["http://api.test/t", "http://api.test/t?_next=2"])
    }

    @Test func aKeyThatHoldsNoListIsABadReplyNamingIt() throws {
        let transport = ScriptedTransport([.json(200, #"{"rows":{"a":1}}"#)])
        let douctl = try plain(transport, ["--items-key", "rows"])
        let result = try douctl.run("--profile", "api", "api", "/t", "--paginate")
        #expect(result.status == 8, "\(result)")
        #expect(result.errorLine == "douctl: cannot paginate: the reply has no list at 'rows' (GET /t)")
    }

    @Test func itemsGoesWithPaginate() throws {
        #expect(throws: OptionError("--items goes with --paginate")) { try boundOptions(["api", "/t", "--items", "rows"], as: APICommand.APIOptions.self) }
    }

    @Test func ndjsonPagesAreWalkedByTheirLinkHeaders() throws {
        let page = { (text: String, link: String?) -> ScriptedTransport.Answer in
            .reply(HTTPResponse(head: HTTPResponseHead(status: 200, headers: [HTTPHeader("Content-Type", "text/plain")] + (link.map { [HTTPHeader("Link", "<\($0)>; rel=\"next\"")] } ?? [])),
                                body: Array(text.utf8)))
        }
        let transport = ScriptedTransport([
            page("{\"id\": 1}\n{\"id\": 2}\n", "http://api.test/t?_nl=on&_next=2"),
            page("{\"id\": 3}\n", nil),
        ])
        let douctl = try plain(transport)
        let result = try douctl.run("--profile", "api", "api", "/t?_nl=on", "--paginate")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n")
        #expect(result.stderr.isEmpty, "a walk by links ends quietly at the page without one: \(result)")
    }

    // MARK: non-JSON 2xx

    @Test(arguments: [false, true])
    func aNonJSONSuccessIsPrintedAsReceived(raw: Bool) throws {
        let html = "<html><title>201 Created</title></html>"
        let transport = ScriptedTransport([.reply(HTTPResponse(head: HTTPResponseHead(status: 201, headers: [HTTPHeader("Content-Type", "text/html")]), body: Array(html.utf8)))])
        let douctl = try plain(transport)
        // A file body: the reply is held (upload progress), the path that said exit 8.
        let file = douctl.home.path + "/body.txt"
        try writeFile(file, Array("x".utf8))
        let result = try douctl.run(["--profile", "api", "api", "-X", "PUT", "/dav/x.txt", "--input", file] + (raw ? ["--raw"] : []))
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == html)
    }

    // MARK: stdin bodies

    @Test func stdinFromAPipeIsSentWithAContentLength() throws {
        let transport = ScriptedTransport([.json(201, #"{"id":1}"#)])
        let run = try PipedRun(["api", "/items", "--input", "-", "--api-base", "http://api.test"], input: #"{"name":"pen"}"#, transport: transport)
        #expect(run.result.status == 0, "\(run.result)")
        #expect(transport.requests.first?.body == .bytes(Array(#"{"name":"pen"}"#.utf8)))
        #expect(transport.requests.first?.body.length == 14)
    }

    @Test func chunkedWhenAsked() throws {
        let transport = ScriptedTransport([.json(201, #"{"id":1}"#)])
        let run = try PipedRun(["api", "/items", "--input", "-", "-H", "Transfer-Encoding: chunked", "--api-base", "http://api.test"], input: "{}", transport: transport)
        #expect(run.result.status == 0, "\(run.result)")
        guard case .stream? = transport.requests.first?.body else {
            Issue.record("expected a chunked stream, got \(String(describing: transport.requests.first?.body))")
            return
        }
    }

    @Test func aLargeStdinSpillsToAPrivateFileThatIsGoneAtOnce() throws {
        let directory = try TemporaryDirectory(prefix: "douctl-spool")
        let size = 3 * StdinBody.memoryLimit + 17
        let input = directory.path + "/input"
        try writeFile(input, [UInt8](repeating: 0x61, count: size))
        let spoolDirectory = directory.path + "/tmp"
        try FileIO.makeDirectory(spoolDirectory, mode: 0o700)
        let fd = open(input, O_RDONLY)
        defer { close(fd) }
        let body = try StdinBody.spooled(StandardInput(fileDescriptor: fd), prefix: [], temporaryDirectory: spoolDirectory)
        guard case .segments(let segments) = body, case .file(let path, let length)? = segments.first else {
            Issue.record("expected a file segment, got \(body)")
            return
        }
        #expect(length == Int64(size))
        #expect(path.hasPrefix("/proc/self/fd/"))
        #expect(try FileIO.readFile(path).count == size)
        #expect(try FileIO.listDirectory(spoolDirectory).isEmpty, "the spool file has no name left")
    }

    /// The spool file goes in the run's $TMPDIR, read from its `ProcessContext` (before
    /// issue 31: `getenv`, the test runner's environment, past the injected one).
    @Test func aLargeStdinSpillsIntoTheRunsTMPDIR() throws {
        let directory = try TemporaryDirectory(prefix: "douctl-spool")
        let empty = open("/dev/null", O_RDONLY)
        defer { close(empty) }
        let full = [UInt8](repeating: 0x61, count: StdinBody.memoryLimit)
        let run = ProcessContext(arguments: [], environment: ["TMPDIR": directory.path], standardInput: empty)
        guard case .segments(let segments) = try StdinBody.spooled(StandardInput(run), prefix: full), case .file(_, let length)? = segments.first else {
            Issue.record("expected a file segment")
            return
        }
        #expect(length == Int64(full.count))
        let missing = directory.path + "/missing"
        let elsewhere = ProcessContext(arguments: [], environment: ["TMPDIR": missing], standardInput: empty)
        #expect {
            _ = try StdinBody.spooled(StandardInput(elsewhere), prefix: full)
        } throws: { error in
            (error as? DouctlError)?.message.hasPrefix("cannot make a temporary file in \(missing) ") == true
        }
    }

    @Test func aSmallStdinStaysInMemory() throws {
        let directory = try TemporaryDirectory(prefix: "douctl-spool")
        let input = directory.path + "/input"
        try writeFile(input, Array("[1]".utf8))
        let fd = open(input, O_RDONLY)
        defer { close(fd) }
        #expect(try StdinBody.spooled(StandardInput(fileDescriptor: fd), prefix: Array("{}".utf8), temporaryDirectory: directory.path) == .bytes(Array("{}[1]".utf8)))
    }

    func writeFile(_ path: String, _ bytes: [UInt8]) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { close(fd) }
        try FileIO.writeAll(fd, bytes)
    }
}
