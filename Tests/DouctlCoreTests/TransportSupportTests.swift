import DouctlHTTP
import Testing

/// The pure parts of the transport that redirects and `-v` rely on.
@Suite("URLs, redirects and redaction")
struct TransportSupportTests {
    @Test(arguments: [
        ("https://a.example/v2/x/y?q=1", "/z", "https://a.example/z"),
        ("https://a.example/v2/x/y?q=1", "z?k=2", "https://a.example/v2/x/z?k=2"),
        ("https://a.example/v2/x/y?q=1", "../up", "https://a.example/v2/up"),
        ("https://a.example/v2/x/y?q=1", "./", "https://a.example/v2/x/"),
        ("https://a.example/v2/x/y?q=1", "?only", "https://a.example/v2/x/y?only"),
        ("https://a.example/v2/x/y?q=1", "#frag", "https://a.example/v2/x/y?q=1"),
        ("https://a.example:8443/p", "//b.example/q", "https://b.example/q"),
        ("https://a.example/p", "HTTP://B.example:80/q", "http://b.example:80/q"),
        ("http://127.0.0.1:8080/a/b", "/../../c", "http://127.0.0.1:8080/c"),
        ("https://[::1]:9/a", "b", "https://[::1]:9/b"),
    ])
    func resolvesLocations(base: String, location: String, expected: String) throws {
        let resolved = try #require(HTTPURL(base)?.resolve(location))
        #expect(resolved.text == expected)
    }

    @Test func rejectsWhatIsNotHTTP() {
        #expect(HTTPURL("ftp://a.example/") == nil)
        #expect(HTTPURL("https://a.example:99999/") == nil)
        #expect(HTTPURL("https:///nohost") == nil)
        #expect(HTTPURL("https://a.example/")?.resolve("javascript:alert(1)") == nil)
    }

    @Test func origins() throws {
        let a = try #require(HTTPURL("https://API.example/x"))
        #expect(a.sameOrigin(as: try #require(HTTPURL("https://api.example:443/y"))))
        #expect(!a.sameOrigin(as: try #require(HTTPURL("http://api.example/y"))))
        #expect(!a.sameOrigin(as: try #require(HTTPURL("https://api.example:8443/y"))))
        #expect(!a.sameOrigin(as: try #require(HTTPURL("https://evil.example/y"))))
    }

    @Test func credentialParameters() throws {
        let url = try #require(HTTPURL("https://a.example/x?access_token=t&keep=1&access_token=u"))
        #expect(url.removingQueryParameters(["access_token"]).text == "https://a.example/x?keep=1")
        #expect(try #require(HTTPURL("https://a.example/x?access_token=t")).removingQueryParameters(["access_token"]).text == "https://a.example/x")
        let next = try #require(HTTPURL("https://a.example/y?k=2"))
        #expect(next.addingQueryParameters(from: url, named: ["access_token"]).text == "https://a.example/y?k=2&access_token=t&access_token=u")
    }

    @Test func redactsPasswordsInURLsAndSecretsInBodies() {
        #expect(Redaction.redactURL("Uses proxy env variable https_proxy == 'http://bob:pw@127.0.0.1:3128'") == "Uses proxy env variable https_proxy == 'http://bob:***@127.0.0.1:3128'")
        #expect(Redaction.redactURL("https://a.example/x?access_token=abc&b=1") == "https://a.example/x?access_token=***&b=1")
        #expect(Redaction.redactUserinfo("no url here @ all") == "no url here @ all")
        #expect(Redaction.redactBody(#"{"access_token" : "a\"b", "n": {"refresh_token": 12}, "ok": "access_token"}"#, contentType: "application/json")
                == #"{"access_token" : "***", "n": {"refresh_token": ***}, "ok": "access_token"}"#)
        #expect(Redaction.redactBody("grant_type=password&password=pw&username=u", contentType: "application/x-www-form-urlencoded") == "grant_type=password&password=***&username=u")
        // The API's own status code is no secret; an OAuth code (a form field, or a string in JSON) is.
        #expect(Redaction.redactBody(#"{"msg":"access_token_has_not_expired","code":124}"#, contentType: "application/json")
                == #"{"msg":"access_token_has_not_expired","code":124}"#)
        #expect(Redaction.redactBody(#"{"code": "106", "errcode": 0}"#, contentType: "application/json") == #"{"code": "106", "errcode": 0}"#)
        #expect(Redaction.redactBody(#"{"code": "Sp1ceAuthCode", "state": "s"}"#, contentType: "application/json") == #"{"code": "***", "state": "s"}"#)
        #expect(Redaction.redactBody("grant_type=authorization_code&code=123456", contentType: "application/x-www-form-urlencoded")
                == "grant_type=authorization_code&code=***")
        let multipart = "--b\r\nContent-Disposition: form-data; name=\"client_secret\"\r\n\r\nsecret\r\n--b\r\nContent-Disposition: form-data; name=\"text\"\r\n\r\nhi\r\n--b--\r\n"
        #expect(Redaction.redactBody(multipart, contentType: "multipart/form-data; boundary=b")
                == "--b\r\nContent-Disposition: form-data; name=\"client_secret\"\r\n\r\n***\r\n--b\r\nContent-Disposition: form-data; name=\"text\"\r\n\r\nhi\r\n--b--\r\n")
    }

    /// Every kind of `-v` line goes through `redactLogLine`: libcurl's HTTP/2 text lines that
    /// quote a header (7.88's `h2h3 [...]`, 8.x's `[HTTP/2] [1] [...]`), header lines, and
    /// body previews, with the request's own credentials masked by value.
    @Test func everyLogLineIsRedacted() {
        let request = HTTPRequest(url: "http://alice:pw%2D123456@h.example/x", headers: [HTTPHeader("Authorization", "Bearer tok-123456")])
        let secrets = Redaction.credentials(of: request)
        #expect(secrets.contains("tok-123456") && secrets.contains("pw-123456") && secrets.contains("pw%2D123456"))
        #expect(secrets.contains("YWxpY2U6cHctMTIzNDU2"), "base64 of alice:pw-123456: \(secrets)")
        #expect(Redaction.redactLogLine("h2h3 [authorization: Bearer tok-123456]", .text, secrets: []) == "h2h3 [authorization: Bearer ***]")
        #expect(Redaction.redactLogLine("[HTTP/2] [1] [cookie: sid=abc]", .text, secrets: []) == "[HTTP/2] [1] [cookie: sid=***]")
        #expect(Redaction.redactLogLine("[HTTP/2] [1] [:path: /x]", .text, secrets: []) == "[HTTP/2] [1] [:path: /x]")
        #expect(Redaction.redactLogLine("x-echo: pw-123456 and YWxpY2U6cHctMTIzNDU2", .header, secrets: secrets) == "x-echo: *** and ***")
        #expect(Redaction.redactLogLine(#"{"seen":"tok-123456"}"#, .body, secrets: secrets) == #"{"seen":"***"}"#)
    }

    @Test func pointerNoise() {
        #expect(Redaction.isPointerNoise("Found bundle for host: 0x55d0c1a2b3c0 [serially]"))
        #expect(!Redaction.isPointerNoise("Connected to 127.0.0.1 (127.0.0.1) port 80 (#0)"))
        #expect(!Redaction.isPointerNoise("TLSv1.3 (OUT), TLS handshake, Client hello (1):"))
    }
}
