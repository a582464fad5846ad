#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlSystem

/// Guesses a file's MIME type: from its first bytes (magic numbers) first, because names
/// lie; then from its extension; else application/octet-stream.
public enum MediaType {
    public static let fallback = "application/octet-stream"

    public static func detect(path: String) -> String {
        sniff(readPrefix(path)) ?? fromExtension(path) ?? fallback
    }

    /// The type announced by the magic bytes, when recognised.
    public static func sniff(_ bytes: [UInt8]) -> String? {
        func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + prefix.count && Array(bytes[offset..<offset + prefix.count]) == prefix
        }
        if starts([0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "image/png" }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return "image/gif" }
        if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return "image/webp" }
        if starts(Array("BM".utf8)) && bytes.count >= 14 { return "image/bmp" }
        if starts(Array("%PDF-".utf8)) { return "application/pdf" }
        if starts([0x50, 0x4B, 0x03, 0x04]) { return "application/zip" }
        if starts([0x1F, 0x8B]) { return "application/gzip" }
        if starts(Array("ftyp".utf8), at: 4) { return "video/mp4" }
        if starts(Array("ID3".utf8)) { return "audio/mpeg" }
        return nil
    }

    public static func fromExtension(_ path: String) -> String? {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return nil }
        let table: [String: String] = [
            "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif",
            "webp": "image/webp", "bmp": "image/bmp", "svg": "image/svg+xml", "heic": "image/heic",
            "txt": "text/plain", "md": "text/markdown", "html": "text/html", "htm": "text/html",
            "css": "text/css", "csv": "text/csv", "json": "application/json", "xml": "application/xml",
            "pdf": "application/pdf", "zip": "application/zip", "gz": "application/gzip",
            "tar": "application/x-tar", "mp4": "video/mp4", "mov": "video/quicktime",
            "mp3": "audio/mpeg", "wav": "audio/wav", "js": "text/javascript",
        ]
        return table[name[name.index(after: dot)...].lowercased()]
    }

    /// Up to 16 bytes from the start of the file (empty when unreadable).
    public static func readPrefix(_ path: String, count: Int = 16) -> [UInt8] {
        let fd = open(EscapedBytes.cString(path), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: count)
        let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, count) }
        return got > 0 ? Array(buffer[0..<got]) : []
    }
}
