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
        let counter = LockedCounter()
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
}

/// 1, 2, 3, … from any thread.
final class LockedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0

    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        value += 1
        return value
    }
}
