import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// Issue 32, part two: the built douctl against real servers nobody here wrote, on first
/// try — Django REST Framework (its error dialect, 401 against 403, a stdin JSON body),
/// WsgiDAV (a 201 with HTML is a success), Datasette (rows under "rows" paged by Link, and
/// NDJSON pages). Each skips, naming its PyPI package, when python3 cannot import it.
@Suite("real servers: DRF, WebDAV, Datasette", .serialized)
struct OtherServerTests {
    // MARK: Django REST Framework

    static let drfLock = NSLock()
    nonisolated(unsafe) static var drfPeer: PythonPeer?

    static func drf() throws -> PythonPeer {
        try PythonPeer.require(module: "rest_framework", package: "djangorestframework")
        drfLock.lock()
        defer { drfLock.unlock() }
        if let drfPeer { return drfPeer }
        let peer = try PythonPeer(name: "drf", source: drfSource)
        drfPeer = peer
        return peer
    }

    /// A plain profile on the DRF API; the token "alice" is a user who is not staff.
    func drfDouctl(_ peer: PythonPeer, token: String? = "alice") throws -> Douctl {
        let douctl = Douctl(environment: token.map { ["DOUCTL_TOKEN": $0] } ?? [:])
        let added = try douctl.run(["profile", "add", "drf", "--api-base", peer.base])
        #expect(added.status == 0, "\(added)")
        return douctl
    }

    @Test func drfErrorsSayWhyAndAPermissionIsNotAFailedLogin() throws {
        let peer = try Self.drf()
        let anonymous = try drfDouctl(peer, token: nil)
        let noToken = try anonymous.run(["--profile", "drf", "api", "/api/items/"])
        #expect(noToken.status == 4, "\(noToken)")
        #expect(noToken.errorLine.hasPrefix("douctl: authentication failed (Authentication credentials were not provided., GET /api/items/)"), "\(noToken)")

        let douctl = try drfDouctl(peer)
        let denied = try douctl.run(["--profile", "drf", "api", "/api/admin/"])
        #expect(denied.status == 4, "\(denied)")
        #expect(denied.errorLine == "douctl: permission denied (You do not have permission to perform this action., GET /api/admin/)", "\(denied)")

        let missing = try douctl.run(["--profile", "drf", "api", "/api/items/999/"])
        #expect(missing.status == 5, "\(missing)")
        #expect(missing.errorLine == "douctl: not found (No Item matches the given query., GET /api/items/999/)", "\(missing)")

        let method = try douctl.run(["--profile", "drf", "api", "-X", "DELETE", "/api/items/"])
        #expect(method.status == 1, "\(method)")
        #expect(method.errorLine == #"douctl: the API answered HTTP 405 (Method "DELETE" not allowed., DELETE /api/items/)"#, "\(method)")

        // Field errors, named briefly, also when no error body is shown.
        let invalid = try douctl.run(["--profile", "drf", "api", "/api/items/", "--json", "-F", "qty=-1", "--error-body", "none"])
        #expect(invalid.status == 1, "\(invalid)")
        #expect(invalid.stderr == "douctl: the API answered HTTP 400 (name: This field is required.; qty: Ensure this value is greater than or equal to 0., POST /api/items/)\n", "\(invalid)")
        #expect(invalid.stdout.isEmpty)
    }

    /// upload and download print no error body: the reason is in their lines.
    @Test func uploadsAndDownloadsFromDRFSayWhyTheyFailed() throws {
        let peer = try Self.drf()
        let douctl = try drfDouctl(peer)
        let file = TemporaryDirectory.make(prefix: "douctl-upload") + "/note.txt"
        try Data("hello".utf8).write(to: URL(fileURLWithPath: file))
        let upload = try douctl.run(["--profile", "drf", "upload", file, "--to", "/api/items/", "-f", "name=pen"])
        #expect(upload.status == 1, "\(upload)")
        #expect(upload.stderr.contains("qty: This field is required."), "\(upload)")

        let target = TemporaryDirectory.make(prefix: "douctl-download") + "/item.json"
        let download = try douctl.run(["--profile", "drf", "download", "/api/admin/", "-o", target])
        #expect(download.status == 4, "\(download)")
        #expect(download.stderr.contains("permission denied (You do not have permission to perform this action., GET /api/admin/)"), "\(download)")
        #expect(!FileManager.default.fileExists(atPath: target))
    }

