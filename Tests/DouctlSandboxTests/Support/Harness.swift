import DouctlJSON
import DouctlSandbox
import DouctlServer

/// A started sandbox on a free port and shortcuts for talking to it. Stop it with `stop()`
/// (deinit stops it too).
final class Harness {
    let sandbox: Sandbox
    var port: UInt16 { sandbox.port }
    var base: String { sandbox.baseURL }

    init(_ configure: (inout SandboxConfiguration) -> Void = { _ in }) throws {
        var configuration = SandboxConfiguration()
        configure(&configuration)
        sandbox = try Sandbox(configuration)
        try sandbox.start()
    }

    deinit { sandbox.stop() }

    func stop() { sandbox.stop() }

    /// A token for `user` with every scope (or `scopes`).
    func token(_ user: String = "ahbei", scopes: [String] = Sandbox.allScopes) -> String {
        sandbox.issueToken(user: user, scopes: scopes).accessToken
    }

    private func authHeaders(_ token: String?, _ headers: [(String, String)]) -> [(String, String)] {
        (token.map { [("Authorization", "Bearer \($0)")] } ?? []) + headers
    }

    func get(_ target: String, token: String? = nil, headers: [(String, String)] = []) throws -> TestResponse {
        try TestHTTP.request(port: port, method: "GET", target: target, headers: authHeaders(token, headers))
    }

    func send(_ method: String, _ target: String, token: String? = nil, headers: [(String, String)] = [],
              body: [UInt8]? = nil) throws -> TestResponse {
        try TestHTTP.request(port: port, method: method, target: target, headers: authHeaders(token, headers), body: body)
    }

    func post(_ target: String, form: [(String, String)] = [], token: String? = nil,
              headers: [(String, String)] = []) throws -> TestResponse {
        try TestHTTP.request(port: port, method: "POST", target: target,
                             headers: authHeaders(token, [("Content-Type", "application/x-www-form-urlencoded; charset=UTF-8")] + headers),
                             body: Form.encode(form))
    }

    func post(_ target: String, multipart: MultipartBody, token: String? = nil) throws -> TestResponse {
        try TestHTTP.request(port: port, method: "POST", target: target,
                             headers: authHeaders(token, [("Content-Type", multipart.contentType)]), body: multipart.bytes)
    }

    func delete(_ target: String, token: String? = nil) throws -> TestResponse {
        try TestHTTP.request(port: port, method: "DELETE", target: target, headers: authHeaders(token, []))
    }

    /// Posts a text status and returns it.
    func postStatus(_ text: String, token: String) throws -> JSON {
        let reply = try post("/shuo/v2/statuses/", form: [("text", text)], token: token)
        guard reply.status == 200 else { throw TestFailure("posting failed: \(reply.status) \(reply.text)") }
        return try reply.json()
    }

    // MARK: OAuth

    static let loopbackRedirect = "http://127.0.0.1:53682/callback/default"

    /// GET /service/auth2/auth with these query fields.
    func authorize(_ fields: [(String, String)]) throws -> TestResponse {
        try get("/service/auth2/auth?" + FormURLEncoded.serialize(fields))
    }

    /// The standard authorize fields plus `extra`.
    static func authorizeFields(redirect: String = loopbackRedirect, responseType: String = "code", state: String? = "s-123",
                                extra: [(String, String)] = []) -> [(String, String)] {
        var fields = [("client_id", Sandbox.clientID), ("redirect_uri", redirect), ("response_type", responseType),
                      ("scope", "douban_basic_common,shuo_basic_r,shuo_basic_w")]
        if let state { fields.append(("state", state)) }
        return fields + extra
    }

    /// Runs the auto-approved authorize step and returns the code from the redirect.
    func authorizationCode(redirect: String = loopbackRedirect, extra: [(String, String)] = []) throws -> String {
        let reply = try authorize(Self.authorizeFields(redirect: redirect, extra: extra))
        guard reply.status == 302, let location = reply.header("Location"), let code = queryFields(of: location)["code"] else {
            throw TestFailure("authorize did not redirect with a code: \(reply.status) \(reply.text)")
        }
        return code
    }

