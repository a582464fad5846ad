import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// Two more descriptions real servers publish (issue 42), through the built binary:
/// jupyter-server's own Swagger 2.0 YAML (the api.yaml its package ships) against a running
/// jupyter-server, and Django REST Framework's OpenAPI 3.0 written by drf-spectacular (YAML
/// from its schema view). Real operations run and are compared with `api` calls that do
/// the same; the description's checks refuse before anything is sent.
@Suite("real descriptions: jupyter-server (Swagger 2.0 YAML), DRF with drf-spectacular (3.0)", .serialized)
struct OpenAPIPeerTests {
    func douctl(_ environment: [String: String] = [:]) -> Douctl {
        Douctl(environment: ["XDG_CACHE_HOME": TemporaryDirectory.make(prefix: "douctl-cache")].merging(environment) { $1 })
    }

    @Test func jupyterServersYAMLDescriptionRunsItsOperationsWithItsToken() throws {
        try PythonPeer.require(module: "jupyter_server", package: "jupyter-server")
        let root = TemporaryDirectory.make(prefix: "douctl-jupyter-root")
        try Data("hello\n".utf8).write(to: URL(fileURLWithPath: root + "/a.txt"))
        let peer = try PythonPeer(name: "jupyter", source: Self.jupyterSource, arguments: [root])
        // The script says where the package's api.yaml is.
        let said = try String(contentsOfFile: peer.directory + "/ready.txt", encoding: .utf8)
        let spec = try #require(said.split(separator: "\n").first { $0.hasPrefix("spec ") }.map { String($0.dropFirst(5)) })
        #expect(spec.hasSuffix("jupyter_server/services/api/api.yaml"))

        let douctl = douctl()
        // Swagger 2.0 with basePath "/" and no host, read from a file: the server is the
        // running one; no securityDefinitions: Jupyter's "Authorization: token T".
        let added = try douctl.run(["profile", "add", "jup", "--openapi", spec, "--api-base", peer.base, "--auth-scheme", "token"])
        #expect(added.status == 0, "\(added)")
        #expect(added.stderr.contains("Read Jupyter Server API:"), "\(added)")
        let login = try douctl.run(["auth", "login", "--profile", "jup", "--with-token"], input: Array("jup-secret-token\n".utf8))
        #expect(login.status == 0, "\(login)")

        let help = try douctl.run(["jup", "--help"])
        #expect(help.stdoutText.contains("status list"), "\(help)")
        #expect(help.stdoutText.contains("contents get                      Get contents of file or directory"), "\(help)")

        let status = try douctl.run(["jup", "status", "list", "--jq", ".started"])
        let statusViaAPI = try douctl.run(["--profile", "jup", "api", "/api/status", "--jq", ".started"])
        #expect(status.status == 0 && status.stdoutText == statusViaAPI.stdoutText && status.stdoutText.count > 10, "\(status)\n\(statusViaAPI)")

        let file = try douctl.run(["jup", "contents", "get", "a.txt", "--type", "file", "--format", "text", "--jq", ".content"])
        let fileViaAPI = try douctl.run(["--profile", "jup", "api", "/api/contents/a.txt?type=file&format=text", "--jq", ".content"])
        #expect(file.status == 0 && file.stdoutText == "hello\n\n" && file.stdoutText == fileViaAPI.stdoutText, "\(file)\n\(fileViaAPI)")

        // A new directory (POST with a body), a file saved into it (PUT), read back through
        // a path parameter holding a slash.
        let made = try douctl.run(["jup", "contents", "create", "", "-f", "type=directory", "--jq", ".path"])
        #expect(made.status == 0 && made.stdoutText == "Untitled Folder\n", "\(made)")
        let saved = try douctl.run(["jup", "contents", "replace", "Untitled Folder/notes.txt", "-f", "type=file", "-f", "format=text", "-f", "content=from douctl", "--jq", ".path"])
        #expect(saved.status == 0 && saved.stdoutText == "Untitled Folder/notes.txt\n", "\(saved)")
        #expect((try? String(contentsOfFile: root + "/Untitled Folder/notes.txt", encoding: .utf8)) == "from douctl")
        let back = try douctl.run(["jup", "contents", "get", "Untitled Folder/notes.txt", "--jq", ".content"])
        #expect(back.stdoutText == "from douctl\n", "\(back)")
        let listed = try douctl.run(["jup", "contents", "get", "", "--jq", "[.content[].name] | sort | join(\",\")"])
        let listedViaAPI = try douctl.run(["--profile", "jup", "api", "/api/contents/", "--jq", "[.content[].name] | sort | join(\",\")"])
        #expect(listed.status == 0 && listed.stdoutText == listedViaAPI.stdoutText && listed.stdoutText.contains("Untitled Folder,a.txt"), "\(listed)\n\(listedViaAPI)")

        let specs = try douctl.run(["jup", "kernelspecs", "list", "--compact", "--jq", ".kernelspecs | keys"])
        let specsViaAPI = try douctl.run(["--profile", "jup", "api", "/api/kernelspecs", "--compact", "--jq", ".kernelspecs | keys"])
        #expect(specs.status == 0 && specs.stdoutText == specsViaAPI.stdoutText, "\(specs)\n\(specsViaAPI)")

        // The description's enum, checked before sending.
        let wrong = try douctl.run(["jup", "contents", "get", "a.txt", "--type", "dir"])
        #expect(wrong.status == 2 && wrong.errorLine == "douctl: type: must be one of file, directory, not dir", "\(wrong)")
        #expect(wrong.stdout.isEmpty)
        // douctl help NAME OPERATION is douctl NAME OPERATION --help.
        let opHelp = try douctl.run(["help", "jup", "contents", "get"])
        #expect(opHelp.status == 0 && opHelp.stdoutText.contains("--type VALUE") && opHelp.stdoutText.contains("one of file, directory"), "\(opHelp)")

        // Without the token Jupyter refuses: the operation reports it as api does.
        let logout = try douctl.run(["auth", "logout", "--profile", "jup"])
        #expect(logout.status == 0, "\(logout)")
        let denied = try douctl.run(["jup", "kernelspecs", "list"])
        let deniedViaAPI = try douctl.run(["--profile", "jup", "api", "/api/kernelspecs"])
        #expect(denied.status != 0 && denied.status == deniedViaAPI.status && denied.errorLine == deniedViaAPI.errorLine && denied.stdout.isEmpty, "\(denied)\n\(deniedViaAPI)")
    }

