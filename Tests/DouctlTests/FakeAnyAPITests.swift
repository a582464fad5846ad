import DouctlJSON
import DouctlServer
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 41, "Fake any API": a session with an API that is not Douban's, recorded with the
/// built douctl, served back by `douctl sandbox --replay`, to douctl and to curl.
@Suite struct FakeAnyAPITests {
    /// A small JSON API: POST /items creates (201, the body echoed with an id), GET /items
    /// lists by query.
    static func itemsServer() throws -> TestServer {
        let created = LockedValue(0)
        return try TestServer { request in
            if request.method == "POST" {
                let id = created.withLock { count -> Int in
                    count += 1
                    return count
                }
                var object = (try? JSONParser.parse(request.body))?.objectValue ?? JSONObject()
                object["id"] = .int(id)
                return HTTPServerResponse(status: 201, headers: [("Content-Type", "application/json")],
                                          body: .bytes(JSON.object(object).serialized(.compact)))
            }
            let query = request.query.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
            return HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json")],
                                      body: .bytes(Array(#"{"query":"\#(query)","items":[{"id":1}]}"#.utf8)))
        }
    }

    /// Runs a tool to its end: its exit status and stdout (stderr in the description).
    static func run(_ tool: String, _ arguments: [String]) throws -> (status: Int32, stdout: [UInt8], stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, Array(stdout), String(decoding: stderr, as: UTF8.self))
    }

    static func startReplay(_ douctl: Douctl, _ arguments: [String]) throws -> (RunningDouctl, String) {
        let server = try RunningDouctl(douctl, ["sandbox"] + arguments)
        let url = try server.waitForStdout { $0.contains("\n") }.trimmingCharacters(in: .whitespacesAndNewlines)
        return (server, url)
    }

    @Test func aRecordedSessionReplaysWithBodiesMatchedAsJSONAndTheClosestNamed() throws {
        let api = try Self.itemsServer()
        let douctl = Douctl(environment: ["DOUCTL_TOKEN": "tok-live-1234567"])
        let recordings = TemporaryDirectory.make(prefix: "fake-any")
        let create = try douctl.run(["api", "-X", "POST", "/items", "--json", "-F", "name=x", "-F", "n=1",
                                     "--api-base", api.baseURL, "--record", recordings])
        let list = try douctl.run(["api", "/items?a=1&b=2", "--api-base", api.baseURL, "--record", recordings])
        #expect(create.status == 0 && list.status == 0, "\(create) \(list)")

        let (replay, url) = try Self.startReplay(Douctl(), ["--replay", recordings])
        defer {
            replay.kill(SIGTERM)
            _ = replay.finish()
        }
        let other = Douctl(environment: ["DOUCTL_TOKEN": "another"])
        let again = try other.run(["api", "-X", "POST", "/items", "--json", "-F", "n=1", "-F", "name=x", "--api-base", url])
        #expect(again.stdout == create.stdout, "the JSON body matched whatever its key order: \(again)")
        #expect(try other.run(["api", "/items?b=2&a=1", "--api-base", url]).stdout == list.stdout, "the query in another order")
        let changed = try other.run(["api", "-X", "POST", "/items", "--json", "-F", "n=2", "-F", "name=x", "--api-base", url])
        #expect(changed.status == 5, "not recorded reads as not found (Douban code 1001): \(changed)")
        #expect(changed.stdout.isEmpty)
        #expect(changed.errorLine.contains("501") || changed.errorLine.contains("no_recording"), "\(changed.errorLine)")
        let log = try replay.waitForStderr { $0.contains("replay: no recording matches POST /items") }
        #expect(log.contains("closest: POST /items (0001-POST-items.json): body .n: recorded 1, sent 2"), "\(log)")

        let curl = try Tools.require("curl")
        let fetched = try Self.run(curl, ["-sS", "-X", "POST", "-H", "Content-Type: application/json",
                                                "--data", #"{"name" : "x", "n": 1}"#, url + "/items"])
        #expect(fetched.status == 0)
        #expect(try JSONParser.parse(fetched.stdout)["id"] == 1, "curl got the recorded reply: \(fetched)")
    }
}
