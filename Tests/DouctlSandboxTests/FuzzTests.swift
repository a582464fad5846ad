import DouctlJSON
import DouctlSandbox
import DouctlSystem
import Foundation
import Testing

/// Random, mutated and truncated requests at the sandbox's real endpoints (queries, forms,
/// multipart bodies, OAuth, Coding paths); afterwards it must still answer correctly.
@Suite("sandbox under hostile requests")
struct SandboxFuzzTests {
    static func templates(token: String, coding: String) -> [String] {
        let multipart = "--B\r\nContent-Disposition: form-data; name=\"text\"\r\n\r\nhi\r\n--B\r\nContent-Disposition: form-data; name=\"image\"; filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\n\u{89}PNG\r\n\u{1A}\nxxxx\r\n--B--\r\n"
        return [
            "GET /shuo/v2/statuses/home_timeline?count=200&since_id=-9223372036854775808&until_id=99999999999999999999&start=-1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n\r\n",
            "GET /v2/user?q=%E4%B8%AD%ZZ&start=9223372036854775807&count=0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n\r\n",
            "POST /shuo/v2/statuses/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 27\r\n\r\ntext=%F0%9F%98%80&rec_url=%\r\n",
            "POST /shuo/v2/statuses/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Type: multipart/form-data; boundary=B\r\nContent-Length: \(multipart.utf8.count)\r\n\r\n\(multipart)",
            "POST /service/auth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 61\r\n\r\ngrant_type=refresh_token&refresh_token=&client_id=douctl-sand",
            "GET /service/auth2/auth?client_id=douctl-sandbox&redirect_uri=http%3A%2F%2F127.0.0.1%3A99999%2Fcallback&response_type=code&state=%00 HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /api/tweet/user_public?global_key=coder&last_id=-1&last_time=99999999999999999999&pageSize=-5&access_token=\(coding) HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /api/tweet/1/comments?page=0&pageSize=9223372036854775807&access_token=\(coding) HTTP/1.1\r\nHost: x\r\n\r\n",
            "POST /api/v2/account/login HTTP/1.1\r\nHost: x\r\nCookie: sid=; XSRF-TOKEN=%\r\nX-XSRF-TOKEN: %\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 30\r\n\r\naccount=coder&password=&j_capt",
            "DELETE /shuo/v2/statuses/comment/-0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n\r\n",
        ]
    }

    static func mutate(_ base: [UInt8], using generator: inout SplitMix64) -> [UInt8] {
        var bytes = base
        switch generator.next() % 5 {
        case 0: // truncate
            bytes = Array(bytes.prefix(Int(generator.next() % UInt64(bytes.count + 1))))
        case 1: // flip some bytes
            for _ in 0..<(1 + generator.next() % 8) where !bytes.isEmpty {
                bytes[Int(generator.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: generator.next())
            }
        case 2: // insert random bytes
            let position = Int(generator.next() % UInt64(bytes.count + 1))
            bytes.insert(contentsOf: (0..<(generator.next() % 64)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }, at: position)
        case 3: // pure garbage
            bytes = (0..<(generator.next() % 512)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        default: // unchanged: the valid request itself
            break
        }
        return bytes
    }

    @Test func survivesHundredsOfHostileRequests() throws {
        let harness = try Harness { $0.codingCaptchaRequired = false }
        let token = harness.token()
        let coding = harness.sandbox.issueCodingToken().accessToken
        let templates = Self.templates(token: token, coding: coding).map { Array($0.utf8) }
        // Seeded, so a failure reproduces.
        var generator = SplitMix64(seed: 0xD0C7_5A4D)
        var answered = 0
        for round in 0..<600 {
            let bytes = Self.mutate(templates[round % templates.count], using: &generator)
            guard let fd = try? TestHTTP.connect(port: harness.port, timeout: 2) else { continue }
            try? TestHTTP.sendAll(fd, bytes)
            shutdown(fd, Int32(SHUT_WR))
            var buffer = [UInt8](repeating: 0, count: 16)
            if recv(fd, &buffer, 16, 0) > 0, buffer.starts(with: Array("HTTP/1.1".utf8)) { answered += 1 }
            close(fd)
        }
        #expect(answered > 200)
        // Still correct afterwards.
        let user = try harness.get("/v2/user/ahbei")
        #expect(user.status == 200)
        #expect(try user.json()["uid"]?.stringValue == "ahbei")
        let timeline = try harness.get("/shuo/v2/statuses/home_timeline", token: token)
        #expect(timeline.status == 200)
        #expect(try timeline.json().arrayValue != nil)
    }
}
