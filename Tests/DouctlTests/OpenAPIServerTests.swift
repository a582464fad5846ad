import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// Descriptions real servers publish (issue 42), through the built binary: FastAPI serves
/// OpenAPI 3.1 at /openapi.json, Kinto Swagger 2.0 at /v1/__api__. A profile is added from
/// each, real operations run against the server, and each is compared with the `api` call
/// that does the same.
@Suite("real descriptions: FastAPI (3.1), Kinto (Swagger 2.0)", .serialized)
struct OpenAPIServerTests {
    func douctl() -> Douctl {
        Douctl(environment: ["XDG_CACHE_HOME": TemporaryDirectory.make(prefix: "douctl-cache")])
    }

    @Test func fastAPIOperationsRunAndMatchApiCalls() throws {
        try PythonPeer.require(module: "fastapi", package: "fastapi")
        let peer = try PythonPeer(name: "fastapi", source: Self.fastAPISource)
        let douctl = douctl()
        let added = try douctl.run(["profile", "add", "shelf", "--openapi", peer.base + "/openapi.json"])
        #expect(added.status == 0, "\(added)")
        #expect(try JSONParser.parse(added.stdoutText)["api_base"] == .string(peer.base), "\(added)")
        #expect(added.stderr.contains("Read Shelf: 3 operations"), "\(added)")

        let created = try douctl.run(["shelf", "create-item-items-post", "-f", "name=Dune", "-F", "qty=2", "--x-request-id", "r1", "--compact"])
        #expect(created.status == 0, "\(created)")
        #expect(created.stdoutText == #"{"id":1,"request_id":"r1","name":"Dune","qty":2,"kind":"book"}"# + "\n", "\(created)")
        let viaAPI = try douctl.run(["--profile", "shelf", "api", "/items", "--json", "-f", "name=Dune", "-F", "qty=2", "-H", "x-request-id: r1", "--compact"])
        #expect(viaAPI.stdoutText == created.stdoutText.replacingOccurrences(of: #""id":1"#, with: #""id":2"#), "\(viaAPI)")

        let listed = try douctl.run(["shelf", "list-items-items-get", "--kind", "book", "--limit", "1", "--compact"])
        let listedViaAPI = try douctl.run(["--profile", "shelf", "api", "/items?kind=book&limit=1", "--compact"])
        #expect(listed.status == 0 && listed.stdoutText == listedViaAPI.stdoutText, "\(listed)\n\(listedViaAPI)")
        #expect(listed.stdoutText == #"[{"id":1,"name":"Dune","qty":2,"kind":"book"}]"# + "\n")

        let one = try douctl.run(["shelf", "read-item-items-item-id-get", "2", "--jq", ".name"])
        #expect(one.stdoutText == "Dune\n", "\(one)")
        let missing = try douctl.run(["shelf", "read-item-items-item-id-get", "9"])
        #expect(missing.status == 5 && missing.errorLine == "douctl: not found (no such item, GET /items/9)", "\(missing)")

        // Checked against the description before sending: the server never sees these.
        let refused = try douctl.run(["shelf", "create-item-items-post", "-f", "name=Dune", "-F", "qty=-1"])
        #expect(refused.status == 2 && refused.errorLine.hasPrefix("douctl: the body's qty (/qty): must be >= 0"), "\(refused)")
        let wrongKind = try douctl.run(["shelf", "list-items-items-get", "--kind", "vinyl"])
        #expect(wrongKind.status == 2 && wrongKind.errorLine == "douctl: kind: must be one of book, disc, not vinyl", "\(wrongKind)")
        // --no-validate sends it: FastAPI's own check answers 422.
        let sent = try douctl.run(["shelf", "create-item-items-post", "-f", "name=Dune", "-F", "qty=-1", "--no-validate", "--error-body", "none"])
        #expect(sent.status == 1 && sent.errorLine.contains("422"), "\(sent)")
        let count = try douctl.run(["shelf", "list-items-items-get", "--jq", "length"])
        #expect(count.stdoutText == "2\n", "\(count)")

        // refresh: the same bytes keep the index.
        let refreshed = try douctl.run(["profile", "refresh", "shelf"])
        #expect(refreshed.status == 0 && refreshed.stderr.contains("unchanged"), "\(refreshed)")
    }

