import DouctlJSON
import DouctlServer
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// `douctl download` against a hostile machine (things planted at the temp file's predictable
/// name or at the final name) and a hostile server (a 206 that lies about what it continues).
/// Nothing outside the download directory is ever written, and a resumed file is never
/// spliced from two versions.
@Suite("douctl download: planted names and lying servers")
struct DownloadSafetyTests {
    /// `.NAME.HASH.douctl-part`, the temp file's name for `url` (see `Download.partialPath`).
    static func partialName(_ name: String, url: String) -> String {
        ".\(name).\(Digest.hex(Array(Digest.sha256(Array(url.utf8)).prefix(4)))).douctl-part"
    }

    /// The type of what is at `path` itself (a link is not followed), or nil when nothing is.
    static func linkType(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & S_IFMT : nil
    }

    static func text(_ path: String) -> String? {
        try? String(contentsOfFile: path, encoding: .utf8)
    }

    enum Planted: String, CaseIterable, CustomTestStringConvertible {
        case symbolicLink, danglingLink, hardLink, directory, fifo
        var testDescription: String { rawValue }
    }

    // MARK: - the temp file's name

    @Test(arguments: Planted.allCases, [false, true])
    func somethingPlantedAtTheTempNameIsRefusedAndLeftAlone(_ planted: Planted, resume: Bool) throws {
        let server = try TestServer { _ in .bytes(200, Array("the server's bytes".utf8)) }
        let directory = TemporaryDirectory.make(prefix: "dl-planted")
        let outside = TemporaryDirectory.make(prefix: "dl-outside")
        let precious = outside + "/precious.txt"
        try Data("precious".utf8).write(to: URL(fileURLWithPath: precious))
        let url = server.baseURL + "/x.bin"
        let partial = directory + "/" + Self.partialName("x.bin", url: url)
        switch planted {
        case .symbolicLink: try FileManager.default.createSymbolicLink(atPath: partial, withDestinationPath: precious)
        case .danglingLink: try FileManager.default.createSymbolicLink(atPath: partial, withDestinationPath: outside + "/created")
        case .hardLink: #expect(link(precious, partial) == 0)
        case .directory: try FileManager.default.createDirectory(atPath: partial, withIntermediateDirectories: false)
        case .fifo: #expect(mkfifo(partial, 0o600) == 0)
        }
        let typeBefore = Self.linkType(partial)

        var arguments = ["download", url, "-d", directory]
        if resume { arguments.append("--continue") }
        let result = try Douctl().run(arguments, timeout: 120)  // a FIFO opened for writing must not hang
        #expect(result.status == 3, "\(result)")
        #expect(result.errorLine.hasPrefix("douctl: \(url): \(partial) "), "one line naming the temp file: \(result)")
        #expect(result.errorLine.hasSuffix("(remove it and run again)"), "\(result)")
        #expect(Self.text(precious) == "precious", "the file outside the download directory is untouched")
        #expect(Self.linkType(outside + "/created") == nil, "nothing is created through a dangling link")
        #expect(Self.linkType(directory + "/x.bin") == nil, "no final file")
        #expect(Self.linkType(partial) == typeBefore, "what was planted is left as it was")
        print("planted \(planted) (continue: \(resume)): \(result.errorLine)")
    }

    @Test func aNewTempFileIsPrivateAndTheFinishedFileGetsTheUsualMode() throws {
        let body = DownloadTests.content(300_000)
        let server = try RangeServer(body) { request, _ in request == 0 ? 100_000 : nil }
        let directory = TemporaryDirectory.make(prefix: "dl-mode")
        let url = server.baseURL + "/x.bin"
        let broken = try Douctl().run("download", url, "-d", directory, "--continue", "--no-retry")
        #expect(broken.status == 7, "\(broken)")
        let partial = directory + "/" + Self.partialName("x.bin", url: url)
        let kept = try FileManager.default.attributesOfItem(atPath: partial)
        #expect((kept[.posixPermissions] as? Int) == 0o600, "the temp file is created 0600")

        let resumed = try Douctl().run("download", url, "-d", directory, "--continue")
        #expect(resumed.status == 0, "\(resumed)")
        #expect(DownloadTests.read(directory + "/x.bin") == body)
        let mask = umask(0o022)
        umask(mask)
        let finished = try FileManager.default.attributesOfItem(atPath: directory + "/x.bin")
        #expect((finished[.posixPermissions] as? Int) == Int(0o666 & ~mask), "like curl -o: 0666 less the umask")
    }

