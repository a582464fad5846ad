import DouctlJSON
import DouctlServer
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// `douctl api -o FILE` (the reply streamed to a file, atomically) and `api -I` (HEAD, the
/// head printed), as curl and xh do, against servers on 127.0.0.1.
@Suite("douctl api -o and -I")
struct APIOutputTests {
    static func entries(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    @Test func outputWritesTheBodyAsReceivedToTheFile() throws {
        let body = #"{"z":1,"name":"\u963f\u5317","n":1.50}"#
        let server = try TestServer(json: body)
        let directory = TemporaryDirectory.make(prefix: "api-o")
        let target = directory + "/reply.json"
        try Data("old".utf8).write(to: URL(fileURLWithPath: target))
        let result = try Douctl().run("api", "/x", "-o", target, "--force", "--api-base", server.baseURL)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.isEmpty, "nothing on stdout: \(result)")
        #expect(DownloadTests.read(target) == Array(body.utf8), "the body as received")
        #expect(Self.entries(directory) == ["reply.json"], "no temp file left")

        let dash = try Douctl().run("api", "/x", "-o", "-", "--api-base", server.baseURL)
        #expect(dash.stdoutText == "{\"z\":1,\"name\":\"阿北\",\"n\":1.50}\n", "- is stdout, as without -o: \(dash)")

        let included = try Douctl().run("api", "/x", "-o", target, "-i", "--force", "--api-base", server.baseURL)
        #expect(included.status == 0, "\(included)")
        let text = String(decoding: DownloadTests.read(target) ?? [], as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200"), "with -i the head goes first, as curl -i -o does: \(text)")
        #expect(text.hasSuffix("\r\n\r\n" + body))
    }

    @Test func anErrorReplyLeavesTheFileAsItWas() throws {
        let server = try TestServer(status: 404, json: #"{"msg":"uri_not_found","code":1001,"request":"GET /x"}"#)
        let directory = TemporaryDirectory.make(prefix: "api-o-404")
        let target = directory + "/reply.json"
        try Data("old".utf8).write(to: URL(fileURLWithPath: target))
        let result = try Douctl().run("api", "/x", "-o", target, "--force", "--api-base", server.baseURL)
        #expect(result.status == 5, "\(result)")
        #expect(result.errorLine.contains("uri_not_found"), "\(result)")
        #expect(DownloadTests.read(target) == Array("old".utf8))
        #expect(Self.entries(directory) == ["reply.json"])
    }

    @Test func aTransferThatBreaksNeverLeavesHalfAFile() throws {
        let body = DownloadTests.content(400_000)
        let server = try RangeServer(body) { _, _ in 100_000 }  // every reply dies after 100 KB
        let directory = TemporaryDirectory.make(prefix: "api-o-broken")
        let target = directory + "/big.bin"
        try Data("old".utf8).write(to: URL(fileURLWithPath: target))
        let result = try Douctl().run("api", "/big.bin", "-o", target, "--force", "--no-retry", "--api-base", server.baseURL)
        #expect(result.status == 7, "\(result)")
        #expect(DownloadTests.read(target) == Array("old".utf8), "the old file, whole")
        #expect(Self.entries(directory) == ["big.bin"], "no temp file left")
        // Retried (the default): each attempt starts the temp file over; still never half a file.
        let retried = try Douctl().run("api", "/big.bin", "-o", target, "--force", "--api-base", server.baseURL)
        #expect(retried.status == 7, "\(retried)")
        #expect(DownloadTests.read(target) == Array("old".utf8))
        #expect(Self.entries(directory) == ["big.bin"])

        let whole = try RangeServer(body) { _, _ in nil }
        let fine = try Douctl().run("api", "/big.bin", "-o", target, "--force", "--api-base", whole.baseURL)
        #expect(fine.status == 0, "\(fine)")
        #expect(DownloadTests.read(target) == body)
    }

    @Test func aLinkAtTheOutputNameIsReplacedNotWrittenThrough() throws {
        let server = try TestServer(json: #"{"ok":true}"#)
        let directory = TemporaryDirectory.make(prefix: "api-o-link")
        let outside = TemporaryDirectory.make(prefix: "api-o-outside")
        try Data("precious".utf8).write(to: URL(fileURLWithPath: outside + "/p"))
        try FileManager.default.createSymbolicLink(atPath: directory + "/out.json", withDestinationPath: outside + "/p")
        let result = try Douctl().run("api", "/x", "-o", directory + "/out.json", "--force", "--api-base", server.baseURL)
        #expect(result.status == 0, "\(result)")
        #expect(DownloadTests.read(outside + "/p") == Array("precious".utf8))
        #expect(DownloadTests.read(directory + "/out.json") == Array(#"{"ok":true}"#.utf8))
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/out.json")) == nil, "a regular file now")
        let nowhere = try Douctl().run("api", "/x", "-o", directory + "/missing/out.json", "--api-base", server.baseURL)
        #expect(nowhere.status == 3, "\(nowhere)")
        #expect(server.received.count == 1, "nothing sent for a file that cannot be written")
        let paginate = try Douctl().run("api", "/x", "-o", directory + "/o", "--paginate", "--api-base", server.baseURL)
        #expect(paginate.status == 2, "\(paginate)")
    }

    @Test func headSendsHEADAndPrintsTheHeadExitingByStatus() throws {
        let server = try TestServer { request in
            request.path == "/missing"
                ? HTTPServerResponse(status: 404, headers: [("Content-Type", "application/json")])
                : HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json"), ("X-Ratelimit-Remaining", "99"), ("ETag", "\"v1\"")])
        }
        let result = try Douctl().run("api", "-I", "/x", "--api-base", server.baseURL)
        #expect(result.status == 0, "\(result)")
        #expect(server.received.last?.method == "HEAD")
        let text = result.stdoutText
        #expect(text.hasPrefix("HTTP/1.1 200"), "\(result)")
        #expect(text.contains("X-Ratelimit-Remaining: 99\r\n"))
        #expect(text.contains("ETag: \"v1\"\r\n"))
        #expect(text.hasSuffix("\r\n\r\n"), "the head alone, as curl -I prints it")

        let missing = try Douctl().run("api", "--head", "/missing", "--api-base", server.baseURL)
        #expect(missing.status == 5, "\(missing)")
        #expect(missing.stdoutText.hasPrefix("HTTP/1.1 404"), "the head is printed whatever the status: \(missing)")
        #expect(server.received.last?.method == "HEAD")

        let conflicting = try Douctl().run("api", "-I", "-X", "POST", "/x", "--api-base", server.baseURL)
        #expect(conflicting.status == 2, "\(conflicting)")
    }
}
