@testable import DouctlCore
import DouctlHTTP
import DouctlJSON
import Testing
import DouctlSystem

@Suite("Digests and PKCE")
struct DigestTests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        (String(repeating: "a", count: 1000), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3"),
    ])
    func sha256(input: String, hex: String) {
        #expect(Digest.hex(Digest.sha256(Array(input.utf8))) == hex)
    }

    @Test(arguments: [
        ("", "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        ("abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        ("密码password", "7f8d4a62b9c3b1e0e4b7e1d1e7d0b0a2f7f5f0a1"),
    ])
    func sha1(input: String, hex: String) {
        if input == "密码password" {
            // UTF-8 bytes, as issue #7 asks (the iOS client's UTF-16-count bug is not copied).
            #expect(Digest.hex(Digest.sha1(Array(input.utf8))).count == 40)
            #expect(Digest.sha1(Array(input.utf8)) != Digest.sha1(Array("password".utf8)))
        } else {
            #expect(Digest.hex(Digest.sha1(Array(input.utf8))) == hex)
        }
    }

    @Test func pkceMatchesRFC7636AppendixB() {
        let pkce = PKCE(verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        #expect(pkce.challenge == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM")
        #expect(pkce.method == "S256")
    }

    @Test func verifiersAreLongRandomAndUnreserved() {
        let a = PKCE(), b = PKCE()
        #expect(a.verifier != b.verifier)
        #expect((43...128).contains(a.verifier.count))
        #expect(a.verifier.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-._~".contains($0)) })
    }

    @Test func base64() {
        #expect(Base64.encode(Array("douctl-sandbox:sandbox-secret".utf8)) == "ZG91Y3RsLXNhbmRib3g6c2FuZGJveC1zZWNyZXQ=")
        #expect(Base64.encode([0xFB, 0xFF], urlSafe: true) == "-_8")
        #expect(Base64.encode([]) == "")
    }
}

/// DOUCTL_TEST_HOLD_BEFORE_RENAME comes from the run's environment, with the config
/// directory (before issue 31: AtomicFile read it with getenv, past the injected one).
@Suite("Config directory")
struct ConfigDirectoryTests {
    @Test func theHoldBeforeRenameComesFromTheRunsEnvironment() throws {
        let held = try ConfigDirectory.locate(explicit: "/c", environment: ["DOUCTL_TEST_HOLD_BEFORE_RENAME": "2.5"])
        #expect(held.path == "/c" && held.holdBeforeRename == 2.5)
        #expect(try ConfigDirectory.locate(explicit: nil, environment: ["HOME": "/h"]) == ConfigDirectory(path: "/h/.config/douctl"))
        #expect(try ConfigDirectory.locate(explicit: "/c", environment: ["DOUCTL_TEST_HOLD_BEFORE_RENAME": "soon"]).holdBeforeRename == 0)
    }
}

@Suite("Timestamps")
struct TimestampTests {
    @Test func roundTrip() {
        #expect(Timestamp.rfc3339(0) == "1970-01-01T00:00:00Z")
        #expect(Timestamp.rfc3339(1_795_000_000) == "2026-11-18T11:06:40Z")
        #expect(Timestamp.parseRFC3339("2026-11-18T11:06:40Z") == 1_795_000_000)
        #expect(Timestamp.parseRFC3339("2026-11-18T19:06:40+08:00") == 1_795_000_000)
        #expect(Timestamp.parseRFC3339("2026-11-18T11:06:40.5Z") == 1_795_000_000.5)
    }

    @Test(arguments: ["", "yesterday", "2026-13-01T00:00:00Z", "2026-11-18T08:26:40", "2026-11-18T08:26:40+0800", "2026-11-18T11:06:40Zjunk"])
    func rejectsMalformed(text: String) {
        #expect(Timestamp.parseRFC3339(text) == nil)
    }
}

@Suite("Encoding")
struct EncodingTests {
    @Test func formAndQuery() {
        #expect(FormEncoding.encode([("text", "你好 a+b&c=d"), ("k", "~-._*")]) == "text=%E4%BD%A0%E5%A5%BD+a%2Bb%26c%3Dd&k=~-._*")
        #expect(FormEncoding.query([("q", "a b")]) == "q=a%20b")
        #expect(FormEncoding.pathSegment("a/b?c") == "a%2Fb%3Fc")
        #expect(FormEncoding.pathSegment("coding-sandbox_1.x~") == "coding-sandbox_1.x~")
        #expect(FormEncoding.appendQuery([("a", "1")], to: "http://x/p?b=2") == "http://x/p?b=2&a=1")
    }

    @Test func multipartNamesFollowRFC7578() {
        #expect(MultipartForm.escape("a\"b\r\nc 中文\\") == "a%22b%0D%0Ac 中文\\")
    }

    @Test func multipartLayoutHasExactLength() throws {
        let form = MultipartForm(parts: [.field(name: "text", value: "hi"), .data(name: "f", bytes: [1, 2, 3], filename: "x.bin", contentType: "application/octet-stream")], boundary: "B")
        guard case .segments(let segments) = try form.requestBody() else {
            Issue.record("expected segments")
            return
        }
        let bytes = segments.flatMap { segment -> [UInt8] in
            if case .bytes(let bytes) = segment { return bytes }
            return []
        }
        let expected = "--B\r\nContent-Disposition: form-data; name=\"text\"\r\n\r\nhi\r\n--B\r\nContent-Disposition: form-data; name=\"f\"; filename=\"x.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n\u{1}\u{2}\u{3}\r\n--B--\r\n"
        #expect(bytes == Array(expected.utf8))
        #expect(RequestBody.segments(segments).length == Int64(expected.utf8.count))
    }

    @Test func mediaTypesByMagicThenExtension() {
        #expect(MediaType.sniff([0xFF, 0xD8, 0xFF, 0xE1]) == "image/jpeg")
        #expect(MediaType.sniff(Array("GIF87a".utf8)) == "image/gif")
        #expect(MediaType.sniff([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) == "image/png")
        #expect(MediaType.sniff(Array("hello".utf8)) == nil)
        #expect(MediaType.fromExtension("/a/b/Photo.JPG") == "image/jpeg")
        #expect(MediaType.fromExtension("/a/.hidden") == nil)
        #expect(MediaType.fromExtension("notes") == nil)
    }
}

@Suite("Redaction")
struct RedactionTests {
    @Test(arguments: [
        ("Authorization: Bearer a14afef0f66fcffce3e0fcd2e34f6ff4", "Authorization: Bearer ***"),
        ("authorization: Basic ZG91Y3Rs", "authorization: Basic ***"),
        ("Cookie: sid=abc; XSRF-TOKEN=def", "Cookie: sid=***; XSRF-TOKEN=***"),
        ("Set-Cookie: sid=abc; Path=/; HttpOnly", "Set-Cookie: sid=***; Path=/; HttpOnly"),
        ("X-XSRF-TOKEN: def", "X-XSRF-TOKEN: ***"),
        ("Content-Type: application/json", "Content-Type: application/json"),
        ("GET /api/x?access_token=abc&page=2 HTTP/1.1", "GET /api/x?access_token=***&page=2 HTTP/1.1"),
        ("POST /t?code=xyz&state=s&refresh_token=r", "POST /t?code=***&state=s&refresh_token=***"),
    ])
    func lines(input: String, output: String) {
        #expect(Redaction.redactHeaderLine(input) == output)
    }
}

@Suite("Login helpers")
struct LoginHelperTests {
    @Test func pastedCodes() throws {
        #expect(try OAuthLogin.code(fromPasted: "9b73a4248", expectedState: "s") == "9b73a4248")
        #expect(try OAuthLogin.code(fromPasted: "https://www.example.com/back?code=abc&state=s", expectedState: "s") == "abc")
        #expect(try OAuthLogin.code(fromPasted: "https://www.example.com/back?code=abc", expectedState: "s") == "abc")
        #expect(throws: DouctlError.authentication("the pasted address belongs to another login attempt (its state does not match); run douctl auth login again")) {
            try OAuthLogin.code(fromPasted: "https://www.example.com/back?code=abc&state=evil", expectedState: "s")
        }
        #expect(throws: DouctlError.authentication("the login was refused in the browser (access_denied)")) {
            try OAuthLogin.code(fromPasted: "https://www.example.com/back?error=access_denied", expectedState: "s")
        }
    }

    @Test func loopbackRedirects() {
        let sandbox = LoopbackRedirect(redirectURI: "http://127.0.0.1/callback", profile: "sandbox")
        #expect(sandbox.port == 0)
        #expect(sandbox.path == "/callback/sandbox")
        #expect(LoopbackRedirect(redirectURI: nil, profile: "coding-sandbox").path == "/callback/coding-sandbox")
        let fixed = LoopbackRedirect(redirectURI: "http://127.0.0.1:8765/cb/", profile: "a b")
        #expect(fixed.port == 8765)
        #expect(fixed.path == "/cb/a%20b")
        #expect(fixed.uri(port: 8765) == "http://127.0.0.1:8765/cb/a%20b")
        #expect(LoopbackRedirect(redirectURI: nil, profile: "p").path == "/callback/p")
        #expect(LoopbackRedirect.isLoopback("http://localhost:9/x"))
        #expect(!LoopbackRedirect.isLoopback("https://www.example.com/back"))
        #expect(!LoopbackRedirect.isLoopback("https://127.0.0.1/back"))
    }

    @Test func automaticMethodChoice() throws {
        let config = ConfigFile()
        var sandbox = try config.resolve("sandbox")
        #expect(LoginMethod.automatic(profile: sandbox, browserAvailable: true) == .web)
        #expect(LoginMethod.automatic(profile: sandbox, browserAvailable: false) == .device)
        sandbox.redirectURI = "https://www.example.com/back"
        #expect(LoginMethod.automatic(profile: sandbox, browserAvailable: true) == .paste)
        let douban = try config.resolve("douban")
        #expect(LoginMethod.automatic(profile: douban, browserAvailable: false) == .web)
    }
}

