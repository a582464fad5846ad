// Fuzz target: the reply/envelope decoder (Douban and Coding styles, errors, expired-token
// detection). Input: byte 0 picks the style and status, the rest is the body.
import DouctlCore
import DouctlHTTP

let statuses = [200, 201, 204, 400, 401, 403, 404, 429, 500, 503]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let (choice, body) = selector(data, size)
    let style: APIStyle = choice & 1 == 0 ? .douban : .coding
    let status = statuses[Int(choice >> 1) % statuses.count]
    let type = choice & 0x80 == 0 ? "application/json; charset=utf-8" : "text/plain"
    let response = HTTPResponse(head: HTTPResponseHead(status: status, headers: [HTTPHeader("Content-Type", type)]), body: body)
    _ = ReplyDecoder.meansExpiredToken(response, style: style)
    do {
        let reply = try ReplyDecoder.decode(response, style: style, request: "GET /fuzz", parsesArrays: choice & 0x40 == 0)
        _ = try? reply.requireJSON()
        _ = reply.isEnvelope
    } catch {
        _ = "\(error)"
    }
    return 0
}
