// Fuzz target: the sandbox server's request reader, as a connection runs it: request heads
// (strict RFC 9112 parsing, framing, the target), then the body (Content-Length or chunked,
// trailers), request after request on one keep-alive stream. Byte 0 sets how many bytes each
// read returns, so split reads are fuzzed too.
@testable import DouctlServer

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let (choice, stream) = selector(data, size)
    let perRead = choice == 0 ? Int.max : Int(choice)
    let input = BufferedInput(producer: MemoryProducer(stream, maxPerCall: perRead), capacity: 4096)
    for _ in 0..<8 {
        guard case .head(let headBytes) = input.readHead(maxBytes: 8 * 1024, firstByteDeadline: .never, headerTimeout: 30) else { return 0 }
        let head: RequestHead
        let framing: RequestFraming
        do throws(RequestRejection) {
            head = try RequestParser.parseHead(headBytes)
            framing = try RequestParser.framing(of: head)
            let target = try RequestParser.splitTarget(head.target, method: head.method)
            _ = FormURLEncoded.parse(String(target.query ?? ""))
        } catch {
            if !(400...599).contains(error.status) { fuzzFailure("rejection with status \(error.status)") }
            return 0
        }
        if framing.isChunked && framing.contentLength != nil { fuzzFailure("both chunked and a length") }
        let body = HTTPRequestBody(input: input, contentLength: framing.contentLength, isChunked: framing.isChunked,
                                   maxBodyBytes: 1 << 20, maxTrailerBytes: 4096, readTimeout: 30, continueSender: nil)
        guard let content = try? body.readAll(limit: 1 << 20) else { return 0 }
        if let length = framing.contentLength, Int64(content.count) != length { fuzzFailure("body length \(content.count) ≠ \(length)") }
        if head.headers["Content-Type"]?.hasPrefix("application/x-www-form-urlencoded") == true { _ = FormURLEncoded.parse(content) }
        if !framing.keepAlive { return 0 }
    }
    return 0
}
