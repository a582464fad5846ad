#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlHTTP
import DouctlJSON
import DouctlSystem

/// `--record DIR` (HAccess's mock data, for offline scripts and bug reports): every exchange
/// as one JSON file named after its endpoint (`0001-GET-v2_user_~me.json`), secrets
/// scrubbed, so the directory can be shared and served back by `douctl sandbox --replay DIR`.
public struct ExchangeRecorder: Sendable {
    public let directory: String

    public init(directory: String) {
        self.directory = directory
    }

    /// What replaces a secret in a recording.
    public static let redacted = "REDACTED"
    /// Query and form names whose values are secrets, or change on every request. An ID
    /// token is one: it names the user and, unexpired, vouches for them to other parties.
    public static let secretNames: Set<String> = ["access_token", "refresh_token", "id_token", "id_token_hint", "client_secret", "password", "code", "code_verifier", "_sig", "sign", "apikey"]
    static let secretHeaders: Set<String> = ["authorization", "cookie", "set-cookie", "x-xsrf-token", "proxy-authorization"]

    /// Shorter values are not scrubbed as live secrets: they would mangle ordinary text.
    static let shortestScrubbedSecret = 6

    /// Records one exchange. Besides the secrets known by name (Authorization, Cookie,
    /// `access_token`, …), every value in `secrets` — the live access and refresh tokens,
    /// the client and signing secrets, the session's cookies — is replaced wherever it
    /// appears (path, query, headers, bodies, a server's echo of it), as is its
    /// percent-encoded form. So are the request's own credentials (`Redaction.credentials(of:)`:
    /// its Authorization value, a URL's password and the Basic value made of it).
    public func record(_ request: HTTPRequest, _ response: HTTPResponse, secrets: [String] = []) throws(DouctlError) {
        let live = Self.scrubbable(secrets + Redaction.credentials(of: request))
        let scrubbed = try recordDocument(request, response, live)
        try write(scrubbed.document, endpoint: scrubbed.endpoint)
    }

    /// Each secret long enough to scrub, with its percent-encoded form, longest first (so a
    /// secret inside another is not replaced first).
    static func scrubbable(_ secrets: [String]) -> [String] {
        var forms = Set<String>()
        for secret in secrets where secret.utf8.count >= shortestScrubbedSecret {
            forms.insert(secret)
            forms.insert(PercentEncoding.encode(secret))
            forms.insert(PercentEncoding.encode(secret, spaceAsPlus: true))
        }
        return forms.sorted { $0.utf8.count > $1.utf8.count }
    }

    static func scrub(_ text: String, _ secrets: [String]) -> String {
        var result = text
        for secret in secrets where result.containsBytes(secret) { result = result.replacingAll(secret, with: redacted) }
        return result
    }

    static func scrub(_ bytes: [UInt8], _ secrets: [String]) -> [UInt8] {
        var result = bytes
        for secret in secrets {
            let needle = Array(secret.utf8)
            guard !needle.isEmpty, result.count >= needle.count else { continue }
            var out: [UInt8] = []
            out.reserveCapacity(result.count)
            var index = 0
            var changed = false
            while index < result.count {
                if result[index] == needle[0], index + needle.count <= result.count, result[index..<(index + needle.count)].elementsEqual(needle) {
                    out += redacted.utf8
                    index += needle.count
                    changed = true
                } else {
                    out.append(result[index])
                    index += 1
                }
            }
            if changed { result = out }
        }
        return result
    }

    /// Every string of `json`, keys included, scrubbed.
    static func scrub(_ json: JSON, _ secrets: [String]) -> JSON {
        guard !secrets.isEmpty else { return json }
        switch json {
        case .string(let text): return .string(scrub(text, secrets))
        case .array(let items): return .array(items.map { scrub($0, secrets) })
        case .object(let object):
            var scrubbed = JSONObject()
            for (key, value) in object { scrubbed[scrub(key, secrets)] = scrub(value, secrets) }
            return .object(scrubbed)
        default: return json
        }
    }

