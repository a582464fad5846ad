/// A header value with parameters, as in `Content-Type: multipart/form-data; boundary=x` and
/// `Content-Disposition: form-data; name="field"; filename="a.txt"`.
public struct HeaderValueWithParameters: Sendable {
    /// The part before the first `;`, trimmed.
    public let value: String
    /// Parameter names lowercased, values unquoted, in order.
    public let parameters: [(name: String, value: String)]

    /// Never fails: a parameter without `=` gets an empty value, an unterminated quoted string
    /// runs to the end.
    ///
    /// Inside a quoted string a backslash escapes only `"` and `\` (RFC 9110 quoted-pair, as old
    /// curl and some libraries send); before anything else it is kept, because browsers do not
    /// escape backslashes (the HTML standard percent-encodes `"`, CR and LF instead) and a
    /// Windows-style name like `a\b.txt` must survive.
    public init(parsing text: String) {
        let bytes = Array(text.utf8)
        var index = 0
        func skipWhitespace() {
            while index < bytes.count, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\t") { index += 1 }
        }
        func readUntil(_ stops: Set<UInt8>) -> String {
            let begin = index
            while index < bytes.count, !stops.contains(bytes[index]) { index += 1 }
            return String(HTTPSyntax.trimmingWhitespace(Substring(String(decoding: bytes[begin..<index], as: UTF8.self))))
        }
        value = readUntil([UInt8(ascii: ";")])
        var parameters: [(name: String, value: String)] = []
        while index < bytes.count {
            index += 1  // the ';'
            skipWhitespace()
            let name = HTTPSyntax.asciiLowercased(readUntil([UInt8(ascii: ";"), UInt8(ascii: "=")]))
            var parameterValue = ""
            if index < bytes.count, bytes[index] == UInt8(ascii: "=") {
                index += 1
                skipWhitespace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
                    index += 1
                    var unquoted: [UInt8] = []
                    while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                        if bytes[index] == UInt8(ascii: "\\"), index + 1 < bytes.count,
                           bytes[index + 1] == UInt8(ascii: "\"") || bytes[index + 1] == UInt8(ascii: "\\") {
                            index += 1
                        }
                        unquoted.append(bytes[index])
                        index += 1
                    }
                    if index < bytes.count { index += 1 }  // the closing quote, when there is one
                    parameterValue = String(decoding: unquoted, as: UTF8.self)
                    _ = readUntil([UInt8(ascii: ";")])  // junk after the quoted string
                } else {
                    parameterValue = readUntil([UInt8(ascii: ";")])
                }
            }
            if HTTPSyntax.isToken(name) { parameters.append((name: name, value: parameterValue)) }
        }
        self.parameters = parameters
    }

    /// The first parameter called `name` (case-insensitive).
    public func parameter(_ name: String) -> String? {
        parameters.first { HTTPSyntax.caseInsensitiveEquals($0.name, name) }?.value
    }
}
