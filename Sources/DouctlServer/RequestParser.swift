import DouctlSystem
/// A request the server answers itself, with `status`, before any handler sees it.
struct RequestRejection: Error, Equatable {
    let status: Int
    let reason: String

    static func badRequest(_ reason: String) -> RequestRejection { RequestRejection(status: 400, reason: reason) }
}

/// The request line and header fields, syntax-checked.
struct RequestHead {
    var method: String
    var target: String
    /// As sent, e.g. "HTTP/1.1".
    var version: String
    /// The minor version of HTTP/1.x: 0 means HTTP/1.0 rules (close unless asked otherwise).
    var minorVersion: Int
    var headers: HTTPHeaders
}

/// How the body is delimited and what the connection does afterwards, derived from the head.
struct RequestFraming: Equatable {
    var contentLength: Int64?
    var isChunked: Bool
    var keepAlive: Bool
    var expectsContinue: Bool
}

/// Parses request heads strictly (RFC 9112): whatever is ambiguous about where a message ends
/// is rejected, because a lenient parser behind another one is how request smuggling happens,
/// and because tests of douctl's client want a server that notices malformed requests.
enum RequestParser {
    private static let lineFeed = UInt8(ascii: "\n")
    private static let carriageReturn = UInt8(ascii: "\r")
    private static let space = UInt8(ascii: " ")
    private static let tab = UInt8(ascii: "\t")

    /// Parses a head as returned by `BufferedInput.readHead` (ending with its blank line).
    /// Lines may end in CRLF or a bare LF.
    static func parseHead(_ head: [UInt8]) throws(RequestRejection) -> RequestHead {
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = head.startIndex
        while let lineFeedIndex = head[lineStart...].firstIndex(of: lineFeed) {
            var line = head[lineStart..<lineFeedIndex]
            if line.last == carriageReturn { line = line.dropLast() }
            if line.contains(carriageReturn) { throw .badRequest("bare CR in header section") }
            lineStart = lineFeedIndex + 1
            if line.isEmpty { break }
            lines.append(line)
        }
        guard let requestLine = lines.first else { throw .badRequest("missing request line") }
        var head = try parseRequestLine(requestLine)
        for line in lines.dropFirst() {
            let field = try parseFieldLine(line)
            head.headers.add(field.name, field.value)
        }
        return head
    }

    /// `method SP request-target SP HTTP-version`, single spaces, nothing else.
    static func parseRequestLine(_ line: ArraySlice<UInt8>) throws(RequestRejection) -> RequestHead {
        guard let firstSpace = line.firstIndex(of: space) else { throw .badRequest("malformed request line") }
        let method = line[..<firstSpace]
        guard !method.isEmpty, method.allSatisfy(HTTPSyntax.isTokenByte) else { throw .badRequest("invalid method") }
        let rest = line[(firstSpace + 1)...]
        guard let secondSpace = rest.firstIndex(of: space) else { throw .badRequest("missing HTTP version") }
        let target = rest[..<secondSpace]
        let version = rest[(secondSpace + 1)...]
        guard !target.isEmpty, target.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else {
            throw .badRequest("invalid request target")
        }
        let minorVersion = try parseVersion(version)
        return RequestHead(method: String(decoding: method, as: UTF8.self),
                           target: String(decoding: target, as: UTF8.self),
                           version: String(decoding: version, as: UTF8.self),
                           minorVersion: minorVersion,
                           headers: HTTPHeaders())
    }

