import DouctlJSON
import DouctlSandbox
import DouctlSystem
import Testing

/// Coding's cookie login: captcha first, SHA-1 password, 2FA,
/// XSRF on unsafe requests, logout.
@Suite struct CodingLoginTests {
    /// A harness whose log lines are kept.
    final class LoggedHarness {
        let lines = LockedValue<[String]>([])
        let harness: Harness

        init(_ configure: (inout SandboxConfiguration) -> Void = { _ in }) throws {
            let lines = self.lines
            harness = try Harness {
                $0.log = { line in lines.withLock { $0.append(line) } }
                configure(&$0)
            }
        }

        func line(containing text: String) -> String? {
            lines.withLock { $0.last { $0.contains(text) } }
        }
    }

    @Test func loginWithoutAskingForTheCaptchaFirstFails() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let browser = CodingBrowser(harness)
        let reply = try browser.post("/api/v2/account/login", form: CodingBrowser.loginForm("coder"))
        #expect(reply.status == 200)
        #expect(try reply.json() == ["code": 1000, "msg": ["user_not_login": "用户未登录"]])
        #expect(reply.setCookies.isEmpty)
        #expect(browser.sid == nil)
        // Even with a right captcha text, an unknown session is no session.
        let forged = try harness.post("/api/v2/account/login", form: CodingBrowser.loginForm("coder", captcha: "ABCD"),
                                      headers: [("Cookie", "sid=00ff; XSRF-TOKEN=aa"), ("X-XSRF-TOKEN", "aa")])
        #expect(forged.code == 1000)
    }

    @Test func askingForTheCaptchaStartsTheSession() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let browser = CodingBrowser(harness)
        let first = try browser.get("/api/captcha/login")
        #expect(try first.json() == ["code": 0, "data": true])
        let cookies = first.setCookies
        #expect(cookies.count == 2)
        let sid = try #require(cookies.first { $0.hasPrefix("sid=") })
        #expect(sid.contains("; Path=/"))
        #expect(sid.hasSuffix("; HttpOnly"))
        let xsrf = try #require(cookies.first { $0.hasPrefix("XSRF-TOKEN=") })
        #expect(xsrf.contains("; Path=/"))
        #expect(!xsrf.contains("HttpOnly"))  // scripts (and clients) read it
        #expect((browser.sid?.count ?? 0) >= 32)
        // The same session on the next call: no new cookies.
        let second = try browser.get("/api/captcha/login")
        #expect(second.setCookies.isEmpty)
    }

    @Test func captchaIsAValidPNGAndIsLogged() throws {
        let logged = try LoggedHarness()
        let harness = logged.harness
        defer { harness.stop() }
        let browser = CodingBrowser(harness)
        _ = try browser.get("/api/captcha/login")
        let image = try browser.get("/api/getCaptcha")
        #expect(image.status == 200)
        #expect(image.header("Content-Type") == "image/png")
        let png = try PNGCheck(image.body)
        #expect(png.width == 120)
        #expect(png.height == 40)
        #expect(png.bitDepth == 8)
        #expect(png.colorType == 0)
        #expect(png.pixels.count == png.height * (png.width + 1))
        // Ink: some pixels are much darker than the paper.
        #expect(png.pixels.filter { $0 < 80 }.count > 100)
        let sid = try #require(browser.sid)
        let code = try #require(harness.sandbox.codingCaptcha(forSession: sid))
        #expect(code.count == 4)
        #expect(harness.sandbox.lastCodingCaptcha == code)
        #expect(logged.line(containing: "coding captcha for session") == "coding captcha for session \(sid): \(code)")
        // A new picture, a new code.
        _ = try browser.get("/api/getCaptcha")
        let next = try #require(harness.sandbox.codingCaptcha(forSession: sid))
        #expect(logged.line(containing: "coding captcha for session") == "coding captcha for session \(sid): \(next)")
    }

    @Test func wrongCaptchaIsRefusedAndSpentRightOneLogsIn() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let browser = CodingBrowser(harness)
        _ = try browser.get("/api/captcha/login")
        _ = try browser.get("/api/getCaptcha")
        let sid = try #require(browser.sid)
        let code = try #require(harness.sandbox.codingCaptcha(forSession: sid))
        let wrongText = code == "AAAA" ? "BBBB" : "AAAA"
        let expected: JSON = ["code": 903, "msg": ["j_captcha_error": "验证码错误"]]
        #expect(try browser.post("/api/v2/account/login", form: CodingBrowser.loginForm("coder", captcha: wrongText)).json() == expected)
        // The attempt spent the captcha: the right text no longer works.
        #expect(try browser.post("/api/v2/account/login", form: CodingBrowser.loginForm("coder", captcha: code)).json() == expected)
        // Missing is wrong too.
        _ = try browser.get("/api/getCaptcha")
        #expect(try browser.post("/api/v2/account/login", form: CodingBrowser.loginForm("coder")).json() == expected)
        // A new picture and its text (any case) logs in.
        _ = try browser.get("/api/getCaptcha")
        let fresh = try #require(harness.sandbox.codingCaptcha(forSession: sid))
        let login = try browser.post("/api/v2/account/login", form: CodingBrowser.loginForm("coder", captcha: fresh.lowercased()))
        #expect(login.status == 200)
        #expect(login.code == 0)
        #expect(codingUserProblems(login.data) == [])
        #expect(login.data?["global_key"] == "coder")
        #expect(login.data?["email"] == "coder@example.com")
        // The session id rotated; the old one is gone.
        let newSID = try #require(browser.sid)
        #expect(newSID != sid)
        #expect(try harness.get("/api/account/current_user", headers: [("Cookie", "sid=\(sid)")]).code == 1000)
        // The session works.
        let me = try browser.get("/api/account/current_user")
        #expect(me.code == 0)
        #expect(me.data?["global_key"] == "coder")
        #expect(me.data?["email"] == "coder@example.com")
        #expect(try browser.get("/api/user/unread-count").code == 0)
        #expect(try browser.get("/api/activities/user_tweet").data?.arrayValue?.isEmpty == false)
    }

    @Test func wrongAccountOrPassword() throws {
        let harness = try Harness { $0.codingCaptchaRequired = false }
        defer { harness.stop() }
        let expected: JSON = ["code": 1, "msg": ["account_or_password_error": "账号或密码错误"]]
        let browser = CodingBrowser(harness)
        #expect(try browser.get("/api/captcha/login").json() == ["code": 0, "data": false])
        #expect(try browser.post("/api/v2/account/login", form: CodingBrowser.loginForm("coder", password: "wrong")).json() == expected)
        #expect(try browser.post("/api/v2/account/login", form: CodingBrowser.loginForm("nobody")).json() == expected)
        // The password must be sent hashed.
        #expect(try browser.post("/api/v2/account/login", form: [("account", "coder"), ("password", Sandbox.codingPassword)]).json() == expected)
        // Email (any case) and phone number work as the account too.
        for account in ["Coder@Example.com", "13800000001", "coder"] {
            let other = CodingBrowser(harness)
            let reply = try other.logIn(account)
            #expect(reply.code == 0, "\(account): \(reply.text)")
            #expect(reply.data?["global_key"] == "coder")
        }
        #expect(Sandbox.codingPasswordHash("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d")
    }

    @Test func twoFactorLogin() throws {
        let logged = try LoggedHarness()
        let harness = logged.harness
        defer { harness.stop() }
        let browser = CodingBrowser(harness)
        let first = try browser.logIn("twofa")
        #expect(first.status == 200)
        #expect(try first.json() == ["code": 3205, "msg": ["two_factor_auth_code_not_empty": "twofa"]])
        let code = try #require(harness.sandbox.codingTwoFactorCode(for: "twofa"))
        #expect(code.count == 6 && code.allSatisfy(\.isNumber))
        #expect(harness.sandbox.lastCodingTwoFactorCode == code)
        #expect(logged.line(containing: "coding 2fa code") == "coding 2fa code for twofa: \(code)")
        // Not logged in yet.
        #expect(try browser.get("/api/account/current_user").code == 1000)
        let wrong = code == "000000" ? "111111" : "000000"
        #expect(try browser.post("/api/check_two_factor_auth_code", form: [("code", wrong)]).json()
            == ["code": 3206, "msg": ["two_factor_auth_code_error": "验证码错误"]])
        let sidBefore = browser.sid
        let done = try browser.post("/api/check_two_factor_auth_code", form: [("code", code)])
        #expect(done.code == 0)
        #expect(done.data?["global_key"] == "twofa")
        #expect(browser.sid != sidBefore)
        #expect(try browser.get("/api/account/current_user").data?["name"] == "安全控老李")
        // Nothing is pending any more.
        #expect(try browser.post("/api/check_two_factor_auth_code", form: [("code", code)]).code == 1000)
    }

    @Test func twoFactorStepExpires() throws {
        let clock = VirtualClock()
        let harness = try Harness { $0.codingTwoFactorTimeout = 0.1; $0.clock = SandboxClock(now: clock.read) }
        defer { harness.stop() }
        let browser = CodingBrowser(harness)
        #expect(try browser.logIn("twofa").code == 3205)
        let code = try #require(harness.sandbox.codingTwoFactorCode(for: "twofa"))
        clock.advance(0.2)
        let late = try browser.post("/api/check_two_factor_auth_code", form: [("code", code)])
        #expect(late.status == 200)
        #expect(try late.json() == ["code": 3207, "msg": ["user_login_status_expired": "登录状态已过期"]])
        // The login starts over.
        #expect(try browser.post("/api/check_two_factor_auth_code", form: [("code", code)]).code == 1000)
        #expect(try browser.get("/api/account/current_user").code == 1000)
    }

    @Test func xsrfIsEnforcedOnCookieSessions() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let browser = CodingBrowser(harness)
        // Even the login POST must echo the cookie.
        _ = try browser.get("/api/captcha/login")
        let unguarded = try browser.post("/api/v2/account/login", form: CodingBrowser.loginForm("coder"), withoutXSRF: true)
        #expect(unguarded.status == 403)
        #expect(try browser.logIn().code == 0)
        let expected: JSON = ["code": 403, "msg": ["xsrf_token_invalid": "请求校验失败"]]
        let missing = try browser.post("/api/tweet", form: [("content", "没有校验头")], withoutXSRF: true)
        #expect(missing.status == 403)
        #expect(try missing.json() == expected)
        let wrong = try browser.post("/api/tweet", form: [("content", "错误校验头")], xsrf: "0000")
        #expect(wrong.status == 403)
        #expect(try wrong.json() == expected)
        let right = try browser.post("/api/tweet", form: [("content", "正确的校验头")])
        #expect(right.status == 200)
        #expect(right.code == 0)
        #expect(tweetProblems(right.data) == [])
        let id = try #require(right.data?["id"]?.int64Value)
        #expect(try browser.send("DELETE", "/api/tweet/\(id)", withoutXSRF: true).status == 403)
        #expect(try browser.send("DELETE", "/api/tweet/\(id)").code == 0)
        // GETs need no header; token requests are exempt.
        #expect(try browser.get("/api/account/current_user").code == 0)
        #expect(try harness.codingPost("/api/tweet", form: [("content", "令牌不需要")], token: harness.codingToken()).code == 0)
        // The requests are recorded with their cookies and the header.
        let recorded = try #require(harness.sandbox.requests.last { $0.method == "DELETE" })
        #expect(recorded.header("Cookie")?.contains("sid=\(browser.sid ?? "?")") == true)
        #expect(recorded.header("X-XSRF-TOKEN") == browser.cookie("XSRF-TOKEN"))
        #expect(recorded.path == "/api/tweet/\(id)")
        #expect(recorded.status == 200)
    }

    @Test func logoutEndsTheSession() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let browser = CodingBrowser(harness)
        #expect(try browser.logIn(rememberMe: true).code == 0)
        #expect(browser.cookie("XSRF-TOKEN") != nil)
        let sid = try #require(browser.sid)
        let login = harness.sandbox.requests.last { $0.path == "/api/v2/account/login" }
        #expect(login?.formValue("remember_me") == "true")
        #expect(try browser.post("/api/account/logout", withoutXSRF: true).status == 403)
        let logout = try browser.post("/api/account/logout")
        #expect(try logout.json() == ["code": 0])
        #expect(logout.setCookies.contains { $0.hasPrefix("sid=;") && $0.contains("Max-Age=0") })
        #expect(logout.setCookies.contains { $0.hasPrefix("XSRF-TOKEN=;") && $0.contains("Max-Age=0") })
        #expect(browser.sid == nil)
        #expect(try harness.get("/api/account/current_user", headers: [("Cookie", "sid=\(sid)")]).code == 1000)
    }

    @Test func rememberMeMakesTheCookiesLast() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let remembered = try CodingBrowser(harness).logIn(rememberMe: true)
        #expect(remembered.setCookies.count == 2)
        #expect(remembered.setCookies.allSatisfy { $0.contains("Max-Age=2592000") })
        let session = try CodingBrowser(harness).logIn(rememberMe: false)
        #expect(session.setCookies.count == 2)
        #expect(session.setCookies.allSatisfy { !$0.contains("Max-Age") })
    }

    @Test func actionCaptchaBlocksTweetsUntilRequestValidPasses() throws {
        let harness = try Harness()
        defer { harness.stop() }
        let token = harness.codingToken()
        harness.sandbox.requireCodingActionCaptcha()
        let blocked = try harness.codingPost("/api/tweet", form: [("content", "要验证码吗")], token: token)
        #expect(blocked.status == 200)
        #expect(try blocked.json() == ["code": 907, "msg": ["operation_need_captcha": "操作需要验证码"]])
        let image = try harness.codingGet("/api/getCaptcha", token: token, query: [("type", "3")])
        #expect(image.header("Content-Type") == "image/png")
        #expect(try PNGCheck(image.body).width == 120)
        let code = try #require(harness.sandbox.codingCaptcha(forUser: "coder"))
        let wrong = try harness.codingPost("/api/request_valid", form: [("type", "3"), ("j_captcha", code == "AAAA" ? "BBBB" : "AAAA")],
                                           token: token)
        #expect(wrong.code == 903)
        #expect(wrong.codingMsg["j_captcha_error"] != nil)
        // Still blocked, and that captcha is spent.
        #expect(try harness.codingPost("/api/tweet", form: [("content", "还不行")], token: token).code == 907)
        #expect(try harness.codingPost("/api/request_valid", form: [("type", "3"), ("j_captcha", code)], token: token).code == 903)
        _ = try harness.codingGet("/api/getCaptcha", token: token, query: [("type", "3")])
        let fresh = try #require(harness.sandbox.codingCaptcha(forUser: "coder"))
        #expect(try harness.codingPost("/api/request_valid", form: [("type", "3"), ("j_captcha", fresh)], token: token).json() == ["code": 0])
        #expect(try harness.codingPost("/api/tweet", form: [("content", "可以了")], token: token).code == 0)
    }
}

