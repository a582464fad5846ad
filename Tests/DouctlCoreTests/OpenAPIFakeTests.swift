import Foundation
@testable import DouctlCore
import DouctlJSON
import DouctlServer
import DouctlSystem
import DouctlTestSupport
import Testing

/// `douctl sandbox --openapi` (issue 42, part 5), in process: the checked-in description
/// (Tests/Descriptions/pets-fake.yaml) made into a fake; templates matched, requests checked,
/// auth enforced, replies from examples or generated from schemas.
@Suite("OpenAPI fake")
struct OpenAPIFakeTests {
    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Descriptions/pets-fake.yaml").path

    static func fake(_ text: String? = nil) throws -> OpenAPIFake {
        let bytes = try text.map { Array($0.utf8) } ?? Array(Data(contentsOf: URL(fileURLWithPath: file)))
        let root: JSON
        do { root = try OpenAPIReader.decode(bytes, source: file) } catch {
            if "\(error)".contains("cannot load libyaml"), !Tools.areRequired { try Test.cancel("skipped: needs libyaml, which is not installed") }
            throw error
        }
        var reader = OpenAPIReader(source: file, root: root) { (location: String) throws(DouctlError) -> [UInt8] in throw .localInput("no \(location)") }
        return try OpenAPIFake.make(reader: &reader)
    }

    static func send(_ fake: OpenAPIFake, _ method: String, _ target: String, headers: [(String, String)] = [("Authorization", "Bearer t")], body: String = "") -> (status: Int, json: JSON, headers: [(String, String)]) {
        let response = fake.answer(HTTPServerRequest(method: method, target: target, headers: HTTPHeaders(headers), body: Array(body.utf8)))
        var bytes: [UInt8] = []
        if case .bytes(let given) = response.body { bytes = given }
        return (response.status, (try? JSONParser.parse(bytes)) ?? .null, response.headers)
    }

    @Test func templatesMatchLiteralsFirstAndUnderTheServersPath() throws {
        let fake = try Self.fake()
        #expect(fake.basePath == "/v1")
        #expect(fake.title == "Pet Store")
        // An example given with the response.
        let pet = Self.send(fake, "GET", "/v1/pets/12")
        #expect(pet.status == 200 && pet.json == ["id": 1, "name": "Tom", "status": "sold"], "\(pet)")
        #expect(Self.send(fake, "GET", "/pets/12").status == 200, "without the server's path too")
        // /pets/mine is its own operation, not /pets/{petId} with a bad id; its examples' first value.
        let mine = Self.send(fake, "GET", "/v1/pets/mine", headers: [("X-API-Key", "k")])
        #expect(mine.status == 200 && mine.json == [["id": 7, "name": "Rex"]], "\(mine)")
        #expect(Self.send(fake, "DELETE", "/v1/pets/3").status == 204)
    }

