import DouctlJSON
import DouctlServer
import DouctlTestSupport
import Foundation
import Testing

/// `douctl api` against purpose-built servers on 127.0.0.1: what the server received, and
/// what douctl printed and returned.
@Suite("douctl api")
struct APITests {
    let douctl = Douctl()

    /// An object past 1 MiB that begins like a resource streams through the incremental
    /// reformatter once it passes the threshold; the output is what the whole reply printed
    /// before. One that begins like an envelope is still held and unwrapped.
    @Test func aLargeObjectPrintsTheSameWhetherHeldOrStreamed() throws {
        let items = (0..<40_000).map { #"{"id":\#($0),"text":"第\#($0)条 \"q\"","n":[1.50,-2e3,null]}"# }.joined(separator: ",")
        let resource = #"{"items":[\#(items)],"total":40000}"#
        #expect(resource.utf8.count > 2 << 20)
        let server = try TestServer { request in
            let body = request.path == "/envelope" ? #"{"code":0,"data":\#(resource)}"# : resource
            return HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(Array(body.utf8)))
        }
        let expected = try JSONReformatter.reformat(Array(resource.utf8), format: .compact) + [0x0A]
        let streamed = try douctl.run("api", "/resource", "--compact", "--api-base", server.baseURL)
        #expect(streamed.status == 0, "\(streamed)")
        #expect(streamed.stdout == expected)
        let unwrapped = try douctl.run("api", "/envelope", "--compact", "--api-base", server.baseURL)
        #expect(unwrapped.status == 0, "\(unwrapped)")
        #expect(try unwrapped.json()["total"]?.intValue == 40000, "the envelope was unwrapped")
    }

