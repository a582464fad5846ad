// Fuzz target: Set-Cookie parsing (douctl's cookie jar), the jar's round trip through its
// file format, and the sandbox's Cookie request-header reader.
@testable import DouctlCore
@testable import DouctlSandbox
import DouctlHTTP
import DouctlSystem

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    for header in text.split(separator: "\n", omittingEmptySubsequences: false) {
        for now in [0.0, 1_700_000_000, 1e300, -1e18] {
            if let cookie = Cookie.parse(setCookie: String(header), now: now) {
                _ = cookie.matches(path: "/api/x")
                if let expires = cookie.expires, !expires.isFinite { fuzzFailure("non-finite expiry") }
            }
        }
    }
    _ = HTTPDate.parse(text)
    return 0
}
