#if canImport(Glibc)
import Glibc
#endif
import DouctlJSON
import DouctlSandbox
import DouctlSystem
import Testing

@Suite struct UploadTests {
    @Test func pictureIsStoredAndServedBack() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.token()
        let png = Images.png(width: 640, height: 480, padding: 5000)
        var body = MultipartBody()
        body.add("text", "看图 📷")
        body.addFile("image", filename: "photo.png", contentType: "image/png", png)
        let reply = try harness.post("/shuo/v2/statuses/", multipart: body, token: token)
        #expect(reply.status == 200, "\(reply.text)")
        let status = try reply.json()
        #expect(statusShapeProblems(status) == [])
        #expect(status["text"] == .string("看图 📷"))
        #expect(status["has_photo"] == true)
        let attachment = try #require(status["attachments"]?[0])
        #expect(isString(attachment["expaned_href"]))
        let media = try #require(attachment["media"]?[0])
        #expect(media["type"] == .string("image"))
        #expect(media["sizes"]?["raw"] == [640, 480])
        #expect(media["sizes"]?["median"] == [460, 345])
        #expect(media["sizes"]?["small"] == [150, 112])
        let src = try #require(media["src"]?.stringValue)
        let picture = try harness.get(try target(of: src, base: harness.base))
        #expect(picture.status == 200)
        #expect(picture.header("Content-Type") == "image/png")
        #expect(picture.body == png)
        let original = try harness.get(try target(of: try #require(media["original_src"]?.stringValue), base: harness.base))
        #expect(original.body == png)
        // The part as recorded.
        let recorded = try #require(harness.sandbox.requests.last { $0.path == "/shuo/v2/statuses/" })
        #expect(recorded.part("image")?.size == Int64(png.count))
        #expect(recorded.part("image")?.bytes == png)
        #expect(recorded.part("image")?.filename == "photo.png")
        #expect(recorded.part("text")?.text == "看图 📷")
    }

    @Test func jpegAndGIFAreRecognizedByMagicBytes() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.token()
        for (bytes, type, size) in [(Images.jpeg(width: 1024, height: 768), "image/jpeg", [1024, 768]),
                                    (Images.gif(width: 32, height: 16), "image/gif", [32, 16])] {
            var body = MultipartBody()
            // A misleading name and type: only the bytes count.
            body.addFile("image", filename: "upload.bin", contentType: "application/octet-stream", bytes)
            let reply = try harness.post("/shuo/v2/statuses/", multipart: body, token: token)
            #expect(reply.status == 200, "\(reply.text)")
            let media = try #require(try reply.json()["attachments"]?[0]?["media"]?[0])
            #expect(media["sizes"]?["raw"] == .array(size.map { .int($0) }))
            let served = try harness.get(try target(of: media["src"]?.stringValue ?? "", base: harness.base))
            #expect(served.header("Content-Type") == type)
            #expect(served.body == bytes)
        }
    }

    @Test func recFieldsAreIgnoredWithAnImage() throws {
        let harness = try Harness()
        defer { harness.stop() }
        var body = MultipartBody()
        body.add("rec_title", "忽略我")
        body.add("rec_url", "https://example.com/")
        body.addFile("image", filename: "a.gif", contentType: "image/gif", Images.gif(width: 1, height: 1))
        let status = try harness.post("/shuo/v2/statuses/", multipart: body, token: harness.token()).json()
        #expect(status["has_photo"] == true)
        #expect(status["title"] != .string("推荐网址"))
        #expect(status["attachments"]?[0]?["type"] == .string("image"))
        #expect(status["text"] == .string(""))
    }

    @Test func wrongFormatIs1009() throws {
        let harness = try Harness()
        defer { harness.stop() }
        for bytes in [Array("this is not a picture".utf8), [], Array("BM6".utf8) + [UInt8](repeating: 0, count: 60)] {
            var body = MultipartBody()
            body.add("text", "图呢")
            body.addFile("image", filename: "fake.png", contentType: "image/png", bytes)
            let reply = try harness.post("/shuo/v2/statuses/", multipart: body, token: harness.token())
            #expect(reply.status == 400)
            #expect(try reply.json() == ["msg": "image_wrong_format", "code": 1009, "request": "POST /shuo/v2/statuses/"])
        }
        #expect(try leftoverUploads(harness.sandbox.pictureDirectory) == [])
    }