    private func recordDocument(_ request: HTTPRequest, _ response: HTTPResponse, _ live: [String]) throws(DouctlError) -> (document: [UInt8], endpoint: String) {
        do { try FileIO.makeDirectory(directory, mode: 0o700) } catch {
            throw .localInput("cannot create the recording directory \(directory) (\(error))")
        }
        let parts = URLParts(request.url)
        var requestObject = JSONObject()
        requestObject["method"] = .string(request.method.uppercased())
        requestObject["path"] = .string(parts?.path ?? "/")
        requestObject["query"] = .array((parts?.query ?? []).map { name, value in
            .array([.string(name), .string(Self.secretNames.contains(name) ? Self.redacted : value)])
        })
        requestObject["headers"] = Self.headers(request.headers)
        requestObject["body"] = Self.requestBody(request, live)
        var responseObject = JSONObject()
        responseObject["status"] = .int(Int64(response.status))
        responseObject["headers"] = Self.headers(response.head.headers)
        responseObject["body"] = Self.body(Self.scrub(response.body, live), contentType: response.head.header("Content-Type"))
        let file = Self.scrub(JSON.object(JSONObject([("request", .object(requestObject)), ("response", .object(responseObject))])), live)
        return (file.serialized(.pretty) + [0x0A], "\(request.method.uppercased())-\(Self.slug(Self.scrub(parts?.path ?? "/", live)))")
    }

    /// `NNNN-ENDPOINT.json`, the first free number: created exclusively, so parallel
    /// uploads never overwrite each other's recordings.
    private func write(_ bytes: [UInt8], endpoint: String) throws(DouctlError) {
        var number = countRecordings() + 1
        while number < 1_000_000 {
            let name = directory + "/" + String(repeating: "0", count: max(0, 4 - String(number).count)) + "\(number)-\(endpoint).json"
            let fd = open(EscapedBytes.cString(name), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd >= 0 {
                defer { close(fd) }
                do { try FileIO.writeAll(fd, bytes) } catch { throw .localInput("cannot write \(name) (\(error))") }
                return
            }
            guard currentErrno() == EEXIST else { throw .localInput("cannot write \(name) (\(SystemError("open").reason))") }
            number += 1
        }
    }

    private func countRecordings() -> Int {
        guard let handle = opendir(EscapedBytes.cString(directory)) else { return 0 }
        defer { closedir(handle) }
        var count = 0
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasSuffix(".json") { count += 1 }
        }
        return count
    }

    /// "/v2/user/~me" → "v2_user_~me": safe in a file name, readable.
    static func slug(_ path: String) -> String {
        let trimmed = path.split(separator: "/").joined(separator: "_")
        let safe = trimmed.map { $0.isLetter || $0.isNumber || "-_.~".contains($0) ? $0 : "_" }
        let text = String(safe.prefix(80))
        return text.isEmpty ? "root" : text
    }

    private static func headers(_ headers: [HTTPHeader]) -> JSON {
        .array(headers.map { header in
            .array([.string(header.name), .string(secretHeaders.contains(header.name.lowercased()) ? redacted : header.value)])
        })
    }

    private static func requestBody(_ request: HTTPRequest, _ live: [String]) -> JSON {
        switch request.body {
        case .none:
            return .null
        case .bytes(let raw):
            let bytes = scrub(raw, live)
            let contentType = request.headers.value(of: "Content-Type") ?? ""
            if contentType.hasPrefix("application/x-www-form-urlencoded") {
                let fields = URLParts.parseQuery(String(decoding: bytes, as: UTF8.self))
                return .object(JSONObject([("form", .array(fields.map { name, value in
                    .array([.string(name), .string(secretNames.contains(name) ? redacted : value)])
                }))]))
            }
            return body(bytes, contentType: contentType)
        case .segments(let segments):
            return .object(JSONObject([("omitted", .string("\(segments.reduce(Int64(0)) { $0 + $1.length }) bytes streamed from files"))]))
        case .stream:
            return .object(JSONObject([("omitted", "streamed from standard input")]))
        }
    }

    /// JSON bodies as JSON (token fields scrubbed), other text as text, bytes as base64.
    static func body(_ bytes: [UInt8], contentType: String?) -> JSON {
        if bytes.isEmpty { return .null }
        if let json = try? JSONParser.parse(bytes) { return .object(JSONObject([("json", scrub(json))])) }
        if let text = String(validating: bytes, as: UTF8.self), !(contentType ?? "").hasPrefix("image/") {
            return .object(JSONObject([("text", .string(text))]))
        }
        return .object(JSONObject([("base64", .string(Base64.encode(bytes)))]))
    }

    private static func scrub(_ json: JSON) -> JSON {
        switch json {
        case .object(let object):
            var scrubbed = JSONObject()
            for (key, value) in object {
                scrubbed[key] = secretNames.contains(key) && value.stringValue != nil ? .string(redacted) : scrub(value)
            }
            return .object(scrubbed)
        case .array(let items):
            return .array(items.map(scrub))
        default:
            return json
        }
    }
}
