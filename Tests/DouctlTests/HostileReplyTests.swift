#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 23: replies of any size at flat memory. The built douctl runs under a virtual
/// memory limit (ulimit -v, 1 GiB) against a raw listener that writes a huge reply on the
/// fly; its peak RSS (VmHWM, polled while it runs) must stay under a bound far below what
/// it was sent. Before issue 23 every one of these read the whole body into memory.
@Suite("Hostile replies", .serialized)
struct HostileReplyTests {
    static let gib: Int64 = 1 << 30
    /// The bound a streamed reply must stay under (douctl idles at ~15 MiB).
    static let flatKiB = 64 * 1024

    struct Outcome {
        var status: Int32
        var stderr: String
        var peakKiB: Int
        var sent: Int64
        var errorLine: String { stderr.split(separator: "\n").last.map(String.init) ?? "" }
    }

    /// A listener that answers `head` and then writes `element` over and over until
    /// `limit` bytes went (then `closing`, and closes the connection), or until douctl hangs up.
    final class Flood: @unchecked Sendable {
        let sent = LockedValue<Int64>(0)
        let listener: HostileListener

        init(head: String, opening: String = "", element: String, limit: Int64 = .max, closing: String = "", chunked: Bool = false) throws {
            let counter = sent
            listener = try HostileListener { connection, listener in
                guard HostileListener.send(connection, head) else { return }
                var block = Array(opening.utf8)
                let unit = Array(element.utf8)
                var total: Int64 = 0
                func write(_ bytes: [UInt8]) -> Bool {
                    var framed = bytes
                    if chunked { framed = Array((String(bytes.count, radix: 16) + "\r\n").utf8) + bytes + [13, 10] }
                    guard (try? LoopbackSocket.sendAll(connection, framed)) != nil else { return false }
                    total += Int64(bytes.count)
                    counter.withLock { $0 = total }
                    return true
                }
                while block.count < 256 * 1024 { block += unit }
                guard write(block) else { return }
                block = []
                while block.count < 256 * 1024 { block += unit }
                while total < limit && !listener.isStopped {
                    guard write(Array(block.prefix(Int(min(Int64(block.count), limit - total))))) else { return }
                }
                if !closing.isEmpty { _ = write(Array(closing.utf8)) }
            }
        }

        var baseURL: String { listener.baseURL }
        var bytesSent: Int64 { sent.withLock { $0 } }
    }

