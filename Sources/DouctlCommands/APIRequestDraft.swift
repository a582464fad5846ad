#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlArguments
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// `api`'s request, drafted from its options and then read (files, standard input).
extension APICommand {
    /// What the options ask to send, nothing read yet: `request(standardInput:bodyFormat:)`
    /// reads the files and standard input. Every value's form (KEY=VALUE, -F KEY:=JSON,
    /// PATH, -H, -X, -o) was checked at parse time, as the options were bound and validated.
    struct RequestDraft {
        /// A field as given: a value, or `-F KEY=@FILE`, whose value is the file's text.
        enum Field: Sendable, Equatable {
            case value(RequestField)
            case contents(key: String, path: String)

            /// `-F KEY=VALUE` as it is bound: `KEY=@FILE` (`KEY=@-`: standard input) is a
            /// file's text to read; anything else a typed value (`RequestField.typed`).
            static func typed(_ raw: String) throws(OptionError) -> Field {
                let pair = try KeyValue.parse(raw, shown: "-F")
                if pair.value.hasPrefix("@") { return .contents(key: pair.key, path: String(pair.value.dropFirst())) }
                do { return .value(try .typed(pair.key, pair.value)) } catch { throw OptionError(error.message) }
            }

            /// The field with a file's text still unread: the same JSON shape (a string).
            var placeholder: RequestField {
                switch self {
                case .value(let field): return field
                case .contents(let key, _): return .string(key, "")
                }
            }
        }

        var path: String
        var method: String
        var headers: [HTTPHeader]
        /// `-f` then `-F`, in order.
        var fields: [Field]
        /// `--attach KEY=FILE`: `value` is the path; `-` is stdin.
        var attachments: [KeyValue]
        var input: String?
        var json: Bool

        init(_ options: APIOptions) throws(DouctlError) {
            fields = options.rawFields.map(Field.value) + options.typedFields
            // No PATH (validate() allows it only with fields or --input): api_base itself.
            path = options.path ?? ""
            attachments = options.attachments
            headers = options.headers
            method = options.sentMethod
            input = options.input
            json = options.json
        }

        /// The request: files and standard input read (`-F KEY=@FILE`, `--attach`), or
        /// streamed (`--input`). GET and DELETE put fields in the query; a body is
        /// multipart with files, JSON with --json (or the profile's body_format), else a form.
        func request(standardInput: StandardInput, bodyFormat: BodyFormat = .form) throws(DouctlError) -> APIRequest {
            var request = APIRequest(method: method, path: path, headers: headers)
            let bodyless = APIOptions.bodylessMethods.contains(method)
            let sendsJSON = json || bodyFormat == .json
            let jsonBody = input == nil && !bodyless && attachments.isEmpty && sendsJSON && (!fields.isEmpty || json)
            // Field names and nesting, before any file or standard input is read.
            if jsonBody { _ = try RequestField.jsonObject(fields.map(\.placeholder)) }

            var fields: [RequestField] = []
            for field in self.fields {
                switch field {
                case .value(let value): fields.append(value)
                case .contents(let key, let path):
                    fields.append(.string(key, try textContents(of: path, field: key, standardInput: standardInput)))
                }
            }
            var files: [MultipartForm.Part] = []
            for attachment in attachments {
                let (key, path) = (attachment.key, attachment.value)
                if path == "-" {
                    let bytes = try standardInput.bytes(for: "--attach \(key)=-")
                    files.append(.data(name: key, bytes: bytes, filename: "stdin", contentType: MediaType.sniff(bytes) ?? MediaType.fallback))
                } else {
                    try MultipartForm.checkReadableFile(path)
                    files.append(.file(name: key, path: path))
                }
            }

            // validate() has refused files with --json, --input or a bodyless method.
            if let input {
                request.query = fields.map(\.formPair)
                request.body = try inputBody(input, standardInput: standardInput, chunked: StdinBody.asksForChunked(headers))
            } else if bodyless {
                request.query = fields.map(\.formPair)
            } else if !files.isEmpty {
                request.body = .multipart(MultipartForm(parts: fields.map { .field(name: $0.key, value: $0.formText) } + files))
            } else if jsonBody {
                let object = try RequestField.jsonObject(fields)
                request.body = .raw(.bytes(object.serialized(.compact)), contentType: "application/json")
            } else if !fields.isEmpty {
                request.body = .form(fields.map(\.formPair))
            }
            return request
        }
    }