    @Test func drfSpectacularsDescriptionRunsAPostAndAPagedList() throws {
        try PythonPeer.require(module: "drf_spectacular", package: "drf-spectacular")
        let peer = try PythonPeer(name: "drf-spectacular", source: Self.drfSource)
        let douctl = douctl(["DOUCTL_TOKEN": "lib-secret"])
        // drf-spectacular serves YAML (application/vnd.oai.openapi) at its schema view; no
        // `servers`: the description's own origin.
        let added = try douctl.run(["profile", "add", "lib", "--openapi", peer.base + "/api/schema/"])
        #expect(added.status == 0, "\(added)")
        #expect(try JSONParser.parse(added.stdoutText)["api_base"] == .string(peer.base), "\(added)")
        #expect(added.stderr.contains("Read Library: 6 operations, http auth (bearerAuth); paging: a next link (next) in books-list, so items_key results."), "\(added)")
        #expect(try JSONParser.parse(added.stdoutText)["items_key"] == "results", "\(added)")

        // A POST with a JSON body from typed fields, and the same through api.
        let created = try douctl.run(["lib", "books-create", "-f", "title=Dune", "-F", "pages=412", "-f", "tags[]=sf", "--compact"])
        #expect(created.status == 0, "\(created)")
        #expect(created.stdoutText == #"{"id":1,"title":"Dune","pages":412,"kind":"novel","tags":["sf"]}"# + "\n", "\(created)")
        let viaAPI = try douctl.run(["--profile", "lib", "api", "/api/books/", "--json", "-f", "title=Dune", "-F", "pages=412", "-f", "tags[]=sf", "--compact"])
        #expect(viaAPI.stdoutText == created.stdoutText.replacingOccurrences(of: #""id":1"#, with: #""id":2"#), "\(viaAPI)")
        for (title, kind) in [("Odes", "poetry"), ("Emma", "novel"), ("Iliad", "poetry")] {
            let book = try douctl.run(["lib", "books-create", "-f", "title=\(title)", "-F", "pages=100", "-f", "kind=\(kind)"])
            #expect(book.status == 0, "\(book)")
        }

        // A paged list (DRF's page numbers, next as a URL in the body; items under results):
        // --paginate walks every page, as api does.
        let walked = try douctl.run(["lib", "books-list", "--page_size", "2", "--paginate", "--jq", ".title"])
        let walkedViaAPI = try douctl.run(["--profile", "lib", "api", "/api/books/?page_size=2", "--paginate", "--jq", ".title"])
        #expect(walked.status == 0, "\(walked)")
        #expect(walked.stdoutText == "Dune\nDune\nOdes\nEmma\nIliad\n", "\(walked)")
        #expect(walked.stdoutText == walkedViaAPI.stdoutText, "\(walked)\n\(walkedViaAPI)")

        let one = try douctl.run(["lib", "books-retrieve", "3", "--jq", ".kind"])
        #expect(one.stdoutText == "poetry\n", "\(one)")
        let missing = try douctl.run(["lib", "books-retrieve", "99"])
        #expect(missing.status == 5, "\(missing)")

        // The description's rules, checked before sending (names by JSON pointer too).
        let cases: [([String], String)] = [
            (["lib", "books-create", "-f", "title=Dune"], "douctl: the body's pages (/pages): required"),
            (["lib", "books-create", "-f", "title=Dune", "-F", "pages=0"], "douctl: the body's pages (/pages): must be >= 1, not 0"),
            (["lib", "books-create", "-f", "title=Dune", "-F", "pages=9", "-f", "kind=epic"], "douctl: the body's kind (/kind): must be one of novel, poetry, not epic"),
            (["lib", "books-create", "-f", "title=Dune", "-F", "pages=9", "-f", "tags[]=sf", "-f", "tags[]=far-too-long"], "douctl: the body's tags[1] (/tags/1): must be at most 8 characters long"),
            (["lib", "books-retrieve", "x"], "douctl: id: must be integer, not the string 'x'"),
        ]
        for (arguments, line) in cases {
            let result = try douctl.run(arguments)
            #expect(result.status == 2 && result.errorLine == line && result.stdout.isEmpty, "\(arguments): \(result)")
        }
        // Bodies that are not JSON: a multipart upload (the file field takes @FILE) and a
        // urlencoded form, each field an option of its own; the same through api.
        let cover = try TemporaryDirectory.file(named: "cover.png", bytes: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 9, count: 3000))
        let uploaded = try douctl.run(["lib", "books-cover-create", "1", "--cover", "@" + cover, "--note", "front", "--compact"])
        #expect(uploaded.status == 0, "\(uploaded)")
        let uploadedViaAPI = try douctl.run(["--profile", "lib", "api", "/api/books/1/cover/", "--attach", "cover=" + cover, "-f", "note=front", "--compact"])
        #expect(uploaded.stdoutText == uploadedViaAPI.stdoutText && uploaded.stdoutText.contains(#""name":"cover.png","size":3008"#), "\(uploaded)\n\(uploadedViaAPI)")
        let rated = try douctl.run(["lib", "books-rating-create", "2", "--stars", "4", "--reader", "ann", "--compact"])
        let ratedViaAPI = try douctl.run(["--profile", "lib", "api", "/api/books/2/rating/", "-f", "stars=4", "-f", "reader=ann", "--compact"])
        #expect(rated.status == 0 && rated.stdoutText == #"{"stars":4,"reader":"ann","book":2,"type":"application/x-www-form-urlencoded"}"# + "\n", "\(rated)")
        #expect(rated.stdoutText == ratedViaAPI.stdoutText, "\(ratedViaAPI)")
        for (arguments, line) in [
            (["lib", "books-cover-create", "1", "--note", "front"], "douctl: the body's cover (--cover): required"),
            (["lib", "books-rating-create", "2", "--stars", "9", "--reader", "ann"], "douctl: the body's stars (--stars): must be <= 5, not 9"),
            (["lib", "books-rating-create", "2", "--stars", "four", "--reader", "ann"], "douctl: the body's stars (--stars): must be integer, not the string 'four'"),
        ] {
            let result = try douctl.run(arguments)
            #expect(result.status == 2 && result.errorLine == line && result.stdout.isEmpty, "\(arguments): \(result)")
        }

