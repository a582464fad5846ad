import DouctlJSON
import DouctlServer
import DouctlSystem

/// `douctl sandbox --replay FILE.har`: a HAR 1.2 log (as Firefox's and Chromium's developer
/// tools, mitmproxy's hardump or `douctl --record x.har` write it) read as recordings. The
/// host is not compared (a page's API calls and its CDN's land on one replay); a body with
/// `content.encoding: base64` is decoded; the sizes and `_`-prefixed fields the browsers add
/// are ignored, as are HTTP/2 pseudo-headers and framing headers (the replay frames its own
/// replies); a redirect to the recorded origin is rewritten to a path, so the client follows
/// it to the replay. Entries a browser never got a reply to (status 0) are skipped.
enum HARFile {
    static func recordings(path: String) throws(SandboxError) -> [ReplayStore.Recording] {
        let bytes: [UInt8]
        do { bytes = try FileIO.readFile(path) } catch { throw SandboxError("cannot read \(path) (\(error))") }
        guard let json = try? JSONParser.parse(bytes), let entries = json["log"]?["entries"]?.arrayValue else {
            throw SandboxError("\(path) is not a HAR file (no log.entries)")
        }
        let name = FileIO.baseName(path)
        var recordings: [ReplayStore.Recording] = []
        for (index, entry) in entries.enumerated() {
            guard let recording = recording(entry, name: "\(name) entry \(index + 1)") else { continue }
            recordings.append(recording)
        }
        return recordings
    }

    static func recording(_ entry: JSON, name: String) -> ReplayStore.Recording? {
        guard let request = entry["request"], let response = entry["response"],
              let method = request["method"]?.stringValue, let url = request["url"]?.stringValue,
              let status = response["status"]?.intValue, status > 0 else { return nil }
        let (origin, path, query) = split(url)
        let requestHeaders = pairs(request["headers"]).filter { !$0.name.hasPrefix(":") }
        var body = ReplayBody.empty
        var rawBody: [UInt8] = []
        if let postData = request["postData"], case .object = postData {
            let mimeType = postData["mimeType"]?.stringValue
                ?? requestHeaders.first { HTTPSyntax.asciiLowercased($0.name) == "content-type" }?.value
            if let text = postData["text"]?.stringValue {
                let bytes = postData["_encoding"]?.stringValue == "base64" ? (Base64.decode(text) ?? []) : Array(text.utf8)
                body = ReplayBody.parse(bytes, contentType: mimeType)
                rawBody = bytes
            } else if let params = postData["params"]?.arrayValue {
                body = .form(pairs(.array(params)))
                rawBody = Array(FormURLEncoded.serialize(pairs(.array(params))).utf8)
            }
        }
        let content = response["content"]
        var responseBody: [UInt8] = []
        if let text = content?["text"]?.stringValue {
            responseBody = content?["encoding"]?.stringValue == "base64" ? (Base64.decode(text) ?? []) : Array(text.utf8)
        }
        let responseHeaders: [(String, String)] = pairs(response["headers"]).compactMap { header in
            let lowered = HTTPSyntax.asciiLowercased(header.name)
            guard !lowered.hasPrefix(":"), !ReplayStore.ignoredHeaders.contains(lowered) else { return nil }
            if lowered == "location", !origin.isEmpty, header.value.hasPrefix(origin + "/") {
                return (header.name, String(header.value.dropFirst(origin.count)))
            }
            return (header.name, header.value)
        }
        return ReplayStore.Recording(name: name, method: method.uppercased(), path: path, query: query, headers: requestHeaders,
                                     significant: [], body: body, rawBody: rawBody, status: status, responseHeaders: responseHeaders,
                                     responseBody: responseBody)
    }

    /// "https://h:1/a%20b?x=1#f" → ("https://h:1", "/a b", [x=1]).
    static func split(_ url: String) -> (origin: String, path: String, query: [(name: String, value: String)]) {
        var rest = Substring(url)
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        var origin = ""
        if let scheme = rest.firstRange(ofBytes: "://") {
            let afterScheme = rest[scheme.upperBound...]
            let slash = afterScheme.firstIndex { $0 == "/" || $0 == "?" } ?? afterScheme.endIndex
            origin = String(rest[..<slash])
            rest = rest[slash...]
        }
        var queryText: Substring = ""
        if let question = rest.firstIndex(of: "?") {
            queryText = rest[rest.index(after: question)...]
            rest = rest[..<question]
        }
        let path = rest.isEmpty ? "/" : PercentEncoding.decodeString(rest.utf8, plusAsSpace: false)
        return (origin, path, queryText.isEmpty ? [] : FormURLEncoded.parse(String(queryText)))
    }

    private static func pairs(_ json: JSON?) -> [(name: String, value: String)] {
        (json?.arrayValue ?? []).compactMap { item in
            guard let name = item["name"]?.stringValue else { return nil }
            return (name, item["value"]?.stringValue ?? "")
        }
    }
}
