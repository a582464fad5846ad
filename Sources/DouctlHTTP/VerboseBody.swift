/// What `-v` shows of bodies, like `gh --verbose`: text up to a limit with secrets masked,
/// files and binary data as a one-line summary, never their bytes.
enum VerboseBody {
    /// The request body's lines (without the "> " prefix), or nil when there is no body.
    static func describe(_ request: HTTPRequest, limit: Int) -> [String]? {
        let contentType = request.headers.value(of: "Content-Type")
        switch request.body {
        case .none:
            return nil
        case .bytes(let bytes):
            guard !bytes.isEmpty else { return nil }
            guard isText(bytes[...]) else { return ["[\(bytes.count) bytes of binary data]"] }
            return lines(Redaction.redactBody(String(decoding: bytes, as: UTF8.self), contentType: contentType), limit: limit)
        case .stream:
            return ["[the body streams from standard input; its length is not known in advance]"]
        case .segments(let segments):
            var text = ""
            for segment in segments {
                switch segment {
                case .bytes(let bytes):
                    text += isText(bytes[...]) ? String(decoding: bytes, as: UTF8.self) : "[\(bytes.count) bytes of binary data]"
                case .file(let path, let length):
                    text += "[\(length) bytes from \(path)]"
                }
            }
            return lines(Redaction.redactBody(text, contentType: contentType), limit: limit)
        }
    }

    /// The reply body's lines from its first `preview` bytes of `total`.
    static func reply(_ preview: [UInt8], total: Int64, contentType: String?, limit: Int) -> [String] {
        guard isText(preview[...], allowTruncatedEnd: Int64(preview.count) < total) else {
            return ["[\(total) bytes of binary data]"]
        }
        var shown = lines(Redaction.redactBody(String(decoding: preview, as: UTF8.self), contentType: contentType), limit: limit)
        let more = total - Int64(preview.count)
        if more > 0 {
            if shown.last?.hasPrefix("… (") == true { shown.removeLast() }
            shown.append("… (\(more) more bytes)")
        }
        return shown
    }

    /// Cuts `text` to `limit` bytes (at a character boundary) and splits it into lines.
    private static func lines(_ text: String, limit: Int) -> [String] {
        var kept = ""
        var used = 0
        for character in text {
            let size = character.utf8.count
            if used + size > limit { break }
            kept.append(character)
            used += size
        }
        // "\r\n" is one Character in Swift, so split on both forms.
        var result = kept.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).map(String.init)
        if result.last == "" { result.removeLast() }
        let more = text.utf8.count - used
        if more > 0 { result.append("… (\(more) more bytes)") }
        return result
    }

    /// UTF-8 without control characters other than tab, CR, LF and ESC.
    static func isText(_ bytes: ArraySlice<UInt8>, allowTruncatedEnd: Bool = false) -> Bool {
        var body = bytes
        if allowTruncatedEnd {
            // A multi-byte character may be cut at the preview's end.
            var trim = 0
            while trim < 3, let last = body.last, last & 0xC0 == 0x80 || last & 0xC0 == 0xC0 {
                body = body.dropLast()
                trim += 1
                if last & 0xC0 == 0xC0 { break }
            }
        }
        for byte in body where byte < 0x20 && byte != 0x09 && byte != 0x0A && byte != 0x0D && byte != 0x1B {
            return false
        }
        var iterator = body.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }
}
