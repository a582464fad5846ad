#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlJSON
import DouctlSandbox
import DouctlServer
import DouctlSystem
// Re-exported: every test file of this target uses the shared support (TestFailure,
// TemporaryDirectory, TestClock), and this way none needs an import of its own.
@_exported import DouctlTestSupport

/// A reply as the test client read it. `isComplete` is false when the connection ended (or was
/// reset) before the declared body arrived.
struct TestResponse {
    var status: Int
    var headers: HTTPHeaders
    var body: [UInt8]
    var isComplete: Bool
    var wasReset: Bool
    var elapsed: Double

    var text: String { String(decoding: body, as: UTF8.self) }

    func header(_ name: String) -> String? { headers[name] }

    func json() throws -> JSON {
        do {
            return try JSONParser.parse(body)
        } catch {
            throw TestFailure("not JSON (HTTP \(status)): \(text.prefix(300))")
        }
    }

    /// The Douban error code of an error reply.
    var code: Int? { (try? json())?["code"]?.intValue }
    var msg: String? { (try? json())?["msg"]?.stringValue }
    var oauthError: String? { (try? json())?["error"]?.stringValue }
}

/// A blocking HTTP/1.1 client over a POSIX socket, one connection per request
/// (`Connection: close`), so tests see exactly what the sandbox sends, truncations included.
enum TestHTTP {
    static func connect(port: UInt16, timeout: Double = 60) throws -> Int32 {
        try LoopbackSocket.connect(port: port, receiveTimeout: timeout, sendTimeout: timeout)
    }

    static func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws {
        try LoopbackSocket.sendAll(fd, bytes)
    }

    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) throws {
        try LoopbackSocket.sendAll(fd, bytes)
    }

    /// Sends a request and reads the reply. `bodyWriter`, when given, streams a body of
    /// `streamLength` bytes instead of `body`.
    static func request(port: UInt16, method: String, target: String, headers: [(String, String)] = [],
                        body: [UInt8]? = nil, streamLength: Int64? = nil,
                        bodyWriter: ((Int32) throws -> Void)? = nil) throws -> TestResponse {
        let started = TestClock.now()
        let client = try RawClient(port: port, receiveTimeout: 60, sendTimeout: 60)
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let streamLength {
            head += "Content-Length: \(streamLength)\r\n"
        } else if let body {
            head += "Content-Length: \(body.count)\r\n"
        }
        head += "\r\n"
        try client.send(Array(head.utf8) + (body ?? []))
        if let bodyWriter { try bodyWriter(client.fd) }
        let (received, wasReset) = try client.readUntilClosed()
        return try parseResponse(received, wasReset: wasReset, isHEAD: method == "HEAD", started: started)
    }

    /// A reply read to the end of the connection; a truncated body is kept, marked incomplete.
    static func parseResponse(_ received: [UInt8], wasReset: Bool, isHEAD: Bool, started: Double) throws -> TestResponse {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let headEnd = (0..<max(0, received.count - 3)).first(where: { received[$0..<($0 + 4)].elementsEqual(separator) }) else {
            throw TestFailure("no complete response head (reset: \(wasReset)): \(String(decoding: received, as: UTF8.self))")
        }
        let headText = String(decoding: received[..<headEnd], as: UTF8.self)
        var lines = headText.split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw TestFailure("bad status line: \(headText)") }
        var headers = HTTPHeaders()
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.add(String(line[..<colon]), trimmingSpaces(line[line.index(after: colon)...]))
        }
        var body = Array(received[(headEnd + 4)...])
        var isComplete = !wasReset
        if isHEAD || status == 204 || status == 304 {
            body = []
        } else if let length = headers["Content-Length"].flatMap({ Int($0) }) {
            isComplete = body.count >= length
            if body.count > length { body = Array(body[..<length]) }
        } else if headers["Transfer-Encoding"]?.lowercased() == "chunked" {
            var decoded: [UInt8] = []
            var index = 0
            isComplete = false
            while let lineEnd = (index..<max(index, body.count - 1)).first(where: { body[$0] == 13 && body[$0 + 1] == 10 }) {
                let size = Int(String(decoding: body[index..<lineEnd], as: UTF8.self).split(separator: ";", omittingEmptySubsequences: false)[0], radix: 16) ?? -1
                if size <= 0 {
                    isComplete = size == 0
                    break
                }
                let start = lineEnd + 2
                guard start + size <= body.count else { break }
                decoded += body[start..<(start + size)]
                index = start + size + 2
            }
            body = decoded
        }
        return TestResponse(status: status, headers: headers, body: body, isComplete: isComplete, wasReset: wasReset,
                            elapsed: TestClock.now() - started)
    }
}

// MARK: - Bodies

enum Form {
    static func encode(_ fields: [(String, String)]) -> [UInt8] {
        Array(FormURLEncoded.serialize(fields).utf8)
    }
}

struct MultipartBody {
    struct Part {
        var name: String
        var filename: String?
        var contentType: String?
        var bytes: [UInt8]
    }

    var boundary = "----douctl-test-boundary-7MA4YWxkTrZu0gW"
    var parts: [Part] = []

    var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    mutating func add(_ name: String, _ text: String) {
        parts.append(Part(name: name, filename: nil, contentType: nil, bytes: Array(text.utf8)))
    }

    mutating func addFile(_ name: String, filename: String, contentType: String, _ bytes: [UInt8]) {
        parts.append(Part(name: name, filename: filename, contentType: contentType, bytes: bytes))
    }

    static func partHead(boundary: String, name: String, filename: String?, contentType: String?) -> [UInt8] {
        var head = "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\""
        if let filename { head += "; filename=\"\(filename)\"" }
        head += "\r\n"
        if let contentType { head += "Content-Type: \(contentType)\r\n" }
        head += "\r\n"
        return Array(head.utf8)
    }

    var bytes: [UInt8] {
        var output: [UInt8] = []
        for part in parts {
            output += Self.partHead(boundary: boundary, name: part.name, filename: part.filename, contentType: part.contentType)
            output += part.bytes
            output += Array("\r\n".utf8)
        }
        output += Array("--\(boundary)--\r\n".utf8)
        return output
    }
}

// MARK: - URLs

/// Fields of the query (after `?`, before `#`) or of the fragment of a URL.
func queryFields(of url: String, fragment: Bool = false) -> [String: String] {
    let part: Substring
    if fragment {
        guard let hash = url.firstIndex(of: "#") else { return [:] }
        part = url[url.index(after: hash)...]
    } else {
        let withoutFragment = url.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
        guard let question = withoutFragment.firstIndex(of: "?") else { return [:] }
        part = withoutFragment[withoutFragment.index(after: question)...]
    }
    var result: [String: String] = [:]
    for (name, value) in FormURLEncoded.parse(String(part)) where result[name] == nil { result[name] = value }
    return result
}

/// The path and query of an absolute URL on the sandbox ("/view/status/…").
func target(of url: String, base: String) throws -> String {
    guard url.hasPrefix(base) else { throw TestFailure("\(url) is not on \(base)") }
    return String(url.dropFirst(base.count))
}
