import Foundation
@testable import DouctlCore
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Testing

/// Reading API descriptions (issue 42): 3.x and Swagger 2.0 into one index, references
/// within the document and to relative files, cycles, names of commands, where a mistake is,
/// and the index file read back without the description.
@Suite("OpenAPI descriptions into an index")
struct OpenAPIReaderTests {
    static func index(_ text: String, source: String = "/nowhere/api.json", files: [String: String] = [:]) throws -> OpenAPIIndex {
        let root = try OpenAPIReader.decode(Array(text.utf8), source: source)
        var reader = OpenAPIReader(source: source, root: root) { (location: String) throws(DouctlError) -> [UInt8] in
            guard let text = files[location] else { throw .localInput("no file \(location)") }
            return Array(text.utf8)
        }
        return try reader.index(digest: "d")
    }

    static let petstore = ##"""
    {"openapi": "3.1.0", "info": {"title": "Pets", "version": "1"},
     "servers": [{"url": "https://{region}.example.com/v1", "variables": {"region": {"default": "eu"}}}],
     "components": {
       "securitySchemes": {"oauth": {"type": "oauth2", "flows": {"authorizationCode": {
          "authorizationUrl": "https://auth.example.com/authorize", "tokenUrl": "https://auth.example.com/token",
          "scopes": {"read": "", "write": ""}}}}},
       "schemas": {"Pet": {"type": "object", "required": ["name"], "properties": {
          "name": {"type": "string"}, "parent": {"$ref": "#/components/schemas/Pet"}, "tag": {"$ref": "common.json#/Tag"}}}}},
     "security": [{"oauth": ["read"]}],
     "paths": {
       "/pets": {
         "get": {"operationId": "listPets", "tags": ["pets"], "summary": "List pets",
                 "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": 100}}]},
         "post": {"operationId": "createPet", "tags": ["pets"],
                  "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}}},
       "/pets/{petId}/photos": {
         "parameters": [{"name": "petId", "in": "path", "required": true, "schema": {"type": "integer"}}],
         "get": {"tags": ["pets"], "summary": "Photos"},
         "delete": {"tags": ["pets"]}}}}
    """##

    @Test func openAPI3IsIndexedWithRefsToFilesAndCyclesLeftAsReferences() throws {
        let index = try Self.index(Self.petstore, files: ["/nowhere/common.json": #"{"Tag": {"type": "string", "enum": ["a", "b"]}}"#])
        #expect(index.title == "Pets")
        #expect(index.servers == ["https://eu.example.com/v1"])
        #expect(index.security?.type == "oauth2")
        #expect(index.security?.authorizeURL == "https://auth.example.com/authorize")
        #expect(index.security?.tokenURL == "https://auth.example.com/token")
        #expect(index.security?.scopes == ["read", "write"])
        #expect(index.operations.map(\.name) == ["list-pets", "create-pet", "pets list-photos", "pets delete-photos"])
        let create = try #require(index.operations.first { $0.name == "create-pet" })
        #expect(create.body?.required == true)
        #expect(create.body?.schema["properties"]?["tag"]?["enum"] == ["a", "b"])
        // The recursive member stays a reference: it is never followed twice.
        #expect(create.body?.schema["properties"]?["parent"] == ["$ref": "#/components/schemas/Pet"])
        let photos = try #require(index.operations.first { $0.name == "pets list-photos" })
        #expect(photos.pathParameters.map(\.name) == ["petId"])
    }

    @Test func swagger2IsReadIntoTheSameShape() throws {
        let index = try Self.index(#"""
        swagger: "2.0"
        info: {title: kinto, version: "1.23"}
        host: 127.0.0.1:8888
        basePath: /v1
        schemes: [http]
        securityDefinitions: {basicauth: {type: basic}}
        consumes: [application/json]
        paths:
          /buckets:
            get:
              operationId: get_buckets
              tags: [Buckets]
              parameters:
                - {name: _sort, in: query, type: array, items: {type: string}}
                - {name: _limit, in: query, type: integer, minimum: 0}
            post:
              operationId: create_bucket
              parameters:
                - {name: body, in: body, required: true, schema: {type: object, properties: {data: {type: object}}}}
          /upload:
            post:
              operationId: upload
              consumes: [multipart/form-data]
              parameters:
                - {name: file, in: formData, type: file, required: true}
                - {name: note, in: formData, type: string}
        """#, source: "http://127.0.0.1:8888/v1/__api__")
        #expect(index.servers == ["http://127.0.0.1:8888/v1"])
        #expect(index.security?.type == "http")
        #expect(index.security?.httpScheme == "basic")
        #expect(index.operations.map(\.name) == ["get-buckets", "create-bucket", "upload"])
        let list = index.operations[0]
        #expect(list.parameters.map(\.name) == ["_sort", "_limit"])
        #expect(list.parameters[0].schema["x-douctl-joined"] == ",")
        #expect(list.parameters[1].schema["minimum"] == 0)
        #expect(index.operations[1].body?.contentType == "application/json")
        #expect(index.operations[1].body?.required == true)
        #expect(index.operations[2].body?.contentType == "multipart/form-data")
        #expect(index.operations[2].body?.schema["required"] == ["file"])
    }

    @Test func aDescriptionThatCannotBeReadSaysWhere() throws {
        // A YAML mistake: the file and the line.
        if YAML.isAvailable {
            do {
                _ = try Self.index("openapi: 3.0.0\npaths: {\n  /a: [\n", source: "/specs/broken.yaml")
                Issue.record("read")
            } catch let error as DouctlError {
                #expect(error.message.hasPrefix("cannot read the API description /specs/broken.yaml: "), "\(error.message)")
                #expect(error.message.contains("at line "), "\(error.message)")
            }
        }
        // A reference to nothing: the reference and where it points.
        do {
            _ = try Self.index(##"{"openapi": "3.0.0", "paths": {"/a": {"get": {"parameters": [{"$ref": "#/components/parameters/Nope"}]}}}}"##)
            Issue.record("read")
        } catch let error as DouctlError {
            #expect(error.message.contains("$ref '#/components/parameters/Nope'"), "\(error.message)")
            #expect(error.message.contains("names nothing"), "\(error.message)")
        }
        // A reference chain that loops.
        do {
            _ = try Self.index(##"{"openapi": "3.0.0", "components": {"parameters": {"A": {"$ref": "#/components/parameters/B"}, "B": {"$ref": "#/components/parameters/A"}}}, "paths": {"/a": {"get": {"parameters": [{"$ref": "#/components/parameters/A"}]}}}}"##)
            Issue.record("read")
        } catch let error as DouctlError {
            #expect(error.message.contains("refers to itself"), "\(error.message)")
        }
        // Not an API description.
        #expect(throws: DouctlError.self) { try Self.index(#"{"paths": {}}"#) }
        #expect(throws: DouctlError.self) { try Self.index(#"{"openapi": "3.0.0"}"#) }
    }

    @Test func commandNamesAreKebabCase() {
        #expect(OpenAPIIndex.kebab("listPets") == "list-pets")
        #expect(OpenAPIIndex.kebab("get_buckets") == "get-buckets")
        #expect(OpenAPIIndex.kebab("HTTPServerStatus") == "http-server-status")
        #expect(OpenAPIIndex.kebab("read_item_items__item_id__get") == "read-item-items-item-id-get")
        #expect(OpenAPIIndex.kebab("delete_user-data") == "delete-user-data")
    }

    @Test func theIndexFileReadsBackOperationByOperation() throws {
        let index = try Self.index(Self.petstore, files: ["/nowhere/common.json": #"{"Tag": {"type": "string"}}"#])
        let directory = try TemporaryDirectory(prefix: "douctl-index")
        let path = OpenAPIIndex.path(cacheDirectory: directory.path, profile: "pets")
        try index.write(to: path)
        let file = try #require(try OpenAPIIndexFile.read(path))
        #expect(file.rows.map(\.name) == index.operations.map(\.name))
        #expect(file.servers == index.servers)
        for (row, operation) in zip(file.rows, index.operations) {
            let read = try file.operation(row)
            #expect(read == operation)
        }
        // A damaged index is one line naming the fix.
        try Data("{\"douctl_openapi_index\":99}\n".utf8).write(to: URL(fileURLWithPath: path))
        do throws(DouctlError) {
            _ = try OpenAPIIndexFile.read(path)
            Issue.record("read")
        } catch {
            #expect(error.message.contains("douctl profile refresh"), "\(error.message)")
        }
    }

    @Test func schemaChecksNameTheFieldAndTheRule() {
        let schema: JSON = ["type": "object", "required": ["name"], "additionalProperties": false, "properties": [
            "name": ["type": "string", "maxLength": 3],
            "qty": ["type": "integer", "minimum": 0, "maximum": 9],
            "kind": ["enum": ["a", "b"]],
            "when": ["type": "string", "format": "date"],
            "tags": ["type": "array", "items": ["type": "string"], "maxItems": 2],
        ]]
        func check(_ value: JSON) -> String? { SchemaCheck.violation(value, schema, field: "") }
        #expect(check(["name": "abc", "qty": 3, "kind": "a", "when": "2024-05-01", "tags": ["x"]]) == nil)
        #expect(check(["qty": 1]) == "name: required")
        #expect(check(["name": "abcd"]) == "name: must be at most 3 characters long")
        #expect(check(["name": "a", "qty": 10]) == "qty: must be <= 9, not 10")
        #expect(check(["name": "a", "qty": "x"]) == "qty: must be integer, not the string 'x'")
        #expect(check(["name": "a", "qty": .number("1.5")]) == "qty: must be integer, not the number 1.5")
        #expect(check(["name": "a", "kind": "c"]) == "kind: must be one of a, b, not c")
        #expect(check(["name": "a", "when": "May 1"])?.hasPrefix("when: must be a date (format date") == true)
        #expect(check(["name": "a", "tags": ["x", 1]]) == "tags[1]: must be string, not the number 1")
        #expect(check(["name": "a", "tags": ["x", "y", "z"]]) == "tags: must have at most 2 items")
        #expect(check(["name": "a", "extra": 1]) == "extra: not a field of this body (additionalProperties is false)")
        #expect(SchemaCheck.typed("5", schema: ["type": "integer"]) == 5)
        #expect(SchemaCheck.typed("true", schema: ["type": "boolean"]) == true)
        #expect(SchemaCheck.typed("x", schema: ["type": "integer"]) == "x")
    }
}
