import DouctlSystem

/// What `api` does with a reply body that is not JSON when stdout is a person's terminal
/// (in a pipe the bytes always go out as received): binary bytes (an image, an archive,
/// bytes that are not UTF-8 text) are not shown, as xh and HTTPie do ("binary data not
/// shown") and curl refuses ("Binary output can mess up your terminal"), unless `-o -`
/// asks for them; text is shown with what the terminal would obey escaped, as views escape
/// server text (`TerminalText`).
enum TerminalBody {
    /// Media types that are never text a person reads on a terminal.
    static func isBinaryMediaType(_ mediaType: String?) -> Bool {
        guard let type = mediaType?.lowercased() else { return false }
        if type.hasSuffix("+xml") || type.hasSuffix("+json") || type.hasPrefix("text/") { return false }
        for prefix in ["image/", "audio/", "video/", "font/"] where type.hasPrefix(prefix) { return true }
        let binary = ["application/octet-stream", "application/pdf", "application/zip", "application/gzip", "application/x-gzip",
                      "application/x-tar", "application/x-bzip2", "application/x-xz", "application/zstd", "application/wasm",
                      "application/vnd.sqlite3", "application/x-sqlite3", "application/x-protobuf", "application/protobuf",
                      "application/x-msgpack", "application/msgpack", "application/cbor"]
        return binary.contains(type)
    }

    /// Whether a reply is binary: its media type says so, or its first bytes hold a NUL or
    /// are not UTF-8 (a sequence cut by the end of `prefix` is given the benefit of the doubt).
    static func isBinary(mediaType: String?, prefix: some Collection<UInt8>) -> Bool {
        if isBinaryMediaType(mediaType) { return true }
        let bytes = Array(prefix.prefix(8192))
        if bytes.contains(0) { return true }
        var index = 0
        while index < bytes.count {
            let lead = bytes[index]
            let length: Int
            switch lead {
            case 0x00..<0x80: length = 1
            case 0xC2...0xDF: length = 2
            case 0xE0...0xEF: length = 3
            case 0xF0...0xF4: length = 4
            default: return true
            }
            if index + length > bytes.count { return false }
            for offset in 1..<max(length, 1) where bytes[index + offset] & 0xC0 != 0x80 { return true }
            index += length
        }
        return false
    }

    /// The line on stderr instead of a binary body.
    static func notShown(mediaType: String?, size: Int?) -> String {
        var what = mediaType ?? "binary data"
        if let size { what += ", \(ProgressDisplay.bytes(Int64(size)))" }
        return "binary reply (\(what)) not shown on a terminal: use -o FILE to save it, or -o - to print it here anyway"
    }

    /// Text for a terminal as it streams: newlines and tabs kept (and a CR before a
    /// newline), every other control written as an escape (`\r`, `\x1B`, `\u009B`), as
    /// `TerminalText.escaped` writes it; a sequence cut by a chunk's end waits for the next.
    struct Escaper {
        private var pending: [UInt8] = []

        mutating func feed(_ chunk: UnsafeRawBufferPointer) -> [UInt8] {
            var bytes = pending
            bytes.append(contentsOf: chunk)
            pending = []
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count)
            bytes.withUnsafeBytes { buffer in
                var index = 0
                while index < buffer.count {
                    let byte = buffer[index]
                    guard byte < 0x20 || byte == 0x7F || byte == 0xC2 || byte == 0xD8 || byte == 0xE2, byte != 0x0A else {
                        out.append(byte)
                        index += 1
                        continue
                    }
                    if byte == 0x0D {
                        if index + 1 == buffer.count {
                            pending = [byte]
                            return
                        }
                        if buffer[index + 1] == 0x0A {
                            out.append(byte)
                            index += 1
                            continue
                        }
                    }
                    switch TerminalText.scalar(in: buffer, at: index) {
                    case .safe:
                        out.append(byte)
                        index += 1
                    case .incomplete:
                        pending = Array(buffer[index...])
                        return
                    case .unsafe(let value, let length):
                        out.append(contentsOf: Self.escape(value))
                        index += length
                    }
                }
            }
            return out
        }

        mutating func finish() -> [UInt8] {
            let rest = pending
            pending = []
            return rest.map { $0 == 0x0D ? Array("\\r".utf8) : [$0] }.flatMap { $0 }
        }

        static func escape(_ value: UInt32) -> [UInt8] {
            let text = String(Unicode.Scalar(value).map(Character.init).map(String.init) ?? "")
            return Array(TerminalText.escaped(text).utf8)
        }

        /// A whole body at once.
        static func escaped(_ body: [UInt8]) -> [UInt8] {
            var escaper = Escaper()
            var out = body.withUnsafeBytes { escaper.feed($0) }
            out += escaper.finish()
            return out
        }
    }
}
