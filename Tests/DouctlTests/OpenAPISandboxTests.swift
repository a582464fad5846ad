import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// `douctl sandbox --openapi FILE` (issue 42, part 5) as a user runs it: the checked-in
/// description (Tests/Descriptions/pets-fake.yaml) served on a free port, called with curl (a
/// client that is not douctl) and with douctl through a profile added from the same file;
/// a bad body answered 422 naming the rule, no credential 401, --fault on a described route;
/// and FastAPI's own description served the same way.
@Suite("sandbox --openapi (binary)", .serialized)
struct OpenAPISandboxTests {
    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Descriptions/pets-fake.yaml").path

    func douctl() -> Douctl {
        Douctl(environment: ["XDG_CACHE_HOME": TemporaryDirectory.make(prefix: "douctl-cache")])
    }

    /// The sandbox on the description, and its base URL (its first line of stdout); skipped
    /// (naming libyaml) when the YAML cannot be read here.
    func start(_ douctl: Douctl, _ file: String, _ extra: [String] = []) throws -> (RunningDouctl, String) {
        let running = try RunningDouctl(douctl, ["sandbox", "--openapi", file] + extra)
        let first = (try? running.waitForStdout { $0.contains("\n") }) ?? ""
        if first.isEmpty, running.stderrSoFar.contains("cannot load libyaml") {
            running.kill(SIGTERM)
            _ = running.finish()
            if Tools.areRequired { Issue.record("libyaml is not installed") }
            try Test.cancel("skipped: needs libyaml, which is not installed")
        }
        return (running, String(first.prefix { $0 != "\n" }))
    }

    /// curl's body and status: `BODY\nSTATUS`.
    func call(_ arguments: [String]) throws -> (status: Int, json: JSON) {
        let output = try curl(["-s", "-w", "\n%{http_code}"] + arguments)
        let status = Int(output.split(separator: "\n").last ?? "") ?? 0
        let body = output.split(separator: "\n").dropLast().joined(separator: "\n")
        return (status, (try? JSONParser.parse(body)) ?? .null)
    }