    /// The README's stdin JSON example: Django's server cannot read a chunked body
    /// ("Bad request syntax ('1b')", 400); douctl sends stdin with a Content-Length.
    @Test func stdinJSONReachesDRFWithAContentLength() throws {
        let peer = try Self.drf()
        let douctl = try drfDouctl(peer)
        let created = try douctl.run(["--profile", "drf", "api", "/api/items/", "--input", "-"], input: Array(#"{"name":"pen","qty":3}"#.utf8))
        #expect(created.status == 0, "\(created)\n\(peer.log.suffix(2000))")
        #expect(try created.json()["name"]?.stringValue == "pen")
        #expect(try created.json()["qty"]?.intValue == 3)

        // Past the memory bound, stdin spills to a private temporary file, removed after.
        let temporary = TemporaryDirectory.make(prefix: "douctl-tmp")
        let padding = String(repeating: "x", count: 2 << 20)  // Django takes up to 2.5 MB
        let big = try douctl.run(["--profile", "drf", "api", "/api/items/", "--input", "-"],
                                 input: Array(#"{"name":"big","qty":1,"padding":"\#(padding)"}"#.utf8), environment: ["TMPDIR": temporary])
        #expect(big.status == 0, "\(big)\n\(peer.log.suffix(2000))")
        #expect(try big.json()["name"]?.stringValue == "big")
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary).isEmpty)
    }

    // MARK: WebDAV

    @Test func aWebDAVServersCreatedPageIsASuccess() throws {
        try PythonPeer.require(module: "wsgidav, cheroot", package: "wsgidav cheroot")
        let root = TemporaryDirectory.make(prefix: "douctl-dav-root")
        let dav = try PythonPeer(name: "dav", source: Self.davSource, arguments: [root])
        let douctl = Douctl()
        let made = try douctl.run(["api", "-X", "MKCOL", "\(dav.base)/box"])
        #expect(made.status == 0, "\(made)")
        #expect(made.stdoutText.contains("<title>201 Created</title>"), "\(made)")
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: root + "/box", isDirectory: &isDirectory) && isDirectory.boolValue)

        let file = TemporaryDirectory.make(prefix: "douctl-dav-file") + "/a.txt"
        try Data("hello dav\n".utf8).write(to: URL(fileURLWithPath: file))
        let put = try douctl.run(["api", "-X", "PUT", "\(dav.base)/box/a.txt", "--input", file, "--raw"])
        #expect(put.status == 0, "\(put)")
        #expect(put.stdoutText.hasPrefix("<!DOCTYPE HTML"), "--raw prints the body as received: \(put)")
        #expect(try String(contentsOfFile: root + "/box/a.txt", encoding: .utf8) == "hello dav\n")

        // From stdin too, with a Content-Length.
        let piped = try douctl.run(["api", "-X", "PUT", "\(dav.base)/box/b.txt", "--input", "-"], input: Array("from a pipe\n".utf8), timeout: 60)
        #expect(piped.status == 0, "\(piped)")
        #expect(try String(contentsOfFile: root + "/box/b.txt", encoding: .utf8) == "from a pipe\n")
    }

    // MARK: Datasette

    @Test func datasettesRowsAndNDJSONPagesAreWalked() throws {
        try PythonPeer.require(module: "datasette", package: "datasette")
        let ds = try PythonPeer(name: "datasette", source: Self.datasetteSource, arguments: ["{dir}"])
        let douctl = Douctl()
        // Its default JSON: rows under "rows", the next page in a Link header and next_url.
        let rows = try douctl.run(["api", "\(ds.base)/t/items.json", "--paginate", "--items", "rows"])
        #expect(rows.status == 0, "\(rows)\n\(ds.log.suffix(2000))")
        #expect(rows.stdoutText == (1...7).map { #"[\#($0),"n\#($0 - 1)"]"# }.joined(separator: "\n") + "\n", "\(rows)")
        #expect(rows.stderr.isEmpty, "\(rows)")

        // The profile's items_key does the same.
        #expect(try douctl.run(["profile", "add", "ds", "--api-base", ds.base, "--items-key", "rows"]).status == 0)
        let keyed = try douctl.run(["--profile", "ds", "api", "/t/items.json", "--paginate"])
        #expect(keyed.stdoutText == rows.stdoutText, "\(keyed)")

        // NDJSON pages (_nl=on), the last of one line.
        let lines = try douctl.run(["--profile", "ds", "api", "/t/items.json?_shape=array&_nl=on", "--paginate"])
        #expect(lines.status == 0, "\(lines)")
        #expect(lines.stdoutText == (1...7).map { #"{"id":\#($0),"name":"n\#($0 - 1)"}"# }.joined(separator: "\n") + "\n", "\(lines)")
        #expect(lines.stderr.isEmpty, "\(lines)")

        let missing = try douctl.run(["--profile", "ds", "api", "/t/nope.json"])
        #expect(missing.status == 5, "\(missing)")
        #expect(missing.errorLine == "douctl: not found (Table not found, GET /t/nope.json)", "\(missing)")
    }