    /// Issue 44: the stream reformatter's word-at-a-time paths through the binary: a large
    /// array (streamed as it arrives) of URLs escaped `\/`, `\uXXXX` escapes of a range in
    /// both cases, CJK text and integers prints what the one-shot reformatter prints.
    @Test(arguments: [false, true])
    func aLargeArrayOfEscapesAndIntegersPrintsAsTheOneShot(pretty: Bool) throws {
        let items = (0..<30_000).map { index -> String in
            let unit = String(0x4E00 + index % 0x5000, radix: 16)
            let escape = index % 2 == 0 ? unit : unit.uppercased()
            return #"{"id":\#(index * 7919 - 100_000),"url":"https:\/\/img\#(index % 9).doubanio.com\/view\/p\#(index).jpg","#
                + #""t":"豆瓣\u\#(escape) \#(index) \/\"","n":[0,-\#(index),1\#(index),1.5]}"#
        }
        let reply = "[" + items.joined(separator: ",") + "]"
        #expect(reply.utf8.count > 3 << 20)
        let server = try TestServer { _ in
            HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(Array(reply.utf8)))
        }
        let expected = try JSONReformatter.reformat(Array(reply.utf8), format: pretty ? .pretty : .compact) + [0x0A]
        let result = try douctl.run("api", "/items", pretty ? "--pretty" : "--compact", "--api-base", server.baseURL)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout == expected)
    }

    // MARK: success and output

    @Test func getPrintsCompactJSONWhenPiped() throws {
        let server = try TestServer(json: #"{"name":"\u963f\u5317","alt":"http:\/\/www.douban.com\/people\/ahbei\/","n":1.50,"big":12345678901234567890}"#)
        let result = try douctl.run("api", "/v2/user/ahbei", "--api-base", server.baseURL)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdoutText == "{\"name\":\"阿北\",\"alt\":\"http://www.douban.com/people/ahbei/\",\"n\":1.50,\"big\":12345678901234567890}\n")
        #expect(result.stderr.isEmpty)
        let request = try #require(server.received.first)
        #expect(request.method == "GET")
        #expect(request.target == "/v2/user/ahbei")
        #expect(request.header("Accept") == "application/json")
        #expect(request.header("User-Agent")?.hasPrefix("douctl/") == true)
        #expect(request.header("Authorization") == nil)
    }

    @Test func prettyKeepsServerOrderAndNumberText() throws {
        let server = try TestServer(json: #"{"z":1,"a":[],"m":{"x":1.0e3,"y":[true,null]},"e":{}}"#)
        let result = try douctl.run("api", "/x", "--api-base", server.baseURL, "--pretty")
        #expect(result.stdoutText == """
        {
          "z": 1,
          "a": [],
          "m": {
            "x": 1.0e3,
            "y": [
              true,
              null
            ]
          },
          "e": {}
        }

        """)
    }

    @Test func rawPrintsBytesExactlyAsReceived() throws {
        let body = #"{ "a" : "\/x" ,"b":"\u4e2d" }"#
        let server = try TestServer(json: body)
        let result = try douctl.run("api", "/x", "--api-base", server.baseURL, "--raw")
        #expect(result.stdoutText == body)
    }

    @Test func includePrintsStatusLineAndHeadersFirst() throws {
        let server = try TestServer(status: 201, json: #"{"ok":true}"#, headers: [("X-Ratelimit-Remaining", "99")])
        let result = try douctl.run("api", "/x", "--api-base", server.baseURL, "-i")
        #expect(result.status == 0)
        #expect(result.stdoutText.hasPrefix("HTTP/1.1 201 Created\r\n"))
        #expect(result.stdoutText.contains("X-Ratelimit-Remaining: 99\r\n"))
        #expect(result.stdoutText.hasSuffix("\r\n\r\n{\"ok\":true}\n"))
    }

    @Test func emptySuccessPrintsNothing() throws {
        let server = try TestServer { _ in HTTPServerResponse(status: 204) }
        let result = try douctl.run("api", "-X", "DELETE", "/x/1", "--api-base", server.baseURL)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.isEmpty)
        #expect(server.received.first?.method == "DELETE")
    }

    @Test func nonJSONSuccessIsPassedThrough() throws {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 1, 2, 255]
        let server = try TestServer { _ in .bytes(200, png, contentType: "image/png") }
        let result = try douctl.run("api", "/pic.png", "--api-base", server.baseURL)
        #expect(result.status == 0)
        #expect(result.stdout == png)
    }

    // MARK: request building

    @Test func fieldsGoToTheQueryForGetAndDelete() throws {
        let server = try TestServer(json: "[]")
        for method in ["GET", "DELETE"] {
            try douctl.run("api", "-X", method, "/search", "-f", "q=豆瓣 a+b&c", "-f", "count=5", "--api-base", server.baseURL)
        }
        #expect(server.received.count == 2)
        for request in server.received {
            #expect(request.target == "/search?q=%E8%B1%86%E7%93%A3%20a%2Bb%26c&count=5")
            #expect(request.body.isEmpty)
            #expect(request.queryValue("q") == "豆瓣 a+b&c")
        }
    }

    @Test func fieldsMakeAFormBodyAndImplyPost() throws {
        let server = try TestServer(json: "{}")
        let result = try douctl.run("api", "/shuo/v2/statuses/", "-f", "text=你好 world&more", "-F", "flag=true", "-F", "n=12", "-F", "none=null", "--api-base", server.baseURL)
        #expect(result.status == 0, "\(result)")
        let request = try #require(server.received.first)
        #expect(request.method == "POST")
        #expect(request.header("Content-Type") == "application/x-www-form-urlencoded")
        #expect(request.bodyText == "text=%E4%BD%A0%E5%A5%BD+world%26more&flag=true&n=12&none=")
        #expect(request.contentLength == Int64(request.body.count))
        #expect(!request.isChunked)
    }

    @Test func putWithFields() throws {
        let server = try TestServer(json: "{}")
        try douctl.run("api", "-X", "put", "/v2/doumail/1", "-f", "key=k", "--api-base", server.baseURL)
        #expect(server.received.first?.method == "PUT")
        #expect(server.received.first?.bodyText == "key=k")
    }

    @Test func fileFieldMakesAStreamedMultipartBodyWithContentLength() throws {
        let picture: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0] + (0..<100_000).map { UInt8($0 % 251) }
        let path = try TemporaryDirectory.file(named: "我的 \"pic\".bin", bytes: picture)
        let server = try TestServer(json: "{}")
        let result = try douctl.run("api", "/shuo/v2/statuses/", "-F", "text=hi", "--attach", "image=\(path)", "--api-base", server.baseURL)
        #expect(result.status == 0, "\(result)")
        let request = try #require(server.received.first)
        #expect(request.method == "POST")
        #expect(!request.isChunked)
        #expect(request.contentLength == Int64(request.body.count))
        let contentType = try #require(request.header("Content-Type"))
        #expect(contentType.hasPrefix("multipart/form-data; boundary="))
        let parts = try #require(multipartParts(request.body, contentType: contentType))
        #expect(parts.count == 2)
        #expect(parts[0].disposition == #"Content-Disposition: form-data; name="text""#)
        #expect(parts[0].body == Array("hi".utf8))
        #expect(parts[1].disposition == #"Content-Disposition: form-data; name="image"; filename="我的 %22pic%22.bin""#)
        #expect(parts[1].contentType == "image/jpeg") // magic bytes beat the .bin extension
        #expect(parts[1].body == picture)
    }

    @Test func fileFieldFromStdin() throws {
        let server = try TestServer(json: "{}")
        let result = try douctl.run(["api", "/upload", "--attach", "file=-", "--api-base", server.baseURL], input: Array("GIF89a-data".utf8))
        #expect(result.status == 0, "\(result)")
        let request = try #require(server.received.first)
        let parts = try #require(multipartParts(request.body, contentType: request.header("Content-Type")))
        #expect(parts.first?.disposition == #"Content-Disposition: form-data; name="file"; filename="stdin""#)
        #expect(parts.first?.contentType == "image/gif")
        #expect(parts.first?.body == Array("GIF89a-data".utf8))
    }

    @Test(arguments: [["--attach", "image=/nonexistent/pic.jpg"], ["--attach", "image=@/nonexistent/pic.jpg"], ["-F", "text=@/nonexistent/pic.jpg"]])
    func missingFileIsALocalInputError(field: [String]) throws {
        let server = try TestServer(json: "{}")
        let result = try douctl.run(["api", "/x"] + field + ["--api-base", server.baseURL])
        #expect(result.status == 3)
        #expect(result.errorLine == "douctl: cannot read /nonexistent/pic.jpg: No such file or directory")
        #expect(server.received.isEmpty)
    }

    /// gh's rule: -F KEY=@FILE reads the field's value from the file (a form field, not a part).
    @Test func typedFieldFromAFileIsItsText() throws {
        let path = try TemporaryDirectory.file(named: "t.txt", bytes: Array("第一行\nline & two\n".utf8))
        let server = try TestServer(json: "{}")
        let result = try douctl.run("api", "/shuo/v2/statuses/", "-F", "text=@\(path)", "-f", "a=1", "--api-base", server.baseURL)
        #expect(result.status == 0, "\(result)")
        let request = try #require(server.received.first)
        #expect(request.header("Content-Type") == "application/x-www-form-urlencoded")
        #expect(request.bodyText == "a=1&text=%E7%AC%AC%E4%B8%80%E8%A1%8C%0Aline+%26+two%0A")
        let stdin = try douctl.run(["api", "/x", "-F", "text=@-", "--api-base", server.baseURL], input: Array("来自管道".utf8))
        #expect(stdin.status == 0, "\(stdin)")
        #expect(server.received.last?.bodyText == "text=%E6%9D%A5%E8%87%AA%E7%AE%A1%E9%81%93")
        let binary = try TemporaryDirectory.file(named: "b.bin", bytes: [0xFF, 0xD8, 0xFF, 0x00])
        let refused = try douctl.run("api", "/x", "-F", "image=@\(binary)", "--api-base", server.baseURL)
        #expect(refused.status == 3)
        #expect(refused.errorLine == "douctl: \(binary) is not UTF-8 text, so it cannot be the value of -F image; send the file itself with --attach image=\(binary)")
        #expect(server.received.count == 2)
    }

    /// --input's Content-Type follows a documented rule, never a guess from the contents.
    @Test(arguments: [("body.txt", [String](), "application/octet-stream"), ("data.json", [], "application/json"),
                      ("page.html", [], "application/octet-stream"), ("body.txt", ["-H", "Content-Type: text/plain"], "text/plain")])
    func inputContentTypeRule(name: String, headers: [String], expected: String) throws {
        let path = try TemporaryDirectory.file(named: name, bytes: Array("hello".utf8))
        let server = try TestServer(json: "{}")
        let result = try douctl.run(["api", "/blob", "--input", path, "--api-base", server.baseURL] + headers)
        #expect(result.status == 0, "\(result)")
        #expect(server.received.first?.headers.values("Content-Type") == [expected])
    }

    @Test func headersArePassedAndBadOnesRejected() throws {
        let server = try TestServer(json: "{}")
        let result = try douctl.run("api", "/x", "-H", "X-Trace: abc", "-H", "Accept: text/plain", "--api-base", server.baseURL)
        #expect(result.status == 0)
        #expect(server.received.first?.header("X-Trace") == "abc")
        #expect(server.received.first?.headers.values("Accept") == ["text/plain"])
        let bad = try douctl.run("api", "/x", "-H", "no colon", "--api-base", server.baseURL)
        #expect(bad.status == 2)
        #expect(bad.errorLine == "douctl: invalid header 'no colon': expected 'Name: value'")
    }

    @Test func inputFileIsStreamedWithContentLength() throws {
        let bytes = (0..<300_000).map { UInt8($0 % 256) }
        let path = try TemporaryDirectory.file(named: "body.json", bytes: bytes)
        let server = try TestServer(json: "{}")
        let result = try douctl.run("api", "-X", "PUT", "/blob", "--input", path, "-f", "v=1", "--api-base", server.baseURL)
        #expect(result.status == 0, "\(result)")
        let request = try #require(server.received.first)
        #expect(request.method == "PUT")
        #expect(request.target == "/blob?v=1")
        #expect(request.body == bytes)
        #expect(request.contentLength == 300_000)
        #expect(request.header("Content-Type") == "application/json")
    }

    /// Issue 32: as curl -d @-, stdin is read first and sent with a Content-Length (WSGI
    /// servers such as Django's cannot read a chunked body); chunked only when asked.
    @Test func inputFromAPipeHasAContentLengthUnlessChunkedIsAsked() throws {
        let server = try TestServer(json: "{}")
        let body = Array(#"{"from":"stdin"}"#.utf8)
        let result = try douctl.run(["api", "/blob", "--input", "-", "--api-base", server.baseURL], input: body)
        #expect(result.status == 0, "\(result)")
        let request = try #require(server.received.first)
        #expect(request.method == "POST")
        #expect(!request.isChunked)
        #expect(request.contentLength == Int64(body.count))
        #expect(request.body == body)

        let chunked = try douctl.run(["api", "/blob", "--input", "-", "-H", "Transfer-Encoding: chunked", "--api-base", server.baseURL], input: body)
        #expect(chunked.status == 0, "\(chunked)")
        let streamed = try #require(server.received.last)
        #expect(streamed.isChunked)
        #expect(streamed.body == body)
    }

    // MARK: envelopes

    @Test func codingEnvelopePrintsDataUnlessRaw() throws {
        let envelope = #"{"code":0,"data":{"id":7,"global_key":"coder"}}"#
        let server = try TestServer(json: envelope)
        #expect(try douctl.run("api", "/api/account/current_user", "--api-base", server.baseURL).stdoutText == "{\"id\":7,\"global_key\":\"coder\"}\n")
        #expect(try douctl.run("api", "/api/account/current_user", "--api-base", server.baseURL, "--raw").stdoutText == envelope)
        let retServer = try TestServer(json: #"{"errcode":200,"errmsg":"ok","ret":[1,2]}"#)
        #expect(try douctl.run("api", "/x", "--api-base", retServer.baseURL).stdoutText == "[1,2]\n")
    }

    @Test(arguments: [
        (#"{"code":907,"msg":{"operation_need_captcha":"需要验证码"}}"#, "douctl: the API answered HTTP 200 (需要验证码, code 907, POST /api/tweet)"),
        (#"{"errCode":-1,"errMsg":"bad thing"}"#, "douctl: the API answered HTTP 200 (bad thing, code -1, POST /api/tweet)"),
        (#"{"errorno":5,"errormsg":"nope","data":null}"#, "douctl: the API answered HTTP 200 (nope, code 5, POST /api/tweet)"),
    ])
    func envelopeErrorsExitOne(body: String, line: String) throws {
        let server = try TestServer(json: body)
        let result = try douctl.run("api", "/api/tweet", "-f", "content=x", "--api-base", server.baseURL)
        #expect(result.status == 1, "\(result)")
        #expect(result.errorLine == line)
        #expect(result.stdout.isEmpty, "an error reply never reaches a script's stdout")
        #expect(result.stderr == body + "\n" + line + "\n", "in a pipe the reply goes to stderr, before the error line")
    }

    @Test func openAPIDialect() throws {
        let ok = try TestServer(json: #"{"Response":{"Projects":[{"Id":1}],"RequestId":"r-1"}}"#)
        #expect(try douctl.run("api", "/open-api?Action=DescribeCodingProjects", "--api-base", ok.baseURL).stdoutText == "{\"Projects\":[{\"Id\":1}],\"RequestId\":\"r-1\"}\n")
        let failing = try TestServer(json: #"{"Response":{"Error":{"Code":"InvalidParameterValue","Message":"Title Duplicated"},"RequestId":"r-2"}}"#)
        let result = try douctl.run("api", "/open-api", "-f", "Action=CreateIteration", "--api-base", failing.baseURL, "--error-format", "json")
        #expect(result.status == 1)
        let error = try JSONParser.parse(result.errorLine)
        #expect(error["error"]?.stringValue == "the API answered HTTP 200 (Title Duplicated, code InvalidParameterValue, request r-2)")
        #expect(error["code"]?.stringValue == "InvalidParameterValue")
        #expect(error["exit"]?.intValue == 1)
    }

    @Test func doubanNotFound() throws {
        let server = try TestServer(status: 404, json: #"{"msg":"uri_not_found","code":1001,"request":"GET \/shuo\/v2\/statuses\/1"}"#)
        let result = try douctl.run("api", "/shuo/v2/statuses/1", "--api-base", server.baseURL)
        #expect(result.status == 5)
        #expect(result.errorLine == "douctl: not found (uri_not_found, code 1001, GET /shuo/v2/statuses/1)")
    }

    @Test func doubanAuthErrorsAreHTTP400() throws {
        let server = try TestServer(status: 400, json: #"{"msg":"invalid_access_token: 4b19728adfd624be","code":103,"request":"GET \/v2\/user\/~me"}"#)
        let result = try douctl.run(["api", "/v2/user/~me", "--api-base", server.baseURL, "--error-format", "json"], environment: ["DOUCTL_TOKEN": "4b19728adfd624be"])
        #expect(result.status == 4, "\(result)")
        let error = try JSONParser.parse(result.errorLine)
        #expect(error["http_status"]?.intValue == 400)
        #expect(error["code"]?.stringValue == "103")
        #expect(error["request"]?.stringValue == "GET /v2/user/~me")
        #expect(error["exit"]?.intValue == 4)
        #expect(error["error"]?.stringValue?.contains("DOUCTL_TOKEN") == true)
    }

    @Test(arguments: [
        // --api-base elsewhere with no login: no advice to log in to douban (issue 32).
        (401, "", Int32(4), "douctl: authentication failed (HTTP 401, GET /x)"),
        // 403 is a refused permission, not a failed login: its own words, exit 4 still.
        (403, "<html>no</html>", 4, #"douctl: permission denied (HTTP 403: "no", GET /x)"#),
        (404, "<html>nope</html>", 5, #"douctl: not found (HTTP 404: "nope", GET /x)"#),
        (500, #"{"msg":"unknow_v2_error","code":999}"#, 1, "douctl: the API answered HTTP 500 (unknow_v2_error, code 999, GET /x)"),
        // An error status decides the exit code whatever the body (was exit 8, "a text/html reply … where JSON was due").
        (500, "<html>oops</html>", 1, #"douctl: the API answered HTTP 500 ("oops", GET /x)"#),
        // A 2xx that is not JSON is data, printed as received (gh's rule; was exit 8).
        (200, "<html>login page</html>", 0, ""),
    ])
    func statusCodesMapToExitCodes(status: Int, body: String, exit: Int32, line: String) throws {
        let contentType = body.hasPrefix("<") ? "text/html" : "application/json"
        let server = try TestServer { _ in .bytes(status, Array(body.utf8), contentType: contentType) }
        let result = try douctl.run("api", "/x", "--api-base", server.baseURL, "--profile", "douban")
        #expect(result.status == exit, "\(result)")
        #expect(result.errorLine == line)
    }

    @Test func malformedJSONIsABadReply() throws {
        let server = try TestServer(json: #"{"a": [1, 2"#)
        let result = try douctl.run("api", "/x", "--api-base", server.baseURL)
        #expect(result.status == 8)
        #expect(result.errorLine == "douctl: the reply is not valid JSON (HTTP 200: unexpected end of input at line 1, column 12)")
    }

    // MARK: retries

    @Test func retriesIdempotentRequestsHonouringRetryAfter() throws {
        let server = try TestServer { received in
            let attempt = received.headers["X-Attempt"] // unused; count via log instead
            _ = attempt
            return HTTPServerResponse(status: 503, headers: [("Retry-After", "0"), ("Content-Type", "application/json")], body: .bytes(Array(#"{"msg":"busy","code":503}"#.utf8)))
        }
        let result = try douctl.run("api", "/x", "--api-base", server.baseURL)
        #expect(result.status == 1, "\(result)")
        #expect(server.received.count == 3)
    }

    /// A 429 is the quota layer's: without --wait-on-rate-limit it is exit 6 at once, one
    /// request (issue 38: the retry policy used to resend it silently).
    @Test func rateLimitedExitsSixAtOnce() throws {
        let server = try TestServer(status: 429, json: #"{"msg":"rate_limit_exceeded1","code":111}"#, headers: [("Retry-After", "0")])
        let result = try douctl.run("api", "/x", "--api-base", server.baseURL)
        #expect(result.status == 6)
        #expect(server.received.count == 1)
        #expect(result.errorLine == "douctl: rate limited (rate_limit_exceeded1, code 111, GET /x)")
    }

    @Test func postIsNeverRetriedAndNoRetryMeansOnce() throws {
        let server = try TestServer(status: 503, json: #"{"msg":"busy"}"#, headers: [("Retry-After", "0")])
        try douctl.run("api", "/x", "-f", "a=1", "--api-base", server.baseURL)
        #expect(server.received.count == 1)
        try douctl.run("api", "/y", "--no-retry", "--api-base", server.baseURL)
        #expect(server.received.count == 2)
    }

    @Test func successAfterARetryPrintsOnlyTheGoodReply() throws {
        let calls = Counter()
        let server = try TestServer { _ in
            calls.next() == 0
                ? HTTPServerResponse(status: 502, headers: [("Retry-After", "0")], body: .bytes(Array("bad gateway".utf8)))
                : .bytes(200, Array(#"{"ok":1}"#.utf8), contentType: "application/json")
        }
        let result = try douctl.run("api", "/x", "--api-base", server.baseURL)
        #expect(result.status == 0)
        #expect(result.stdoutText == "{\"ok\":1}\n")
        #expect(server.received.count == 2)
    }

    // MARK: network failures

    @Test func connectionRefusedExitsSeven() throws {
        let result = try douctl.run("api", "/x", "--api-base", "http://127.0.0.1:\(refusingPort())", "--no-retry")
        #expect(result.status == 7)
        #expect(result.errorLine.hasPrefix("douctl: cannot connect: Failed to connect to 127.0.0.1 port"))
    }

    @Test func aSilentServerTimesOut() throws {
        let server = try TestServer { _ in
            Thread.sleep(forTimeInterval: 6)
            return .text(200, "late")
        }
        let started = Date()
        let result = try douctl.run("api", "/x", "--api-base", server.baseURL, "--timeout", "1", "--no-retry")
        #expect(result.status == 7, "\(result)")
        #expect(result.errorLine.hasPrefix("douctl: timed out: "))
        #expect(Date().timeIntervalSince(started) < 5.5)
    }

    @Test func aReplyCutShortIsAConnectionError() throws {
        // The server sends part of a 1000-byte body, then closes cleanly (FIN).
        let server = try TestServer { _ in
            HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: .stream(length: 1000) { writer in
                try writer.write(Array(#"{"partial": "#.utf8))
            })
        }
        let result = try douctl.run("api", "/x", "--api-base", server.baseURL, "--no-retry")
        #expect(result.status == 7, "\(result)")
        #expect(result.errorLine.hasPrefix("douctl: connection lost: the reply ended early"))
        #expect(result.stdout.isEmpty)
    }

    @Test func aResetMidReplyIsAConnectionErrorAndRetriedForGet() throws {
        let server = try TestServer { _ in
            HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: .stream(length: 1000) { writer in
                try writer.write(Array(#"{"partial": "#.utf8))
                try writer.abortConnection()
            })
        }
        let result = try douctl.run("api", "/x", "--api-base", server.baseURL)
        #expect(result.status == 7, "\(result)")
        #expect(result.errorLine.hasPrefix("douctl: connection lost: "))
        #expect(result.stdout.isEmpty)
        #expect(server.received.count == 3)
    }

    @Test func missingLibcurlIsANetworkError() throws {
        let result = try douctl.run(["api", "/x", "--api-base", "http://127.0.0.1:1"], environment: ["DOUCTL_LIBCURL": "/nonexistent/libcurl.so.4"])
        #expect(result.status == 7)
        #expect(result.errorLine.hasPrefix("douctl: cannot load libcurl (/nonexistent/libcurl.so.4: cannot open shared object file"))
    }

    // MARK: pagination

    @Test func paginateWalksStartAndCountAsNDJSON() throws {
        let server = try TestServer { received in
            let start = Int(received.queryValue("start") ?? "0") ?? 0
            let count = Int(received.queryValue("count") ?? "20") ?? 20
            let ids = Array(start..<min(start + count, 45))
            let users = ids.map { #"{"id":"\#($0)","name":"用户\#($0)"}"# }.joined(separator: ",")
            return .bytes(200, Array(#"{"start":\#(start),"count":\#(count),"total":45,"users":[\#(users)]}"#.utf8), contentType: "application/json")
        }
        let result = try douctl.run("api", "/v2/user", "-f", "q=x", "--paginate", "--api-base", server.baseURL)
        #expect(result.status == 0, "\(result)")
        let lines = try result.lines()
        #expect(lines.count == 45)
        #expect(lines.map { $0["id"]?.stringValue } == (0..<45).map { String($0) })
        // The first page gives the total: the other two are fetched at once (--parallel), in any order.
        let starts = server.received.map { $0.queryValue("start") }
        #expect(starts.first == .some(nil) && starts.dropFirst().compactMap { $0 }.sorted() == ["20", "40"], "\(starts)")
    }

    @Test func paginateStopsAtAShortBareArrayPage() throws {
        let server = try TestServer { received in
            let start = Int(received.queryValue("start") ?? "0") ?? 0
            let items = (start..<min(start + 10, 25)).map { #"{"id":\#($0)}"# }.joined(separator: ",")
            return .bytes(200, Array("[\(items)]".utf8), contentType: "application/json")
        }
        let result = try douctl.run("api", "/shuo/v2/statuses/home_timeline", "-f", "count=10", "--paginate", "--api-base", server.baseURL)
        #expect(try result.lines().count == 25)
        #expect(server.received.count == 3)
    }

    // MARK: tokens and verbose output

    @Test func storedTokenIsSentAndRedactedInVerboseOutput() throws {
        let token = "a14afef0f66fcffce3e0fcd2e34f6ff4"
        try Credentials.write(["douban": token], in: douctl.configDirectory)
        let server = try TestServer(json: "{}")
        // The login goes to the profile's own origin (issue 39: not to one --api-base names).
        #expect(try douctl.run("config", "set", "api_base", server.baseURL, "--profile", "douban").status == 0)
        let result = try douctl.run("api", "/v2/user/~me", "-v")
        #expect(result.status == 0, "\(result)")
        #expect(server.received.first?.header("Authorization") == "Bearer \(token)")
        #expect(result.stderr.contains("> Authorization: Bearer ***"))
        #expect(result.stderr.contains("< HTTP/1.1 200 OK"))
        #expect(!result.stderr.contains(token))
    }

    @Test func environmentTokenWinsAndIsNeverWritten() throws {
        try Credentials.write(["douban": "stored-token-0000"], in: douctl.configDirectory)
        let server = try TestServer(json: "{}")
        try douctl.run(["api", "/x", "--api-base", server.baseURL], environment: ["DOUCTL_TOKEN": "env-token-1111"])
        #expect(server.received.first?.header("Authorization") == "Bearer env-token-1111")
        let file = try String(contentsOfFile: douctl.configDirectory + "/credentials.json", encoding: .utf8)
        #expect(!file.contains("env-token-1111"))
    }

    @Test func queryPlacementRedactsTheTokenInTheURL() throws {
        let server = try TestServer(json: #"{"code":0,"data":{}}"#)
        try douctl.run("profile", "add", "team", "--preset", "coding", "--api-base", server.baseURL)
        let result = try douctl.run(["api", "/api/x", "--profile", "team", "-v"], environment: ["DOUCTL_TOKEN": "querytoken42"])
        #expect(result.status == 0, "\(result)")
        #expect(server.received.first?.queryValue("access_token") == "querytoken42")
        #expect(result.stderr.contains("access_token=***"))
        #expect(!result.stderr.contains("querytoken42"))
    }

    @Test func usageErrorsSuggestAndShowUsage() throws {
        let result = try douctl.run("api", "/x", "--paginat")
        #expect(result.status == 2)
        #expect(result.stderr == "douctl: unknown option '--paginat' for 'douctl api' (did you mean '--paginate'?)\nusage: douctl api [PATH] [-X METHOD] [-f KEY=VALUE]... [-F KEY=VALUE]... [--attach KEY=FILE]... [-H 'NAME: VALUE']... [--input FILE] [--progress WHEN] [--json] [--paginate] [--slurp] [--items KEY] [--parallel N] [--follow] [-i] [-o FILE] [-I] [--force] [--raw]\n")
        let json = try douctl.run("--error-format", "json", "apy")
        #expect(json.status == 2)
        #expect(try JSONParser.parse(json.errorLine)["error"]?.stringValue == "unknown command 'apy' for 'douctl' (did you mean 'api'?)")
    }

    /// Issue 21: options that do not go together are refused when the command line is
    /// parsed — exit 2 with the usage line, nothing sent — not after stdin was read.
    @Test func optionsThatDoNotGoTogetherAreRefusedBeforeAnythingIsSent() throws {
        let server = try TestServer(json: "{}")
        let result = try douctl.run(["api", "/x", "--json", "--attach", "k=-", "--api-base", server.baseURL],
                                    input: Array("piped".utf8), environment: ["DOUCTL_TOKEN": "t"])
        #expect(result.status == 2, "\(result)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.hasPrefix("douctl: --json cannot be combined with --attach (a file part needs multipart/form-data)\nusage: douctl api "), "\(result)")
        #expect(server.received.isEmpty)
    }
}

/// Counts calls across server threads.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        value += 1
        return value - 1
    }
}
