import DouctlSystem

/// A request as a `curl` command line a shell can run (`--dry-run`): method, URL, headers
/// and body, each argument quoted for POSIX shells. Arguments that carry a `$NAME`
/// placeholder for a secret (`$DOUCTL_TOKEN`) are double-quoted so the shell fills it in;
/// everything else is single-quoted and taken literally.
public enum CurlCommand {
    /// Headers libcurl sets itself from the body (a multipart boundary of its own, the
    /// length, the framing): copying douctl's would contradict curl's.
    static let headersCurlSets: Set<String> = ["content-length", "transfer-encoding", "expect"]

    /// A `multipart/form-data` body is written as its parts (`-F`, `--form-string`), read
    /// back from the body as it would go out (`MultipartArgument.parts(of:)`), so curl
    /// builds the same parts around a boundary of its own and reads each file itself.
    public static func render(_ request: HTTPRequest, userAgent: String, placeholders: [String] = []) -> String {
        let multipart = MultipartArgument.parts(of: request)
        var words = ["curl", "-sS", "-g"] // -g: {} and [] in URLs are not curl globs
        let method = request.method.uppercased()
        let hasBody: Bool
        switch request.body {
        case .none: hasBody = false
        default: hasBody = true
        }
        if method == "HEAD" {
            words.append("-I")
        } else if method != "GET" || hasBody {
            words += ["-X", method]
        }
        words.append(quote(request.url, placeholders: placeholders))
        words += ["-A", quote(userAgent, placeholders: placeholders)]
        for header in request.headers {
            let name = header.name.lowercased()
            if headersCurlSets.contains(name) { continue }
            if multipart != nil && name == "content-type" { continue }
            words += ["-H", quote("\(header.name): \(header.value)", placeholders: placeholders)]
        }
        if let multipart {
            for part in multipart { words += part.arguments(placeholders: placeholders) }
        } else {
            words += bodyArguments(request.body, placeholders: placeholders)
        }
        if let saved = request.savedAs { words += ["-o", quote(saved, placeholders: [])] }
        return words.joined(separator: " ")
    }

    /// A multipart part as curl takes it: text with `--form-string` (no `@`/`<` magic), a
    /// file with `-F name=@path;type=…;filename=…`.
    public enum MultipartArgument: Sendable, Equatable {
        case text(name: String, value: String)
        case file(name: String, path: String, contentType: String, filename: String)
        /// Bytes douctl holds in memory (stdin): shown, not reproducible from a file.
        case data(name: String, byteCount: Int, contentType: String, filename: String)

        func arguments(placeholders: [String]) -> [String] {
            switch self {
            case .text(let name, let value):
                return ["--form-string", quote("\(name)=\(value)", placeholders: placeholders)]
            case .file(let name, let path, let contentType, let filename):
                return ["-F", quote("\(name)=@\(Self.formWord(path));type=\(Self.formWord(contentType));filename=\(Self.formWord(filename))", placeholders: placeholders)]
            case .data(let name, _, let contentType, let filename):
                return ["-F", quote("\(name)=@-;type=\(Self.formWord(contentType));filename=\(Self.formWord(filename))", placeholders: placeholders)]
            }
        }

        /// The parts of a `multipart/form-data` request body laid out as `MultipartForm`
        /// does (RFC 7578: each part's headers in memory, a file part's content a file
        /// segment read at send time), or nil for any other body. A part with a filename
        /// whose content is in memory (stdin) is `.data`. Names and filenames lose the
        /// escaping of the Content-Disposition line (`%22`, `%0D`, `%0A`); curl escapes
        /// them again the same way.
        public static func parts(of request: HTTPRequest) -> [MultipartArgument]? {
            guard let type = request.headers.value(of: "Content-Type").map(HeaderValueWithParameters.init(parsing:)),
                  type.value.lowercased() == "multipart/form-data",
                  let boundary = type.parameter("boundary"), !boundary.isEmpty,
                  case .segments(let segments) = request.body else { return nil }
            var reader = MultipartReader(segments: segments, boundary: Array(boundary.utf8))
            return reader.parts()
        }

