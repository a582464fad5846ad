#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlCore
import DouctlHTTP
import DouctlSystem

/// `--input -` from a pipe, sent with a `Content-Length` as `curl -d @-` sends it: Django's
/// runserver and other WSGI servers cannot read a chunked request body (the README's own
/// stdin JSON example failed against Django REST Framework with "Bad request syntax
/// ('1b')"). Standard input is read first: up to `memoryLimit` in memory, the rest spilled
/// to a private temporary file (mkstemp: 0600, O_EXCL; unlinked at once where the open
/// descriptor can still be named, /proc/self/fd, else removed when douctl exits), so memory
/// stays flat whatever the size. `-H 'Transfer-Encoding: chunked'` keeps the stream chunked.
enum StdinBody {
    /// Bodies up to this size stay in memory.
    static let memoryLimit = 1 << 20

    /// The whole of standard input (after `prefix`, already read) as a body of known length.
    /// Reading stops, with nothing sent, at --max-time or Ctrl-C (`stdin.cancellation`).
    static func spooled(_ stdin: StandardInput, prefix: [UInt8], temporaryDirectory: String? = nil) throws(DouctlError) -> RequestBody {
        var held = prefix
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while held.count < memoryLimit {
            let count = try readChunk(stdin, into: &chunk)
            if count == 0 { return .bytes(held) }
            held += chunk.prefix(count)
        }
        let spool = try SpoolFile(directory: temporaryDirectory ?? stdin.spoolDirectory)
        var size = Int64(held.count)
        do {
            try FileIO.writeAll(spool.fd, held)
            held = []
            while true {
                let count = try readChunk(stdin, into: &chunk)
                if count == 0 { break }
                try chunk.withUnsafeBytes { try FileIO.writeAll(spool.fd, UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
                size += Int64(count)
            }
        } catch let error as DouctlError {
            spool.discard()
            throw error
        } catch {
            spool.discard()
            throw .localInput("cannot keep standard input in \(spool.directory) to send it with a Content-Length (\(error)); send it chunked with -H 'Transfer-Encoding: chunked'")
        }
        return .segments([.file(path: spool.sendPath, length: size)])
    }

    /// Whether `-H` asked for a chunked body.
    static func asksForChunked(_ headers: [HTTPHeader]) -> Bool {
        headers.contains { $0.name.lowercased() == "transfer-encoding" && $0.value.lowercased().containsBytes("chunked") }
    }

    private static func readChunk(_ stdin: StandardInput, into chunk: inout [UInt8]) throws(DouctlError) -> Int {
        let got: Int?
        do {
            got = try chunk.withUnsafeMutableBytes { try FileIO.readSome(stdin.fileDescriptor, into: $0, stoppingAt: stdin.cancellation) }
        } catch {
            throw .localInput("cannot read standard input (\(error))")
        }
        guard let got else { throw .interrupted }
        return got
    }

    /// The private file standard input spills into. Its descriptor stays open for the run:
    /// the body is read through it (`/proc/self/fd/N`) after its name is gone.
    private struct SpoolFile {
        let fd: Int32
        let directory: String
        let path: String
        /// What the transport opens to send it.
        let sendPath: String

        init(directory given: String?) throws(DouctlError) {
            var directory = given ?? ""
            if directory.isEmpty { directory = "/tmp" }
            while directory.count > 1 && directory.hasSuffix("/") { directory.removeLast() }
            self.directory = directory
            var template = Array("\(directory)/douctl-stdin-XXXXXX".utf8CString)
            let fd = template.withUnsafeMutableBufferPointer { buffer -> Int32 in
                guard let base = buffer.baseAddress else { return -1 }
                return mkstemp(base)
            }
            guard fd >= 0 else {
                throw .localInput("cannot make a temporary file in \(directory) to send standard input with a Content-Length (\(SystemError("mkstemp").reason)); set TMPDIR, or send it chunked with -H 'Transfer-Encoding: chunked'")
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            self.fd = fd
            path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let named = "/proc/self/fd/\(fd)"
            if FileIO.fileExists(named) {
                unlink(path)
                sendPath = named
            } else {
                sendPath = path
                SpoolFile.removeAtExit(path)
            }
        }

        func discard() {
            close(fd)
            unlink(path)
        }

        private static let leftBehind = LockedValue<[String]>([])

        private static func removeAtExit(_ path: String) {
            let first = leftBehind.withLock { paths -> Bool in
                paths.append(path)
                return paths.count == 1
            }
            if first { ProcessExit.atExit { SpoolFile.leftBehind.withLock { paths in for path in paths { unlink(path) } } } }
        }
    }
}
