import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// What only a real terminal shows of the output wing (issue 31): progress on a screen
/// another program writes to. The many cases run in process (DouctlCommandsTests'
/// OutputTests, on injected terminal facts).
@Suite(.serialized) struct OutputOwnerTests {
    /// The README's `douctl upload --parallel 4 … | jq -r .reply.id`, in a real tmux pane:
    /// douctl's stderr and the reader's stdout share the screen. Every result line the
    /// reader printed stays on it and no progress row is left behind. Before: douctl
    /// redrew its rows above the cursor (ESC[2F) and erased the reader's lines, leaving
    /// the last id and a stale "100%" row.
    @Test func progressNeverErasesWhatTheReaderPrinted() throws {
        let tmux = try Tmux()
        defer { tmux.stop() }
        let counter = Counter()
        let server = try TestServer { _ in
            Thread.sleep(forTimeInterval: 0.6)
            return .bytes(200, Array("{\"id\":\(counter.next())}".utf8), contentType: "application/json")
        }
        let directory = TemporaryDirectory.make(prefix: "output-owner")
        let names = ["a.bin", "b.bin", "c.bin", "d.bin"]
        for name in names { try Data(repeating: 7, count: 2 << 20).write(to: URL(fileURLWithPath: directory + "/" + name)) }
        let douctl = Douctl()
        let files = names.map { directory + "/" + $0 }.joined(separator: " ")
        // `cat` stands for jq: a reader that prints each line to the same screen.
        let command = "\(Douctl.binary) upload --parallel 4 \(files) --to /u --api-base \(server.baseURL) | cat; echo END-OF-RUN"
        let (_, joined) = try tmux.show(command, environment: douctl.environment, until: "END-OF-RUN")
        let results = joined.filter { $0.contains("\"ok\":true") }
        #expect(results.count == 4, "every line the reader printed stays on screen:\n\(joined.joined(separator: "\n"))")
        #expect(!joined.contains { $0.contains("%") }, "no progress row left behind:\n\(joined.joined(separator: "\n"))")
    }

    /// `douctl download URL -o - | head -c 10`, the issue's own line, with coreutils' head
    /// and a server that sends bytes for ever: douctl exits 141 quietly once head has its 10
    /// bytes, and the server sees the connection go. Before: exit 1, "cannot write output:
    /// standard output (write: Broken pipe)".
    @Test func downloadIntoHeadEndsQuietlyWith141() throws {
        let bash = try Tools.require("bash")
        let endless = try HostileListener { connection, _ in
            guard HostileListener.send(connection, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n") else { return }
            let block = String(repeating: "A", count: 64 << 10)
            while HostileListener.send(connection, block) {}
        }
        defer { endless.stop() }
        let douctl = Douctl()
        let script = "\(Douctl.binary) download \(endless.baseURL)/endless.bin -o - 2>stderr.txt | head -c 10; status=${PIPESTATUS[0]}; echo; echo \"status=$status\"; cat stderr.txt"
        let scratch = TemporaryDirectory.make(prefix: "output-head")
        let output = String(decoding: try Subprocess.run([bash, "-c", "cd \(scratch) && " + script], input: [], environment: douctl.environment), as: UTF8.self)
        #expect(output == "AAAAAAAAAA\nstatus=141\n", "nothing on stderr, exit 141: \(output.debugDescription)")
    }
}