        // --no-validate sends it: DRF's own check answers 400.
        let sent = try douctl.run(["lib", "books-create", "-f", "title=Dune", "-F", "pages=0", "--no-validate"])
        #expect(sent.status == 1 && sent.errorLine.contains("pages"), "\(sent)")
        let count = try douctl.run(["lib", "books-list", "--jq", ".count"])
        #expect(count.stdoutText == "5\n", "\(count)")
    }

    /// A list whose paging no built-in rule finds (items in data.things, a cursor in
    /// paging.next_marker sent back as ?marker=): FastAPI describes it, profile add reads
    /// the hints, and --paginate on the operation walks every page.
    @Test func pagingHintsFromFastAPIsDescriptionMakeTheOperationWalk() throws {
        try PythonPeer.require(module: "fastapi", package: "fastapi")
        let peer = try PythonPeer(name: "fastapi-paged", source: Self.pagedSource)
        let douctl = douctl()
        let added = try douctl.run(["profile", "add", "things", "--openapi", peer.base + "/openapi.json"])
        #expect(added.status == 0, "\(added)")
        let profile = try JSONParser.parse(added.stdoutText)
        #expect(profile["items_key"] == "data.things" && profile["cursor_key"] == "paging.next_marker" && profile["cursor_param"] == "marker", "\(added)")
        let walked = try douctl.run(["things", "list-things-things-get", "--limit", "2", "--paginate", "--jq", ".n"])
        #expect(walked.status == 0 && walked.stdoutText == "1\n2\n3\n4\n5\n", "\(walked)")
        let walkedViaAPI = try douctl.run(["--profile", "things", "api", "/things?limit=2", "--paginate", "--jq", ".n"])
        #expect(walkedViaAPI.stdoutText == walked.stdoutText, "\(walkedViaAPI)")
        // Without the hints (a profile that only has the base URL), one page is all.
        let plain = try douctl.run(["profile", "add", "bare", "--api-base", peer.base])
        #expect(plain.status == 0)
        let onePage = try douctl.run(["--profile", "bare", "api", "/things?limit=2", "--paginate", "--jq", ".data.things[].n"])
        #expect(onePage.stdoutText == "1\n2\n", "\(onePage)")
    }

    static let pagedSource = #"""