    /// `HTTP/1.x` gives x; a well-formed other major version is 505; anything else is 400.
    static func parseVersion(_ version: ArraySlice<UInt8>) throws(RequestRejection) -> Int {
        let prefix = Array("HTTP/".utf8)
        guard version.starts(with: prefix) else { throw .badRequest("malformed HTTP version") }
        let numbers = version.dropFirst(prefix.count).split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        let isDigit: (UInt8) -> Bool = { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        guard (1...2).contains(numbers.count), numbers.allSatisfy({ $0.count == 1 && isDigit($0[$0.startIndex]) }) else {
            throw .badRequest("malformed HTTP version")
        }
        let major = numbers[0][numbers[0].startIndex] - UInt8(ascii: "0")
        guard major == 1 else { throw RequestRejection(status: 505, reason: "HTTP version not supported") }
        guard numbers.count == 2 else { throw .badRequest("malformed HTTP version") }
        return Int(numbers[1][numbers[1].startIndex] - UInt8(ascii: "0"))
    }

    /// `name: value` with a token name, no space before the colon, no obsolete line folding,
    /// and no control characters in the value. Also used for chunked trailers and multipart
    /// part headers.
    static func parseFieldLine(_ line: ArraySlice<UInt8>) throws(RequestRejection) -> (name: String, value: String) {
        guard let first = line.first else { throw .badRequest("empty header line") }
        if first == space || first == tab { throw .badRequest("obsolete line folding") }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { throw .badRequest("header line without colon") }
        let name = line[..<colon]
        guard !name.isEmpty, name.allSatisfy(HTTPSyntax.isTokenByte) else { throw .badRequest("invalid header name") }
        var value = line[(colon + 1)...]
        while let byte = value.first, byte == space || byte == tab { value = value.dropFirst() }
        while let byte = value.last, byte == space || byte == tab { value = value.dropLast() }
        guard value.allSatisfy({ ($0 >= 0x20 && $0 != 0x7F) || $0 == tab }) else {
            throw .badRequest("invalid header value")
        }
        return (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
    }

    /// Works out body framing and connection persistence (RFC 9112 §6, §9.3), rejecting the
    /// ambiguous combinations.
    static func framing(of head: RequestHead) throws(RequestRejection) -> RequestFraming {
        let headers = head.headers
        let isHTTP10 = head.minorVersion == 0
        var framing = RequestFraming(contentLength: nil, isChunked: false, keepAlive: !isHTTP10, expectsContinue: false)

        if headers.contains("Transfer-Encoding") {
            let codings = headers.tokens("Transfer-Encoding")
            if headers.contains("Content-Length") { throw .badRequest("both Content-Length and Transfer-Encoding") }
            if isHTTP10 { throw .badRequest("Transfer-Encoding in an HTTP/1.0 request") }
            guard codings.last == "chunked" else { throw .badRequest("final transfer coding is not chunked") }
            guard codings.count == 1 else { throw RequestRejection(status: 501, reason: "unsupported transfer coding") }
            framing.isChunked = true
        } else if headers.contains("Content-Length") {
            // Repeats (or a list) are allowed only when every element is the same valid number.
            var length: Int64?
            for value in headers.values("Content-Length") {
                for element in value.split(separator: ",", omittingEmptySubsequences: false) {
                    guard let parsed = parseDecimal(HTTPSyntax.trimmingWhitespace(element)) else {
                        throw .badRequest("invalid Content-Length")
                    }
                    if let length, length != parsed { throw .badRequest("conflicting Content-Length values") }
                    length = parsed
                }
            }
            framing.contentLength = length
        }

        let connection = headers.tokens("Connection")
        if connection.contains("close") {
            framing.keepAlive = false
        } else if isHTTP10 && connection.contains("keep-alive") {
            framing.keepAlive = true
        }

        // HTTP/1.0 peers cannot know 100-continue; the expectation is ignored for them (RFC 9110 §10.1.1).
        let expectations = headers.tokens("Expect")
        if !expectations.isEmpty && !isHTTP10 {
            guard expectations == ["100-continue"] else { throw RequestRejection(status: 417, reason: "unsupported expectation") }
            framing.expectsContinue = true
        }
        return framing
    }

    /// A non-negative decimal integer, or nil when empty, not all digits, or beyond Int64.
    static func parseDecimal(_ text: Substring) -> Int64? {
        guard !text.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in text.utf8 {
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
            let (shifted, overflowed) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowedAgain) = shifted.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            if overflowed || overflowedAgain { return nil }
            value = sum
        }
        return value
    }

    /// Splits a request-target into its raw path and raw query (fragment dropped). Accepts
    /// origin-form (`/p?q`), absolute-form (`http://host/p?q`, which proxies send and servers
    /// must accept) and `*` for OPTIONS.
    static func splitTarget(_ target: String, method: String) throws(RequestRejection) -> (path: Substring, query: Substring?) {
        var rest = Substring(target)
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        if rest == "*" {
            guard method == "OPTIONS" else { throw .badRequest("invalid request target") }
            return (rest, nil)
        }
        if !rest.hasPrefix("/") {
            let lowered = HTTPSyntax.asciiLowercased(rest.prefix(8))
            guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://"),
                  let schemeEnd = rest.firstRange(ofBytes: "://")?.upperBound else {
                throw .badRequest("invalid request target")
            }
            let afterAuthority = rest[schemeEnd...].firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
            rest = rest[afterAuthority...]
            if !rest.hasPrefix("/") { rest = Substring("/" + rest) }
        }
        guard let question = rest.firstIndex(of: "?") else { return (rest, nil) }
        return (rest[..<question], rest[rest.index(after: question)...])
    }
}
