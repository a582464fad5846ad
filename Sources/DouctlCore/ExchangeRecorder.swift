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
    /// Which names hold secrets (`RecordingScrubber`), the profile's `record_scrub` included.
    public var scrubber: RecordingScrubber

    public init(directory: String) {
        self.init(directory: directory, scrubNames: [])
    }

    public init(directory: String, scrubNames: [String]) {
        self.directory = directory
        scrubber = RecordingScrubber(extraNames: scrubNames)
    }

    /// The same recorder, also scrubbing the values of fields named `names` (a profile's
    /// `record_scrub`).
    public func scrubbing(_ names: [String]) -> ExchangeRecorder {
        guard !names.isEmpty else { return self }
        var copy = self
        copy.scrubber = RecordingScrubber(extraNames: scrubber.extraNames + names)
        return copy
    }

    /// What replaces a secret in a recording.
    public static let redacted = "REDACTED"
    /// Shorter values are not scrubbed as live secrets: they would mangle ordinary text.
    static let shortestScrubbedSecret = 6

    /// Records one exchange. Besides the secrets known by name (Authorization, Cookie,
    /// `access_token`, …), every value in `secrets` — the live access and refresh tokens,
    /// the client and signing secrets, the session's cookies — is replaced wherever it
    /// appears (path, query, headers, bodies, a server's echo of it), as is its
    /// percent-encoded form. So are the request's own credentials (`Redaction.credentials(of:)`:
    /// its Authorization value, a URL's password and the Basic value made of it).
    public func record(_ request: HTTPRequest, _ response: HTTPResponse, secrets: [String] = []) throws(DouctlError) {
        let live = Self.scrubbable(secrets + Redaction.credentials(of: request) + carried(request, response))
        let scrubbed = try recordDocument(request, response, live)
        if writesHAR {
            guard let document = try? JSONParser.parse(scrubbed.document) else { return }
            let origin = URLParts(request.url).map { parts in
                parts.scheme + "://" + (parts.host.containsASCII(":") ? "[\(parts.host)]" : parts.host) + (parts.port.map { ":\($0)" } ?? "")
            } ?? ""
            try HARWriter.append(HARWriter.entry(document, origin: origin, started: Timestamp.now()), to: directory)
        } else {
            try write(scrubbed.document, endpoint: scrubbed.endpoint)
        }
    }

    /// The secret values the exchange itself carries, found by name: so a token the reply
    /// grants, a cookie it sets or an API key the request sends is scrubbed wherever it
    /// appears, an echo of it included.
    func carried(_ request: HTTPRequest, _ response: HTTPResponse) -> [String] {
        var found = scrubber.values(inHeaders: request.headers) + scrubber.values(inHeaders: response.head.headers)
        found += scrubber.values(inPairs: URLParts(request.url)?.query ?? [])
        if case .bytes(let raw) = request.body {
            let contentType = request.headers.value(of: "Content-Type") ?? ""
            if contentType.hasPrefix("application/x-www-form-urlencoded") {
                found += scrubber.values(inPairs: URLParts.parseQuery(String(decoding: raw, as: UTF8.self)))
            } else if let json = try? JSONParser.parse(raw) {
                found += scrubber.values(inJSON: json)
            }
        }
        if let json = try? JSONParser.parse(response.body) { found += scrubber.values(inJSON: json) }
        return found
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

    /// `--record x.har`: one HAR 1.2 file rather than a directory of recordings.
    public var writesHAR: Bool { directory.hasSuffix(".har") }

    private func recordDocument(_ request: HTTPRequest, _ response: HTTPResponse, _ live: [String]) throws(DouctlError) -> (document: [UInt8], endpoint: String) {
        if writesHAR {
            let parent = FileIO.directoryName(directory)
            if !parent.isEmpty && !FileIO.fileExists(parent) {
                do { try FileIO.makeDirectory(parent, mode: 0o700) } catch {
                    throw .localInput("cannot create the directory of \(directory) (\(error))")
                }
            }
        } else {
            do { try FileIO.makeDirectory(directory, mode: 0o700) } catch {
            throw .localInput("cannot create the recording directory \(directory) (\(error))")
            }
        }
        let parts = URLParts(request.url)
        var requestObject = JSONObject()
        requestObject["method"] = .string(request.method.uppercased())
        requestObject["path"] = .string(parts?.path ?? "/")
        requestObject["query"] = .array((parts?.query ?? []).map { name, value in
            .array([.string(name), .string(scrubber.isSecret(name: name) ? Self.redacted : value)])
        })
        requestObject["headers"] = headers(request.headers)
        requestObject["body"] = requestBody(request, live)
        var responseObject = JSONObject()
        responseObject["status"] = .int(Int64(response.status))
        responseObject["headers"] = headers(response.head.headers)
        responseObject["body"] = body(Self.scrub(response.body, live), contentType: response.head.header("Content-Type"))
        let file = Self.scrub(JSON.object(JSONObject([("request", .object(requestObject)), ("response", .object(responseObject))])), live)
        // Last, over the whole document: JWTs under any name, and each live secret again
        // (a secret split across JSON escapes is caught where its pieces were).
        let document = Self.scrub(RecordingScrubber.scrubJWTs(file.serialized(.pretty)), live)
        return (document + [0x0A], "\(request.method.uppercased())-\(Self.slug(Self.scrub(parts?.path ?? "/", live)))")
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

    private func headers(_ headers: [HTTPHeader]) -> JSON {
        .array(headers.map { header in
            .array([.string(header.name), .string(scrubber.isSecret(name: header.name) ? Self.redacted : header.value)])
        })
    }

    private func requestBody(_ request: HTTPRequest, _ live: [String]) -> JSON {
        switch request.body {
        case .none:
            return .null
        case .bytes(let raw):
            let bytes = Self.scrub(raw, live)
            let contentType = request.headers.value(of: "Content-Type") ?? ""
            if contentType.hasPrefix("application/x-www-form-urlencoded") {
                let fields = URLParts.parseQuery(String(decoding: bytes, as: UTF8.self))
                return .object(JSONObject([("form", .array(fields.map { name, value in
                    .array([.string(name), .string(scrubber.isSecret(name: name) ? Self.redacted : value)])
                }))]))
            }
            return body(bytes, contentType: contentType)
        case .segments(let segments):
            return .object(JSONObject([("omitted", .string("\(segments.reduce(Int64(0)) { $0 + $1.length }) bytes streamed from files"))]))
        case .stream:
            return .object(JSONObject([("omitted", "streamed from standard input")]))
        }
    }

    /// JSON bodies as JSON (secret-named fields scrubbed), other text as text, bytes as
    /// base64. A JSON body the compact form would not give back byte for byte (a pretty
    /// reply, escapes) keeps its text too, unless a field was scrubbed from it, so a replay
    /// serves the same bytes.
    func body(_ bytes: [UInt8], contentType: String?) -> JSON {
        if bytes.isEmpty { return .null }
        if let json = try? JSONParser.parse(bytes) {
            let scrubbed = scrubber.scrubNamed(json)
            if scrubbed == json, json.serialized(.compact) != bytes, let text = String(validating: bytes, as: UTF8.self) {
                return .object(JSONObject([("json", json), ("text", .string(text))]))
            }
            return .object(JSONObject([("json", scrubbed)]))
        }
        if let text = String(validating: bytes, as: UTF8.self), !(contentType ?? "").hasPrefix("image/") {
            return .object(JSONObject([("text", .string(text))]))
        }
        return .object(JSONObject([("base64", .string(Base64.encode(bytes)))]))
    }
}