        /// A value inside curl's -F argument: curl splits it at `;` (and a file list at
        /// `,`), so a value with either, a `"`, a backslash or edge spaces is written as curl's
        /// man page says: in double quotes, with `"` and `\` escaped by a backslash
        /// (`-F 'image=@"we;ird,\"name\".png"'`).
        static func formWord(_ value: String) -> String {
            let needsQuotes = value.contains(where: { ";,\"\\".contains($0) }) || value.first == " " || value.last == " "
            guard needsQuotes else { return value }
            var quoted = "\""
            for character in value {
                if character == "\"" || character == "\\" { quoted.append("\\") }
                quoted.append(character)
            }
            return quoted + "\""
        }
    }

    private static func bodyArguments(_ body: RequestBody, placeholders: [String]) -> [String] {
        switch body {
        case .none:
            return []
        case .bytes(let bytes):
            guard let text = String(validating: bytes, as: UTF8.self) else {
                return ["--data-binary", quote("@-", placeholders: []), "# \(bytes.count) bytes of binary data on stdin"]
            }
            return ["--data-binary", quote(text, placeholders: placeholders)]
        case .segments(let segments):
            if segments.count == 1, case .file(let path, _) = segments[0] {
                return ["--data-binary", quote("@" + path, placeholders: [])]
            }
            let length = segments.reduce(Int64(0)) { $0 + $1.length }
            return ["--data-binary", "@-", "# \(length) bytes, as douctl would send them"]
        case .stream:
            return ["--data-binary", "@-"]
        }
    }

    /// One shell word: single quotes, or double quotes when it carries a placeholder.
    public static func quote(_ word: String, placeholders: [String]) -> String {
        let carries = placeholders.filter { word.containsBytes($0) }
        if carries.isEmpty {
            if !word.isEmpty, word.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_./:=@,%+".contains($0)) }) {
                return word
            }
            // A command line's byte that is not UTF-8 (EscapedBytes): bash's $'…' writes it
            // as \xff, so the line sends the same bytes.
            if EscapedBytes.contains(word) {
                var quoted = "$'"
                for scalar in word.unicodeScalars {
                    switch scalar {
                    case "\\": quoted += "\\\\"
                    case "'": quoted += "\\'"
                    default:
                        if EscapedBytes.escapedByte(scalar) != nil { quoted += EscapedBytes.shown(String(scalar)) } else { quoted.unicodeScalars.append(scalar) }
                    }
                }
                return quoted + "'"
            }
            return "'" + word.replacingAll("'", with: "'\\''") + "'"
        }
        var escaped = ""
        for character in word {
            if "\"\\`$".contains(character) { escaped.append("\\") }
            escaped.append(character)
        }
        for placeholder in carries {
            escaped = escaped.replacingAll("\\" + placeholder, with: placeholder)
        }
        return "\"" + escaped + "\""
    }
}

/// Reads back the parts of a multipart body from its segments (see
/// `CurlCommand.MultipartArgument.parts(of:)`); any layout other than the expected one
/// gives nil, and the body is then shown as bytes on stdin.
private struct MultipartReader {
    private enum Piece { case bytes([UInt8]), file(String) }
    private var pieces: [Piece] = []
    private var index = 0
    private var offset = 0
    private let delimiter: [UInt8]

    init(segments: [BodySegment], boundary: [UInt8]) {
        delimiter = Array("--".utf8) + boundary
        for segment in segments {
            switch segment {
            case .file(let path, _):
                pieces.append(.file(path))
            case .bytes(let bytes):
                if case .bytes(let before) = pieces.last {
                    pieces[pieces.count - 1] = .bytes(before + bytes)
                } else {
                    pieces.append(.bytes(bytes))
                }
            }
        }
    }