    /// Runs douctl under `ulimit -v` with stdout to /dev/null, polling its peak RSS.
    func run(_ arguments: [String], flood: Flood, timeout: Double = 300) throws -> Outcome {
        let douctl = Douctl()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "ulimit -v 1048576 && exec \"$0\" \"$@\"", Douctl.binary] + arguments
        process.environment = douctl.environment
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        process.standardInput = FileHandle.nullDevice
        let stderr = Pipe()
        process.standardError = stderr
        try process.runAlone()
        let collected = Collector(stdout: Pipe().fileHandleForReading, stderr: stderr.fileHandleForReading)
        var peak = 0
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline {
            if let now = try? ProcessMemory.peakKiB(of: process.processIdentifier) { peak = max(peak, now) }
            Thread.sleep(forTimeInterval: 0.02)
        }
        if process.isRunning {
            process.terminate()
            Issue.record("douctl did not finish within \(timeout)s")
        }
        process.waitUntilExit()
        flood.listener.stop()
        let (_, err) = collected.finish()
        return Outcome(status: process.terminationStatus, stderr: String(decoding: err, as: UTF8.self), peakKiB: peak, sent: flood.bytesSent)
    }

    static let item = #"{"id":1234567,"text":"hello, \u4e16\u754c \"quoted\"","ok":true,"n":[1.5,-2e3,null]},"#

    /// A 5 GiB JSON array (Content-Length says so) of which the listener writes `limit`
    /// bytes and hangs up: douctl streams what came, in flat memory, then reports the
    /// reply cut short (exit 7).
    @Test(arguments: [("--raw", gib), ("--compact", 96 << 20), ("--pretty", 96 << 20)])
    func aFiveGiBArrayStreamsInFlatMemory(mode: String, limit: Int64) throws {
        try ProcessMemory.requireSupport()
        let flood = try Flood(
            head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(5 * Self.gib)\r\n\r\n",
            opening: "[", element: Self.item, limit: limit)
        let outcome = try run(["--no-retry", "api", "/big", mode, "--api-base", flood.baseURL], flood: flood)
        #expect(outcome.sent >= limit, "the whole \(limit) bytes went out: \(outcome.sent)")
        #expect(outcome.status == 7, "\(outcome.stderr)")
        #expect(outcome.errorLine.hasPrefix("douctl: connection lost: the reply ended early"), "\(outcome.errorLine)")
        #expect(outcome.peakKiB > 0 && outcome.peakKiB < Self.flatKiB, "peak RSS \(outcome.peakKiB) KiB after \(outcome.sent) bytes")
    }

    /// A huge object that does not begin like an envelope (a resource, `{"items": [...]}`)
    /// is held only until it passes 1 MiB, then streams: flat memory past the 64 MiB bound
    /// (before: exit 8 at 64 MiB).
    @Test(arguments: ["--compact", "--pretty"])
    func aHugeResourceObjectStreamsPastTheBound(mode: String) throws {
        try ProcessMemory.requireSupport()
        let limit: Int64 = 96 << 20
        let flood = try Flood(
            head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(5 * Self.gib)\r\n\r\n",
            opening: #"{"items":["#, element: Self.item, limit: limit)
        let outcome = try run(["--no-retry", "api", "/resource", mode, "--api-base", flood.baseURL], flood: flood)
        #expect(outcome.sent >= limit, "the whole \(limit) bytes went out: \(outcome.sent)")
        #expect(outcome.status == 7, "\(outcome.stderr)")
        #expect(outcome.errorLine.hasPrefix("douctl: connection lost: the reply ended early"), "\(outcome.errorLine)")
        #expect(outcome.peakKiB > 0 && outcome.peakKiB < Self.flatKiB, "peak RSS \(outcome.peakKiB) KiB after \(outcome.sent) bytes")
    }

    /// An endless chunked array: --max-time ends it (exit 7); memory stays flat meanwhile.
    @Test func anEndlessChunkedBodyStaysFlatUntilMaxTime() throws {
        try ProcessMemory.requireSupport()
        let flood = try Flood(
            head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
            opening: "[", element: Self.item, chunked: true)
        let outcome = try run(["--no-retry", "--max-time", "6", "api", "/endless", "--api-base", flood.baseURL], flood: flood)
        #expect(outcome.status == 7, "\(outcome.stderr)")
        #expect(outcome.errorLine.hasPrefix("douctl: timed out"), "\(outcome.errorLine)")
        #expect(outcome.sent > 8 << 20, "it streamed: \(outcome.sent) bytes")
        #expect(outcome.peakKiB > 0 && outcome.peakKiB < Self.flatKiB, "peak RSS \(outcome.peakKiB) KiB after \(outcome.sent) bytes")
    }

    /// A 503 with a 5 GiB body: its first 64 KiB are read for the error line, the rest
    /// never is (before, the whole body was read into memory).
    @Test func aFiveGiBErrorReplyIsReadOnlyToItsBound() throws {
        try ProcessMemory.requireSupport()
        let flood = try Flood(
            head: "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: \(5 * Self.gib)\r\n\r\n",
            opening: "overloaded ", element: "x", limit: 5 * Self.gib)
        let outcome = try run(["--no-retry", "api", "/busy", "--api-base", flood.baseURL], flood: flood)
        #expect(outcome.status == 1, "\(outcome.stderr)")
        #expect(outcome.errorLine.contains("503"), "\(outcome.errorLine)")
        #expect(outcome.sent < 256 << 20, "douctl stopped reading: \(outcome.sent) bytes went out")
        #expect(outcome.peakKiB > 0 && outcome.peakKiB < Self.flatKiB, "peak RSS \(outcome.peakKiB) KiB")
    }

    /// A reply that cannot stream (an envelope whose data comes before its code: it is
    /// unwrapped only once the code is known) is held up to 64 MiB, then refused with exit
    /// 8; so is one page of a walk, envelope or not.
    @Test(arguments: [(["--compact"], #"{"data":["#), (["--paginate"], #"{"code":0,"data":["#)])
    func aHugeObjectIsExit8AtTheBound(extra: [String], opening: String) throws {
        try ProcessMemory.requireSupport()
        let flood = try Flood(
            head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(5 * Self.gib)\r\n\r\n",
            opening: opening, element: Self.item, limit: 5 * Self.gib)
        let outcome = try run(["--no-retry", "api", "/object", "--api-base", flood.baseURL] + extra, flood: flood)
        #expect(outcome.status == 8, "\(outcome.stderr)")
        #expect(outcome.errorLine.contains("larger than 64 MiB"), "\(outcome.errorLine)")
        #expect(outcome.stderr.split(separator: "\n").count == 1, "one line: \(outcome.stderr)")
        #expect(outcome.sent < 1 << 30, "douctl stopped reading: \(outcome.sent) bytes went out")
        #expect(outcome.peakKiB > 0 && outcome.peakKiB < 256 * 1024, "peak RSS \(outcome.peakKiB) KiB")
    }

    /// A redirect whose body is 5 GiB: followed after its first 64 KiB, the rest unread.
    @Test func aRedirectWithAFiveGiBBodyIsFollowedWithoutReadingIt() throws {
        let sent = LockedValue<Int64>(0)
        let listener = try HostileListener { connection, listener in
            if listener.requestCount == 1 {
                guard HostileListener.send(connection, "HTTP/1.1 302 Found\r\nLocation: /ok\r\nContent-Length: \(5 * Self.gib)\r\n\r\n") else { return }
                let block = [UInt8](repeating: UInt8(ascii: "x"), count: 256 * 1024)
                while !listener.isStopped {
                    guard (try? LoopbackSocket.sendAll(connection, block)) != nil else { return }
                    sent.withLock { $0 += Int64(block.count) }
                }
            } else {
                HostileListener.send(connection, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n[1,2,3]")
            }
        }
        defer { listener.stop() }
        let result = try Douctl().run(["--no-retry", "api", "/moved", "--api-base", listener.baseURL], timeout: 120)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == "[1,2,3]\n")
        let total = sent.withLock { $0 }
        #expect(total < 256 << 20, "douctl stopped reading the redirect's body: \(total) bytes went out")
    }
}