    // MARK: - the final name

    @Test func aLinkAtTheFinalNameIsNeverWrittenThrough() throws {
        let server = try TestServer { _ in .bytes(200, Array("the server's bytes".utf8)) }
        let directory = TemporaryDirectory.make(prefix: "dl-final-link")
        let outside = TemporaryDirectory.make(prefix: "dl-outside")
        for name in ["sym.bin", "hard.bin"] {
            try Data("precious".utf8).write(to: URL(fileURLWithPath: outside + "/" + name))
        }
        try FileManager.default.createSymbolicLink(atPath: directory + "/sym.bin", withDestinationPath: outside + "/sym.bin")
        try FileManager.default.createSymbolicLink(atPath: directory + "/dangling.bin", withDestinationPath: outside + "/dangling.bin")
        #expect(link(outside + "/hard.bin", directory + "/hard.bin") == 0)

        // Without --force every one of them is an existing name: refused, nothing written through it.
        for name in ["sym.bin", "dangling.bin", "hard.bin"] {
            let refused = try Douctl().run("download", server.baseURL + "/" + name, "-d", directory)
            #expect(refused.status == 3, "\(name): \(refused)")
            #expect(refused.errorLine.contains("already exists"), "\(name): \(refused)")
        }
        #expect(Self.linkType(outside + "/dangling.bin") == nil, "a dangling link is an existing name too")
        #expect(Self.text(outside + "/sym.bin") == "precious")
        // With --force the name itself is replaced; what it pointed at is untouched.
        let forced = try Douctl().run("download", server.baseURL + "/sym.bin", server.baseURL + "/dangling.bin",
                                      server.baseURL + "/hard.bin", "-d", directory, "--force")
        #expect(forced.status == 0, "\(forced)")
        for name in ["sym.bin", "dangling.bin", "hard.bin"] {
            #expect(Self.linkType(directory + "/" + name) == S_IFREG, "\(name)")
            #expect(Self.text(directory + "/" + name) == "the server's bytes", "\(name)")
        }
        #expect(Self.text(outside + "/sym.bin") == "precious")
        #expect(Self.text(outside + "/hard.bin") == "precious")
        #expect(Self.linkType(outside + "/dangling.bin") == nil)
    }

    // MARK: - a resume the server lies about

    enum Lie: String, CaseIterable, CustomTestStringConvertible {
        /// 206 for the asked range, but of another version (ETag "v2" to If-Range "v1").
        case anotherETag
        /// 206 claiming the old version, starting 10 bytes past the partial's end.
        case wrongStart
        /// 206 whose total disagrees with its own range.
        case inconsistentTotal
        /// 206 with no Content-Range at all.
        case noContentRange
        /// 206 whose Content-Length is not the range's length.
        case lengthNotTheRange
        /// 200 with the whole (new) file: the honest way to say "it changed".
        case wholeFileWith200
        var testDescription: String { rawValue }
    }