    @Test func kintosSwagger2OperationsRunWithBasicAuthAndMatchApiCalls() throws {
        try PythonPeer.require(module: "kinto", package: "kinto")
        let peer = try PythonPeer(name: "kinto", source: Self.kintoSource)
        let douctl = douctl()
        let added = try douctl.run(["profile", "add", "kinto", "--openapi", peer.base + "/v1/__api__"])
        #expect(added.status == 0, "\(added)")
        #expect(try JSONParser.parse(added.stdoutText)["api_base"] == .string(peer.base + "/v1"), "\(added)")
        #expect(added.stderr.contains("http auth (basicauth); log in with douctl auth login --basic"), "\(added)")
        let login = try douctl.run(["auth", "login", "--profile", "kinto", "--basic"], input: Array("alice:secret\n".utf8))
        #expect(login.status == 0, "\(login)")

        let bucket = try douctl.run(["kinto", "create-bucket", "-F", "data[id]=b1", "--jq", ".data.id"])
        #expect(bucket.stdoutText == "b1\n", "\(bucket)")
        let collection = try douctl.run(["kinto", "create-collection", "b1", "-F", "data[id]=c1", "--jq", ".data.id"])
        #expect(collection.stdoutText == "c1\n", "\(collection)")
        for title in ["one", "two", "three"] {
            let record = try douctl.run(["kinto", "create-record", "b1", "c1", "-F", "data[title]=\(title)", "-F", "data[n]=\(title.count)"])
            #expect(record.status == 0, "\(record)")
        }
        // Kinto pages with a Next-Page header, which --paginate follows: the operation walks
        // every page, exactly as api does.
        let walked = try douctl.run(["kinto", "get-records", "b1", "c1", "--_limit", "2", "--_sort", "n", "--_sort", "title", "--paginate", "--jq", ".title"])
        let walkedViaAPI = try douctl.run(["--profile", "kinto", "api", "/buckets/b1/collections/c1/records?_limit=2&_sort=n,title", "--paginate", "--jq", ".title"])
        #expect(walked.status == 0, "\(walked)")
        #expect(walked.stdoutText == walkedViaAPI.stdoutText, "\(walked)\n\(walkedViaAPI)")
        #expect(walked.stdoutText == "one\ntwo\nthree\n", "\(walked)")

        let dry = try douctl.run(["kinto", "get-bucket", "b1", "--dry-run"])
        #expect(dry.stdoutText.hasPrefix("curl -sS -g \(peer.base)/v1/buckets/b1 "), "\(dry)")
        let limit = try douctl.run(["kinto", "get-records", "b1", "c1", "--_limit", "-3"])
        #expect(limit.status == 2 && limit.errorLine == "douctl: _limit: must be >= 0, not -3", "\(limit)")
        let gone = try douctl.run(["kinto", "delete-bucket", "b1", "--jq", ".data.deleted"])
        #expect(gone.stdoutText == "true\n", "\(gone)")
    }

    static let fastAPISource = #"""
import socket, threading, time
from enum import Enum
from typing import Optional
import uvicorn
from fastapi import FastAPI, HTTPException, Header, Query
from pydantic import BaseModel, Field

app = FastAPI(title="Shelf", version="1.0")

class Kind(str, Enum):
    book = "book"
    disc = "disc"

class ItemIn(BaseModel):
    name: str = Field(max_length=20)
    qty: int = Field(ge=0)
    kind: Kind = Kind.book

items = {}

@app.get("/items", tags=["items"], summary="List items")
def list_items(kind: Optional[Kind] = None, limit: int = Query(10, ge=1, le=50)):
    found = [dict(id=i, **v) for i, v in items.items() if kind is None or v["kind"] == kind.value]
    return found[:limit]

@app.post("/items", tags=["items"], summary="Add an item", status_code=201)
def create_item(item: ItemIn, x_request_id: Optional[str] = Header(None)):
    new_id = len(items) + 1
    items[new_id] = item.model_dump(mode="json")
    return dict(id=new_id, request_id=x_request_id, **items[new_id])

@app.get("/items/{item_id}", tags=["items"], summary="Show one item")
def read_item(item_id: int):
    if item_id not in items:
        raise HTTPException(status_code=404, detail="no such item")
    return dict(id=item_id, **items[item_id])

"""# + PythonPeer.servedByUvicorn(app: "app")

    static let kintoSource = #"""
import socket, sys, threading
from wsgiref.simple_server import make_server, WSGIRequestHandler
from kinto import main as kinto_main
settings = {
    "storage_backend": "kinto.core.storage.memory",
    "permission_backend": "kinto.core.permission.memory",
    "cache_backend": "kinto.core.cache.memory",
    "multiauth.policies": "basicauth",
    "userid_hmac_secret": "test-secret",
    "bucket_create_principals": "system.Everyone",
    "includes": "kinto.plugins.flush",
}
app = kinto_main({}, **settings)
class Quiet(WSGIRequestHandler):
    def log_message(self, *a): pass
probe = socket.socket(); probe.bind(("127.0.0.1", 0)); port = probe.getsockname()[1]; probe.close()
server = make_server("127.0.0.1", port, app, handler_class=Quiet)
print("ready %d" % port, flush=True)
server.serve_forever()
"""#
}
