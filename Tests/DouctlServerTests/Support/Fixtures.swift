import Foundation
import Testing
import DouctlServer
import DouctlSystem
import DouctlTestSupport

/// Starts a server on a free loopback port, runs `body`, and stops the server.
func withServer<Result>(limits: HTTPServerLimits = HTTPServerLimits(), handler: @escaping HTTPHandler,
                        _ body: (HTTPServer) throws -> Result) throws -> Result {
    let server = try HTTPServer(limits: limits, handler: handler)
    try server.start()
    defer { server.stop() }
    return try body(server)
}

/// Limits with short timeouts, for tests that wait for one to fire.
func quickLimits(_ adjust: (inout HTTPServerLimits) -> Void = { _ in }) -> HTTPServerLimits {
    var limits = HTTPServerLimits()
    limits.idleTimeout = 0.5
    limits.headerReadTimeout = 0.5
    limits.ioTimeout = 2
    adjust(&limits)
    return limits
}

/// Describes the request it got, one `key=value` line each, having read the whole body:
/// tests check what the server decoded by reading the reply.
let echoHandler: HTTPHandler = { request in
    var lines = ["method=\(request.method)", "path=\(request.path)", "rawPath=\(request.rawPath)",
                 "target=\(request.target)", "version=\(request.version)"]
    for field in request.query { lines.append("query:\(field.name)=\(field.value)") }
    do {
        let body = try request.body.readAll(limit: 16 << 20)
        lines.append("bodyLength=\(body.count)")
        lines.append("body=\(String(decoding: body, as: UTF8.self))")
        for trailer in request.body.trailers { lines.append("trailer:\(trailer.name)=\(trailer.value)") }
    } catch {
        lines.append("bodyError=\(error)")
        return .text(500, lines.joined(separator: "\n") + "\n")
    }
    return .text(200, lines.joined(separator: "\n") + "\n")
}

/// The `key=value` lines of an echo reply.
func echoFields(_ text: String) -> [String] {
    text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
}

/// Runs /usr/bin/curl with `arguments`; stdout and stderr go through files so neither can fill
/// a pipe and stall curl.
func runCurl(_ arguments: [String]) throws -> (exitCode: Int32, stdout: [UInt8], stderr: String) {
    let directory = try TemporaryDirectory()
    let outPath = directory.path + "/stdout"
    let errPath = directory.path + "/stderr"
    guard FileManager.default.createFile(atPath: outPath, contents: nil),
          FileManager.default.createFile(atPath: errPath, contents: nil) else {
        throw TestFailure("cannot create curl output files")
    }
    let curl = try Tools.require("curl")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: curl)
    process.arguments = ["--silent", "--show-error", "--max-time", "120"] + arguments
    guard let out = FileHandle(forWritingAtPath: outPath), let err = FileHandle(forWritingAtPath: errPath) else {
        throw TestFailure("cannot open curl output files")
    }
    process.standardOutput = out
    process.standardError = err
    try process.runAlone()
    process.waitUntilExit()
    try out.close()
    try err.close()
    return (process.terminationStatus, try readWholeFile(outPath), String(decoding: try readWholeFile(errPath), as: UTF8.self))
}

extension TemporaryDirectory {
    /// Writes `size` bytes of a deterministic pattern that contains CRs, LFs and dashes, the
    /// bytes a multipart parser has to be careful with.
    func makeFile(named name: String, size: Int) throws -> String {
        let file = path + "/" + name
        let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw SystemError("open", path: file) }
        defer { close(fd) }
        var generator = SplitMix64(seed: UInt64(size))
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        var left = size
        while left > 0 {
            let count = min(left, chunk.count)
            chunk.withUnsafeMutableBytes { raw in
                let words = raw.bindMemory(to: UInt64.self)
                for index in words.indices { words[index] = generator.next() }
            }
            for index in stride(from: 0, to: count, by: 997) { chunk[index] = UInt8(ascii: "\r") }
            for index in stride(from: 1, to: count, by: 997) { chunk[index] = UInt8(ascii: "\n") }
            for index in stride(from: 2, to: count, by: 997) { chunk[index] = UInt8(ascii: "-") }
            try FileIO.writeAll(fd, Array(chunk[..<count]))
            left -= count
        }
        return file
    }
}

/// True when the two files have the same bytes, compared a megabyte at a time with memcmp
/// (element-by-element loops are slow in debug builds).
func filesAreEqual(_ first: String, _ second: String) throws -> Bool {
    let a = open(first, O_RDONLY)
    let b = open(second, O_RDONLY)
    defer {
        if a >= 0 { close(a) }
        if b >= 0 { close(b) }
    }
    guard a >= 0, b >= 0 else { throw SystemError("open") }
    let size = 1 << 20
    let left = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
    let right = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
    defer {
        left.deallocate()
        right.deallocate()
    }
    while true {
        let got = readFully(a, left, size)
        guard got == readFully(b, right, size), got >= 0 else { return false }
        if got == 0 { return true }
        if memcmp(left, right, got) != 0 { return false }
    }
}

/// A whole file, read in one go (`FileIO.readFile` grows its array piecewise, which is slow in
/// debug builds for the megabytes these tests use).
func readWholeFile(_ path: String) throws -> [UInt8] {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { throw SystemError("open", path: path) }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else { throw SystemError("fstat", path: path) }
    let size = Int(info.st_size)
    let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
        initialized = max(0, buffer.baseAddress.map { readFully(fd, UnsafeMutableRawPointer($0), size) } ?? 0)
    }
    guard bytes.count == size else { throw TestFailure("short read of \(path)") }
    return bytes
}

/// Reads until `count` bytes or end of file; -1 on error.
private func readFully(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    var total = 0
    while total < count {
        let got = read(fd, buffer + total, count - total)
        if got < 0 { return -1 }
        if got == 0 { break }
        total += got
    }
    return total
}

