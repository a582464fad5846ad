#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlServer
import DouctlSystem

/// Streams an uploaded picture part to a temporary file in the picture store, so a huge
/// upload never sits in memory. Past `limit` the file is dropped and the rest of the part
/// is read and discarded, so the reply can still be sent on the same connection.
struct PictureStaging {
    /// What became of the part.
    enum Outcome {
        /// On disk at `path` (the caller moves it into place, or unlinks it).
        case stored(path: String)
        case tooLarge
        case writeFailed(SystemError)
    }

    /// The part as recorded for tests, the outcome, and the first bytes (for format sniffing).
    struct Result {
        var record: RecordedPart
        var outcome: Outcome
        var size: Int64
        var head: [UInt8]
    }

    static let headBytes = 64 * 1024

    static func stage(_ part: MultipartPart, in directory: String, limit: Int64) throws -> Result {
        let path = directory + "/.upload-" + Secrets.hex(byteCount: 8)
        var fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SystemError("open", path: path) }
        func discardFile() {
            close(fd)
            unlink(path)
            fd = -1
        }
        var size: Int64 = 0
        var head: [UInt8] = []
        var kept: [UInt8]? = []
        var writeFailure: SystemError?
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        defer {
            buffer.deallocate()
            if fd >= 0 { discardFile() }
        }
        while true {
            let count = try part.read(into: buffer)
            if count == 0 { break }
            size += Int64(count)
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[..<count])
            if head.count < headBytes { head.append(contentsOf: chunk.prefix(headBytes - head.count)) }
            if var current = kept {
                kept = nil // so `current` is the only reference and grows in place
                if current.count + count <= RecordedPart.keptBytesLimit {
                    current.append(contentsOf: chunk)
                    kept = current
                }
            }
            guard fd >= 0 else { continue } // past the limit, or a failed write: read and discard
            if size > limit {
                discardFile()
                continue
            }
            do {
                try FileIO.writeAll(fd, chunk)
            } catch {
                writeFailure = (error as? SystemError) ?? SystemError("write", path: path)
                discardFile()
            }
        }
        let record = RecordedPart(name: part.name, filename: part.filename, contentType: part.contentType, size: size, bytes: kept)
        let outcome: Outcome
        if let writeFailure {
            outcome = .writeFailed(writeFailure)
        } else if size > limit {
            outcome = .tooLarge
        } else {
            close(fd)
            fd = -1 // kept: the caller owns the file now
            outcome = .stored(path: path)
        }
        return Result(record: record, outcome: outcome, size: size, head: head)
    }
}
