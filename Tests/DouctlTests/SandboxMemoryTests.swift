import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Huge uploads to `douctl sandbox` are refused without being held in memory. Peak RSS is
/// read from the sandbox's own process: in the test runner, any test running beside this
/// one would move the figure.
@Suite("sandbox memory, in its own process")
struct SandboxMemoryTests {
    /// A `douctl sandbox` child, logged in on `profile`, with its port and token.
    struct RunningSandbox {
        let process: RunningDouctl
        let port: UInt16
        let token: String

        init(profile: String) throws {
            let douctl = Douctl()
            process = try RunningDouctl(douctl, ["sandbox"])
            let firstLine = try process.waitForStdout { $0.contains("\n") }.prefix { $0 != "\n" }
            guard let portText = firstLine.split(separator: ":").last, let port = UInt16(portText) else {
                throw TestFailure("the sandbox printed no URL: \(firstLine)")
            }
            self.port = port
            let login = try douctl.run("--profile", profile, "auth", "login", "--device", "--no-browser")
            guard login.status == 0 else { throw TestFailure("login failed: \(login)") }
            let credentials = try JSONParser.parse(try FileIO.readFile(douctl.configDirectory + "/credentials.json"))
            guard let token = credentials["profiles"]?[profile]?["access_token"]?.stringValue else {
                throw TestFailure("no token stored for \(profile)")
            }
            self.token = token
        }

        var peakKiB: Int {
            get throws { try ProcessMemory.peakKiB(of: process.process.processIdentifier) }
        }

        func stop() -> Douctl.Result {
            process.kill(SIGTERM)
            return process.finish()
        }
    }