    @Test func imageOver3MiBIs1003AndExactly3MiBPasses() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.token()
        let limit = 3 << 20
        var tooLarge = MultipartBody()
        tooLarge.add("text", "大图")
        tooLarge.addFile("image", filename: "big.png", contentType: "image/png", Images.png(width: 10, height: 10, padding: limit))
        let refused = try harness.post("/shuo/v2/statuses/", multipart: tooLarge, token: token)
        #expect(refused.status == 400)
        #expect(try refused.json() == ["msg": "image_too_large", "code": 1003, "request": "POST /shuo/v2/statuses/"])
        let png = Images.png(width: 10, height: 10, padding: 0)
        var exact = MultipartBody()
        exact.addFile("image", filename: "ok.png", contentType: "image/png", png + [UInt8](repeating: 7, count: limit - png.count))
        #expect(try harness.post("/shuo/v2/statuses/", multipart: exact, token: token).status == 200)
        #expect(try leftoverUploads(harness.sandbox.pictureDirectory) == [])
    }

    @Test(.timeLimit(.minutes(3)))
    func hugeUploadIsRefusedWithoutBeingHeldInMemory() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.token()
        let total: Int64 = 200 << 20
        let boundary = "----douctl-huge-upload"
        let head = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"text\"\r\n\r\n大文件\r\n".utf8)
            + MultipartBody.partHead(boundary: boundary, name: "image", filename: "huge.jpg", contentType: "image/jpeg")
        let tail = Array("\r\n--\(boundary)--\r\n".utf8)
        let payload = total - Int64(head.count + tail.count)
        let reply = try TestHTTP.request(
            port: harness.port, method: "POST", target: "/shuo/v2/statuses/",
            headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "multipart/form-data; boundary=\(boundary)")],
            body: head, streamLength: total
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
        #expect(reply.status == 400)
        #expect(reply.code == 1003)
        #expect(reply.msg == "image_too_large")
        // Peak memory is measured in the sandbox's own process: DouctlTests/SandboxMemoryTests.
        let recorded = try #require(harness.sandbox.requests.last { $0.path == "/shuo/v2/statuses/" })
        #expect(recorded.bodySize == total)
        #expect(recorded.part("image")?.size == payload)
        #expect(recorded.part("image")?.bytes?.count == nil)
        #expect(recorded.part("text")?.text == "大文件")
        #expect(try leftoverUploads(harness.sandbox.pictureDirectory) == [])
        // Nothing was posted.
        let mine = try harness.get("/shuo/v2/statuses/user_timeline/ahbei?count=1", token: token).json()
        #expect(mine[0]?["text"] != .string("大文件"))
    }

    @Test func serverLimitGives413() throws {
        let harness = try Harness { $0.maxBodyBytes = 1000 }
        defer { harness.stop() }
        let reply = try harness.post("/shuo/v2/statuses/", form: [("text", String(repeating: "x", count: 2000))],
                                     token: harness.token())
        #expect(reply.status == 413)
    }

    @Test func unknownPictureIs404() throws {
        let harness = try Harness()
        defer { harness.stop() }
        #expect(try harness.get("/view/status/median/public/p123.jpg").status == 404)
        let avatar = try harness.get("/icon/u1000001-2.jpg")
        #expect(avatar.status == 200)
        #expect(avatar.body.starts(with: Array("GIF89a".utf8)))
    }
}

/// Files in the picture directory that are half-written uploads.
func leftoverUploads(_ directory: String) throws -> [String] {
    guard let handle = opendir(directory) else { throw SystemError("opendir", path: directory) }
    defer { closedir(handle) }
    var names: [String] = []
    while let entry = readdir(handle) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if name.hasPrefix(".upload-") { names.append(name) }
    }
    return names
}
