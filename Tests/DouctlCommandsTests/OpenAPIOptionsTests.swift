@testable import DouctlCommands
import DouctlArguments
import DouctlCore
import DouctlHTTP
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// What issue 42 left out, in process: `servers` variables as `profile add` options, form
/// and multipart bodies as options per field, `douctl help NAME [OPERATION]`.
@Suite struct OpenAPIOptionsTests {
    static let servers = ##"""
    {"openapi": "3.0.3", "info": {"title": "Regions", "version": "1"},
     "servers": [
       {"url": "https://{region}.api.test:{port}/v{version}", "description": "production",
        "variables": {"region": {"default": "eu", "enum": ["eu", "us"], "description": "where your data lives"},
                      "port": {"default": "8443"}, "version": {"default": "2"}}},
       {"url": "http://127.0.0.1:9/sandbox"}],
     "paths": {"/ping": {"get": {"operationId": "ping", "summary": "Ping"}}}}
    """##

    static func written(_ text: String, as name: String, in douctl: InProcessDouctl) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: douctl.home.path + "/" + name))
    }

    @Test func serverVariablesAreProfileAddOptionsCheckedAgainstTheirEnums() throws {
        let douctl = try InProcessDouctl(transport: ScriptedTransport())
        try Self.written(Self.servers, as: "r.json", in: douctl)
        func apiBase(_ arguments: String...) throws -> String? {
            let added = try douctl.run(["profile", "add", "r", "--openapi", "r.json"] + arguments)
            #expect(added.status == 0, "\(added)")
            return try JSONParser.parse(added.stdoutText)["api_base"]?.stringValue
        }
        #expect(try apiBase() == "https://eu.api.test:8443/v2", "defaults")
        #expect(try apiBase("--server-var", "region=us", "--server-var", "port=9443") == "https://us.api.test:9443/v2")
        #expect(try apiBase("--server", "2") == "http://127.0.0.1:9/sandbox")
        #expect(try apiBase("--server", "http://127.0.0.1:9/sandbox/") == "http://127.0.0.1:9/sandbox")
        #expect(try apiBase("--server", "1", "--server-var", "version=3") == "https://eu.api.test:8443/v3")

        let refusals: [([String], String)] = [
            (["--server-var", "region=mars"], "douctl: --server-var region: must be one of eu, us, not mars"),
            (["--server-var", "zone=a"], "douctl: --server-var zone: the server https://{region}.api.test:{port}/v{version} has no such variable (it has region, port, version)"),
            (["--server-var", "region"], "douctl: --server-var region: expected NAME=VALUE"),
            (["--server", "3"], "douctl: --server 3: the description has 2 servers (1..2)"),
            (["--server", "https://elsewhere.test"], "douctl: --server https://elsewhere.test: not one of the description's servers (1: https://{region}.api.test:{port}/v{version}, 2: http://127.0.0.1:9/sandbox)"),
            (["--server", "2", "--server-var", "region=us"], "douctl: --server-var region: the server http://127.0.0.1:9/sandbox has no variables"),
        ]
        for (arguments, line) in refusals {
            let refused = try douctl.run(["profile", "add", "other", "--openapi", "r.json"] + arguments)
            #expect(refused.status == 2 && refused.errorLine == line && refused.stdout.isEmpty, "\(arguments): \(refused)")
        }
        let without = try douctl.run("profile", "add", "plain", "--api-base", "http://127.0.0.1:9", "--server-var", "region=us")
        #expect(without.status == 2 && without.errorLine.hasPrefix("douctl: --server and --server-var choose among an API description's servers"), "\(without)")
        // Nothing refused was written.
        let listed = try douctl.run("profile", "list", "--json")
        #expect(!listed.stdoutText.contains("\"other\"") && !listed.stdoutText.contains("\"plain\""), "\(listed)")

        // douctl NAME --help shows the servers and their variables.
        let help = try douctl.run("r", "--help")
        #expect(help.stdoutText.contains("Servers (choose with profile add NAME --openapi SOURCE --server N|URL --server-var NAME=VALUE):"), "\(help)")
        #expect(help.stdoutText.contains("  1: https://{region}.api.test:{port}/v{version}  production\n"), "\(help)")
        #expect(help.stdoutText.contains("     --server-var region=VALUE  one of eu, us, default eu: where your data lives\n"), "\(help)")
        #expect(help.stdoutText.contains("  2: http://127.0.0.1:9/sandbox\n"), "\(help)")
    }

    static let forms = ##"""
    swagger: "2.0"
    info: {title: Forms, version: "1"}
    host: 127.0.0.1:9
    schemes: [http]
    paths:
      /pets/{id}/photo:
        post:
          operationId: uploadPhoto
          consumes: [multipart/form-data]
          parameters:
            - {name: id, in: path, required: true, type: integer}
            - {name: file, in: formData, required: true, type: file}
            - {name: caption, in: formData, type: string, maxLength: 10}
      /login:
        post:
          operationId: logIn
          consumes: [application/x-www-form-urlencoded]
          parameters:
            - {name: user, in: formData, required: true, type: string}
            - {name: remember, in: formData, type: boolean}
            - {name: role, in: formData, type: string, enum: [reader, writer]}
    """##

    static func framing(_ request: HTTPRequest) -> String {
        guard case .segments(let segments) = request.body else { return "" }
        return segments.compactMap { segment -> String? in
            if case .bytes(let bytes) = segment { return String(decoding: bytes, as: UTF8.self) }
            return nil
        }.joined()
    }

    @Test func formDataFieldsAreOptionsAndAFileFieldMakesItMultipart() throws {
        let transport = ScriptedTransport([.json(200, "{}"), .json(200, "{}"), .json(200, "{}")])
        let douctl = try InProcessDouctl(transport: transport)
        try Self.written(Self.forms, as: "forms.yaml", in: douctl)
        let picture = try TemporaryDirectory.file(named: "pic.png", bytes: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3])
        let added = try douctl.run("profile", "add", "forms", "--openapi", "forms.yaml")
        guard added.status == 0 else {
            // No libyaml on this machine: YAML descriptions cannot be read at all.
            #expect(added.errorLine.contains("YAML"), "\(added)")
            return
        }
        let help = try douctl.run("forms", "upload-photo", "--help")
        #expect(help.stdoutText.contains("--file @FILE"), "\(help)")
        #expect(help.stdoutText.contains("required, in the body, a file (@FILE, @- for standard input), sent as a file part"), "\(help)")
        #expect(help.stdoutText.contains("Body (multipart/form-data, required): each field is an option"), "\(help)")

        let uploaded = try douctl.run("forms", "upload-photo", "7", "--file", "@" + picture, "--caption", "my cat")
        #expect(uploaded.status == 0, "\(uploaded)")
        let logged = try douctl.run("forms", "log-in", "--user", "ann", "--remember", "true", "--role", "reader")
        #expect(logged.status == 0, "\(logged)")
        // The same as api's own form (-f), the way a user would write it by hand.
        let byHand = try douctl.run("--profile", "forms", "api", "/login", "-f", "user=ann", "-f", "remember=true", "-f", "role=reader")
        #expect(byHand.status == 0, "\(byHand)")
        let sent = transport.requests
        #expect(sent.count == 3)
        guard sent.count == 3 else { return }
        #expect(sent[0].method == "POST" && sent[0].url == "http://127.0.0.1:9/pets/7/photo")
        #expect(sent[0].header("Content-Type")?.hasPrefix("multipart/form-data; boundary=") == true)
        let framing = Self.framing(sent[0])
        #expect(framing.contains("name=\"caption\"\r\n\r\nmy cat\r\n"), "\(framing)")
        #expect(framing.contains("name=\"file\"; filename=\"pic.png\""), "\(framing)")
        guard case .segments(let segments) = sent[0].body else { throw TestFailure("not multipart") }
        #expect(segments.contains(.file(path: picture, length: 11)), "the file is streamed from disk")
        #expect(sent[1].header("Content-Type") == "application/x-www-form-urlencoded")
        #expect(sent[1].body == .bytes(Array("user=ann&remember=true&role=reader".utf8)), "\(sent[1].body)")
        #expect(sent[1].body == sent[2].body && sent[1].url == sent[2].url)

        let refusals: [([String], String)] = [
            (["forms", "upload-photo", "7", "--caption", "hi"], "douctl: the body's file (--file): required"),
            (["forms", "upload-photo", "7", "--file", "@" + picture, "--caption", "far too long a caption"], "douctl: the body's caption (--caption): must be at most 10 characters long"),
            (["forms", "log-in", "--remember", "true"], "douctl: the body's user (--user): required"),
            (["forms", "log-in", "--user", "ann", "--remember", "maybe"], "douctl: the body's remember (--remember): must be boolean, not the string 'maybe'"),
            (["forms", "log-in", "--user", "ann", "--role", "admin"], "douctl: the body's role (--role): must be one of reader, writer, not admin"),
        ]
        for (arguments, line) in refusals {
            let refused = try douctl.run(arguments)
            #expect(refused.status == 2 && refused.errorLine == line && refused.stdout.isEmpty, "\(arguments): \(refused)")
        }
        #expect(transport.requests.count == 3, "nothing refused was sent")
    }

    static let multipart3 = ##"""
    {"openapi": "3.0.3", "info": {"title": "Docs", "version": "1"}, "servers": [{"url": "http://127.0.0.1:9"}],
     "paths": {"/docs": {"post": {"operationId": "addDoc", "requestBody": {"required": true, "content": {
       "multipart/form-data": {"schema": {"type": "object", "required": ["doc"], "properties": {
         "doc": {"type": "string", "format": "binary"}, "pages": {"type": "integer", "minimum": 1}}}}}}}},
       "/notes": {"post": {"operationId": "addNote", "requestBody": {"content": {
       "application/x-www-form-urlencoded": {"schema": {"type": "object", "properties": {
         "text": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}}}}}}}}}}}
    """##

    @Test func openAPI3FormAndMultipartBodiesAreOptionsToo() throws {
        let transport = ScriptedTransport([.json(201, "{}"), .json(201, "{}")])
        let douctl = try InProcessDouctl(transport: transport)
        try Self.written(Self.multipart3, as: "docs.json", in: douctl)
        let text = try TemporaryDirectory.file(named: "a.txt", bytes: Array("hello".utf8))
        #expect(try douctl.run("profile", "add", "docs", "--openapi", "docs.json").status == 0)
        let added = try douctl.run("docs", "add-doc", "--doc", "@" + text, "--pages", "2")
        #expect(added.status == 0, "\(added)")
        let noted = try douctl.run("docs", "add-note", "--text", "hi there", "--tags", "a", "--tags", "b")
        #expect(noted.status == 0, "\(noted)")
        let refused = try douctl.run("docs", "add-doc", "--doc", "@" + text, "--pages", "0")
        #expect(refused.status == 2 && refused.errorLine == "douctl: the body's pages (--pages): must be >= 1, not 0", "\(refused)")
        let longTag = try douctl.run("docs", "add-note", "--tags", "a", "--tags", "long")
        #expect(longTag.status == 2 && longTag.errorLine == "douctl: the body's tags[1] (--tags): must be at most 3 characters long", "\(longTag)")
        let sent = transport.requests
        #expect(sent.count == 2)
        guard sent.count == 2 else { return }
        #expect(Self.framing(sent[0]).contains("name=\"pages\"\r\n\r\n2\r\n") && Self.framing(sent[0]).contains("name=\"doc\"; filename=\"a.txt\""))
        #expect(sent[1].body == .bytes(Array("text=hi%20there&tags=a&tags=b".utf8)) || sent[1].body == .bytes(Array("text=hi+there&tags=a&tags=b".utf8)), "\(sent[1].body)")
    }

    /// A readOnly property (drf-spectacular's id) is required in replies only: a request
    /// without it passes; a JSON pointer escapes ~ and / (RFC 6901).
    @Test func readOnlyRequiredFieldsAreNotAskedOfARequest() throws {
        let schema = try JSONParser.parse(#"{"type": "object", "required": ["id", "title"], "properties": {"id": {"type": "integer", "readOnly": true}, "title": {"type": "string"}, "a/b~c": {"type": "object", "properties": {"n": {"type": "integer"}}}}}"#)
        #expect(SchemaCheck.problem(["title": "x"], schema, field: "", pointer: "") == nil)
        #expect(SchemaCheck.problem(["id": 1], schema, field: "", pointer: "") == SchemaCheck.Problem(field: "title", pointer: "/title", rule: "required"))
        let nested = try JSONParser.parse(#"{"title": "x", "a/b~c": {"n": "one"}}"#)
        #expect(SchemaCheck.problem(nested, schema, field: "", pointer: "") == SchemaCheck.Problem(field: "a/b~c.n", pointer: "/a~1b~0c/n", rule: "must be integer, not the string 'one'"))
    }

    static let paged = ##"""
    {"openapi": "3.0.3", "info": {"title": "Things", "version": "1"}, "servers": [{"url": "http://127.0.0.1:9"}],
     "paths": {"/things": {"get": {"operationId": "listThings",
       "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer"}}, {"name": "marker", "in": "query", "schema": {"type": "string"}}],
       "responses": {"200": {"description": "a page", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Page"}}}}}}}},
     "components": {"schemas": {"Page": {"type": "object", "properties": {
       "data": {"type": "object", "properties": {"things": {"type": "array", "items": {"type": "object"}}, "total": {"type": "integer"}}},
       "paging": {"type": "object", "properties": {"next_marker": {"type": "string", "nullable": true}}}}}}}}
    """##

    /// Paging the description shows fills the profile's paging keys, and --paginate on the
    /// operation walks by them (no built-in rule finds data.things or paging.next_marker).
    @Test func pagingHintsFromTheDescriptionMakeAnOperationWalk() throws {
        let transport = ScriptedTransport([
            .json(200, #"{"data":{"things":[{"n":1},{"n":2}],"total":3},"paging":{"next_marker":"m2"}}"#),
            .json(200, #"{"data":{"things":[{"n":3}],"total":3},"paging":{"next_marker":null}}"#),
        ])
        let douctl = try InProcessDouctl(transport: transport)
        try Self.written(Self.paged, as: "things.json", in: douctl)
        let added = try douctl.run("profile", "add", "t", "--openapi", "things.json")
        #expect(added.status == 0, "\(added)")
        let profile = try JSONParser.parse(added.stdoutText)
        #expect(profile["items_key"] == "data.things" && profile["cursor_key"] == "paging.next_marker" && profile["cursor_param"] == "marker", "\(added)")
        #expect(added.stderr.contains("paging: a cursor in list-things, so items_key data.things, cursor_key paging.next_marker, cursor_param marker"), "\(added)")
        let walked = try douctl.run("t", "list-things", "--limit", "2", "--paginate", "--jq", ".n")
        #expect(walked.status == 0 && walked.stdoutText == "1\n2\n3\n", "\(walked)")
        #expect(transport.requests.map(\.url) == ["http://127.0.0.1:9/things?limit=2", "http://127.0.0.1:9/things?limit=2&marker=m2"])

        // A response whose $ref names nothing costs only its hint: the description is read.
        try Self.written(Self.paged.replacingOccurrences(of: "#/components/schemas/Page", with: "#/components/schemas/Gone"), as: "broken.json", in: douctl)
        let broken = try douctl.run("profile", "add", "b", "--openapi", "broken.json")
        #expect(try broken.status == 0 && JSONParser.parse(broken.stdoutText)["items_key"] == nil && !broken.stderr.contains("paging"), "\(broken)")
    }

    @Test func pagingShapesReadFromResponses() throws {
        let cursor = try JSONParser.parse(#"{"type": "object", "properties": {"items": {"type": "array"}, "nextPageToken": {"type": "string"}}}"#)
        #expect(OpenAPIPaging.hint(schema: cursor, headers: [], queryParameters: ["pageSize", "pageToken"])
                == OpenAPIPaging(itemsKey: "items", cursorKey: "nextPageToken", cursorParam: "pageToken"))
        // A cursor with nowhere to go back is no hint.
        #expect(OpenAPIPaging.hint(schema: cursor, headers: [], queryParameters: ["pageSize"]) == nil)
        // A header with the next page's number.
        var header = OpenAPIPaging(nextPageHeader: "X-Next-Page")
        header.cursorParam = "page"
        #expect(OpenAPIPaging.hint(schema: .object(JSONObject()), headers: ["X-Total", "X-Next-Page"], queryParameters: ["page", "per_page"]) == header)
        // A Link header, and DRF's next link: walked already; only the items are named.
        #expect(OpenAPIPaging.hint(schema: .object(JSONObject()), headers: ["Link"], queryParameters: [])?.linkHeader == true)
        let drf = try JSONParser.parse(#"{"type": "object", "properties": {"count": {"type": "integer"}, "next": {"type": "string", "format": "uri", "nullable": true}, "results": {"type": "array"}}}"#)
        let link = OpenAPIPaging.hint(schema: drf, headers: [], queryParameters: ["page"])
        #expect(link?.nextLink == "next" && link?.itemsKey == "results" && link?.cursorKey == nil, "\(String(describing: link))")
        // Nothing about paging: no hint.
        #expect(OpenAPIPaging.hint(schema: try JSONParser.parse(#"{"type": "object", "properties": {"name": {"type": "string"}}}"#), headers: ["ETag"], queryParameters: ["q"]) == nil)
    }

    @Test func helpNameIsNameDashDashHelp() throws {
        let douctl = try InProcessDouctl(transport: ScriptedTransport())
        try Self.written(Self.servers, as: "r.json", in: douctl)
        #expect(try douctl.run("profile", "add", "r", "--openapi", "r.json").status == 0)
        let viaHelp = try douctl.run("help", "r")
        let viaFlag = try douctl.run("r", "--help")
        #expect(viaHelp.status == 0 && viaHelp.stdoutText == viaFlag.stdoutText && viaHelp.stdoutText.contains("ping"), "\(viaHelp)")
        let operation = try douctl.run("help", "r", "ping")
        let operationViaFlag = try douctl.run("r", "ping", "--help")
        #expect(operation.status == 0 && operation.stdoutText == operationViaFlag.stdoutText && operation.stdoutText.contains("GET /ping"), "\(operation)")
        // Built-in commands' help is unchanged; a word that is neither is still refused.
        #expect(try douctl.run("help", "profile").stdoutText == (try douctl.run("profile", "--help")).stdoutText)
        let unknown = try douctl.run("help", "nobody")
        #expect(unknown.status == 2, "\(unknown)")
    }
}