    /// Form bodies are checked as JSON bodies are: Swagger's formData (multipart with a file
    /// field) and OpenAPI 3's urlencoded requestBody; fields read as their types; another kind
    /// of body is a 415.
    @Test func formAndMultipartBodiesAreCheckedAgainstTheirFields() throws {
        let swagger = try Self.fake(#"""
        {"swagger": "2.0", "info": {"title": "f", "version": "1"}, "paths": {"/photos": {"post": {"consumes": ["multipart/form-data"],
          "parameters": [{"name": "file", "in": "formData", "type": "file", "required": true},
                         {"name": "stars", "in": "formData", "type": "integer", "maximum": 5}],
          "responses": {"201": {"description": "made"}}}}}}
        """#)
        func multipart(_ parts: [(String, String?, String)]) -> String {
            parts.map { "--b\r\nContent-Disposition: form-data; name=\"\($0.0)\"\($0.1.map { "; filename=\"\($0)\"" } ?? "")\r\n\r\n\($0.2)\r\n" }.joined() + "--b--\r\n"
        }
        let typed = [("Content-Type", "multipart/form-data; boundary=b")]
        #expect(Self.send(swagger, "POST", "/photos", headers: typed, body: multipart([("file", "a.jpg", "JPEG"), ("stars", nil, "4")])).status == 201)
        let tooMany = Self.send(swagger, "POST", "/photos", headers: typed, body: multipart([("file", "a.jpg", "JPEG"), ("stars", nil, "9")]))
        #expect(tooMany.status == 422 && tooMany.json["detail"]?.stringValue?.contains("stars") == true, "\(tooMany)")
        let noFile = Self.send(swagger, "POST", "/photos", headers: typed, body: multipart([("stars", nil, "4")]))
        #expect(noFile.status == 422 && noFile.json["detail"]?.stringValue?.contains("file") == true, "\(noFile)")
        let json = Self.send(swagger, "POST", "/photos", headers: [("Content-Type", "application/json")], body: #"{"stars":4}"#)
        #expect(json.status == 415, "\(json)")

        let openAPI = try Self.fake(#"""
        {"openapi": "3.0.3", "info": {"title": "f", "version": "1"}, "paths": {"/notes": {"post": {"requestBody": {"required": true, "content": {"application/x-www-form-urlencoded":
          {"schema": {"type": "object", "required": ["text"], "additionalProperties": false, "properties": {"text": {"type": "string", "maxLength": 5}, "tag": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}}}}}},
          "responses": {"204": {"description": "kept"}}}}}}
        """#)
        let form = [("Content-Type", "application/x-www-form-urlencoded")]
        #expect(Self.send(openAPI, "POST", "/notes", headers: form, body: "text=hi&tag=a&tag=b").status == 204)
        let long = Self.send(openAPI, "POST", "/notes", headers: form, body: "text=too+long")
        #expect(long.status == 422 && long.json["detail"]?.stringValue?.contains("text") == true, "\(long)")
        let badTag = Self.send(openAPI, "POST", "/notes", headers: form, body: "text=hi&tag=a&tag=c")
        #expect(badTag.status == 422 && badTag.json["detail"]?.stringValue?.contains("tag") == true, "\(badTag)")
        let extra = Self.send(openAPI, "POST", "/notes", headers: form, body: "text=hi&mood=ok")
        #expect(extra.status == 422 && extra.json["detail"]?.stringValue?.contains("mood") == true, "\(extra)")
    }

    @Test func unknownPathsAndMethodsNameWhatIsDescribed() throws {
        let fake = try Self.fake()
        let missing = Self.send(fake, "GET", "/v1/owners")
        #expect(missing.status == 404, "\(missing)")
        #expect(missing.json["paths"]?.arrayValue?.compactMap(\.stringValue).contains("/pets/{petId}") == true, "\(missing)")
        let wrong = Self.send(fake, "PUT", "/v1/pets/3")
        #expect(wrong.status == 405, "\(wrong)")
        #expect(wrong.json["detail"]?.stringValue == "PUT is not described at /pets/{petId}; it allows GET, DELETE", "\(wrong)")
        #expect(wrong.headers.contains { $0.0 == "Allow" && $0.1 == "GET, DELETE" })
    }

    @Test func generatedRepliesFollowTheSchema() throws {
        let fake = try Self.fake()
        let list = Self.send(fake, "GET", "/v1/pets")
        #expect(list.status == 200)
        let pets = try #require(list.json.arrayValue)
        #expect(pets.count == 1)
        #expect(pets[0] == ["id": 1, "name": "string", "status": "available", "born": "2024-01-01T00:00:00Z", "owner": "user@example.com", "tags": ["string"]], "\(pets)")
        let created = Self.send(fake, "POST", "/v1/pets", body: #"{"name":"Kit"}"#)
        #expect(created.status == 201 && created.json["id"] == 1, "\(created)")
        // A recursive schema: cut where it meets itself (a Node's children: none).
        let tree = Self.send(fake, "GET", "/v1/tree", headers: [])
        #expect(tree.status == 200 && tree.json == ["name": "string", "children": []], "\(tree)")
        // Every generated reply passes the checks its own schema makes.
        let generated = try Self.fake(#"""
        {"openapi": "3.1.0", "info": {"title": "g", "version": "1"}, "paths": {"/g": {"get": {"responses": {"200": {"content": {"application/json": {"schema":
          {"type": "object", "required": ["n", "s", "a", "u"], "properties": {"n": {"type": "integer", "minimum": 5, "maximum": 9}, "x": {"type": "number", "exclusiveMinimum": 2},
           "s": {"type": "string", "minLength": 12, "maxLength": 14}, "a": {"type": "array", "minItems": 2, "items": {"type": "boolean"}}, "u": {"type": "string", "format": "uuid"},
           "o": {"anyOf": [{"type": "null"}, {"type": "string", "format": "date"}]}}}}}}}}}}}
        """#)
        let value = Self.send(generated, "GET", "/g").json
        #expect(value["n"] == 5 && value["x"] == 3 && value["a"] == [true, true] && value["o"] == "2024-01-01", "\(value)")
        #expect(value["s"]?.stringValue?.count == 12)
        #expect(SchemaCheck.violation(value["u"] ?? .null, ["type": "string", "format": "uuid"], field: "u") == nil)
    }

    @Test func requestsAreCheckedAndTheRuleNamed() throws {
        let fake = try Self.fake()
        let body = Self.send(fake, "POST", "/v1/pets", body: #"{"status":"lost"}"#)
        #expect(body.status == 422, "\(body)")
        #expect(body.json["detail"]?.stringValue == "body.name: required", "\(body)")
        #expect(body.json["field"]?.stringValue == "body.name" && body.json["rule"]?.stringValue == "required")
        let enumeration = Self.send(fake, "POST", "/v1/pets", body: #"{"name":"Kit","status":"lost"}"#)
        #expect(enumeration.json["detail"]?.stringValue == "body.status: must be one of available, pending, sold, not lost", "\(enumeration)")
        let notJSON = Self.send(fake, "POST", "/v1/pets", body: "name=Kit")
        #expect(notJSON.status == 400 && notJSON.json["field"]?.stringValue == "body", "\(notJSON)")
        #expect(Self.send(fake, "POST", "/v1/pets").json["detail"]?.stringValue == "body: required (application/json)")
        let limit = Self.send(fake, "GET", "/v1/pets?limit=500")
        #expect(limit.status == 422 && limit.json["detail"]?.stringValue == "limit: must be <= 100, not 500", "\(limit)")
        let path = Self.send(fake, "GET", "/v1/pets/abc")
        #expect(path.status == 422 && path.json["detail"]?.stringValue == "petId: must be integer, not the string 'abc'", "\(path)")
        #expect(Self.send(fake, "GET", "/v1/pets/0").json["detail"]?.stringValue == "petId: must be >= 1, not 0")
        #expect(Self.send(fake, "GET", "/v1/pets?limit=5&status=sold").status == 200)
    }

    @Test func theDescribedAuthIsAskedFor() throws {
        let fake = try Self.fake()
        let bare = Self.send(fake, "GET", "/v1/pets", headers: [])
        #expect(bare.status == 401, "\(bare)")
        #expect(bare.headers.contains { $0.0 == "WWW-Authenticate" && $0.1.hasPrefix("Bearer") })
        #expect(Self.send(fake, "GET", "/v1/pets", headers: [("Authorization", "Bearer ")]).status == 401, "an empty token is none")
        #expect(Self.send(fake, "GET", "/v1/pets", headers: [("Authorization", "Bearer anything")]).status == 200)
        // Auth comes before the checks: no hints about the body to a caller without credentials.
        #expect(Self.send(fake, "POST", "/v1/pets", headers: [], body: "{}").status == 401)
        // The operation's own security: an API key in a header; `security: []`: none.
        let key = Self.send(fake, "GET", "/v1/pets/mine")
        #expect(key.status == 401 && key.json["detail"]?.stringValue == "this operation needs the API key X-API-Key (in the header)", "\(key)")
        #expect(Self.send(fake, "GET", "/v1/health", headers: []).status == 200)
    }
}

/// Swagger 2.0 descriptions faked alike: basePath, a body parameter, response examples,
/// Basic and a query API key.
@Suite("OpenAPI fake: Swagger 2.0")
struct SwaggerFakeTests {
    static let swagger = #"""
    {"swagger": "2.0", "info": {"title": "Notes", "version": "1"}, "basePath": "/api",
     "securityDefinitions": {"basic": {"type": "basic"}, "key": {"type": "apiKey", "in": "query", "name": "api_key"}},
     "security": [{"basic": []}],
     "definitions": {"Note": {"type": "object", "required": ["text"], "properties": {"text": {"type": "string", "maxLength": 5}, "id": {"type": "string", "format": "uuid"}}}},
     "paths": {
       "/notes": {
         "post": {"operationId": "addNote", "parameters": [{"name": "note", "in": "body", "required": true, "schema": {"$ref": "#/definitions/Note"}}],
                  "responses": {"201": {"description": "made", "schema": {"$ref": "#/definitions/Note"}}}},
         "get": {"operationId": "listNotes", "security": [{"key": []}],
                 "parameters": [{"name": "tags", "in": "query", "type": "array", "items": {"type": "integer"}}],
                 "responses": {"200": {"description": "all", "examples": {"application/json": [{"text": "hi"}]}}}}}}}
    """#

    @Test func swaggerDescriptionsAreServed() throws {
        let fake = try OpenAPIFakeTests.fake(Self.swagger)
        #expect(fake.basePath == "/api")
        let basic = [("Authorization", "Basic dTpw")]
        // maxLength 5 respected: "strin".
        let made = OpenAPIFakeTests.send(fake, "POST", "/api/notes", headers: basic, body: #"{"text":"hi"}"#)
        #expect(made.status == 201 && made.json == ["text": "strin", "id": "3fa85f64-5717-4562-b3fc-2c963f66afa6"], "\(made)")
        let long = OpenAPIFakeTests.send(fake, "POST", "/api/notes", headers: basic, body: #"{"text":"too long"}"#)
        #expect(long.status == 422 && long.json["detail"]?.stringValue == "body.text: must be at most 5 characters long", "\(long)")
        let bearer = OpenAPIFakeTests.send(fake, "POST", "/api/notes", body: #"{"text":"hi"}"#)
        #expect(bearer.status == 401 && bearer.headers.contains { $0.0 == "WWW-Authenticate" && $0.1.hasPrefix("Basic") }, "a bearer token is not Basic")
        #expect(OpenAPIFakeTests.send(fake, "GET", "/api/notes", headers: []).status == 401)
        let listed = OpenAPIFakeTests.send(fake, "GET", "/api/notes?api_key=k&tags=1,2", headers: [])
        #expect(listed.status == 200 && listed.json == [["text": "hi"]], "\(listed)")
        let tags = OpenAPIFakeTests.send(fake, "GET", "/api/notes?api_key=k&tags=1,x", headers: [])
        #expect(tags.status == 422 && tags.json["detail"]?.stringValue == "tags[1]: must be integer, not the string 'x'", "\(tags)")
    }
}