    func tokenRequest(_ fields: [(String, String)], headers: [(String, String)] = []) throws -> TestResponse {
        try post("/service/auth2/token", form: fields, headers: headers)
    }

    static let client = [("client_id", Sandbox.clientID), ("client_secret", Sandbox.clientSecret)]

    /// A full login: authorize (auto) and exchange the code. Returns the token reply.
    func login(redirect: String = loopbackRedirect) throws -> JSON {
        let code = try authorizationCode(redirect: redirect)
        let reply = try tokenRequest(Self.client + [("grant_type", "authorization_code"), ("code", code),
                                                    ("redirect_uri", redirect)])
        guard reply.status == 200 else { throw TestFailure("code exchange failed: \(reply.status) \(reply.text)") }
        return try reply.json()
    }

    func refresh(_ refreshToken: String) throws -> TestResponse {
        try tokenRequest(Self.client + [("grant_type", "refresh_token"), ("refresh_token", refreshToken)])
    }

    func startDevice(scope: String = "douban_basic_common,shuo_basic_r,shuo_basic_w") throws -> JSON {
        let reply = try post("/service/auth2/device", form: [("client_id", Sandbox.clientID), ("scope", scope)])
        guard reply.status == 200 else { throw TestFailure("device authorization failed: \(reply.status) \(reply.text)") }
        return try reply.json()
    }

    func pollDevice(_ deviceCode: String) throws -> TestResponse {
        try tokenRequest(Self.client + [("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
                                        ("device_code", deviceCode)])
    }
}

// MARK: - Shape checks

/// `yyyy-MM-dd HH:mm:ss`.
func isDoubanTime(_ text: String?) -> Bool {
    guard let text, text.count == 19 else { return false }
    let pattern = Array("dddd-dd-dd dd:dd:dd")
    for (character, expected) in zip(text, pattern) {
        if expected == "d" ? !character.isASCII || !character.isNumber : character != expected { return false }
    }
    return true
}

func isNumber(_ value: JSON?) -> Bool {
    if case .number = value { return true }
    return false
}

func isString(_ value: JSON?) -> Bool { value?.stringValue != nil }

func isBool(_ value: JSON?) -> Bool { value?.boolValue != nil }

func isHex32(_ value: JSON?) -> Bool {
    guard let text = value?.stringValue else { return false }
    return text.count == 32 && text.allSatisfy { $0.isHexDigit && !$0.isUppercase }
}

// MARK: - Images

enum Images {
    /// A PNG header with the given size (enough for format and size detection).
    static func png(width: Int, height: Int, padding: Int = 100) -> [UInt8] {
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]
        bytes += Array("IHDR".utf8)
        bytes += bigEndian(width) + bigEndian(height) + [8, 2, 0, 0, 0] + [0x12, 0x34, 0x56, 0x78]
        bytes += (0..<padding).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        bytes += [0, 0, 0, 0] + Array("IEND".utf8) + [0xAE, 0x42, 0x60, 0x82]
        return bytes
    }

    static func jpeg(width: Int, height: Int, padding: Int = 100) -> [UInt8] {
        var bytes: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8) + [0, 1, 1, 0, 0, 1, 0, 1, 0, 0]
        bytes += [0xFF, 0xC0, 0x00, 0x11, 0x08, UInt8(height >> 8), UInt8(height & 0xFF), UInt8(width >> 8), UInt8(width & 0xFF),
                  0x03, 0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11, 0x01]
        bytes += (0..<padding).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        bytes += [0xFF, 0xD9]
        return bytes
    }

    static func gif(width: Int, height: Int) -> [UInt8] {
        Array("GIF89a".utf8) + [UInt8(width & 0xFF), UInt8(width >> 8), UInt8(height & 0xFF), UInt8(height >> 8), 0x00, 0, 0]
            + [0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3B]
    }

    private static func bigEndian(_ value: Int) -> [UInt8] {
        [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}