    /// Streams a multipart body of `total` bytes whose one file part (after `head`) is a
    /// JPEG signature and then filler, and returns the reply.
    static func streamUpload(port: UInt16, target: String, headers: [String], boundary: String, head: [UInt8], total: Int64) throws -> RawReply {
        let tail = Array("\r\n--\(boundary)--\r\n".utf8)
        let payload = total - Int64(head.count + tail.count)
        let client = try RawClient(port: port, receiveTimeout: 120, sendTimeout: 120)
        var requestHead = "POST \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for header in headers + ["Content-Type: multipart/form-data; boundary=\(boundary)", "Content-Length: \(total)"] {
            requestHead += header + "\r\n"
        }
        try client.send(Array((requestHead + "\r\n").utf8) + head)
        var chunk = [UInt8](repeating: 0x5A, count: 1 << 20)
        chunk[0] = 0xFF; chunk[1] = 0xD8; chunk[2] = 0xFF
        var left = payload
        while left > 0 {
            let count = Int(min(left, Int64(chunk.count)))
            try chunk.withUnsafeBytes { try LoopbackSocket.sendAll(client.fd, UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            if left == payload { chunk[0] = 0x5A; chunk[1] = 0x5A; chunk[2] = 0x5A }
            left -= Int64(count)
        }
        try client.send(tail)
        return try client.readResponse()
    }

    /// Multipart part headers.
    static func partHead(boundary: String, name: String, filename: String? = nil, contentType: String? = nil) -> [UInt8] {
        var head = "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\""
        if let filename { head += "; filename=\"\(filename)\"" }
        head += "\r\n"
        if let contentType { head += "Content-Type: \(contentType)\r\n" }
        return Array((head + "\r\n").utf8)
    }

    @Test(.timeLimit(.minutes(3)))
    func hugeDoubanUploadIsRefusedWithoutBeingHeld() throws {
        try ProcessMemory.requireSupport()
        let sandbox = try RunningSandbox(profile: "sandbox")
        let before = try sandbox.peakKiB
        let boundary = "----douctl-huge-upload"
        let head = Self.partHead(boundary: boundary, name: "text") + Array("大文件\r\n".utf8)
            + Self.partHead(boundary: boundary, name: "image", filename: "huge.jpg", contentType: "image/jpeg")
        let reply = try Self.streamUpload(port: sandbox.port, target: "/shuo/v2/statuses/", headers: ["Authorization: Bearer \(sandbox.token)"],
                                          boundary: boundary, head: head, total: 200 << 20)
        let after = try sandbox.peakKiB
        let result = sandbox.stop()
        #expect(reply.status == 400, "\(reply.text)")
        #expect(try JSONParser.parse(reply.body)["msg"]?.stringValue == "image_too_large")
        #expect(before > 0)
        #expect(after - before < 64 * 1024, "the sandbox's peak RSS grew by \(after - before) KiB (from \(before) KiB)")
        #expect(result.stderr.contains("POST /shuo/v2/statuses/ 400"), "\(result)")
    }

    @Test(.timeLimit(.minutes(3)))
    func hugeCodingImageIsStreamedNotHeld() throws {
        try ProcessMemory.requireSupport()
        let sandbox = try RunningSandbox(profile: "coding-sandbox")
        let before = try sandbox.peakKiB
        let boundary = "----douctl-coding-huge"
        let head = Self.partHead(boundary: boundary, name: "tweetImg", filename: "huge.jpg", contentType: "image/jpeg")
        let target = "/api/tweet/insert_image?access_token=\(sandbox.token)"
        let reply = try Self.streamUpload(port: sandbox.port, target: target, headers: [], boundary: boundary, head: head, total: 150 << 20)
        let after = try sandbox.peakKiB
        let result = sandbox.stop()
        #expect(try JSONParser.parse(reply.body)["code"]?.intValue == 1003, "\(reply.text)")
        #expect(before > 0)
        #expect(after - before < 64 * 1024, "the sandbox's peak RSS grew by \(after - before) KiB (from \(before) KiB)")
        #expect(result.status == 0, "\(result)")
    }
    /// Issue 20: 10^6 one-byte parts (59 MB) raised the sandbox's RSS by ~100 MB per request,
    /// never given back. Now the 1,001st part is refused with 413, and two such requests in a
    /// row leave the peak within 32 MiB of where it was.
    @Test(.timeLimit(.minutes(3)))
    func aMillionTinyPartsAreRefusedInBoundedMemory() throws {
        try ProcessMemory.requireSupport()
        let sandbox = try RunningSandbox(profile: "sandbox")
        let boundary = "----douctl-many-parts"
        let part = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nx\r\n".utf8)
        var body: [UInt8] = []
        body.reserveCapacity(part.count * 1_000_000 + 64)
        for _ in 0..<1_000_000 { body += part }
        body += Array("--\(boundary)--\r\n".utf8)
        let head = "POST /shuo/v2/statuses/ HTTP/1.1\r\nHost: 127.0.0.1:\(sandbox.port)\r\nConnection: close\r\n"
            + "Authorization: Bearer \(sandbox.token)\r\nContent-Type: multipart/form-data; boundary=\(boundary)\r\n"
            + "Content-Length: \(body.count)\r\n\r\n"
        let before = try sandbox.peakKiB
        var replies: [RawReply] = []
        for _ in 0..<2 {
            let client = try RawClient(port: sandbox.port, receiveTimeout: 120, sendTimeout: 120)
            try client.send(Array(head.utf8))
            try client.send(body)
            replies.append(try client.readResponse())
        }
        let after = try sandbox.peakKiB
        let result = sandbox.stop()
        for reply in replies {
            #expect(reply.status == 413, "\(reply.text.prefix(300))")
            #expect(try JSONParser.parse(reply.body)["msg"]?.stringValue == "unknow_v2_error: more than 1000 parts in a multipart body")
        }
        #expect(before > 0)
        #expect(after - before < 32 * 1024, "the sandbox's peak RSS grew by \(after - before) KiB (from \(before) KiB)")
        #expect(result.stderr.contains("POST /shuo/v2/statuses/ 413"), "\(result)")
    }
}