    static let drfSource = #"""
# A Django REST Framework API for douctl's tests: one file, no database, served by
# Django's own development server (runserver's) on 127.0.0.1. Prints "ready PORT".
#   python3 drf_app.py
import os, sys, threading, time
import django
from django.conf import settings
settings.configure(
    DEBUG=False, SECRET_KEY="douctl-test", ALLOWED_HOSTS=["127.0.0.1", "localhost"], ROOT_URLCONF=__name__,
    INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "rest_framework"], MIDDLEWARE=[],
    DATABASES={}, USE_TZ=True, LOGGING_CONFIG=None,
    REST_FRAMEWORK={
        "UNAUTHENTICATED_USER": None,
        "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
        "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    },
)
django.setup()
from django.urls import path
from rest_framework import authentication, exceptions, permissions, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

class User:
    def __init__(self, name, staff): self.username, self.is_staff, self.is_authenticated = name, staff, True

class BearerAuthentication(authentication.BaseAuthentication):
    # "Bearer alice" is alice (not staff); "Bearer root" is staff; anything else is refused.
    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header.startswith("Bearer "): return None
        name = header[7:]
        if name not in ("alice", "root"): raise exceptions.AuthenticationFailed("Invalid token.")
        return (User(name, name == "root"), name)
    def authenticate_header(self, request): return 'Bearer realm="api"'

class ItemSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=20)
    qty = serializers.IntegerField(min_value=0)

ITEMS = []

class Base(APIView):
    authentication_classes = [BearerAuthentication]

class Items(Base):
    def get(self, request): return Response(ITEMS)
    def post(self, request):
        serializer = ItemSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        item = dict(serializer.validated_data, id=len(ITEMS) + 1)
        ITEMS.append(item)
        return Response(item, status=201)

class Item(Base):
    def get(self, request, id):
        for item in ITEMS:
            if item["id"] == id: return Response(item)
        raise exceptions.NotFound("No Item matches the given query.")

class Admin(Base):
    permission_classes = [permissions.IsAdminUser]
    def get(self, request): return Response({"admin": True})

urlpatterns = [path("api/items/", Items.as_view()), path("api/items/<int:id>/", Item.as_view()), path("api/admin/", Admin.as_view())]

from django.core.servers.basehttp import WSGIServer, WSGIRequestHandler
from django.core.wsgi import get_wsgi_application
server = WSGIServer(("127.0.0.1", 0), WSGIRequestHandler)
server.set_app(get_wsgi_application())
print("ready %d" % server.server_port, flush=True)
server.serve_forever()
"""#

    static let davSource = #"""
import sys
from cheroot import wsgi
from wsgidav.wsgidav_app import WsgiDAVApp
app = WsgiDAVApp({"provider_mapping": {"/": sys.argv[1]}, "simple_dc": {"user_mapping": {"*": True}}, "verbose": 1, "logging": {"enable_loggers": []}})
server = wsgi.Server(("127.0.0.1", 0), app)
server.prepare()
print("ready %d" % server.bind_addr[1], flush=True)
server.serve()
"""#

    static let datasetteSource = #"""
import socket, sqlite3, sys, threading, time
import uvicorn
from datasette.app import Datasette
path = sys.argv[1] + "/t.db"
db = sqlite3.connect(path)
db.execute("create table items (id integer primary key, name text)")
db.executemany("insert into items (name) values (?)", [("n%d" % i,) for i in range(7)])
db.commit(); db.close()
"""# + PythonPeer.servedByUvicorn(app: #"Datasette([path], settings={"default_page_size": 3}).app()"#)
}
