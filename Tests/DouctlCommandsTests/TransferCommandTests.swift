@testable import DouctlCommands
import DouctlArguments
import DouctlCore
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Testing

/// `douctl upload` and `douctl download` twice: argv → typed options (with the -o/-d/--continue
/// and -f refusals `validate()` makes before anything is read or sent), and options + a
/// scripted transport → stdout, stderr, files on disk, exit, in process.
@Suite struct TransferCommandTests {
    static let base = ["--api-base", InProcessDouctl.scriptedBase]

    /// A reply whose body is `text` (typed application/json, as the scripted transport's replies are).
    static func body(_ status: Int, _ text: String) -> ScriptedTransport.Answer { .json(status, text) }

    // MARK: - upload: argv → options

    @Test func uploadBindsEveryOption() throws {
        let upload = try boundOptions(["upload", "a.jpg", "b.jpg", "--to", "/api/files", "--field", "file", "-f", "dir=backup", "-f", "k=a=b",
                                       "--parallel", "8", "--progress", "always", "-y", "--json"], as: UploadCommand.Options.self)
        #expect(upload.files == ["a.jpg", "b.jpg"])
        #expect(upload.to == "/api/files" && upload.field == "file")
        #expect(upload.fields == [KeyValue("dir", "backup"), KeyValue("k", "a=b")], "split at the first '=', as bound")
        #expect(upload.parallel == 8 && upload.progress == .always && upload.yes && upload.view.json)
        let plain = try boundOptions(["upload", "a.jpg"], as: UploadCommand.Options.self)
        #expect(plain.to == nil && plain.field == nil && plain.fields.isEmpty)
        #expect(plain.parallel == 1 && plain.progress == .auto && !plain.yes)
        #expect(throws: UsageError.self) { try boundOptions(["upload", "a.jpg", "--parallel", "65"], as: UploadCommand.Options.self) }
        #expect(throws: UsageError.self) { try boundOptions(["upload", "a.jpg", "--progress", "sometimes"], as: UploadCommand.Options.self) }
    }