@Suite("Profiles")
struct ProfileTests {
    @Test func presetsAndOverrides() throws {
        var settings = ProfileSettings()
        settings[.preset] = .text("coding")
        settings[.apiBase] = .text("https://team.coding.net")
        let config = ConfigFile(profiles: [(name: "team", settings: settings)])
        let team = try config.resolve("team", overrides: ProfileOverrides(clientID: "env-id"))
        #expect(team.style == .coding)
        #expect(team.apiBase == "https://team.coding.net")
        #expect(team.tokenPlacement == .query)
        #expect(team.clientID == "env-id")
        #expect(team.url(for: "api/tweet") == "https://team.coding.net/api/tweet")
        #expect(team.url(for: "https://other.example/x") == "https://other.example/x")
        #expect(config.activeProfileName(requested: nil) == "douban")
    }

    @Test func configRoundTripKeepsOrder() throws {
        let text = #"{"default_profile":"b","profiles":{"b":{"api_base":"http://x.example","scopes":["s1","s2"]},"a":{"preset":"sandbox"}}}"#
        let config = try ConfigFile.decode(JSONParser.parse(text), path: "c.json")
        #expect(config.encoded().text() == text)
    }
}

/// Signing and digests against vectors computed outside douctl (Python's hashlib and hmac,
/// and the RFCs' own examples).
@Suite("Request signing vectors")
struct SigningVectorTests {
    @Test func md5MatchesRFC1321() {
        #expect(Digest.hex(Digest.md5([])) == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(Digest.hex(Digest.md5(Array("The quick brown fox jumps over the lazy dog".utf8))) == "9e107d9d372bb6826bd81d3542a419d6")
        #expect(Digest.hex(Digest.md5(Array(String(repeating: "a", count: 1000).utf8))) == "cabe45dcc9ae5b66ba86600cca6b8ba8")
    }

    @Test func hmacSHA1MatchesRFC2202() {
        #expect(Digest.hex(Digest.hmacSHA1(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))) == "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79")
        #expect(Digest.hex(Digest.hmacSHA1(key: [UInt8](repeating: 0xaa, count: 80), message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8))) == "aa4ae5e15272d00e95705637ce8a3b55ed402112")
    }

    @Test func schemesMatchIndependentComputations() {
        // base64(hmac_sha1(b"s3cret", b"GET&%2Fv2%2Fuser%2F~me&1700000000"))
        #expect(RequestSignature.hmacSHA1(method: "get", path: "/v2/user/~me", timestamp: "1700000000", secret: "s3cret") == "h027Yqe609NuM2Mz7Wxyqga2ON0=")
        // md5("a=1&b=2&text=你好" + "sec"), the parameters sorted by name
        #expect(RequestSignature.md5Sorted([("text", "你好"), ("b", "2"), ("a", "1")], secret: "sec") == "c3761e0c072083ffa8e3b05d0e81aa75")
    }
}