import socket, threading, time
from typing import List, Optional
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

app = FastAPI(title="Things", version="1.0")

class Thing(BaseModel):
    n: int

class Data(BaseModel):
    things: List[Thing]
    total: int

class Paging(BaseModel):
    next_marker: Optional[str] = None

class Page(BaseModel):
    data: Data
    paging: Paging

@app.get("/things", response_model=Page)
def list_things(limit: int = 10, marker: Optional[str] = None):
    start = int(marker[1:]) if marker else 0
    things = [Thing(n=n) for n in range(1, 6)][start:start + limit]
    following = start + limit
    return Page(data=Data(things=things, total=5), paging=Paging(next_marker=("m%d" % following) if following < 5 else None))

"""# + PythonPeer.servedByUvicorn(app: "app")

    /// jupyter-server on 127.0.0.1 with a known token, serving ARGV[1]; prints where its
    /// package's api.yaml is, then "ready PORT" once it listens.
    static let jupyterSource = #"""
import os, socket, sys, threading, time
import jupyter_server
print("spec " + os.path.join(os.path.dirname(jupyter_server.__file__), "services", "api", "api.yaml"), flush=True)
probe = socket.socket(); probe.bind(("127.0.0.1", 0)); port = probe.getsockname()[1]; probe.close()
def announce():
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close(); break
        except OSError: time.sleep(0.1)
    print("ready %d" % port, flush=True)
threading.Thread(target=announce, daemon=True).start()
from jupyter_server.serverapp import ServerApp
ServerApp.launch_instance(argv=["--ServerApp.ip=127.0.0.1", "--ServerApp.port=%d" % port, "--ServerApp.port_retries=0",
    "--ServerApp.open_browser=False", "--ServerApp.root_dir=" + sys.argv[1], "--IdentityProvider.token=jup-secret-token",
    "--ServerApp.allow_root=True", "--ServerApp.log_level=WARN"])
"""#

    /// A Django REST Framework API described by drf-spectacular: books (a paged list, a
    /// create, one by id) behind a bearer token, its schema view open.
    static let drfSource = #"""