    @Test(arguments: ["novalue", "=v"])
    func uploadRefusesAFieldWithoutAKey(field: String) throws {
        #expect(throws: OptionError("invalid field '\(field)' for -f: expected KEY=VALUE")) {
            try boundOptions(["upload", "a.jpg", "-f", field], as: UploadCommand.Options.self)
        }
    }

    // MARK: - download: argv → options

    @Test func downloadBindsEveryOption() throws {
        let download = try boundOptions(["download", "https://e.com/a", "-o", "-", "--parallel", "3", "--force", "--progress", "never"],
                                        as: DownloadCommand.Options.self)
        #expect(download.sources == ["https://e.com/a"] && download.parallel == 3 && download.progress == .never)
        #expect(download.resolved == DownloadOptions(target: .standardOutput, overwrite: true))
        let resume = try boundOptions(["download", "/view/a.jpg", "-c", "-o", "a.jpg"], as: DownloadCommand.Options.self)
        #expect(resume.resolved == DownloadOptions(target: .file("a.jpg"), resume: true))
        let into = try boundOptions(["download", "https://e.com/a", "https://e.com/b", "-d", "pics"], as: DownloadCommand.Options.self)
        #expect(into.resolved == DownloadOptions(target: .directory("pics")))
        let here = try boundOptions(["download", "https://e.com/a"], as: DownloadCommand.Options.self)
        #expect(here.resolved == DownloadOptions(target: .directory(".")))
        #expect(here.parallel == 1 && here.progress == .auto)
    }

    @Test(arguments: [
        (["https://e.com/a", "https://e.com/b", "-o", "f"], "-o names one file; with several URLs use -d DIR"),
        (["https://e.com/a", "-o", "f", "-d", "d"], "-o and -d cannot be used together"),
        (["https://e.com/a", "-o", ""], "invalid value '' for -o: expected a file name or -"),
        (["https://e.com/a", "-o", "-", "--continue"], "--continue cannot resume a download to stdout"),
        (["https://e.com/a", "-d", ""], "invalid value '' for -d: expected a directory"),
        (["ftp://e.com/a"], "cannot download 'ftp://e.com/a': expected an http:// or https:// URL, or a path under the API"),
        ([""], "cannot download '': expected an http:// or https:// URL, or a path under the API"),
    ])
    func downloadRefusals(arguments: [String], message: String) throws {
        #expect(throws: OptionError(message)) { try boundOptions(["download"] + arguments, as: DownloadCommand.Options.self) }
    }

    @Test func aDownloadRefusalSendsNothing() throws {
        let transport = ScriptedTransport()
        let result = try InProcessDouctl.scripted(transport).run(["download", "http://api.test/a", "http://api.test/b", "-o", "f"] + Self.base)
        #expect(result.status == 2, "\(result)")
        #expect(result.stderr.hasPrefix("douctl: -o names one file; with several URLs use -d DIR\nusage: douctl download"))
        #expect(transport.requests.isEmpty)
    }

    // MARK: - upload: options + scripted transport → output

    @Test func uploadOfTwoFilesPrintsOneLineEachInOrder() throws {
        let a = try TemporaryDirectory.file(named: "a.txt", bytes: Array("alpha".utf8))
        let b = try TemporaryDirectory.file(named: "b.txt", bytes: Array("beta".utf8))
        let transport = ScriptedTransport([.json(200, #"{"id":1}"#), .json(200, #"{"id":2}"#)])
        let result = try InProcessDouctl.scripted(transport).run(["upload", a, b, "--to", "/api/files", "--field", "file", "-f", "dir=backup"] + Self.base)
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.isEmpty, "no progress in a pipe")
        let lines = try result.lines()
        #expect(lines.map { $0["file"]?.stringValue } == [a, b])
        #expect(lines.map { $0["ok"] } == [.bool(true), .bool(true)])
        #expect(lines.map { $0["reply"]?["id"]?.int64Value } == [1, 2])
        #expect(transport.requests.map { "\($0.method) \($0.url)" } == ["POST http://api.test/api/files", "POST http://api.test/api/files"])
        for (request, path) in zip(transport.requests, [a, b]) {
            #expect(request.header("Content-Type")?.hasPrefix("multipart/form-data; boundary=") == true)
            guard case .segments(let segments) = request.body else { throw TestFailure("not multipart: \(request.body)") }
            let framing = segments.compactMap { segment -> String? in
                if case .bytes(let bytes) = segment { return String(decoding: bytes, as: UTF8.self) }
                return nil
            }.joined()
            #expect(framing.contains("name=\"dir\"\r\n\r\nbackup\r\n"))
            #expect(framing.contains("name=\"file\"; filename=\"\(FileIO.baseName(path))\""))
            #expect(segments.contains { if case .file(path, _) = $0 { return true } else { return false } })
        }
    }

    @Test func oneFailedUploadDoesNotStopTheOtherAndSetsTheExit() throws {
        let a = try TemporaryDirectory.file(named: "a.txt", bytes: Array("alpha".utf8))
        let b = try TemporaryDirectory.file(named: "b.txt", bytes: Array("beta".utf8))
        let transport = ScriptedTransport([.json(404, #"{"code":404,"msg":"no such endpoint"}"#), .json(200, #"{"id":2}"#)])
        let result = try InProcessDouctl.scripted(transport).run(["upload", a, b, "--to", "/api/files"] + Self.base)
        #expect(result.status == 5, "\(result)")
        let lines = try result.lines()
        #expect(lines.map { $0["ok"] } == [.bool(false), .bool(true)])
        #expect(lines.first?["exit"]?.int64Value == 5)
        #expect(lines.first?["file"]?.stringValue == a)
        let errors = result.stderr.split(separator: "\n")
        #expect(errors.count == 1 && errors.first?.hasPrefix("douctl: \(a): ") == true, "\(result)")
    }

    @Test func uploadToTheStatusEndpointChecksEachPictureFirst() throws {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 7, count: 24)
        let picture = try TemporaryDirectory.file(named: "a.png", bytes: png)
        let text = try TemporaryDirectory.file(named: "notes.txt", bytes: Array("not a picture".utf8))
        let status = #"{"id":"7","text":"","created_at":"2026-11-24 10:00:00"}"#
        let transport = ScriptedTransport([.json(200, status)])
        let result = try InProcessDouctl.scripted(transport).run(["upload", picture, text] + Self.base)
        #expect(result.status == 3, "\(result)")
        // Issue 40: every file is checked before the first is posted (before: a.png went
        // public, then notes.txt failed).
        #expect(result.stdout.isEmpty, "\(result)")
        #expect(result.stderr == "douctl: \(text) is not a JPEG, GIF or PNG picture (Douban accepts only those) (nothing was posted: every file is checked before the first is sent)\n", "\(result)")
        #expect(transport.requests.isEmpty, "nothing is sent")
        // Pictures that pass go, each with the login.
        let good = ScriptedTransport([.json(200, status)])
        #expect(try InProcessDouctl.scripted(good).run(["upload", picture] + Self.base).status == 0)
        #expect(good.requests.first?.header("Authorization") == "Bearer t0ken")
    }

    @Test func uploadProgressAlwaysPrintsPlainLinesInAPipe() throws {
        let a = try TemporaryDirectory.file(named: "a.txt", bytes: Array("alpha".utf8))
        let transport = ScriptedTransport([.json(200, #"{"id":1}"#)])
        let result = try InProcessDouctl.scripted(transport).run(["upload", a, "--to", "/api/files", "--progress", "always"] + Self.base)
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.contains("done, "), "\(result)")
        #expect(!result.stderr.contains("\u{1B}["), "no redraws outside a terminal")
    }

    // MARK: - download: options + scripted transport → output

    @Test func downloadOfTwoSourcesIntoADirectory() throws {
        let directory = try TemporaryDirectory(prefix: "transfer-download")
        let transport = ScriptedTransport([Self.body(200, "hello"), Self.body(200, "world")])
        let result = try InProcessDouctl.scripted(transport).run(["download", "http://api.test/files/a.txt", "/files/b.bin", "-d", directory.path] + Self.base)
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.isEmpty, "no progress in a pipe")
        #expect(try FileIO.readFile(directory.path + "/a.txt") == Array("hello".utf8))
        #expect(try FileIO.readFile(directory.path + "/b.bin") == Array("world".utf8))
        let lines = try result.lines()
        #expect(lines.map { $0["url"]?.stringValue } == ["http://api.test/files/a.txt", "http://api.test/files/b.bin"])
        #expect(lines.map { $0["path"]?.stringValue } == [directory.path + "/a.txt", directory.path + "/b.bin"])
        #expect(lines.map { $0["bytes"]?.int64Value } == [5, 5])
        #expect(lines.first?["mime"]?.stringValue == "application/json", "the reply's Content-Type")
        #expect(lines.first?["sha256"]?.stringValue == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824")
        #expect(transport.requests.map(\.url) == ["http://api.test/files/a.txt", "http://api.test/files/b.bin"])
    }

    @Test func downloadToStdoutPrintsTheBodyAlone() throws {
        let transport = ScriptedTransport([Self.body(200, "hello")])
        let result = try InProcessDouctl.scripted(transport).run(["download", "http://api.test/a.txt", "-o", "-"] + Self.base)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == "hello")
    }

    @Test func aFailedDownloadIsItsLineAndTheExit() throws {
        let directory = try TemporaryDirectory(prefix: "transfer-download")
        let transport = ScriptedTransport([Self.body(404, "gone")])
        let result = try InProcessDouctl.scripted(transport).run(["download", "http://api.test/a.txt", "-d", directory.path] + Self.base)
        #expect(result.status == 5, "\(result)")
        let line = try #require(try result.lines().first)
        #expect(line["ok"] == .bool(false) && line["exit"]?.int64Value == 5 && line["url"]?.stringValue == "http://api.test/a.txt")
        #expect(result.errorLine.hasPrefix("douctl: http://api.test/a.txt: "), "\(result)")
        #expect((try? FileIO.readFile(directory.path + "/a.txt")) == nil, "no file for a failed download")
    }

    @Test(arguments: [("auto", false), ("never", false), ("always", true)])
    func downloadProgressInAPipe(mode: String, shown: Bool) throws {
        let directory = try TemporaryDirectory(prefix: "transfer-progress")
        let transport = ScriptedTransport([Self.body(200, "hello")])
        let result = try InProcessDouctl.scripted(transport).run(["download", "http://api.test/a.txt", "-d", directory.path, "--progress", mode] + Self.base)
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.contains("done, ") == shown, "\(result)")
        #expect(!result.stderr.contains("\u{1B}["))
    }
}
