#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Issue 30: argv is bytes. An argument that is not UTF-8 used to become U+FFFD: `-f
/// t=$'\xff\xfe'` sent %EF%BF%BD%EF%BF%BD, PATH `/a$'\xff'` went out as /a%ef%bf%bd,
/// `--attach k=$'\xff.txt'` said "No such file" though it existed, and `-o` wrote under
/// another name, mostly with exit 0. Now the bytes reach the wire and the file system as
/// they were typed, as curl keeps them; the built binary, spawned with raw argv, against a
/// raw listener on 127.0.0.1 that keeps every byte it received.
@Suite("Command-line bytes that are not UTF-8")
struct ArgvBytesTests {
    let douctl = Douctl(environment: ["DOUCTL_TOKEN": "t"])

    @Test func aFieldKeepsItsBytesOnTheWire() throws {
        let listener = try ByteRecorder()
        let result = try run([bytes("api"), bytes("-X"), bytes("POST"), bytes("/x"), bytes("-f"), bytes("t=") + [0xFF, 0xFE], bytes("-f"), bytes("u=你好"), bytes("--api-base"), bytes(listener.baseURL)])
        #expect(result.status == 0, "\(result)")
        let sent = try #require(try listener.waitForConnections(1).first)
        #expect(Self.contains(sent, bytes("\r\n\r\nt=%FF%FE&u=%E4%BD%A0%E5%A5%BD")), "\(String(decoding: sent, as: UTF8.self))")
    }

    @Test func aPathKeepsItsBytes() throws {
        let listener = try ByteRecorder()
        let result = try run([bytes("api"), bytes(listener.baseURL + "/a") + [0xFF] + bytes("?q=") + [0xFE]])
        #expect(result.status == 0, "\(result)")
        let sent = try #require(try listener.waitForConnections(1).first)
        // As curl sends it: libcurl percent-encodes the path's byte (%ff) and passes the
        // query's as it is.
        let line = sent.prefix { $0 != 0x0D }.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
        #expect(line == bytes("get /a%ff?q=") + [0xFE] + bytes(" http/1.1"), "\(String(decoding: line, as: UTF8.self))")
    }

    @Test func aHeaderValueKeepsItsBytes() throws {
        let listener = try ByteRecorder()
        let result = try run([bytes("api"), bytes(listener.baseURL + "/x"), bytes("-H"), bytes("X-A: a") + [0xFF]])
        #expect(result.status == 0, "\(result)")
        let sent = try #require(try listener.waitForConnections(1).first)
        #expect(Self.contains(sent, bytes("\r\nX-A: a") + [0xFF] + bytes("\r\n")))
    }

    /// The file named by bytes is the one sent, under its own name.
    @Test func anAttachmentNamedByBytesIsFoundAndSent() throws {
        let listener = try ByteRecorder()
        let directory = try TemporaryDirectory()
        let name = bytes(directory.path + "/") + [0xFF] + bytes(".txt")
        try Self.write(bytes("contents"), to: name)
        let result = try run([bytes("api"), bytes("/x"), bytes("--attach"), bytes("k=") + name, bytes("--api-base"), bytes(listener.baseURL)])
        #expect(result.status == 0, "\(result)")
        let sent = try #require(try listener.waitForConnections(1).first)
        #expect(Self.contains(sent, bytes("name=\"k\"; filename=\"") + [0xFF] + bytes(".txt\"\r\n")))
        #expect(Self.contains(sent, bytes("\r\n\r\ncontents\r\n")))
    }