/// A strict reading of the PNGs the sandbox writes: signature, chunk CRCs, IHDR, and the zlib
/// stream of stored blocks (checked against its Adler-32).
struct PNGCheck {
    var width = 0
    var height = 0
    var bitDepth = 0
    var colorType = 0
    var pixels: [UInt8] = []

    init(_ bytes: [UInt8]) throws {
        guard bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else { throw TestFailure("no PNG signature") }
        var offset = 8
        var chunks: [String] = []
        var idat: [UInt8] = []
        while offset + 12 <= bytes.count {
            let length = Int(Self.bigEndian(bytes, offset))
            let typeBytes = Array(bytes[(offset + 4)..<(offset + 8)])
            guard offset + 12 + length <= bytes.count else { throw TestFailure("truncated chunk") }
            let data = Array(bytes[(offset + 8)..<(offset + 8 + length)])
            guard Self.bigEndian(bytes, offset + 8 + length) == Self.crc32(typeBytes + data) else {
                throw TestFailure("bad CRC in \(String(decoding: typeBytes, as: UTF8.self))")
            }
            let type = String(decoding: typeBytes, as: UTF8.self)
            chunks.append(type)
            if type == "IHDR" {
                guard length == 13 else { throw TestFailure("IHDR is \(length) bytes") }
                width = Int(Self.bigEndian(data, 0))
                height = Int(Self.bigEndian(data, 4))
                bitDepth = Int(data[8])
                colorType = Int(data[9])
            } else if type == "IDAT" {
                idat += data
            }
            offset += 12 + length
        }
        guard chunks.first == "IHDR", chunks.last == "IEND", offset == bytes.count else { throw TestFailure("chunks: \(chunks)") }
        // zlib: CMF/FLG, stored blocks, Adler-32.
        guard idat.count >= 6, (Int(idat[0]) << 8 | Int(idat[1])) % 31 == 0, idat[0] & 0x0F == 8 else {
            throw TestFailure("bad zlib header")
        }
        var index = 2
        var last = false
        while !last {
            guard index + 5 <= idat.count else { throw TestFailure("truncated deflate block") }
            last = idat[index] & 1 == 1
            guard idat[index] & 0x06 == 0 else { throw TestFailure("not a stored block") }
            let length = Int(idat[index + 1]) | Int(idat[index + 2]) << 8
            let complement = Int(idat[index + 3]) | Int(idat[index + 4]) << 8
            guard length ^ complement == 0xFFFF, index + 5 + length <= idat.count else { throw TestFailure("bad stored block") }
            pixels += idat[(index + 5)..<(index + 5 + length)]
            index += 5 + length
        }
        guard index + 4 == idat.count, Self.bigEndian(idat, index) == Self.adler32(pixels) else { throw TestFailure("bad Adler-32") }
    }

    private static func bigEndian(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return b << 16 | a
    }
}
