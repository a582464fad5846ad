import DouctlJSON
import DouctlSandbox
import DouctlSystem
import Testing

/// `POST /api/tweet/insert_image`: multipart part `tweetImg`, streamed, ≤ 10 MiB.
@Suite struct CodingImageTests {
    static func upload(_ harness: Harness, _ bytes: [UInt8], token: String, field: String = "tweetImg",
                       filename: String = "coder_1234.jpg") throws -> TestResponse {
        var body = MultipartBody()
        body.addFile(field, filename: filename, contentType: "image/jpeg", bytes)
        return try harness.post(Harness.codingTarget("/api/tweet/insert_image", token: token), multipart: body)
    }

    @Test func uploadedPictureIsServedByteForByte() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.codingToken()
        let png = Images.png(width: 300, height: 200, padding: 40_000)
        // The client names every upload .jpg/image/jpeg; only the bytes count.
        let reply = try Self.upload(harness, png, token: token)
        #expect(reply.status == 200, "\(reply.text)")
        let url = try #require(reply.data?.stringValue)
        #expect(try reply.json().objectValue?.keys == ["code", "data"])
        #expect(url.hasPrefix(harness.base + "/"))
        #expect(url.hasSuffix(".png"))
        let served = try harness.get(try target(of: url, base: harness.base))
        #expect(served.status == 200)
        #expect(served.header("Content-Type") == "image/png")
        #expect(served.body == png)
        // The part is recorded.
        let recorded = try #require(harness.sandbox.requests.last { $0.path == "/api/tweet/insert_image" })
        #expect(recorded.part("tweetImg")?.size == Int64(png.count))
        #expect(recorded.part("tweetImg")?.filename == "coder_1234.jpg")
        // And a tweet can show it, the way clients append it.
        let tweet = try harness.postTweet("看图\n ![图片](\(url)) ", token: token)
        #expect(tweet["content"]?.stringValue?.contains("<img src=\"\(url)\" alt=\"图片\">") == true)
        #expect(try leftoverUploads(harness.sandbox.pictureDirectory) == [])
    }

    @Test func anyImageTypeIsRecognizedByMagicBytes() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.codingToken()
        let webp = Array("RIFF".utf8) + [36, 0, 0, 0] + Array("WEBPVP8 ".utf8) + [UInt8](repeating: 9, count: 40)
        var bmp: [UInt8] = Array("BM".utf8) + [70, 0, 0, 0, 0, 0, 0, 0, 54, 0, 0, 0, 40, 0, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0]
        bmp += [UInt8](repeating: 0, count: 44)
        for (bytes, type, suffix) in [(Images.jpeg(width: 64, height: 48), "image/jpeg", ".jpg"),
                                      (Images.gif(width: 5, height: 5), "image/gif", ".gif"),
                                      (webp, "image/webp", ".webp"), (bmp, "image/bmp", ".bmp")] {
            let reply = try Self.upload(harness, bytes, token: token, filename: "x.bin")
            let url = try #require(reply.data?.stringValue, "\(type): \(reply.text)")
            #expect(url.hasSuffix(suffix))
            let served = try harness.get(try target(of: url, base: harness.base))
            #expect(served.header("Content-Type") == type)
            #expect(served.body == bytes)
        }
    }

    @Test func refusals() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.codingToken()
        let notImage = try Self.upload(harness, Array("just some text, not a picture".utf8), token: token)
        #expect(notImage.status == 200)
        #expect(try notImage.json() == ["code": 1009, "msg": ["image_wrong_format": "图片格式不正确"]])
        let wrongField = try Self.upload(harness, Images.png(width: 1, height: 1), token: token, field: "file")
        #expect(wrongField.code == 1)
        #expect(wrongField.codingMsg["image_empty"] != nil)
        let form = try harness.codingPost("/api/tweet/insert_image", form: [("tweetImg", "x")], token: token)
        #expect(form.code == 1)
        let limit = 10 << 20
        let tooLarge = try Self.upload(harness, Images.png(width: 10, height: 10, padding: limit), token: token)
        #expect(tooLarge.status == 200)
        #expect(try tooLarge.json() == ["code": 1003, "msg": ["image_too_large": "图片过大"]])
        let png = Images.png(width: 10, height: 10, padding: 0)
        let exact = try Self.upload(harness, png + [UInt8](repeating: 1, count: limit - png.count), token: token)
        #expect(exact.code == 0)
        #expect(try Self.upload(harness, png, token: harness.codingToken(scopes: ["social"])).code == 403)
        #expect(try Self.upload(harness, png, token: "unknown").code == 1000)
        #expect(try leftoverUploads(harness.sandbox.pictureDirectory) == [])
    }

    @Test(.timeLimit(.minutes(3)))
    func hugeUploadIsStreamedNotHeld() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.codingToken()
        let total: Int64 = 150 << 20
        let boundary = "----douctl-coding-huge"
        let head = MultipartBody.partHead(boundary: boundary, name: "tweetImg", filename: "huge.jpg", contentType: "image/jpeg")
        let tail = Array("\r\n--\(boundary)--\r\n".utf8)
        let payload = total - Int64(head.count + tail.count)
        let reply = try TestHTTP.request(
            port: harness.port, method: "POST", target: Harness.codingTarget("/api/tweet/insert_image", token: token),
            headers: [("Content-Type", "multipart/form-data; boundary=\(boundary)")], body: head, streamLength: total
        ) { fd in
            var chunk = [UInt8](repeating: 0x5A, count: 1 << 20)
            chunk[0] = 0xFF; chunk[1] = 0xD8; chunk[2] = 0xFF
            var left = payload
            while left > 0 {
                let count = Int(min(left, Int64(chunk.count)))
                try chunk.withUnsafeBytes { try TestHTTP.sendAll(fd, UnsafeRawBufferPointer(rebasing: $0[..<count])) }
                if left == payload { chunk[0] = 0x5A; chunk[1] = 0x5A; chunk[2] = 0x5A }
                left -= Int64(count)
            }
            try TestHTTP.sendAll(fd, tail)
        }
        #expect(reply.code == 1003)
        // Peak memory is measured in the sandbox's own process: DouctlTests/SandboxMemoryTests.
        let recorded = try #require(harness.sandbox.requests.last { $0.path == "/api/tweet/insert_image" })
        #expect(recorded.bodySize == total)
        #expect(recorded.part("tweetImg")?.size == payload)
        #expect(try leftoverUploads(harness.sandbox.pictureDirectory) == [])
    }
}
