#if canImport(Glibc)
import Glibc
#endif
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 44.3 through the binary: a JSON array streamed to a pipe is reformatted on a thread
/// beside the receive (`ReformatPipeline`); what reaches the reader, the error and the exit
/// status are the synchronous path's.
@Suite("Reformat pipeline through the binary")
struct ReformatPipelineServerTests {
    /// Array elements of escapes, CJK text and numbers, `count` of them from `first`.
    static func elements(_ first: Int, _ count: Int) -> String {
        (first..<first + count).map { index in
            #"{"id":\#(index),"url":"https:\/\/img\#(index % 9).doubanio.com\/p\#(index).jpg","t":"豆瓣\u4e2d \#(index)","n":[0,-\#(index),1.5e3,true]}"#
        }.joined(separator: ",")
    }

    /// A malformed byte three quarters into a 4 MB array: douctl prints what the stream
    /// reformatter emits before the error (the one-shot's output before it), then the
    /// error's one line, exit 8 (a bad reply).
    @Test(arguments: [false, true])
    func aMalformedByteLateInALargeArrayEndsAsTheSynchronousReformatDoes(pretty: Bool) throws {
        let reply = Array(("[" + Self.elements(0, 30_000) + ",{\"bad\":tru!}," + Self.elements(30_000, 10_000) + "]").utf8)
        #expect(reply.count > 4 << 20)
        let server = try HostileListener { connection, _ in
            guard HostileListener.send(connection, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(reply.count)\r\n\r\n") else { return }
            _ = try? LoopbackSocket.sendAll(connection, reply)
        }
        defer { server.stop() }
        var before: [UInt8] = []
        let reformatter = JSONStreamReformatter(format: pretty ? .pretty : .compact) { before.append(contentsOf: $0) }
        var expectedError: JSONParseError?
        do throws(JSONParseError) { try reformatter.feedAll(reply, chunkSize: 64 * 1024) } catch { expectedError = error }
        let error = try #require(expectedError)
        #expect(before.count > 1 << 20)
        let result = try Douctl().run("api", "/items", pretty ? "--pretty" : "--compact", "--api-base", server.baseURL)
        #expect(result.status == 8, "\(result.stderr)")
        let same = result.stdout == before
        #expect(same, "\(result.stdout.count) bytes, expected \(before.count)")
        #expect(result.errorLine == "douctl: the reply is not valid JSON (HTTP 200: \(error.description))")
    }

    /// `douctl api /endless --compact | head -c 10`: a reader that goes away ends an array
    /// being reformatted on its thread quietly with 141, and the server sees the connection go.
    @Test func anEndlessArrayIntoHeadEndsQuietlyWith141() throws {
        let bash = try Tools.require("bash")
        let endless = try HostileListener { connection, _ in
            guard HostileListener.send(connection, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n[") else { return }
            var first = 0
            while HostileListener.send(connection, Self.elements(first, 1000) + ",") { first += 1000 }
        }
        defer { endless.stop() }
        let douctl = Douctl()
        let script = "\(Douctl.binary) api /endless --compact --api-base \(endless.baseURL) 2>stderr.txt | head -c 10; status=${PIPESTATUS[0]}; echo; echo \"status=$status\"; cat stderr.txt"
        let scratch = TemporaryDirectory.make(prefix: "pipeline-head")
        let output = String(decoding: try Subprocess.run([bash, "-c", "cd \(scratch) && " + script], input: [], environment: douctl.environment), as: UTF8.self)
        #expect(output == "[{\"id\":0,\"\nstatus=141\n", "nothing on stderr, exit 141: \(output.debugDescription)")
    }
}