    /// `--input FILE|-`: a file streams with Content-Length; so does a pipe, read first
    /// (`StdinBody`), unless `-H 'Transfer-Encoding: chunked'` asks for it chunked.
    static func inputBody(_ input: String, standardInput stdin: StandardInput, chunked: Bool = false) throws(DouctlError) -> APIRequest.Body {
        if input == "-" {
            try stdin.requireOpen(for: "--input -")
            let standardInput = stdin.fileDescriptor
            var info = stat()
            if fstat(standardInput, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
                // Redirected from a file: stream it from the current offset with a known length.
                let path = "/proc/self/fd/\(standardInput)"
                if lseek(standardInput, 0, SEEK_CUR) == 0, FileIO.fileExists(path) {
                    var head = [UInt8](repeating: 0, count: 512)
                    let count = head.withUnsafeMutableBytes { pread(standardInput, $0.baseAddress, $0.count, 0) }
                    let type = looksLikeJSON(Array(head.prefix(max(count, 0)))) ? "application/json" : "application/octet-stream"
                    return .raw(.segments([.file(path: path, length: Int64(info.st_size))]), contentType: type)
                }
            }
            guard let prefix = try readUntilSignificantByte(stdin) else { throw .interrupted }
            let type = looksLikeJSON(prefix) ? "application/json" : "application/octet-stream"
            if chunked { return .raw(.stream(fileDescriptor: standardInput, prefix: prefix), contentType: type) }
            return .raw(try StdinBody.spooled(stdin, prefix: prefix), contentType: type)
        }
        let status = try MultipartForm.checkReadableFile(input)
        return .raw(.segments([.file(path: input, length: status.size)]), contentType: inputContentType(path: input))
    }

    /// The documented rule: JSON for a .json file, else opaque bytes; -H Content-Type
    /// overrides either. (Standard input, which has no name, is JSON when its first
    /// significant byte opens an object or an array.)
    static func inputContentType(path: String) -> String {
        path.lowercased().hasSuffix(".json") ? "application/json" : "application/octet-stream"
    }

    static func looksLikeJSON(_ bytes: [UInt8]) -> Bool {
        guard let first = bytes.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) else { return false }
        return first == UInt8(ascii: "{") || first == UInt8(ascii: "[")
    }

    /// Reads from a pipe until its first byte that is not white space (or its end), to be
    /// sent first: the rest streams after it. Nil when the run was stopped (Ctrl-C,
    /// `--max-time`) while waiting.
    private static func readUntilSignificantByte(_ stdin: StandardInput) throws(DouctlError) -> [UInt8]? {
        var prefix: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while prefix.count < 1 << 20 {
            let got: Int?
            do {
                got = try chunk.withUnsafeMutableBytes { try FileIO.readSome(stdin.fileDescriptor, into: $0, stoppingAt: stdin.cancellation) }
            } catch {
                throw .localInput("cannot read standard input (\(error))")
            }
            guard let count = got else { return nil }
            guard count > 0 else { break }
            prefix += chunk.prefix(count)
            if prefix.contains(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) { break }
        }
        return prefix
    }

    /// `-F KEY=@FILE`: the file's text as the field's value (gh's rule), kept byte for byte.
    static func textContents(of path: String, field: String, standardInput: StandardInput) throws(DouctlError) -> String {
        let bytes: [UInt8]
        if path == "-" {
            bytes = try standardInput.bytes(for: "-F \(field)=@-")
        } else {
            try MultipartForm.checkReadableFile(path)
            do { bytes = try FileIO.readFile(path) } catch { throw .localInput("cannot read \(path) (\(error))") }
        }
        guard StandardInput.firstInvalidUTF8(bytes) == nil else {
            throw .localInput("\(path == "-" ? "standard input" : path) is not UTF-8 text, so it cannot be the value of -F \(field); send the file itself with --attach \(field)=\(path)")
        }
        // As EscapedBytes carries text, so a value that spells an escape's scalar keeps its bytes.
        return EscapedBytes.string(bytes)
    }
}
