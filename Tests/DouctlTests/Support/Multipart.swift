/// Splits a multipart/form-data body into parts, for assertions (tests only).
struct ParsedPart: Equatable {
    var headers: [String]
    var body: [UInt8]

    var disposition: String { headers.first { $0.lowercased().hasPrefix("content-disposition:") } ?? "" }
    var contentType: String? {
        headers.first { $0.lowercased().hasPrefix("content-type:") }.map { String($0.dropFirst("content-type:".count)).trimmingCharacters(in: .whitespaces) }
    }
}

import Foundation

func multipartParts(_ body: [UInt8], contentType: String?) -> [ParsedPart]? {
    guard let contentType, let range = contentType.range(of: "boundary=") else { return nil }
    let boundary = Array(("--" + contentType[range.upperBound...]).utf8)
    var parts: [ParsedPart] = []
    var positions: [Int] = []
    var index = 0
    while index + boundary.count <= body.count {
        if body[index] == boundary[0], Array(body[index..<index + boundary.count]) == boundary {
            positions.append(index)
            index += boundary.count
        } else {
            index += 1
        }
    }
    guard positions.count >= 2 else { return nil }
    for (start, end) in zip(positions, positions.dropFirst()) {
        let section = Array(body[(start + boundary.count + 2)..<(end - 2)]) // skip boundary+CRLF, drop CRLF before next
        guard let split = section.firstRange(of: [13, 10, 13, 10]) else { return nil }
        let headerText = String(decoding: section[..<split.lowerBound], as: UTF8.self)
        parts.append(ParsedPart(headers: headerText.components(separatedBy: "\r\n"), body: Array(section[split.upperBound...])))
    }
    return parts
}
