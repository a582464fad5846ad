/// A request as a `curl` command line a shell can run (`--dry-run`): method, URL, headers
/// and body, each argument quoted for POSIX shells. Arguments that carry a `$NAME`
/// placeholder for a secret (`$DOUCTL_TOKEN`) are double-quoted so the shell fills it in;
/// everything else is single-quoted and taken literally.
public enum CurlCommand {
    /// Headers libcurl sets itself from the body (a multipart boundary of its own, the
    /// length, the framing): copying douctl's would contradict curl's.
    static let headersCurlSets: Set<String> = ["content-length", "transfer-encoding", "expect"]

    public static func render(_ request: HTTPRequest, userAgent: String, multipart: [MultipartArgument]? = nil, placeholders: [String] = []) -> String {
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
        let carries = placeholders.filter { word.contains($0) }
        if carries.isEmpty {
            if !word.isEmpty, word.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_./:=@,%+".contains($0)) }) {
                return word
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
