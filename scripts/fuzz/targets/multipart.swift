// Fuzz target: the streaming multipart reader. Input: the Content-Type header value, a line
// feed, then the body. Byte 0 sets the reader's buffer size (small buffers move delimiters
// across buffer edges) and whether parts are read, skipped or read partly.
@testable import DouctlServer

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let (choice, rest) = selector(data, size)
    let newline = rest.firstIndex(of: 0x0A) ?? rest.endIndex
    let contentType = String(decoding: rest[..<newline], as: UTF8.self)
    let body = newline < rest.endIndex ? Array(rest[(newline + 1)...]) : []
    let bufferSize = [1, 64, 300, 4096, 256 * 1024][Int(choice & 7) % 5]
    guard let reader = MultipartReader(body: HTTPRequestBody(bytes: body), contentType: contentType, bufferSize: bufferSize) else { return 0 }
    var total = 0
    var index = 0
    do {
        while let part = try reader.nextPart() {
            _ = part.name; _ = part.filename; _ = part.contentType
            switch (Int(choice >> 3) + index) % 3 {
            case 0:
                total += try part.readAll(limit: 1 << 20).count
            case 1:
                var small = [UInt8](repeating: 0, count: 7)
                total += try small.withUnsafeMutableBytes { try part.read(into: $0) }
            default:
                break  // skipped: the next nextPart() must skip it
            }
            index += 1
            if total > body.count { fuzzFailure("parts hold more bytes (\(total)) than the body (\(body.count))") }
        }
    } catch {
        _ = "\(error)"
    }
    return 0
}
