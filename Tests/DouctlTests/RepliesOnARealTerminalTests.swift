import DouctlServer
import DouctlTestSupport
import Foundation
import Testing

/// Issue 40, items 1, 2 and 10, through the built binary: on a real pseudo-terminal
/// (`script`) a binary reply is not shown and a narrow feed keeps ids and URLs whole; a
/// 200 MiB octet stream goes through `api` in flat memory. What douctl decides on a
/// terminal is tested in process (RepliesOnATerminalTests).
@Suite("Replies on a real terminal")
struct RepliesOnARealTerminalTests {
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR\u{1B}c\u{1B}[2J".utf8)

    /// An image on a tty: one line, exit 0, none of its bytes (the `ESC c` in it would
    /// reset the terminal); `-o -` prints it anyway, and a pipe gets it as sent.
    @Test func aBinaryReplyOnARealTerminalIsNotShown() throws {
        let server = try TestServer { _ in .bytes(200, Self.png, contentType: "image/png") }
        let douctl = Douctl()
        let screen = try runUnderScript("stty cols 80 rows 50 2>/dev/null; \(Douctl.binary) api \(server.baseURL)/pic.png; echo \"exit=$?\"",
                                        environment: douctl.environment)
        #expect(screen.contains("binary reply (image/png, ") && screen.contains("not shown on a terminal: use -o FILE to save it, or -o - to print it here anyway"), "\(screen)")
        #expect(screen.contains("exit=0"), "\(screen)")
        #expect(!screen.contains("IHDR") && !screen.contains("\u{1B}c"), "\(screen)")
        let forced = try runUnderScript("\(Douctl.binary) api \(server.baseURL)/pic.png -o -", environment: douctl.environment)
        #expect(forced.contains("IHDR"), "\(forced)")
        let piped = try douctl.run("api", "\(server.baseURL)/pic.png")
        #expect(piped.status == 0 && piped.stdout == Self.png, "\(piped)")
    }

    /// 40 columns: the header's id and every URL stay whole (before: the id was split by
    /// the terminal's wrap, the picture's URL cut with "…").
    @Test func aNarrowRealTerminalKeepsIdsAndURLsWhole() throws {
        let status = #"{"id":1402640301,"text":"hi","created_at":"2025-01-01 00:00:00","user":{"uid":"ahbei","screen_name":"阿北的一个很长的名字"},"attachments":[{"type":"image","media":[{"src":"https://img1.doubanio.com/view/status/raw/public/a-very-long-picture-name-1402640301.jpg"}]}]}"#
        let server = try TestServer { _ in .bytes(200, Array(status.utf8), contentType: "application/json") }
        let douctl = Douctl(environment: ["DOUCTL_TOKEN": "t0ken"])
        try SandboxProfiles.write(base: server.baseURL, in: douctl.configDirectory)
        let raw = try runUnderScript("stty cols 40 rows 50 2>/dev/null; \(Douctl.binary) shuo get 1402640301 --color never", environment: douctl.environment)
        let lines = Screen(raw).lines
        #expect(!raw.contains("…"), "\(lines)")
        #expect(lines.contains("#1402640301"), "\(lines)")
        #expect(raw.contains("https://img1.doubanio.com/view/status/raw/public/a-very-long-picture-name-1402640301.jpg"), "\(lines)")
        for line in lines where !line.hasPrefix("https://") { #expect(TerminalViewTests.width(line) <= 40, "'\(line)'") }
    }
}

extension HostileReplyTests {
    /// A 200 MiB application/octet-stream reply through `api` (no --raw): every byte
    /// streams to stdout, exit 0, peak RSS flat (before: exit 8 at 64 MiB).
    @Test func a200MiBOctetStreamStreamsInFlatMemory() throws {
        try ProcessMemory.requireSupport()
        let length: Int64 = 200 << 20
        let flood = try Flood(
            head: "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: \(length)\r\n\r\n",
            element: "\u{0}\u{1}binary\u{FF}", limit: length)
        let outcome = try run(["--no-retry", "api", "/blob.bin", "--api-base", flood.baseURL], flood: flood)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stderr.isEmpty, "\(outcome.stderr)")
        #expect(outcome.sent == length, "the whole reply went out: \(outcome.sent) of \(length)")
        #expect(outcome.peakKiB > 0 && outcome.peakKiB < Self.flatKiB, "peak RSS \(outcome.peakKiB) KiB after \(outcome.sent) bytes")
    }
}