    @Test func curlAndDouctlCallTheFake() throws {
        try Tools.require("curl")
        let douctl = douctl()
        let (sandbox, base) = try start(douctl, Self.file)
        defer { sandbox.kill(SIGTERM); _ = sandbox.finish() }
        let started = try sandbox.waitForStderr { $0.contains("Serving Pet Store (7 operations) at \(base)/v1. Try: douctl profile add NAME --openapi") }
        // It does not say the Douban profiles point at a Douban API it is not serving.
        #expect(started.contains("listening on \(base), answering the description's API in place of Douban's.") && !started.contains("point here"), "\(started)")

        // curl: an example, a generated reply, the rule a bad body breaks, no credential.
        let pet = try call(["-H", "Authorization: Bearer x", base + "/v1/pets/12"])
        #expect(pet.status == 200 && pet.json == ["id": 1, "name": "Tom", "status": "sold"], "\(pet)")
        let bad = try call(["-H", "Authorization: Bearer x", "-H", "Content-Type: application/json", "-d", #"{"name":""}"#, base + "/v1/pets"])
        #expect(bad.status == 422, "\(bad)")
        #expect(bad.json["detail"]?.stringValue == "body.name: must be at least 1 characters long", "\(bad)")
        let bare = try call([base + "/v1/pets"])
        #expect(bare.status == 401 && bare.json["detail"]?.stringValue == "this operation needs a bearer token (Authorization: Bearer ...)", "\(bare)")
        let unknown = try call([base + "/v1/owners"])
        #expect(unknown.status == 404 && unknown.json["paths"]?.arrayValue?.count == 5, "\(unknown)")
        #expect(try call(["-X", "PATCH", "-H", "Authorization: Bearer x", base + "/v1/pets/1"]).status == 405)

        // douctl through a profile made from the same file: the operations run and check.
        #expect(try douctl.run(["profile", "add", "pets", "--openapi", Self.file, "--api-base", base + "/v1"]).status == 0)
        #expect(try douctl.run(["--profile", "pets", "auth", "login", "--with-token"], input: Array("any-token\n".utf8)).status == 0)
        let shown = try douctl.run(["pets", "show-pet", "12", "--compact"])
        #expect(shown.status == 0 && shown.stdoutText == #"{"id":1,"name":"Tom","status":"sold"}"# + "\n", "\(shown)")
        let created = try douctl.run(["pets", "create-pet", "-f", "name=Kit", "-f", "status=pending", "--jq", ".born"])
        #expect(created.status == 0 && created.stdoutText == "2024-01-01T00:00:00Z\n", "\(created)")
        let listed = try douctl.run(["pets", "list-pets", "--limit", "5", "--jq", ".[0].status"])
        #expect(listed.status == 0 && listed.stdoutText == "available\n", "\(listed)")
        #expect(try douctl.run(["pets", "get-health", "--jq", ".status"]).stdoutText == "ok\n")
        // douctl's own check refuses first; --no-validate lets the fake's check answer.
        let local = try douctl.run(["pets", "create-pet", "-f", "status=lost"])
        #expect(local.status == 2, "\(local)")
        let sent = try douctl.run(["pets", "create-pet", "-f", "name=Kit", "-f", "status=lost", "--no-validate"])
        #expect(sent.status == 1 && sent.errorLine.contains("422") && sent.stdoutText.isEmpty, "\(sent)")
        try sandbox.waitForStderr { $0.contains("POST /v1/pets 422") }
    }

    /// Form bodies as a client nobody here wrote sends them: curl's `-F` (multipart, a file
    /// part) and `--data` (urlencoded) against Swagger formData and OpenAPI 3 form operations,
    /// checked field by field; douctl's form operation reaches the same fake.
    @Test func curlsFormsAreCheckedByTheFake() throws {
        try Tools.require("curl")
        let directory = TemporaryDirectory.make(prefix: "forms")
        let file = directory + "/forms.json"
        try Data(#"""
        {"swagger": "2.0", "info": {"title": "Forms", "version": "1"}, "basePath": "/", "paths": {
          "/photos": {"post": {"operationId": "addPhoto", "consumes": ["multipart/form-data"],
            "parameters": [{"name": "file", "in": "formData", "type": "file", "required": true}, {"name": "stars", "in": "formData", "type": "integer", "maximum": 5}],
            "responses": {"201": {"description": "made", "schema": {"type": "object", "properties": {"id": {"type": "integer"}}}}}}},
          "/notes": {"post": {"operationId": "addNote", "consumes": ["application/x-www-form-urlencoded"],
            "parameters": [{"name": "text", "in": "formData", "type": "string", "maxLength": 5, "required": true}],
            "responses": {"204": {"description": "kept"}}}}}}
        """#.utf8).write(to: URL(fileURLWithPath: file))
        try Data("JPEG".utf8).write(to: URL(fileURLWithPath: directory + "/a.jpg"))
        let douctl = douctl()
        let (sandbox, base) = try start(douctl, file)
        defer { sandbox.kill(SIGTERM); _ = sandbox.finish() }
        #expect(try call(["-F", "file=@" + directory + "/a.jpg", "-F", "stars=4", base + "/photos"]).status == 201)
        let tooMany = try call(["-F", "file=@" + directory + "/a.jpg", "-F", "stars=9", base + "/photos"])
        #expect(tooMany.status == 422 && tooMany.json["detail"]?.stringValue?.contains("stars") == true, "\(tooMany)")
        let noFile = try call(["-F", "stars=4", base + "/photos"])
        #expect(noFile.status == 422 && noFile.json["detail"]?.stringValue?.contains("file") == true, "\(noFile)")
        #expect(try call(["--data", "text=hi", base + "/notes"]).status == 204)
        let long = try call(["--data", "text=too+long", base + "/notes"])
        #expect(long.status == 422 && long.json["detail"]?.stringValue?.contains("text") == true, "\(long)")
        #expect(try call(["-H", "Content-Type: application/json", "--data", #"{"text":"hi"}"#, base + "/notes"]).status == 415)
        // douctl's operation sends the same multipart body, and the fake takes it.
        #expect(try douctl.run(["profile", "add", "forms", "--openapi", file, "--api-base", base]).status == 0)
        let added = try douctl.run(["forms", "add-photo", "--file", "@" + directory + "/a.jpg", "--stars", "3", "--compact"])
        #expect(added.status == 0 && added.stdoutText == #"{"id":0}"# + "\n", "\(added)")
    }

    @Test func faultsFireOnDescribedRoutes() throws {
        try Tools.require("curl")
        let (sandbox, base) = try start(douctl(), Self.file, ["--fault", "503:1"])
        defer { sandbox.kill(SIGTERM); _ = sandbox.finish() }
        let output = try curl(["-s", "-o", "/dev/null", "-w", "%{http_code}", base + "/v1/health"])
        #expect(output == "503", "\(output)")
        // 429 and 500 as problem documents, not Douban's error body.
        let (limited, limitedBase) = try start(douctl(), Self.file, ["--fault", "429:1"])
        defer { limited.kill(SIGTERM); _ = limited.finish() }
        let problem = try call(["-H", "Authorization: Bearer x", limitedBase + "/v1/pets/1"])
        #expect(problem.status == 429 && problem.json["title"]?.stringValue == "Too Many Requests", "\(problem)")
    }

    /// FastAPI's published description (3.1, written by FastAPI itself) served: its
    /// operations run through a profile from the same file, and its rules are the fake's.
    @Test func fastAPIsDescriptionIsServed() throws {
        try Tools.require("curl")
        try PythonPeer.require(module: "fastapi", package: "fastapi")
        let peer = try PythonPeer(name: "fastapi", source: OpenAPIServerTests.fastAPISource)
        let file = TemporaryDirectory.make(prefix: "fastapi-description") + "/openapi.json"
        try Data(curl(["-s", peer.base + "/openapi.json"]).utf8).write(to: URL(fileURLWithPath: file))
        let douctl = douctl()
        let (sandbox, base) = try start(douctl, file)
        defer { sandbox.kill(SIGTERM); _ = sandbox.finish() }
        #expect(try douctl.run(["profile", "add", "shelf", "--openapi", file, "--api-base", base]).status == 0)
        let created = try douctl.run(["shelf", "create-item-items-post", "-f", "name=Dune", "-F", "qty=2"])
        #expect(created.status == 0, "\(created)")
        let tooMany = try call(["-H", "Content-Type: application/json", "-d", #"{"name":"Dune","qty":-1}"#, base + "/items"])
        #expect(tooMany.status == 422 && tooMany.json["detail"]?.stringValue?.hasPrefix("body.qty: must be >= 0") == true, "\(tooMany)")
        let limit = try call([base + "/items?limit=99"])
        #expect(limit.status == 422 && limit.json["detail"]?.stringValue == "limit: must be <= 50, not 99", "\(limit)")
        let one = try call([base + "/items/3"])
        #expect(one.status == 200, "\(one)")
        #expect(try call([base + "/items/x"]).status == 422)

        // Record against the real FastAPI, replay over the fake: what was recorded comes
        // back as recorded, anything else from the description (not 404 no_recording).
        let recording = TemporaryDirectory.make(prefix: "fastapi-recording")
        #expect(try douctl.run(["profile", "add", "real", "--openapi", file, "--api-base", peer.base]).status == 0)
        let real = try douctl.run(["--record", recording, "real", "create-item-items-post", "-f", "name=Ubik", "-F", "qty=3", "--compact"])
        #expect(real.status == 0, "\(real)")
        let (replay, replayBase) = try start(douctl, file, ["--replay", recording])
        defer { replay.kill(SIGTERM); _ = replay.finish() }
        #expect(try douctl.run(["profile", "add", "replayed", "--openapi", file, "--api-base", replayBase]).status == 0)
        let again = try douctl.run(["replayed", "create-item-items-post", "-f", "name=Ubik", "-F", "qty=3", "--compact"])
        #expect(again.status == 0 && again.stdoutText == real.stdoutText, "\(again)\n\(real)")
        let notRecorded = try douctl.run(["replayed", "read-item-items-item-id-get", "7"])
        #expect(notRecorded.status == 0, "\(notRecorded)")
    }
}