    mutating func parts() -> [CurlCommand.MultipartArgument]? {
        var parts: [CurlCommand.MultipartArgument] = []
        guard take(delimiter) else { return nil }
        while true {
            if take(Array("--\r\n".utf8)) { return atEnd ? parts : nil }
            guard take(crlf), let head = upTo(crlf + crlf, consuming: true),
                  let fields = Self.disposition(String(decoding: head, as: UTF8.self)) else { return nil }
            if let filename = fields.filename {
                guard let contentType = fields.contentType else { return nil }
                if let path = takeFile() {
                    parts.append(.file(name: fields.name, path: path, contentType: contentType, filename: filename))
                    guard take(crlf) else { return nil }
                } else {
                    guard let content = upTo(crlf + delimiter, consuming: false) else { return nil }
                    parts.append(.data(name: fields.name, byteCount: content.count, contentType: contentType, filename: filename))
                    _ = take(crlf)
                }
            } else {
                guard fields.contentType == nil, let value = upTo(crlf + delimiter, consuming: false),
                      let text = String(validating: value, as: UTF8.self) else { return nil }
                parts.append(.text(name: fields.name, value: text))
                _ = take(crlf)
            }
            guard take(delimiter) else { return nil }
        }
    }

    private let crlf: [UInt8] = [0x0D, 0x0A]

    private var atEnd: Bool {
        guard index < pieces.count else { return true }
        if case .bytes(let bytes) = pieces[index], offset == bytes.count, index == pieces.count - 1 { return true }
        return false
    }

    /// The rest of the current in-memory piece, when the reader is in one.
    private var current: ArraySlice<UInt8>? {
        guard index < pieces.count, case .bytes(let bytes) = pieces[index] else { return nil }
        return bytes[offset...]
    }

    private mutating func advance(_ count: Int) {
        offset += count
        if case .bytes(let bytes) = pieces[index], offset == bytes.count, index + 1 < pieces.count {
            index += 1
            offset = 0
        }
    }

    private mutating func take(_ literal: [UInt8]) -> Bool {
        guard let rest = current, rest.starts(with: literal) else { return false }
        advance(literal.count)
        return true
    }

    /// The bytes before `terminator` within the current piece; the terminator is consumed
    /// only when asked.
    private mutating func upTo(_ terminator: [UInt8], consuming: Bool) -> [UInt8]? {
        guard let rest = current, let found = Self.firstRange(of: terminator, in: rest) else { return nil }
        let content = Array(rest[rest.startIndex..<found])
        advance(content.count + (consuming ? terminator.count : 0))
        return content
    }

    private mutating func takeFile() -> String? {
        guard index < pieces.count, case .file(let path) = pieces[index] else { return nil }
        index += 1
        offset = 0
        return path
    }

    private static func firstRange(of needle: [UInt8], in haystack: ArraySlice<UInt8>) -> Int? {
        guard let first = needle.first, haystack.count >= needle.count else { return nil }
        var start = haystack.startIndex
        while let candidate = haystack[start...].firstIndex(of: first) {
            guard haystack.endIndex - candidate >= needle.count else { return nil }
            if haystack[candidate..<(candidate + needle.count)].elementsEqual(needle) { return candidate }
            start = candidate + 1
        }
        return nil
    }

    /// `Content-Disposition: form-data; name="…"[; filename="…"]` and an optional
    /// `Content-Type`, as `MultipartForm` writes them (quotes inside are `%22`).
    private static func disposition(_ head: String) -> (name: String, filename: String?, contentType: String?)? {
        var name: String?
        var filename: String?
        var contentType: String?
        for line in head.split(separator: "\r\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("Content-Disposition: form-data; name=\"") {
                let rest = line.dropFirst("Content-Disposition: form-data; name=\"".count)
                guard let close = rest.firstIndex(of: "\"") else { return nil }
                name = unescape(rest[..<close])
                let after = rest[rest.index(after: close)...]
                if after.hasPrefix("; filename=\""), after.hasSuffix("\"") {
                    filename = unescape(after.dropFirst("; filename=\"".count).dropLast())
                } else if !after.isEmpty {
                    return nil
                }
            } else if line.hasPrefix("Content-Type: ") {
                contentType = String(line.dropFirst("Content-Type: ".count))
            } else {
                return nil
            }
        }
        guard let name else { return nil }
        return (name, filename, contentType)
    }

    private static func unescape(_ text: Substring) -> String {
        String(text).replacingAll("%22", with: "\"").replacingAll("%0D", with: "\r").replacingAll("%0A", with: "\n")
    }
}
