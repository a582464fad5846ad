@testable import DouctlHTTP
import Testing

/// The keeper client's reply-head parser (SocketExchange.swift) without sockets: its bounds
/// must not depend on how the reads happened to split the bytes.
@Suite("Keeper client: reply heads")
struct KeeperReplyParserTests {
    static func head(headerBytes: Int) -> [UInt8] {
        Array("HTTP/1.1 200 OK\r\nX-Big: ".utf8) + [UInt8](repeating: 0x61, count: headerBytes) + Array("\r\n\r\nbody".utf8)
    }

    /// A head over libcurl's 300 KiB that arrived in one read is refused, as one that came
    /// in small reads is (the full suite once saw it accepted under load).
    @Test func aHeadOverTheBoundIsRefusedEvenWhenItArrivedWhole() {
        var parser = ReplyParser()
        parser.buffer = Self.head(headerBytes: 320 * 1024)
        guard case .tooLarge(let size) = parser.takeHead() else {
            Issue.record("a 320 KiB head was taken")
            return
        }
        #expect(size > SocketExchange.maximumHeadBytes)
    }

    @Test func aHeadJustUnderTheBoundIsTaken() {
        var parser = ReplyParser()
        parser.buffer = Self.head(headerBytes: SocketExchange.maximumHeadBytes - 64)
        guard case .head(_, let status, let lines) = parser.takeHead() else {
            Issue.record("a head under the bound was refused")
            return
        }
        #expect(status == 200 && lines.count == 2)
        #expect(parser.buffer == Array("body".utf8), "the body's bytes stay for the body")
    }
}
