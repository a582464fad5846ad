import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// `download --continue` like `curl -C -` and `wget -c`: a file already at the destination,
/// whoever wrote it, is resumed from its size; a whole one is left as it is, exit 0.
@Suite("douctl download --continue: a file already there")
struct DownloadContinueTests {
    static func inode(_ path: String) -> ino_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_ino : nil
    }

    @Test(arguments: [false, true])
    func aFileFromAnotherToolIsResumedFromItsSize(_ directoryMode: Bool) throws {
        let body = DownloadTests.content(300_000)
        let server = try RangeServer(body) { _, _ in nil }
        let directory = TemporaryDirectory.make(prefix: "dl-continue")
        let url = server.baseURL + "/partial.iso"
        let target = directory + "/partial.iso"
        try Data(body.prefix(120_000)).write(to: URL(fileURLWithPath: target))  // what curl left

        let arguments = directoryMode ? ["-d", directory] : ["-o", target]
        let result = try Douctl().run(["download", url, "--continue"] + arguments)
        #expect(result.status == 0, "\(result)")
        let request = try #require(server.server.received.last)
        #expect(request.header("Range") == "bytes=120000-")
        #expect(request.header("If-Range") == nil, "a foreign file has no validator")
        #expect(DownloadTests.read(target) == body)
        let line = try #require(try result.lines().first)
        #expect(line["resumed_from"]?.intValue == 120_000)
        #expect(line["bytes"]?.intValue == body.count)
        #expect(line["sha256"]?.stringValue == DownloadTests.sha256(body))
        #expect(DownloadTests.partials(directory).isEmpty)
    }

    @Test func aCompleteFileEndsWithExitZeroAndIsLeftAsItIs() throws {
        let body = DownloadTests.content(50_000)
        let server = try RangeServer(body) { _, _ in nil }
        let directory = TemporaryDirectory.make(prefix: "dl-complete")
        let target = directory + "/done.bin"
        try Data(body).write(to: URL(fileURLWithPath: target))
        let before = Self.inode(target)

        let result = try Douctl().run("download", server.baseURL + "/done.bin", "-o", target, "--continue")
        #expect(result.status == 0, "\(result)")
        #expect(server.server.received.last?.header("Range") == "bytes=50000-")
        #expect(result.stderr.contains("already complete"), "says so: \(result)")
        let line = try #require(try result.lines().first)
        #expect(line["already_complete"]?.boolValue == true)
        #expect(line["sha256"]?.stringValue == DownloadTests.sha256(body))
        #expect(DownloadTests.read(target) == body)
        #expect(Self.inode(target) == before, "not rewritten")
        #expect(DownloadTests.partials(directory).isEmpty)
    }

    /// An earlier --continue run fetched it all into the temp file and was killed before the
    /// rename: the whole temp file replaces the shorter file, rather than the short one
    /// being called complete.
    @Test func aWholeTempFileFromAnEarlierRunReplacesTheShorterFile() throws {
        let body = DownloadTests.content(50_000)
        let server = try RangeServer(body) { _, _ in nil }
        let directory = TemporaryDirectory.make(prefix: "dl-whole-temp")
        let url = server.baseURL + "/x.bin"
        try Data(body.prefix(1_000)).write(to: URL(fileURLWithPath: directory + "/x.bin"))
        try Data(body).write(to: URL(fileURLWithPath: directory + "/" + DownloadSafetyTests.partialName("x.bin", url: url)))

        let result = try Douctl().run("download", url, "-d", directory, "--continue")
        #expect(result.status == 0, "\(result)")
        #expect(server.server.received.last?.header("Range") == "bytes=50000-")
        #expect(DownloadTests.read(directory + "/x.bin") == body)
        #expect(try result.lines().first?["already_complete"] == nil)
        #expect(DownloadTests.partials(directory).isEmpty)
    }

    @Test func a416ForAnotherSizeIsAClearErrorAndTheFileStays() throws {
        let body = DownloadTests.content(50_000)
        let server = try RangeServer(body) { _, _ in nil }
        let directory = TemporaryDirectory.make(prefix: "dl-416-other")
        let target = directory + "/big.bin"
        let longer = body + Array("trailing junk".utf8)
        try Data(longer).write(to: URL(fileURLWithPath: target))

        let result = try Douctl().run("download", server.baseURL + "/big.bin", "-o", target, "--continue")
        #expect(result.status == 8, "\(result)")
        #expect(result.errorLine.contains("the server's file is 50000 bytes, \(target) has \(longer.count)"), "\(result)")
        #expect(DownloadTests.read(target) == longer)
        #expect(DownloadTests.partials(directory).isEmpty)
    }

    @Test func aSymbolicLinkAtTheDestinationIsNotResumedThrough() throws {
        let body = DownloadTests.content(10_000)
        let server = try RangeServer(body) { _, _ in nil }
        let directory = TemporaryDirectory.make(prefix: "dl-continue-link")
        let outside = TemporaryDirectory.make(prefix: "dl-outside")
        try Data("precious".utf8).write(to: URL(fileURLWithPath: outside + "/p.bin"))
        try FileManager.default.createSymbolicLink(atPath: directory + "/p.bin", withDestinationPath: outside + "/p.bin")

        let result = try Douctl().run("download", server.baseURL + "/p.bin", "-o", directory + "/p.bin", "--continue")
        #expect(result.status == 3, "\(result)")
        #expect(result.errorLine.contains("symbolic link"), "\(result)")
        #expect(DownloadTests.read(outside + "/p.bin") == Array("precious".utf8))
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: directory + "/p.bin") == outside + "/p.bin")
        #expect(DownloadTests.partials(directory).isEmpty)
        #expect(server.server.received.isEmpty, "nothing asked for")
    }
}
