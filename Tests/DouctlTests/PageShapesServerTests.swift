import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// Issue 43, part three, against real servers: Kinto (its next page is a URL in the
/// Next-Page header; --paginate printed 7 of 25 records and warned), Datasette 0.65's
/// _shape=objects (rows beside arrays of strings), and a listener written here for
/// X-Next-Page and a cursor in the body.
@Suite("real servers: Kinto, Datasette objects, next page shapes", .serialized)
struct PageShapesServerTests {
    @Test func kintosNextPageHeaderIsWalkedToTheLastRecord() throws {
        try PythonPeer.require(module: "kinto", package: "kinto")
        let kinto = try PythonPeer(name: "kinto", source: Self.kintoSource)
        let result = try Douctl().run(["api", "\(kinto.base)/v1/buckets/b/collections/c/records?_sort=n", "--paginate", "--jq", ".n"], timeout: 120)
        #expect(result.status == 0, "\(result)\n\(kinto.log.suffix(2000))")
        #expect(result.stdoutText == (0..<25).map { "\($0)\n" }.joined(), "\(result)")
        #expect(result.stderr.isEmpty, "\(result)")
    }

    @Test func datasettesObjectsShapeIsWalked() throws {
        try PythonPeer.require(module: "datasette", package: "datasette")
        let ds = try PythonPeer(name: "datasette", source: OtherServerTests.datasetteSource, arguments: ["{dir}"])
        let result = try Douctl().run(["api", "\(ds.base)/t/items.json?_shape=objects", "--paginate"])
        #expect(result.status == 0, "\(result)\n\(ds.log.suffix(2000))")
        #expect(result.stdoutText == (1...7).map { #"{"id":\#($0),"name":"n\#($0 - 1)"}"# }.joined(separator: "\n") + "\n", "\(result)")
        #expect(result.stderr.isEmpty, "\(result)")
    }

    @Test func aPageNumberHeaderAndABodyCursorAreWalked() throws {
        let server = try HostileListener { connection, listener in
            let head = listener.heads.last ?? ""
            let target = head.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
            let answer: String
            switch target {
            case "/numbered": answer = PromiseTableTests.reply("200 OK", "X-Next-Page: 2\r\n", #"[{"id":1}]"#)
            case "/numbered?page=2": answer = PromiseTableTests.reply("200 OK", "X-Next-Page: \r\n", #"[{"id":2}]"#)
            case "/cursor": answer = PromiseTableTests.reply("200 OK", "", #"{"data":[{"id":1}],"next_cursor":"b"}"#)
            case "/cursor?after=b": answer = PromiseTableTests.reply("200 OK", "", #"{"data":[{"id":2}],"next_cursor":null}"#)
            default: answer = PromiseTableTests.reply("404 Not Found", "", #"{"error":"\#(target)"}"#)
            }
            HostileListener.send(connection, answer)
        }
        let douctl = Douctl()
        let numbered = try douctl.run(["api", "\(server.baseURL)/numbered", "--paginate"])
        #expect(numbered.status == 0 && numbered.stdoutText == "{\"id\":1}\n{\"id\":2}\n" && numbered.stderr.isEmpty, "\(numbered)")
        #expect(try douctl.run(["profile", "add", "cur", "--api-base", server.baseURL, "--cursor-param", "after"]).status == 0)
        let cursor = try douctl.run(["--profile", "cur", "api", "/cursor", "--paginate"])
        #expect(cursor.status == 0 && cursor.stdoutText == "{\"id\":1}\n{\"id\":2}\n" && cursor.stderr.isEmpty, "\(cursor)")
    }

    static let kintoSource = #"""
import base64, json, socket, sys, threading, time, urllib.request
from wsgiref.simple_server import make_server, WSGIRequestHandler
from kinto import main as kinto_main
settings = {
    "kinto.storage_backend": "kinto.core.storage.memory", "kinto.storage_url": "",
    "kinto.cache_backend": "kinto.core.cache.memory", "kinto.cache_url": "",
    "kinto.permission_backend": "kinto.core.permission.memory", "kinto.permission_url": "",
    "kinto.userid_hmac_secret": "douctl-test-secret",
    "multiauth.policies": "basicauth",
    "kinto.bucket_create_principals": "system.Authenticated",
    "kinto.paginate_by": "7",
}
app = kinto_main({}, **settings)
class Quiet(WSGIRequestHandler):
    def log_message(self, *a): pass
server = make_server("127.0.0.1", 0, app, handler_class=Quiet)
port = server.server_port
threading.Thread(target=server.serve_forever, daemon=True).start()
auth = "Basic " + base64.b64encode(b"alice:pw").decode()
def call(method, path, body=None):
    req = urllib.request.Request("http://127.0.0.1:%d/v1%s" % (port, path), method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": auth, "Content-Type": "application/json"})
    return urllib.request.urlopen(req).read()
call("PUT", "/buckets/b", {})
call("PUT", "/buckets/b/collections/c", {"permissions": {"read": ["system.Everyone"]}})
for i in range(25):
    call("PUT", "/buckets/b/collections/c/records/r%02d" % i, {"data": {"n": i}})
print("ready %d" % port, flush=True)
threading.Event().wait()
"""#
}
