#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlHTTP
import DouctlSystem

/// A `multipart/form-data` body (RFC 7578) described as parts; `requestBody()` lays it out
/// as memory segments around file segments, so files stream from disk and the total length
/// is known up front (`Content-Length`, never chunked).
public struct MultipartForm: Sendable, Equatable {
    public enum Part: Sendable, Equatable {
        case field(name: String, value: String)
        /// A file part. `filename` defaults to the path's last component; `contentType` to
        /// what `MediaType.detect` finds.
        case file(name: String, path: String, filename: String? = nil, contentType: String? = nil)
        /// In-memory bytes sent as a file part (e.g. `-F field=@-` from stdin).
        case data(name: String, bytes: [UInt8], filename: String, contentType: String)
    }

    public var parts: [Part]
    public var boundary: String

    public init(parts: [Part], boundary: String = MultipartForm.randomBoundary()) {
        self.parts = parts
        self.boundary = boundary
    }

    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    public static func randomBoundary() -> String {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        let random = String((0..<24).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] })
        return "douctl-\(random)"
    }

    /// Files are checked now (exist, regular, readable) so a bad path fails before sending.
    public func requestBody() throws(DouctlError) -> RequestBody {
        var segments: [BodySegment] = []
        var pending: [UInt8] = []
        // Names, values and file names from a command line keep their bytes (EscapedBytes).
        func text(_ string: String) { pending.append(contentsOf: EscapedBytes.bytes(string)) }
        for part in parts {
            text("--\(boundary)\r\n")
            switch part {
            case .field(let name, let value):
                text("Content-Disposition: form-data; name=\"\(Self.escape(name))\"\r\n\r\n")
                text(value)
            case .file(let name, let path, let filename, let contentType):
                let status = try Self.checkReadableFile(path)
                let shownName = filename ?? FileIO.baseName(path)
                text("Content-Disposition: form-data; name=\"\(Self.escape(name))\"; filename=\"\(Self.escape(shownName))\"\r\n")
                text("Content-Type: \(contentType ?? MediaType.detect(path: path))\r\n\r\n")
                segments.append(.bytes(pending))
                pending = []
                segments.append(.file(path: path, length: status.size))
            case .data(let name, let bytes, let filename, let contentType):
                text("Content-Disposition: form-data; name=\"\(Self.escape(name))\"; filename=\"\(Self.escape(filename))\"\r\n")
                text("Content-Type: \(contentType)\r\n\r\n")
                pending.append(contentsOf: bytes)
            }
            text("\r\n")
        }
        text("--\(boundary)--\r\n")
        segments.append(.bytes(pending))
        return .segments(segments)
    }

    /// RFC 7578 §2 / the HTML form rules curl and browsers use: in a quoted name or filename,
    /// '"' becomes %22, CR %0D, LF %0A; other characters, UTF-8 included, stay as they are.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "\"": out += "%22"
            case "\r": out += "%0D"
            case "\n": out += "%0A"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    /// A path that can be uploaded: exists, is a regular file, can be opened for reading.
    @discardableResult
    public static func checkReadableFile(_ path: String) throws(DouctlError) -> FileStatus {
        let status: FileStatus
        do {
            status = try FileIO.status(path)
        } catch {
            throw .localInput("cannot read \(path): \((error as? SystemError)?.reason ?? "\(error)")")
        }
        guard status.isRegularFile else {
            throw .localInput("cannot upload \(path): not a regular file")
        }
        if access(EscapedBytes.cString(path), R_OK) != 0 {
            throw .localInput("cannot read \(path): permission denied")
        }
        return status
    }
}
