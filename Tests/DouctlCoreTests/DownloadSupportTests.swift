@testable import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem
import Testing

@Suite("Streaming SHA-256")
struct StreamingDigestTests {
    /// FIPS 180-2 appendix B.3: one million "a".
    @Test func aMillionAsInUnevenPieces() {
        var hasher = SHA256()
        let piece = [UInt8](repeating: UInt8(ascii: "a"), count: 1000)
        var fed = 0
        var size = 1
        while fed < 1_000_000 {
            let count = min(size, 1_000_000 - fed)
            piece.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<min(count, 1000)])) }
            fed += min(count, 1000)
            size = size % 997 + 7  // sizes across block boundaries
        }
        #expect(Digest.hex(hasher.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func piecesAgreeWithOneShot() {
        let message = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        for split in [0, 1, 55, 56, 63, 64, 65, 128, 999, 1000] {
            var hasher = SHA256()
            hasher.update(Array(message[..<split]))
            hasher.update(Array(message[split...]))
            #expect(hasher.finalize() == Digest.sha256(message), "split at \(split)")
        }
        var hasher = SHA256()
        hasher.update(Array("ab".utf8))
        _ = hasher.finalize()  // finalizing does not disturb the running state
        hasher.update(Array("c".utf8))
        #expect(Digest.hex(hasher.finalize()) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}

@Suite("Download names")
struct DownloadNamingTests {
    @Test(arguments: [
        (#"attachment; filename="a.txt""#, "a.txt"),
        (#"attachment; filename="x.txt"; filename*=UTF-8''%E4%BD%A0%E5%A5%BD.txt"#, "你好.txt"),
        (#"attachment; filename*=iso-8859-1''caf%E9.txt"#, "café.txt"),
        (#"attachment; filename="../../etc/passwd""#, "passwd"),
        (#"attachment; filename="C:\\temp\\x.exe""#, "x.exe"),
        (#"attachment; filename=".profile""#, "profile"),
        ("attachment; filename=\"a\u{01}b\"", "a_b"),
    ])
    func fromContentDisposition(header: String, name: String) {
        #expect(DownloadNaming.name(contentDisposition: header) == name)
    }

    @Test(arguments: [#"attachment; filename="..""#, #"attachment; filename="""#, "inline", #"attachment; filename="/""#])
    func unusableDispositionsFallBackToTheURL(header: String) {
        #expect(DownloadNaming.name(contentDisposition: header) == nil)
        #expect(DownloadNaming.name(contentDisposition: header, url: "https://h/p/pic.jpg") == "pic.jpg")
    }

    @Test(arguments: [
        ("https://h/view/p1.jpg?size=raw#x", "p1.jpg"),
        ("https://h/a%20b%2Fc.txt", "c.txt"),
        ("https://h/dir/", "download"),
        ("https://h", "download"),
        ("https://h/..", "download"),
        ("https://h/.%2e", "download"),
    ])
    func fromTheURL(url: String, name: String) {
        #expect(DownloadNaming.name(contentDisposition: nil, url: url) == name)
    }

    @Test func longNamesKeepTheirExtension() {
        let name = DownloadNaming.sanitize(String(repeating: "长", count: 300) + ".jpeg") ?? ""
        #expect(name.utf8.count <= DownloadNaming.maximumBytes)
        #expect(name.hasSuffix(".jpeg"))
    }

    @Test func otherSchemesAreNotPaths() {
        #expect(Download.hasOtherScheme("ftp://h/x"))
        #expect(Download.hasOtherScheme("FILE:///etc/passwd"))
        #expect(!Download.hasOtherScheme("https://h/x"))
        #expect(!Download.hasOtherScheme("/v2/a?next=http://x"))
    }

    @Test func contentRanges() {
        let partial = HTTPResponseHead(status: 206, headers: [HTTPHeader("Content-Range", "bytes 100-199/200")])
        #expect(Download.contentRangeStart(partial) == 100)
        #expect(Download.completeLength(HTTPResponseHead(status: 416, headers: [HTTPHeader("Content-Range", "bytes */200")])) == 200)
        #expect(Download.contentRangeStart(HTTPResponseHead(status: 206, headers: [HTTPHeader("Content-Range", "items 1-2/3")])) == nil)
    }
}

@Suite("Status pictures")
struct StatusPicturesTests {
    @Test func doubanAttachmentsPreferTheOriginal() throws {
        let status = try JSONParser.parse(#"""
            {"attachments": [
              {"type": "image", "media": [{"type": "image", "src": "https://img/m/p1.jpg", "original_src": "https://img/r/p1.jpg"}]},
              {"type": "image", "media": [{"type": "image", "src": "https://img/m/p2.jpg", "original_src": ""}]},
              {"type": "url", "media": [{"type": "video", "src": "https://v/1.mp4"}]}
            ]}
            """#)
        #expect(StatusPictures.urls(in: status, style: .douban) == ["https://img/r/p1.jpg", "https://img/m/p2.jpg"])
        #expect(StatusPictures.urls(in: try JSONParser.parse(#"{"text":"x"}"#), style: .douban).isEmpty)
        let reshare = try JSONParser.parse(#"""
            {"attachments": [], "reshared_status": {"attachments": [{"media": [{"type": "image", "src": "https://img/m/p9.jpg"}]}]}}
            """#)
        #expect(StatusPictures.urls(in: reshare, style: .douban) == ["https://img/m/p9.jpg"])
    }

    @Test func codingContentImages() throws {
        let status = try JSONParser.parse(#"""
            {"content": "<p>hi <img src=\"https://c/a.png?x=1&amp;y=2\" alt=\"图片\"></p> ![图片](https://c/b.png) ![x](javascript:alert) <img src=\"https://c/a.png?x=1&amp;y=2\">"}
            """#)
        #expect(StatusPictures.urls(in: status, style: .coding) == ["https://c/a.png?x=1&y=2", "https://c/b.png"])
    }
}
