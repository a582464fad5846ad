import DouctlTestSupport
import Testing

/// Issue 23: a Coding-style envelope is unwrapped in the stream where the envelope allows
/// (its success code before its data), and otherwise within the documented bounds: the
/// built douctl under `ulimit -v` against a listener that writes the envelope on the fly.
extension HostileReplyTests {
    /// The bytes `Flood` writes before `closing` when it stops at whole blocks: its first
    /// block (`opening` and elements to 256 KiB), then as many element blocks as reach `atLeast`.
    static func wholeBlocks(opening: String, element: String, atLeast: Int64) -> Int64 {
        var first = opening.utf8.count
        while first < 256 * 1024 { first += element.utf8.count }
        var block = 0
        while block < 256 * 1024 { block += element.utf8.count }
        let blocks = (atLeast - Int64(first) + Int64(block) - 1) / Int64(block)
        return Int64(first) + blocks * Int64(block)
    }

    /// A 1 GiB `{"code":0,"msg":"ok","data":[…],"request":…}`: the data streams as it
    /// arrives (before: exit 8 at 64 MiB), exit 0, peak RSS flat.
    @Test func aGiBEnvelopeWithItsCodeFirstStreamsInFlatMemory() throws {
        try ProcessMemory.requireSupport()
        let opening = #"{"code":0,"msg":"ok","data":["#
        let closing = #"0],"request":"GET /envelope"}"#
        let limit = Self.wholeBlocks(opening: opening, element: Self.item, atLeast: Self.gib)
        let length = limit + Int64(closing.utf8.count)
        let flood = try Flood(
            head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(length)\r\n\r\n",
            opening: opening, element: Self.item, limit: limit, closing: closing)
        let outcome = try run(["--no-retry", "api", "/envelope", "--compact", "--api-base", flood.baseURL], flood: flood, timeout: 900)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stderr.isEmpty, "\(outcome.stderr)")
        #expect(outcome.sent == length, "the whole envelope went out: \(outcome.sent) of \(length)")
        #expect(outcome.peakKiB > 0 && outcome.peakKiB < Self.flatKiB, "peak RSS \(outcome.peakKiB) KiB after \(outcome.sent) bytes")
    }

    /// An error envelope (its code before a huge data) is read only to 64 KiB and reported
    /// from what came whole: the code and the message.
    @Test func aHugeErrorEnvelopeIsReadOnlyToTheErrorBound() throws {
        try ProcessMemory.requireSupport()
        let flood = try Flood(
            head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(5 * Self.gib)\r\n\r\n",
            opening: #"{"code":5,"msg":"nope","data":["#, element: Self.item, limit: 5 * Self.gib)
        let outcome = try run(["--no-retry", "api", "/failing", "--error-body", "none", "--api-base", flood.baseURL], flood: flood)
        #expect(outcome.status == 1, "\(outcome.stderr)")
        #expect(outcome.stderr == "douctl: the API answered HTTP 200 (nope, code 5, GET /failing)\n", "\(outcome.stderr)")
        #expect(outcome.sent < 256 << 20, "douctl stopped reading: \(outcome.sent) bytes went out")
        #expect(outcome.peakKiB > 0 && outcome.peakKiB < Self.flatKiB, "peak RSS \(outcome.peakKiB) KiB")
    }

    /// Data before the code past 64 MiB: exit 8, one line that says why.
    @Test func aHugeEnvelopeWithItsDataFirstIsExit8WithOneLine() throws {
        try ProcessMemory.requireSupport()
        let flood = try Flood(
            head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(5 * Self.gib)\r\n\r\n",
            opening: #"{"ret":["#, element: Self.item, limit: 5 * Self.gib)
        let outcome = try run(["--no-retry", "api", "/late-code", "--api-base", flood.baseURL], flood: flood)
        #expect(outcome.status == 8, "\(outcome.stderr)")
        #expect(outcome.stderr == "douctl: the reply is an envelope larger than 64 MiB whose data comes before its code, so it is held to be unwrapped and cannot be; --raw prints any size\n", "\(outcome.stderr)")
        #expect(outcome.sent < 1 << 30, "douctl stopped reading: \(outcome.sent) bytes went out")
        #expect(outcome.peakKiB > 0 && outcome.peakKiB < 256 * 1024, "peak RSS \(outcome.peakKiB) KiB")
    }
}
