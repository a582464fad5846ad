@testable import DouctlCore
import DouctlTestSupport
import DouctlHTTP
import DouctlJSON
import DouctlSystem
import Foundation
import Testing

/// `--dry-run` as a transport: clients over `DryRunTransport` (what
/// `SessionSettings.printingRequests` puts in) print each request as a curl command line
/// and go on with a stand-in reply; the client asks its transport (`sendsRequests`), not
/// whether this is a dry run.
@Suite("Dry-run transport")
struct DryRunTransportTests {
    /// A dry-run client of `profile`, and the lines it printed: the factory as a dry run's
    /// session makes it (see `RunSessionTests`), over a corrupt credentials file and with a
    /// `rate_limit`: a transport that sends nothing keeps no rate-limit state.
    func dryClient(_ profile: ResolvedProfile) throws -> (APIClient, Recorder<String>) {
        let lines = Recorder<String>()
        let directory = TemporaryDirectory.make(prefix: "dry-run")
        try Data("{corrupt".utf8).write(to: URL(fileURLWithPath: directory + "/credentials.json"))
        var profile = profile
        profile.rateLimit = RateQuota("1/1h")
        let printer = DryRunPrinter(userAgent: "douctl/test") { line in lines.add(line) }
        let settings = SessionSettings(requests: RequestSettings()).printingRequests(to: printer)
        let store = CredentialStore(directory: ConfigDirectory(path: directory))
        let credential = CredentialInForce.placeholder(try #require(settings.credentialPlaceholder), profile: profile, store: store, environment: [:])
        let factory = ClientFactory(profile: profile, http: HTTPClientConfiguration(), store: store,
                                    requests: settings.requests, credential: credential)
        let client = try factory.make()
        #expect(client.rateLimiter == nil && client.options.serverRateLimit == nil && client.requests.recorder == nil && client.session == nil)
        #expect(!client.sendsRequests)
        return (client, lines)
    }

    @Test func aGetWithAQueryIsPrintedWithTheTokenAsAVariableAndAnsweredWithAnEmptyList() throws {
        let (client, lines) = try dryClient(TestProfiles.douban())
        let reply = try client.send(APIRequest(path: "/v2/user/ahbei/statuses", query: [("q", "it's a b"), ("start", "0")]))
        #expect(try reply.requireJSON() == .array([]), "a walk stops after its first page")
        #expect(lines.all == [
            #"curl -sS -g 'http://127.0.0.1:8089/v2/user/ahbei/statuses?q=it%27s%20a%20b&start=0' -A douctl/test -H 'Accept: application/json' -H "Authorization: Bearer $DOUCTL_TOKEN""#,
        ])
    }

    @Test func aQueryTokenBecomesTheShellVariableNotItsPercentEncoding() throws {
        let (client, lines) = try dryClient(TestProfiles.coding())
        _ = try client.exchange(APIRequest(path: "/api/current_user"))
        let line = try #require(lines.all.first)
        #expect(line.contains(#""http://127.0.0.1:8089/api/current_user?access_token=$DOUCTL_TOKEN""#), "\(line)")
        #expect(!line.contains("%24"))
    }

    @Test func aFormPostIsPrintedWithItsBodyAndAnsweredWithAnEmptyObject() throws {
        let (client, lines) = try dryClient(TestProfiles.douban())
        let reply = try client.send(APIRequest(method: "POST", path: "/shuo/v2/statuses/", body: .form([("text", "it's $HOME & 你好")])))
        #expect(try reply.requireJSON() == .object(JSONObject()))
        #expect(lines.all == [
            #"curl -sS -g -X POST http://127.0.0.1:8089/shuo/v2/statuses/ -A douctl/test -H 'Accept: application/json' -H 'Content-Type: application/x-www-form-urlencoded' -H "Authorization: Bearer $DOUCTL_TOKEN" --data-binary text=it%27s+%24HOME+%26+%E4%BD%A0%E5%A5%BD"#,
        ])
    }

    @Test func aMultipartPostIsPrintedAsItsPartsWithCurlsOwnQuotingOfFileNames() throws {
        let picture = try TemporaryDirectory.file(named: #"we;ird,"name".png"#, bytes: [0x89, 0x50, 0x4E, 0x47])
        let (client, lines) = try dryClient(TestProfiles.douban())
        let form = MultipartForm(parts: [
            .field(name: "text", value: "hi; there"),
            .file(name: "image", path: picture, contentType: "image/png"),
        ])
        _ = try client.send(APIRequest(method: "POST", path: "/shuo/v2/statuses/", body: .multipart(form)))
        let line = try #require(lines.all.first)
        #expect(!line.contains("multipart/form-data"), "curl makes its own boundary: \(line)")
        #expect(line.hasSuffix(#" --form-string 'text=hi; there' -F 'image=@"\#(picture.replacingAll("\"", with: "\\\""))";type=image/png;filename="we;ird,\"name\".png"'"#), "\(line)")
    }

    /// The parts read back from the body as it would go out: what curl is told to send.
    @Test func multipartPartsAreReadBackFromTheBodyAsSent() throws {
        let picture = try TemporaryDirectory.file(named: "a.png", bytes: [1, 2, 3])
        let cases: [(MultipartForm.Part, CurlCommand.MultipartArgument)] = [
            (.field(name: "text", value: ""), .text(name: "text", value: "")),
            (.field(name: #"a"b"#, value: "line\r\n--not the boundary"), .text(name: #"a"b"#, value: "line\r\n--not the boundary")),
            (.file(name: "image", path: picture), .file(name: "image", path: picture, contentType: "image/png", filename: "a.png")),
            (.file(name: "f", path: picture, filename: "x\"\ny.bin", contentType: "application/octet-stream"),
             .file(name: "f", path: picture, contentType: "application/octet-stream", filename: "x\"\ny.bin")),
            (.data(name: "stdin", bytes: Array("--douctl-\r\n".utf8), filename: "-", contentType: "text/plain"),
             .data(name: "stdin", byteCount: 11, contentType: "text/plain", filename: "-")),
        ]
        for (part, expected) in cases {
            let form = MultipartForm(parts: [part, part])
            let request = HTTPRequest(method: "POST", url: "http://h/", headers: [HTTPHeader("Content-Type", form.contentType)], body: try form.requestBody())
            #expect(CurlCommand.MultipartArgument.parts(of: request) == [expected, expected], "\(part)")
        }
        let empty = MultipartForm(parts: [])
        #expect(CurlCommand.MultipartArgument.parts(of: HTTPRequest(method: "POST", url: "http://h/", headers: [HTTPHeader("Content-Type", empty.contentType)], body: try empty.requestBody())) == [])
        // Not our layout (a raw body a user typed a multipart type for): shown as bytes.
        let raw = HTTPRequest(method: "POST", url: "http://h/", headers: [HTTPHeader("Content-Type", "multipart/form-data; boundary=x")], body: .segments([.file(path: picture, length: 3)]))
        #expect(CurlCommand.MultipartArgument.parts(of: raw) == nil)
        #expect(CurlCommand.render(raw, userAgent: "u").hasSuffix("--data-binary @\(picture)"))
    }

    @Test func aDownloadIsPrintedAndTouchesNoDisk() throws {
        let (client, lines) = try dryClient(TestProfiles.douban())
        let directory = TemporaryDirectory.make(prefix: "dry-download")
        for target in [DownloadTarget.file(directory + "/a.bin"), .directory(directory)] {
            let done = try Download(client: client, source: "/files/a.bin", options: DownloadOptions(target: target, resume: true)).run()
            #expect(done.bytes == 0 && done.path.isEmpty)
        }
        #expect(lines.all.count == 2)
        #expect(lines.all.allSatisfy { $0.hasPrefix("curl -sS -g http://127.0.0.1:8089/files/a.bin -A douctl/test") }, "\(lines.all)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty, "no temp file, no partial file")
    }

    @Test func whatOnlyARealReplyCouldTellStaysAsWritten() throws {
        let (client, lines) = try dryClient(TestProfiles.douban())
        try client.requireLogin()
        #expect(try client.expandingPlaceholders("/v2/user/{me}") == "/v2/user/{me}")
        #expect(try client.checked(.object(JSONObject()), has: ["id"], what: "a status", request: "POST /x") == .object(JSONObject()))
        #expect(lines.all.isEmpty, "nothing asked of the API to learn who is logged in")
    }

    @Test func aStreamedRequestSeesTheStandInHeadAndBody() throws {
        let lines = Recorder<String>()
        let transport = DryRunTransport(DryRunPrinter(userAgent: "u") { lines.add($0) })
        var heads: [Int] = []
        var body: [UInt8] = []
        let head = try transport.send(HTTPRequest(method: "HEAD", url: "http://h/x"), progress: nil, restartSink: nil, head: { heads.append($0.status) }) { chunk in
            body += chunk
            return true
        }
        #expect(head.status == 200 && heads == [200] && body == Array("{}".utf8))
        #expect(lines.all == ["curl -sS -g -I http://h/x -A u"])
    }
}
