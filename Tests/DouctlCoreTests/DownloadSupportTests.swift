#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
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

    @Test func contentRangeIsParsedStrictly() {
        let parts = { (range: ContentRange?) in range.map { [$0.first, $0.last, $0.total ?? -1] } }
        #expect(parts(ContentRange("bytes 100-199/200")) == [100, 199, 200])
        #expect(parts(ContentRange(" bytes 0-0/* ")) == [0, 0, -1])
        for bad in ["bytes 200-100/300", "bytes 100-199/150", "bytes 100-199/199", "bytes -1-5/10", "bytes 1-/10",
                    "bytes 1-2", "bytes 1-2/3/4", "bytes +1-2/3", "items 1-2/3", "bytes 1-2/x", "", "bytes 99999999999999999999-1/2"] {
            #expect(ContentRange(bad) == nil, "\(bad)")
        }
    }

    /// A 206 answering `Range: bytes=100-` with `If-Range: "v1"`: what continues the partial.
    @Test(arguments: [
        ([("ETag", "\"v1\""), ("Content-Range", "bytes 100-199/200")], nil),
        ([("ETag", "\"v1\""), ("Content-Range", "bytes 100-199/*"), ("Content-Length", "100")], nil),
        ([("ETag", "\"v2\""), ("Content-Range", "bytes 100-199/200")], "ETag"),
        ([("Content-Range", "bytes 100-199/200")], "ETag missing"),
        ([("ETag", "\"v1\""), ("Content-Range", "bytes 110-199/200")], "asked for bytes=100-"),
        ([("ETag", "\"v1\""), ("Content-Range", "bytes 100-149/200")], "not up to the end"),
        ([("ETag", "\"v1\""), ("Content-Range", "bytes 100-199/150")], "Content-Range: bytes 100-199/150"),
        ([("ETag", "\"v1\""), ("Content-Range", "bytes 100-199/200"), ("Content-Length", "90")], "Content-Length: 90"),
        ([("ETag", "\"v1\"")], "no Content-Range"),
    ] as [([(String, String)], String?)])
    func aResumed206MustContinueThePartial(headers: [(String, String)], problem: String?) {
        let head = HTTPResponseHead(status: 206, headers: headers.map { HTTPHeader($0.0, $0.1) })
        let found = Download.rangeProblem(head, resumedFrom: 100, validator: "\"v1\"")
        if let problem {
            #expect(found?.contains(problem) == true, "\(found ?? "accepted")")
        } else {
            #expect(found == nil)
        }
    }

    @Test func aLastModifiedValidatorMustMatchToo() {
        let date = "Tue, 24 Nov 2026 10:00:00 GMT"
        let same = HTTPResponseHead(status: 206, headers: [HTTPHeader("Last-Modified", date), HTTPHeader("Content-Range", "bytes 5-9/10")])
        #expect(Download.rangeProblem(same, resumedFrom: 5, validator: date) == nil)
        let later = HTTPResponseHead(status: 206, headers: [HTTPHeader("Last-Modified", "Wed, 25 Nov 2026 10:00:00 GMT"), HTTPHeader("Content-Range", "bytes 5-9/10")])
        #expect(Download.rangeProblem(later, resumedFrom: 5, validator: date)?.contains("Last-Modified") == true)
        // No validator was sent (none was known): the range alone decides.
        #expect(Download.rangeProblem(later, resumedFrom: 5, validator: nil) == nil)
    }

    /// Issue 40 #16: what `If-Range` carries (RFC 9110 §13.1.5): the strong ETag whenever
    /// there is one, even beside a Last-Modified; a date only when it is strong, at least one
    /// second before the reply's Date; else nothing (a weak ETag never).
    @Test(arguments: [
        ([("ETag", "\"v1\""), ("Last-Modified", "Sat, 28 Nov 2026 10:00:00 GMT"), ("Date", "Sat, 28 Nov 2026 10:00:00 GMT")], "\"v1\""),
        ([("Last-Modified", "Sat, 28 Nov 2026 10:00:00 GMT"), ("ETag", "\"v1\""), ("Date", "Sat, 28 Nov 2026 12:00:00 GMT")], "\"v1\""),
        ([("ETag", "W/\"v1\""), ("Last-Modified", "Sat, 28 Nov 2026 10:00:00 GMT"), ("Date", "Sat, 28 Nov 2026 10:00:00 GMT")], nil),
        ([("ETag", "W/\"v1\""), ("Last-Modified", "Sat, 28 Nov 2026 09:59:59 GMT"), ("Date", "Sat, 28 Nov 2026 10:00:00 GMT")], "Sat, 28 Nov 2026 09:59:59 GMT"),
        ([("Last-Modified", "Sat, 28 Nov 2026 10:00:00 GMT"), ("Date", "Sat, 28 Nov 2026 10:00:00 GMT")], nil),
        ([("Last-Modified", "Sat, 28 Nov 2026 10:00:01 GMT"), ("Date", "Sat, 28 Nov 2026 10:00:00 GMT")], nil),
        ([("Last-Modified", "Sat, 28 Nov 2026 10:00:00 GMT")], nil),
        ([("Last-Modified", "yesterday"), ("Date", "Sat, 28 Nov 2026 10:00:00 GMT")], nil),
        ([("Last-Modified", "Fri, 27 Nov 2026 10:00:00 GMT"), ("Date", "Sat, 28 Nov 2026 10:00:00 GMT")], "Fri, 27 Nov 2026 10:00:00 GMT"),
        ([("Date", "Sat, 28 Nov 2026 10:00:00 GMT")], nil),
    ] as [([(String, String)], String?)])
    func ifRangePrefersTheStrongETagAndADateOnlyWhenStrong(headers: [(String, String)], expected: String?) {
        let head = HTTPResponseHead(status: 200, headers: headers.map { HTTPHeader($0.0, $0.1) })
        #expect(Download.validator(head) == expected)
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
        #expect(DoubanStyle().pictureURLs(in: status) == ["https://img/r/p1.jpg", "https://img/m/p2.jpg"])
        #expect(DoubanStyle().pictureURLs(in: try JSONParser.parse(#"{"text":"x"}"#)).isEmpty)
        let reshare = try JSONParser.parse(#"""
            {"attachments": [], "reshared_status": {"attachments": [{"media": [{"type": "image", "src": "https://img/m/p9.jpg"}]}]}}
            """#)
        #expect(DoubanStyle().pictureURLs(in: reshare) == ["https://img/m/p9.jpg"])
    }

    @Test func codingContentImages() throws {
        let status = try JSONParser.parse(#"""
            {"content": "<p>hi <img src=\"https://c/a.png?x=1&amp;y=2\" alt=\"图片\"></p> ![图片](https://c/b.png) ![x](javascript:alert) <img src=\"https://c/a.png?x=1&amp;y=2\">"}
            """#)
        #expect(CodingStyle().pictureURLs(in: status) == ["https://c/a.png?x=1&y=2", "https://c/b.png"])
    }
}

/// The temp file's name is predictable, so what is found there is checked, never trusted.
@Suite("Partial file safety")
struct PartialFileSafetyTests {
    func scratch() -> String { TemporaryDirectory.make(prefix: "douctl-partial") }

    func refusal(_ path: String, keep: Bool = false) -> String? {
        do {
            _ = try PartialFile(path: path, keep: keep)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func aNewOneIsPrivateAndAnOwnOneIsReused() throws {
        let directory = scratch()
        let path = directory + "/.a.douctl-part"
        let partial = try PartialFile(path: path, keep: true)
        var info = stat()
        #expect(lstat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(Array("abc".utf8).withUnsafeBytes { partial.append($0) } == nil)
        partial.keep()
        let again = try PartialFile(path: path, keep: true)
        #expect(again.size == 3)
        again.remove()
    }

    @Test func linksDirectoriesAndFIFOsAreRefusedAndLeftAlone() throws {
        let directory = scratch()
        let victim = directory + "/victim"
        try AtomicFile.write(Array("precious".utf8), to: victim)
        let symbolic = directory + "/.s.douctl-part", dangling = directory + "/.d.douctl-part"
        let hard = directory + "/.h.douctl-part", folder = directory + "/.f.douctl-part", fifo = directory + "/.p.douctl-part"
        #expect(symlink(victim, symbolic) == 0)
        #expect(symlink(directory + "/nothing", dangling) == 0)
        #expect(link(victim, hard) == 0)
        #expect(mkdir(folder, 0o700) == 0)
        #expect(mkfifo(fifo, 0o600) == 0)
        for keep in [false, true] {
            #expect(refusal(symbolic, keep: keep)?.hasSuffix("is a symbolic link; not following it (remove it and run again)") == true)
            #expect(refusal(dangling, keep: keep)?.hasSuffix("is a symbolic link; not following it (remove it and run again)") == true)
            #expect(refusal(hard, keep: keep)?.hasSuffix("has another hard link; not writing through it (remove it and run again)") == true)
            #expect(refusal(folder, keep: keep)?.contains("is not a regular file") == true)
            #expect(refusal(fifo, keep: keep)?.contains("is not a regular file") == true)
        }
        #expect(try FileIO.readFile(victim) == Array("precious".utf8))
        #expect(!FileIO.nameExists(directory + "/nothing"))
    }
}