import sys
import django
from django.conf import settings
settings.configure(
    DEBUG=False, SECRET_KEY="douctl-test", ALLOWED_HOSTS=["127.0.0.1", "localhost"], ROOT_URLCONF=__name__,
    INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "rest_framework", "drf_spectacular"], MIDDLEWARE=[],
    DATABASES={}, USE_TZ=True, LOGGING_CONFIG=None,
    REST_FRAMEWORK={
        "UNAUTHENTICATED_USER": None,
        "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
        "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
        "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    },
    SPECTACULAR_SETTINGS={"TITLE": "Library", "VERSION": "1.0", "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
                          "SERVE_AUTHENTICATION": [], "COMPONENT_SPLIT_REQUEST": True},
)
django.setup()
from django.urls import path
import hashlib
from rest_framework import authentication, exceptions, generics, mixins, pagination, parsers, serializers, viewsets
from rest_framework.response import Response
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.views import SpectacularAPIView

class User:
    def __init__(self, name): self.username, self.is_staff, self.is_authenticated = name, False, True

class BearerAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header.startswith("Bearer "): return None
        if header[7:] != "lib-secret": raise exceptions.AuthenticationFailed("Invalid token.")
        return (User("alice"), header[7:])
    def authenticate_header(self, request): return 'Bearer realm="api"'

class BearerScheme(OpenApiAuthenticationExtension):
    target_class = BearerAuthentication
    name = "bearerAuth"
    def get_security_definition(self, auto_schema): return {"type": "http", "scheme": "bearer"}

class BookSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    title = serializers.CharField(max_length=20)
    pages = serializers.IntegerField(min_value=1)
    kind = serializers.ChoiceField(choices=["novel", "poetry"], default="novel")
    tags = serializers.ListField(child=serializers.CharField(max_length=8), required=False)

class Pages(pagination.PageNumberPagination):
    page_size = 10
    page_size_query_param = "page_size"

BOOKS = []

class Books(mixins.ListModelMixin, viewsets.GenericViewSet):
    authentication_classes = [BearerAuthentication]
    serializer_class = BookSerializer
    pagination_class = Pages
    def get_queryset(self): return BOOKS
    def create(self, request):
        serializer = BookSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        book = dict(serializer.validated_data, id=len(BOOKS) + 1)
        BOOKS.append(book)
        return Response(BookSerializer(book).data, status=201)
    def retrieve(self, request, pk):
        for book in BOOKS:
            if book["id"] == pk: return Response(BookSerializer(book).data)
        raise exceptions.NotFound("No Book matches the given query.")

class CoverSerializer(serializers.Serializer):
    cover = serializers.FileField()
    note = serializers.CharField(max_length=10, required=False)

class Cover(generics.GenericAPIView):
    # Only multipart: drf-spectacular describes a multipart/form-data body with a binary field.
    authentication_classes = [BearerAuthentication]
    parser_classes = [parsers.MultiPartParser]
    serializer_class = CoverSerializer
    def post(self, request, pk):
        serializer = CoverSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        upload = serializer.validated_data["cover"]
        return Response({"book": pk, "name": upload.name, "size": upload.size, "sha256": hashlib.sha256(upload.read()).hexdigest(),
                         "note": serializer.validated_data.get("note")}, status=201)

class RatingSerializer(serializers.Serializer):
    stars = serializers.IntegerField(min_value=1, max_value=5)
    reader = serializers.CharField()

class Rating(generics.GenericAPIView):
    # Only a urlencoded form.
    authentication_classes = [BearerAuthentication]
    parser_classes = [parsers.FormParser]
    serializer_class = RatingSerializer
    def post(self, request, pk):
        serializer = RatingSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response(dict(serializer.validated_data, book=pk, type=request.content_type), status=201)

urlpatterns = [
    path("api/books/<int:pk>/cover/", Cover.as_view()),
    path("api/books/<int:pk>/rating/", Rating.as_view()),
    path("api/books/", Books.as_view({"get": "list", "post": "create"})),
    path("api/books/<int:pk>/", Books.as_view({"get": "retrieve"})),
    path("api/schema/", SpectacularAPIView.as_view()),
]

from django.core.servers.basehttp import WSGIServer, WSGIRequestHandler
from django.core.wsgi import get_wsgi_application
class Quiet(WSGIRequestHandler):
    def log_message(self, *a): pass
server = WSGIServer(("127.0.0.1", 0), Quiet)
server.set_app(get_wsgi_application())
print("ready %d" % server.server_port, flush=True)
server.serve_forever()
"""#
}
