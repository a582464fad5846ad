#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlJSON
import DouctlSystem

/// `--record x.har`: each exchange (scrubbed as any recording) appended to a HAR 1.2 log
/// that browsers' developer tools, hurl's importers and `douctl sandbox --replay x.har` read.
/// The file is rewritten in place under an exclusive lock, so parallel uploads append whole
/// entries one at a time.
enum HARWriter {
    /// The HAR entry for one recorded document (`ExchangeRecorder`'s request and response).
    static func entry(_ document: JSON, origin: String, started: Double) -> JSON {
        let request = document["request"] ?? .null
        let response = document["response"] ?? .null
        let query = pairs(request["query"])
        let encodedQuery = query.map { PercentEncoding.encode($0.name, spaceAsPlus: true) + "=" + PercentEncoding.encode($0.value, spaceAsPlus: true) }
            .joined(separator: "&")
        let path = request["path"]?.stringValue ?? "/"
        let requestHeaders = pairs(request["headers"])
        var requestObject = JSONObject()
        requestObject["method"] = request["method"] ?? "GET"
        requestObject["url"] = .string(origin + PercentEncoding.encode(path, alsoKeeping: "/:@!$&'()*+,;=") + (encodedQuery.isEmpty ? "" : "?" + encodedQuery))
        requestObject["httpVersion"] = "HTTP/1.1"
        requestObject["cookies"] = []
        requestObject["headers"] = nameValues(requestHeaders)
        requestObject["queryString"] = nameValues(query)
        let requestType = value(of: "Content-Type", in: requestHeaders) ?? "application/octet-stream"
        if let postData = postData(request["body"], mimeType: requestType) { requestObject["postData"] = postData }
        requestObject["headersSize"] = -1
        requestObject["bodySize"] = .int(bodyText(request["body"]).utf8.count)

        let responseHeaders = pairs(response["headers"])
        let status = response["status"]?.intValue ?? 0
        var content = JSONObject()
        let responseType = value(of: "Content-Type", in: responseHeaders) ?? ""
        if let encoded = response["body"]?["base64"]?.stringValue {
            content["size"] = .int(Base64.decode(encoded)?.count ?? 0)
            content["mimeType"] = .string(responseType)
            content["text"] = .string(encoded)
            content["encoding"] = "base64"
        } else {
            let text = bodyText(response["body"])
            content["size"] = .int(text.utf8.count)
            content["mimeType"] = .string(responseType)
            content["text"] = .string(text)
        }
        var responseObject = JSONObject()
        responseObject["status"] = .int(status)
        responseObject["statusText"] = .string(reason(status))
        responseObject["httpVersion"] = "HTTP/1.1"
        responseObject["cookies"] = []
        responseObject["headers"] = nameValues(responseHeaders)
        responseObject["content"] = .object(content)
        responseObject["redirectURL"] = .string(value(of: "Location", in: responseHeaders) ?? "")
        responseObject["headersSize"] = -1
        responseObject["bodySize"] = content["size"] ?? 0
        return .object(JSONObject([
            ("startedDateTime", .string(Timestamp.rfc3339(started).replacingAll("Z", with: ".000Z"))),
            ("time", 0), ("request", .object(requestObject)), ("response", .object(responseObject)),
            ("cache", [:]), ("timings", ["send": 0, "wait": 0, "receive": 0]),
        ]))
    }

    /// Appends `entry` to the HAR file at `path` (created 0600 with an empty log if missing).
    static func append(_ entry: JSON, to path: String) throws(DouctlError) {
        let fd = open(EscapedBytes.cString(path), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .localInput("cannot write \(path) (\(SystemError("open", path: path).reason))") }
        defer { close(fd) }
        guard flock(fd, LOCK_EX) == 0 else { throw .localInput("cannot lock \(path) (\(SystemError("flock", path: path).reason))") }
        let existing: [UInt8]
        do { existing = try FileIO.readAll(fd) } catch { throw .localInput("cannot read \(path) (\(error))") }
        var log: JSONObject
        if existing.isEmpty {
            log = JSONObject([("version", "1.2"), ("creator", ["name": "douctl", "version": "1"]), ("entries", [])])
        } else {
            guard let parsed = try? JSONParser.parse(existing), let object = parsed["log"]?.objectValue, object["entries"]?.arrayValue != nil else {
                throw .localInput("\(path) is not a HAR file; --record x.har appends to a HAR log or creates one")
            }
            log = object
        }
        log["entries"] = .array((log["entries"]?.arrayValue ?? []) + [entry])
        let bytes = JSON.object(JSONObject([("log", .object(log))])).serialized(.pretty) + [0x0A]
        guard ftruncate(fd, 0) == 0, lseek(fd, 0, SEEK_SET) == 0 else {
            throw .localInput("cannot write \(path) (\(SystemError("ftruncate", path: path).reason))")
        }
        do { try FileIO.writeAll(fd, bytes) } catch { throw .localInput("cannot write \(path) (\(error))") }
    }

    private static func pairs(_ json: JSON?) -> [(name: String, value: String)] {
        (json?.arrayValue ?? []).compactMap { pair in
            guard let name = pair[0]?.stringValue else { return nil }
            return (name, pair[1]?.stringValue ?? "")
        }
    }

    private static func nameValues(_ pairs: [(name: String, value: String)]) -> JSON {
        .array(pairs.map { .object(JSONObject([("name", .string($0.name)), ("value", .string($0.value))])) })
    }

    private static func value(of name: String, in pairs: [(name: String, value: String)]) -> String? {
        let lowered = HTTPSyntax.asciiLowercased(name)
        return pairs.first { HTTPSyntax.asciiLowercased($0.name) == lowered }?.value
    }

    /// A recorded body as text: its original text, its JSON, a form urlencoded.
    private static func bodyText(_ body: JSON?) -> String {
        guard let body, case .object = body else { return "" }
        if let text = body["text"]?.stringValue { return text }
        if let json = body["json"] { return String(decoding: json.serialized(.compact), as: UTF8.self) }
        if let form = body["form"] {
            return pairs(form).map { PercentEncoding.encode($0.name, spaceAsPlus: true) + "=" + PercentEncoding.encode($0.value, spaceAsPlus: true) }
                .joined(separator: "&")
        }
        if let encoded = body["base64"]?.stringValue { return encoded }
        return ""
    }

    private static func postData(_ body: JSON?, mimeType: String) -> JSON? {
        guard let body, case .object = body, body["omitted"] == nil else { return nil }
        var object = JSONObject([("mimeType", .string(mimeType)), ("text", .string(bodyText(body)))])
        if let form = body["form"] { object["params"] = nameValues(pairs(form)) }
        if body["base64"] != nil { object["_encoding"] = "base64" }
        return .object(object)
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 429: return "Too Many Requests"
        case 500: return "Internal Server Error"
        case 503: return "Service Unavailable"
        default: return ""
        }
    }
}
