import DouctlJSON
import DouctlSandbox
import DouctlServer
import DouctlSystem
import DouctlTestSupport
import Testing

/// `sandbox --replay FILE.har`: logs as the browsers' developer tools save them (issue 41,
/// part 5), checked in here in their shapes.
@Suite struct HARReplayTests {
    /// As Chromium's "Save all as HAR with content" writes it: `_`-prefixed fields, a gzip
    /// reply with its compressed size and the text decoded, a base64 PNG, a redirect to an
    /// absolute URL of the same origin, a form POST with params, a blocked request (status 0).
    static let chromium = #"""
    {"log":{"version":"1.2","creator":{"name":"WebInspector","version":"537.36"},"pages":[{"startedDateTime":"2026-11-28T10:00:00.000Z","id":"page_1","title":"https://api.example.com/","pageTimings":{"onContentLoad":120,"onLoad":200}}],
    "entries":[
     {"_initiator":{"type":"script"},"_priority":"High","_resourceType":"fetch","cache":{},"connection":"443","pageref":"page_1",
      "request":{"method":"GET","url":"https://api.example.com/api/items?sort=new&page=2","httpVersion":"http/2.0",
        "headers":[{"name":":authority","value":"api.example.com"},{"name":":method","value":"GET"},{"name":"accept","value":"application/json"}],
        "queryString":[{"name":"sort","value":"new"},{"name":"page","value":"2"}],"cookies":[],"headersSize":-1,"bodySize":0},
      "response":{"status":200,"statusText":"","httpVersion":"http/2.0",
        "headers":[{"name":"content-encoding","value":"gzip"},{"name":"content-type","value":"application/json; charset=utf-8"},{"name":"content-length","value":"61"},{"name":"x-request-id","value":"r-1"}],
        "cookies":[],"content":{"size":38,"mimeType":"application/json","compression":-23,"text":"{\"items\":[{\"id\":3},{\"id\":4}],\"page\":2}"},
        "redirectURL":"","headersSize":-1,"bodySize":61,"_transferSize":161,"_error":null},
      "serverIPAddress":"93.184.216.34","startedDateTime":"2026-11-28T10:00:00.100Z","time":42.5,"timings":{"blocked":1,"dns":-1,"ssl":-1,"connect":-1,"send":0.2,"wait":40,"receive":1.3,"_blocked_queueing":0.5}},
     {"_resourceType":"image","request":{"method":"GET","url":"https://api.example.com/static/dot.png","httpVersion":"http/2.0","headers":[],"queryString":[],"cookies":[],"headersSize":-1,"bodySize":0},
      "response":{"status":200,"statusText":"","httpVersion":"http/2.0","headers":[{"name":"content-type","value":"image/png"}],"cookies":[],
        "content":{"size":8,"mimeType":"image/png","text":"iVBORw0KGgo=","encoding":"base64"},"redirectURL":"","headersSize":-1,"bodySize":8,"_transferSize":108},
      "startedDateTime":"2026-11-28T10:00:00.200Z","time":3,"timings":{"send":0,"wait":2,"receive":1}},
     {"_resourceType":"document","request":{"method":"GET","url":"https://api.example.com/old","httpVersion":"http/2.0","headers":[],"queryString":[],"cookies":[],"headersSize":-1,"bodySize":0},
      "response":{"status":302,"statusText":"","httpVersion":"http/2.0","headers":[{"name":"location","value":"https://api.example.com/api/items?sort=new&page=2"}],"cookies":[],
        "content":{"size":0,"mimeType":"x-unknown"},"redirectURL":"https://api.example.com/api/items?sort=new&page=2","headersSize":-1,"bodySize":0,"_transferSize":80},
      "startedDateTime":"2026-11-28T10:00:00.300Z","time":3,"timings":{"send":0,"wait":2,"receive":1}},
     {"_resourceType":"fetch","request":{"method":"POST","url":"https://api.example.com/api/login","httpVersion":"http/2.0",
        "headers":[{"name":"content-type","value":"application/x-www-form-urlencoded"}],"queryString":[],"cookies":[],"headersSize":-1,"bodySize":27,
        "postData":{"mimeType":"application/x-www-form-urlencoded","text":"user=ahbei&remember=1","params":[{"name":"user","value":"ahbei"},{"name":"remember","value":"1"}]}},
      "response":{"status":200,"statusText":"","httpVersion":"http/2.0","headers":[{"name":"content-type","value":"application/json"}],"cookies":[],
        "content":{"size":11,"mimeType":"application/json","text":"{\"ok\":true}"},"redirectURL":"","headersSize":-1,"bodySize":11},
      "startedDateTime":"2026-11-28T10:00:00.400Z","time":3,"timings":{"send":0,"wait":2,"receive":1}},
     {"_resourceType":"fetch","request":{"method":"GET","url":"https://tracker.example.net/blocked","httpVersion":"","headers":[],"queryString":[],"cookies":[],"headersSize":-1,"bodySize":0},
      "response":{"status":0,"statusText":"","httpVersion":"","headers":[],"cookies":[],"content":{"size":0,"mimeType":"x-unknown"},"redirectURL":"","headersSize":-1,"bodySize":-1,"_transferSize":0,"_error":"net::ERR_BLOCKED_BY_CLIENT"},
      "startedDateTime":"2026-11-28T10:00:00.500Z","time":0,"timings":{"send":0,"wait":0,"receive":0}}
    ]}}
    """#

    /// As Firefox's network monitor saves it: JSON POST body in postData.text, headers with
    /// their HTTP/1.1 names, a base64 JSON reply, `_`-prefixed fields on the log itself.
    static let firefox = #"""
    {"log":{"version":"1.2","creator":{"name":"Firefox","version":"133.0"},"browser":{"name":"Firefox","version":"133.0"},"pages":[],
    "entries":[
     {"pageref":"page_1","startedDateTime":"2026-11-28T11:00:00.000+01:00",
      "request":{"bodySize":24,"method":"POST","url":"http://localhost:8000/api/notes/","httpVersion":"HTTP/1.1",
        "headers":[{"name":"Host","value":"localhost:8000"},{"name":"Content-Type","value":"application/json"},{"name":"Content-Length","value":"24"}],
        "cookies":[],"queryString":[],"headersSize":410,"postData":{"mimeType":"application/json","params":[],"text":"{\"title\":\"a\",\"done\":false}"}},
      "response":{"status":201,"statusText":"Created","httpVersion":"HTTP/1.1",
        "headers":[{"name":"Content-Type","value":"application/json"},{"name":"Content-Length","value":"35"},{"name":"Location","value":"http://localhost:8000/api/notes/9/"}],
        "cookies":[],"content":{"mimeType":"application/json","size":35,"encoding":"base64","text":"eyJpZCI6OSwidGl0bGUiOiJhIiwiZG9uZSI6ZmFsc2V9"},
        "redirectURL":"","headersSize":180,"bodySize":215},
      "cache":{},"timings":{"blocked":0,"dns":0,"connect":0,"ssl":0,"send":0,"wait":5,"receive":0},"time":5,"_securityState":"insecure","serverIPAddress":"127.0.0.1","connection":"8000"}
    ]}}
    """#

    static func harness(_ har: String) throws -> (Harness, TemporaryDirectory) {
        let directory = try TemporaryDirectory(prefix: "har")
        let path = directory.path + "/session.har"
        try AtomicFile.write(Array(har.utf8), to: path)
        let harness = try Harness { $0.replayDirectory = path }
        return (harness, directory)
    }

    @Test func aChromiumHARReplays() throws {
        let (harness, _) = try Self.harness(Self.chromium)
        defer { harness.stop() }
        #expect(harness.sandbox.replaying?.exchanges == 4, "the blocked request (status 0) is skipped")
        let items = try harness.get("/api/items?page=2&sort=new")
        #expect(items.status == 200)
        #expect(items.text == #"{"items":[{"id":3},{"id":4}],"page":2}"#, "the decoded text, byte for byte")
        #expect(items.header("Content-Encoding") == nil, "the text is decoded: no gzip claimed")
        #expect(items.header("x-request-id") == "r-1")
        #expect(items.header("Content-Length") == "38", "framed anew, not the compressed size")
        let png = try harness.get("/static/dot.png")
        #expect(png.body == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], "content.encoding base64 decoded")
        let redirect = try harness.get("/old")
        #expect(redirect.status == 302)
        #expect(redirect.header("location") == "/api/items?sort=new&page=2", "a redirect to the recorded origin stays on the replay")
        #expect(try harness.post("/api/login", form: [("remember", "1"), ("user", "ahbei")]).json()["ok"] == true)
        #expect(try harness.post("/api/login", form: [("user", "other"), ("remember", "1")]).status == 501)
    }

    @Test func aFirefoxHARReplays() throws {
        let (harness, _) = try Self.harness(Self.firefox)
        defer { harness.stop() }
        let created = try harness.send("POST", "/api/notes/", headers: [("Content-Type", "application/json")],
                                       body: Array(#"{"done": false, "title": "a"}"#.utf8))
        #expect(created.status == 201)
        #expect(created.text == #"{"id":9,"title":"a","done":false}"#)
        #expect(created.header("Location") == "/api/notes/9/")
        let other = try harness.send("POST", "/api/notes/", headers: [("Content-Type", "application/json")], body: Array(#"{"done":true,"title":"a"}"#.utf8))
        #expect(other.status == 501)
        #expect(try other.json()["closest"] == "POST /api/notes/ (session.har entry 1)")
    }

    @Test func aFileThatIsNotHARIsRefusedWithOneLine() throws {
        let directory = try TemporaryDirectory(prefix: "har")
        let path = directory.path + "/broken.har"
        try AtomicFile.write(Array(#"{"entries":[]}"#.utf8), to: path)
        #expect(throws: SandboxError("\(path) is not a HAR file (no log.entries)")) {
            _ = try Sandbox({ var configuration = SandboxConfiguration(); configuration.replayDirectory = path; return configuration }())
        }
    }
}