    /// `api -o` and `download -o` write the name given, byte for byte, and nothing else.
    @Test func outputFilesAreWrittenUnderTheirOwnNames() throws {
        let listener = try ByteRecorder(reply: { _ in ByteRecorder.ok(#"{"a":1}"#) })
        let directory = try TemporaryDirectory()
        let apiName = bytes(directory.path + "/api") + [0xFF] + bytes(".json")
        let downloadName = bytes(directory.path + "/dl") + [0xFE] + bytes(".bin")
        let api = try run([bytes("api"), bytes(listener.baseURL + "/x"), bytes("-o"), apiName])
        #expect(api.status == 0, "\(api)")
        let download = try run([bytes("download"), bytes(listener.baseURL + "/f"), bytes("-o"), downloadName])
        #expect(download.status == 0, "\(download)")
        #expect(Self.read(apiName) == bytes(#"{"a":1}"#))
        #expect(Self.read(downloadName) == bytes(#"{"a":1}"#))
        #expect(Set(try Self.names(in: directory.path)) == [bytes("api") + [0xFF] + bytes(".json"), bytes("dl") + [0xFE] + bytes(".bin")])
    }

    /// Where it must refuse, it says so in one line, showing the byte as \xff; nothing is sent.
    @Test func refusalsShowTheBytes() throws {
        let listener = try ByteRecorder()
        let missing = try run([bytes("api"), bytes("/x"), bytes("--attach"), bytes("k=/nonexistent/") + [0xFF], bytes("--api-base"), bytes(listener.baseURL)])
        #expect(missing.status == 3, "\(missing)")
        #expect(missing.stderr == "douctl: cannot read /nonexistent/\\xff: No such file or directory\n", "\(missing)")
        let json = try run([bytes("api"), bytes("/x"), bytes("--json"), bytes("-f"), bytes("t=") + [0xFF], bytes("--api-base"), bytes(listener.baseURL)])
        #expect(json.status == 2, "\(json)")
        #expect(json.stderr == "douctl: field 't' is not UTF-8 (byte 0xFF), which a JSON body cannot carry; send it in a form (without --json) or as a file part (--attach)\n")
        #expect(listener.acceptedCount == 0)
    }

    /// The dry run's curl line sends the same bytes when a shell runs it.
    @Test func theDryRunLineCarriesTheBytes() throws {
        let result = try run([bytes("--dry-run"), bytes("api"), bytes("-X"), bytes("POST"), bytes("/x"), bytes("-H"), bytes("X-A: ") + [0xFF], bytes("--api-base"), bytes("http://127.0.0.1:9")])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText.contains("-H $'X-A: \\xff'"), "\(result.stdoutText)")
    }

    // MARK: - support

    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return needle.isEmpty }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if haystack[start..<(start + needle.count)].elementsEqual(needle) { return true }
        }
        return false
    }

    static func cPath(_ path: [UInt8]) -> [CChar] { path.map { CChar(bitPattern: $0) } + [0] }

    static func write(_ contents: [UInt8], to path: [UInt8]) throws {
        let fd = open(cPath(path), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SystemError("open") }
        defer { close(fd) }
        try FileIO.writeAll(fd, contents)
    }

    static func read(_ path: [UInt8]) -> [UInt8]? {
        let fd = open(cPath(path), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return try? FileIO.readAll(fd)
    }

    /// The names in a directory as bytes (readdir, not through the code under test).
    static func names(in directory: String) throws -> [[UInt8]] {
        guard let handle = opendir(directory) else { throw SystemError("opendir") }
        defer { closedir(handle) }
        var names: [[UInt8]] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            if name != [0x2E] && name != [0x2E, 0x2E] { names.append(name) }
        }
        return names
    }

    /// Spawns the built douctl with `arguments` as raw bytes (Foundation's Process takes
    /// only Strings), stdin /dev/null, stdout and stderr into files.
    func run(_ arguments: [[UInt8]], timeout: Double = 60) throws -> CommandResult {
        let scratch = try TemporaryDirectory(prefix: "douctl-argv")
        let outPath = scratch.path + "/stdout", errPath = scratch.path + "/stderr"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv: [UnsafeMutablePointer<CChar>?] = ([Array(Douctl.binary.utf8)] + arguments).map { word in
            let copy = UnsafeMutablePointer<CChar>.allocate(capacity: word.count + 1)
            for (index, byte) in word.enumerated() { copy[index] = CChar(bitPattern: byte) }
            copy[word.count] = 0
            return copy
        }
        let envp = douctl.environment.map { strdup("\($0.key)=\($0.value)") }
        defer {
            argv.forEach { $0?.deallocate() }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        var argvArray = argv + [nil]
        var envpArray = envp + [nil]
        let spawned = posix_spawn(&pid, Douctl.binary, &actions, nil, &argvArray, &envpArray)
        guard spawned == 0 else { throw SystemError("posix_spawn", errno: spawned) }
        // Waited for as the closed-descriptor tests wait for theirs.
        return WalksAndOutputTests.Child(pid: pid, stdoutPath: outPath, stderrPath: errPath).wait(timeout: timeout)
    }
}
