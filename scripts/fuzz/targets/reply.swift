// Fuzz target: the reply/envelope decoder (Douban, Coding and plain OAuth2 styles, errors,
// expired-token and rate-limit detection). Input: byte 0 picks the style and status, the
// rest is the body.
import DouctlCore
import DouctlHTTP

let statuses = [200, 201, 204, 400, 401, 403, 404, 429, 500, 503]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let (choice, body) = selector(data, size)
    let styles: [any APIStyleRules] = [DoubanStyle(), CodingStyle(), PlainStyle()]
    let rules = styles[Int(choice & 0x3f) % styles.count]
    let status = statuses[Int(choice & 0x3f) / styles.count % statuses.count]
    let type = choice & 0x80 == 0 ? "application/json; charset=utf-8" : "text/plain"
    let response = HTTPResponse(head: HTTPResponseHead(status: status, headers: [HTTPHeader("Content-Type", type)]), body: body)
    _ = rules.meansExpiredToken(response)
    _ = rules.meansRateLimited(response)
    do {
        let reply = try ReplyDecoder.decode(response, rules: rules, request: "GET /fuzz", parsesArrays: choice & 0x40 == 0)
        _ = try? reply.requireJSON()
        _ = reply.isEnvelope
    } catch {
        _ = "\(error)"
    }
    return 0
}
