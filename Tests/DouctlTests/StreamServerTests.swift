import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 43, part four, the built douctl against streams: sse-starlette under uvicorn (three
/// events, then the connection drops; --follow comes back with Last-Event-ID until the
/// server's 204), and listeners written here — a stream that never ends (--max-time,
/// a reader that goes away), escape codes in event data.
@Suite("event streams: sse-starlette and hostile listeners", .serialized)
struct StreamServerTests {
    @Test func sseStarlettesEventsArePrintedAndFollowResumesFromTheLastID() throws {
        try PythonPeer.require(module: "sse_starlette, uvicorn", package: "sse-starlette uvicorn")
        let peer = try PythonPeer(name: "sse", source: Self.source)
        let douctl = Douctl()
        let once = try douctl.run(["api", "\(peer.base)/events"])
        #expect(once.status == 0, "\(once)\n\(peer.log.suffix(2000))")
        let lines = once.stdoutText.split(separator: "\n").map(String.init)
        #expect(lines.count == 4, "\(once)")
        #expect(lines.first == #"{"event":"token","id":"1","data":{"n":1,"text":"tok\u001b[2J1"}}"#, "\(once)")
        #expect(lines.last == #"{"event":"message","id":"3","data":"plain text\nsecond line"}"#, "\(once)")

        let followed = try douctl.run(["api", "\(peer.base)/events", "--follow", "--jq", ".id"], timeout: 60)
        #expect(followed.status == 0, "\(followed)")
        #expect(followed.stdoutText == "1\n2\n3\n3\n4\n5\n6\n6\n", "\(followed)")
        #expect(followed.stderr.contains("from event 3") && followed.stderr.contains("from event 6"), "\(followed)")
        let seen = try douctl.run(["api", "\(peer.base)/seen"])
        #expect(seen.stdoutText.hasSuffix(#"null,"3","6"]"# + "\n"), "Last-Event-ID sent back: \(seen)")

        let ndjson = try douctl.run(["api", "\(peer.base)/ndjson"])
        #expect(ndjson.status == 0 && ndjson.stdoutText == "{\"line\":0}\n{\"line\":1}\n{\"line\":2}\n", "\(ndjson)")
    }

    /// A stream that sends an event every 50 ms for ever, with an escape code in its data.
    static func endless() throws -> HostileListener {
        try HostileListener { connection, _ in
            guard HostileListener.send(connection, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n") else { return }
            var n = 0
            while HostileListener.send(connection, "id: \(n)\ndata: \u{1B}]0;owned\u{07}\u{1B}[2J \(n)\n\n") {
                n += 1
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
    }

    @Test func aStreamThatNeverEndsStopsAtMaxTimeAndItsEscapesNeverReachTheTerminal() throws {
        let server = try Self.endless()
        defer { server.stop() }
        let started = Date()
        let result = try Douctl().run(["api", "\(server.baseURL)/events", "--max-time", "1"])
        #expect(Date().timeIntervalSince(started) < 3, "\(result)")
        #expect(result.status == 7, "\(result)")
        let lines = result.stdoutText.split(separator: "\n")
        #expect(lines.count >= 3, "events printed as they arrived: \(result)")
        #expect(!result.stdout.contains(0x1B) && !result.stdout.contains(0x07), "\(result)")
        #expect(lines.first == #"{"event":"message","id":"0","data":"\u001b]0;owned\u0007\u001b[2J 0"}"#, "\(result)")
    }

    @Test func aReaderThatGoesAwayEndsAStreamWith141() throws {
        let bash = try Tools.require("bash")
        let server = try Self.endless()
        defer { server.stop() }
        let douctl = Douctl()
        let script = "\(Douctl.binary) api \(server.baseURL)/events --follow 2>stderr.txt | head -n 2 >/dev/null; status=${PIPESTATUS[0]}; echo \"status=$status\"; cat stderr.txt"
        let scratch = TemporaryDirectory.make(prefix: "stream-head")
        let output = String(decoding: try Subprocess.run([bash, "-c", "cd \(scratch) && " + script], input: [], environment: douctl.environment), as: UTF8.self)
        #expect(output == "status=141\n", "nothing on stderr, exit 141: \(output.debugDescription)")
    }

    static let source = #"""
import asyncio, json, socket, sys, threading, time
import uvicorn
from sse_starlette.sse import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.responses import Response, JSONResponse
from starlette.routing import Route
connections = []
async def events(request):
    last = request.headers.get("last-event-id")
    connections.append(last)
    start = int(last) + 1 if last else 1
    if start > 6:
        return Response(status_code=204)
    async def gen():
        # Three events, then the connection drops (the generator ends).
        for n in range(start, start + 3):
            yield ServerSentEvent(data=json.dumps({"n": n, "text": "tok\x1b[2J%d" % n}), id=str(n), event="token", retry=100)
            await asyncio.sleep(0.05)
        yield ServerSentEvent(data="plain text\nsecond line", id=str(start + 2))
    return EventSourceResponse(gen(), ping=600)
async def ndjson(request):
    async def gen():
        for n in range(3):
            yield (json.dumps({"line": n}) + "\n").encode()
            await asyncio.sleep(0.05)
    from starlette.responses import StreamingResponse
    return StreamingResponse(gen(), media_type="application/x-ndjson")
async def seen(request):
    return JSONResponse(connections)
app = Starlette(routes=[Route("/events", events), Route("/ndjson", ndjson), Route("/seen", seen)])
"""# + PythonPeer.servedByUvicorn(app: "app")
}