    @Test(arguments: Lie.allCases)
    func aResumeTheServerLiesAboutStartsOverAndIsNeverSpliced(_ lie: Lie) throws {
        let old = DownloadTests.content(200_000)
        let new = Array(DownloadTests.content(250_000).reversed())
        let server = try TestServer { received in
            guard let range = received.header("Range") else {
                // The file has changed since the partial was kept: a plain GET gets version 2.
                return HTTPServerResponse(status: 200, headers: [("ETag", "\"v2\"")], body: .bytes(new))
            }
            let start = Int(range.dropFirst(6).dropLast()) ?? 0
            var status = 206
            var headers: [(String, String)] = [("ETag", "\"v1\"")]
            var body = Array(new[min(start, new.count)...])
            let end = new.count - 1
            switch lie {
            case .anotherETag:
                headers = [("ETag", "\"v2\""), ("Content-Range", "bytes \(start)-\(end)/\(new.count)")]
            case .wrongStart:
                body = Array(new[(start + 10)...])
                headers.append(("Content-Range", "bytes \(start + 10)-\(end)/\(new.count)"))
            case .inconsistentTotal:
                headers.append(("Content-Range", "bytes \(start)-\(end)/\(new.count + 4096)"))
            case .noContentRange:
                break
            case .lengthNotTheRange:
                headers.append(("Content-Range", "bytes \(start)-\(end + 100)/\(new.count + 100)"))
            case .wholeFileWith200:
                status = 200
                headers = [("ETag", "\"v2\"")]
                body = new
            }
            return HTTPServerResponse(status: status, headers: headers, body: .bytes(body))
        }
        let directory = TemporaryDirectory.make(prefix: "dl-lie")
        let url = server.baseURL + "/doc.bin"
        // An earlier run left the first 100,000 bytes of version 1, with its ETag.
        try Self.leavePartial(old.prefix(100_000), etag: "\"v1\"", of: url, in: directory)

        let result = try Douctl().run("download", url, "-d", directory, "--continue")
        #expect(result.status == 0, "\(result)")
        let requests = server.received
        #expect(requests.first?.header("Range") == "bytes=100000-")
        #expect(requests.first?.header("If-Range") == "\"v1\"")
        if lie == .wholeFileWith200 {
            #expect(requests.count == 1)
        } else {
            #expect(requests.count == 2, "one more request, for the whole file")
            #expect(requests.last?.header("Range") == nil)
        }
        #expect(DownloadTests.read(directory + "/doc.bin") == new, "the new version whole, never spliced")
        let line = try #require(try result.lines().first)
        #expect(line["sha256"]?.stringValue == DownloadTests.sha256(new))
        #expect(line["bytes"]?.intValue == new.count)
        #expect(line["resumed_from"] == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["doc.bin"], "no temp files left")
    }

    /// What an earlier, broken `download --continue` of `url` leaves in `directory`: the
    /// partial file and its saved validator.
    static func leavePartial(_ bytes: ArraySlice<UInt8>, etag: String, of url: String, in directory: String) throws {
        let partial = directory + "/" + partialName("doc.bin", url: url)
        try Data(bytes).write(to: URL(fileURLWithPath: partial))
        try Data(etag.utf8).write(to: URL(fileURLWithPath: partial + "-validator"))
    }

    @Test func anHonestResumeStillContinues() throws {
        let body = DownloadTests.content(200_000)
        let server = try TestServer { received in
            guard let range = received.header("Range"), received.header("If-Range") == "\"v1\"" else {
                return HTTPServerResponse(status: 200, headers: [("ETag", "\"v1\"")], body: .bytes(body))
            }
            let start = Int(range.dropFirst(6).dropLast()) ?? 0
            return HTTPServerResponse(status: 206, headers: [("ETag", "\"v1\""), ("Content-Range", "bytes \(start)-\(body.count - 1)/\(body.count)")],
                                      body: .bytes(Array(body[start...])))
        }
        let directory = TemporaryDirectory.make(prefix: "dl-honest")
        let url = server.baseURL + "/doc.bin"
        try Self.leavePartial(body.prefix(100_000), etag: "\"v1\"", of: url, in: directory)
        let result = try Douctl().run("download", url, "-d", directory, "--continue")
        #expect(result.status == 0, "\(result)")
        #expect(server.received.count == 1)
        #expect(DownloadTests.read(directory + "/doc.bin") == body)
        #expect(try result.lines().first?["resumed_from"]?.intValue == 100_000)
    }
}
