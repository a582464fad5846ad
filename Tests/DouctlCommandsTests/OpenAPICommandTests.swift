@testable import DouctlCommands
import DouctlArguments
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Foundation
import Testing

/// Operations of an API description as commands, in process (issue 42): the profile is
/// filled from the description; `douctl NAME OPERATION` sends what `douctl api` sends for
/// the same request; checks refuse before anything is sent; help lists the operations.
@Suite struct OpenAPICommandTests {
    static let description = ##"""
    {"openapi": "3.0.3", "info": {"title": "Pets", "version": "1"},
     "servers": [{"url": "http://127.0.0.1:9/v1"}],
     "components": {"securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-API-Key"}},
       "schemas": {"Pet": {"type": "object", "required": ["name"], "properties": {
         "name": {"type": "string", "maxLength": 5}, "age": {"type": "integer", "minimum": 0},
         "toys": {"type": "array", "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "a/b": {"type": "integer"}}}}}}}},
     "security": [{"key": []}],
     "paths": {
       "/pets": {
         "get": {"operationId": "listPets", "tags": ["pets"], "summary": "List pets", "parameters": [
           {"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": 100, "default": 20}},
           {"name": "kind", "in": "query", "required": true, "schema": {"type": "string", "enum": ["cat", "dog"]}},
           {"name": "X-Trace", "in": "header", "schema": {"type": "string"}}]},
         "post": {"operationId": "createPet", "tags": ["pets"], "summary": "Add a pet",
           "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}}},
       "/pets/{petId}": {"parameters": [{"name": "petId", "in": "path", "required": true, "schema": {"type": "integer"}}],
         "delete": {"tags": ["pets"], "summary": "Remove a pet"}}}}
    """##

    static func douctl(_ transport: ScriptedTransport) throws -> InProcessDouctl {
        let douctl = try InProcessDouctl(environment: ["DOUCTL_TOKEN": "k-123"], transport: transport)
        try Data(description.utf8).write(to: URL(fileURLWithPath: douctl.home.path + "/pets.json"))
        let added = try douctl.run("profile", "add", "pets", "--openapi", "pets.json")
        #expect(added.status == 0, "\(added)")
        #expect(added.stderr.contains("Read Pets: 3 operations, apiKey auth (key)"), "\(added)")
        let profile = try JSONParser.parse(added.stdoutText)
        #expect(profile["api_base"] == "http://127.0.0.1:9/v1")
        #expect(profile["token_header"] == "X-API-Key")
        #expect(profile["openapi"] == .string(douctl.home.path + "/pets.json"))
        return douctl
    }

    @Test func anOperationSendsWhatApiSends() throws {
        let transport = ScriptedTransport([.json(200, "[]"), .json(200, "[]"), .json(201, #"{"id":1}"#), .json(201, #"{"id":1}"#), .json(204, "")])
        let douctl = try Self.douctl(transport)
        let listed = try douctl.run("pets", "list-pets", "--kind", "cat", "--limit", "5", "--X-Trace", "t1")
        #expect(listed.status == 0, "\(listed)")
        let viaAPI = try douctl.run("--profile", "pets", "api", "/pets?limit=5&kind=cat", "-H", "X-Trace: t1")
        #expect(viaAPI.status == 0, "\(viaAPI)")
        let created = try douctl.run("pets", "create-pet", "-f", "name=Tom", "-F", "age=3")
        #expect(created.status == 0, "\(created)")
        let createdViaAPI = try douctl.run("--profile", "pets", "api", "/pets", "--json", "-f", "name=Tom", "-F", "age=3")
        #expect(createdViaAPI.status == 0, "\(createdViaAPI)")
        let removed = try douctl.run("pets", "pets", "delete", "7")
        #expect(removed.status == 0, "\(removed)")
        let sent = transport.requests
        #expect(sent.count == 5)
        guard sent.count == 5 else { return }
        #expect(sent[0].url == "http://127.0.0.1:9/v1/pets?limit=5&kind=cat")
        #expect(sent[0].url == sent[1].url && sent[0].method == sent[1].method)
        #expect(sent[0].header("X-Trace") == "t1" && sent[1].header("X-Trace") == "t1")
        #expect(sent[0].header("X-API-Key") == "k-123")
        #expect(sent[2].method == "POST" && sent[2].url == "http://127.0.0.1:9/v1/pets")
        #expect(sent[2].body == sent[3].body && sent[2].header("Content-Type") == "application/json")
        #expect(sent[4].method == "DELETE" && sent[4].url == "http://127.0.0.1:9/v1/pets/7")
    }

    @Test func aValueTheDescriptionRefusesExitsTwoAndSendsNothing() throws {
        let transport = ScriptedTransport([.json(201, "{}")])
        let douctl = try Self.douctl(transport)
        let cases: [([String], String)] = [
            (["pets", "list-pets"], "douctl: kind: required (--kind)"),
            (["pets", "list-pets", "--kind", "cow"], "douctl: kind: must be one of cat, dog, not cow"),
            (["pets", "list-pets", "--kind", "cat", "--limit", "500"], "douctl: limit: must be <= 100, not 500"),
            (["pets", "pets", "delete", "x"], "douctl: petId: must be integer, not the string 'x'"),
            (["pets", "create-pet"], "douctl: the body: required (give fields with -f/-F, or --input FILE)"),
            (["pets", "create-pet", "-F", "age=2"], "douctl: the body's name (/name): required"),
            (["pets", "create-pet", "-f", "name=Tommy-the-cat"], "douctl: the body's name (/name): must be at most 5 characters long"),
            (["pets", "create-pet", "-f", "name=Tom", "-F", "age=-1"], "douctl: the body's age (/age): must be >= 0, not -1"),
            // Nested fields are named as -F spells them and by JSON pointer (RFC 6901, ~1 for /).
            (["pets", "create-pet", "-f", "name=Tom", "-F", "toys[][a/b]=1"], "douctl: the body's toys[0].name (/toys/0/name): required"),
            (["pets", "create-pet", "-f", "name=Tom", "-F", #"toys:=[{"name":"ball"},{"name":"rope","a/b":"x"}]"#], "douctl: the body's toys[1].a/b (/toys/1/a~1b): must be integer, not the string 'x'"),
            (["pets", "create-pet", "-f", "name=Tom", "-F", "toys=3"], "douctl: the body's toys (/toys): must be array, not the number 3"),
        ]
        for (arguments, line) in cases {
            let result = try douctl.run(arguments)
            #expect(result.status == 2, "\(arguments): \(result)")
            #expect(result.errorLine == line, "\(arguments): \(result)")
            #expect(result.stdout.isEmpty)
        }
        #expect(transport.requests.isEmpty)
        // --no-validate sends anyway.
        let forced = try douctl.run("pets", "create-pet", "-F", "age=-1", "--no-validate")
        #expect(forced.status == 0, "\(forced)")
        #expect(transport.requests.count == 1)
    }

    @Test func helpListsOperationsByTagAndAnOperationsParameters() throws {
        let douctl = try Self.douctl(ScriptedTransport())
        let listing = try douctl.run("pets", "--help")
        #expect(listing.status == 0, "\(listing)")
        #expect(listing.stdoutText.contains("pets\n    list-pets    List pets\n    create-pet   Add a pet\n    pets delete  Remove a pet\n"), "\(listing)")
        let one = try douctl.run("pets", "list-pets", "--help")
        #expect(one.stdoutText.contains("--kind VALUE"), "\(one)")
        #expect(one.stdoutText.contains("required, string, one of cat, dog"), "\(one)")
        #expect(one.stdoutText.contains("integer, ..100, default 20"), "\(one)")
        let body = try douctl.run("pets", "create-pet", "--help")
        #expect(body.stdoutText.contains("Body (application/json, required)"), "\(body)")
        #expect(body.stdoutText.contains("name (required)  string, at most 5 characters"), "\(body)")
        let unknown = try douctl.run("pets", "nope")
        #expect(unknown.status == 2)
        #expect(unknown.errorLine == "douctl: unknown command 'nope' for 'douctl pets'", "\(unknown)")
    }

    @Test func dryRunPrintsTheRequestAndAProfileWithoutADescriptionIsNoCommand() throws {
        let douctl = try Self.douctl(ScriptedTransport())
        let dry = try douctl.run("pets", "list-pets", "--kind", "dog", "--dry-run")
        #expect(dry.status == 0, "\(dry)")
        #expect(dry.stdoutText.hasPrefix("curl -sS -g 'http://127.0.0.1:9/v1/pets?kind=dog' -A douctl/"), "\(dry)")
        let plain = try douctl.run("profile", "add", "plain", "--api-base", "http://127.0.0.1:9")
        #expect(plain.status == 0)
        let notACommand = try douctl.run("plain", "x")
        #expect(notACommand.status == 2)
        #expect(notACommand.errorLine.hasPrefix("douctl: unknown command 'plain'"), "\(notACommand)")
    }

    @Test func completionListsOperationsOptionsAndEnumValuesFromTheIndex() throws {
        let douctl = try Self.douctl(ScriptedTransport())
        func complete(_ words: String...) throws -> [String] {
            let result = try douctl.run(["__complete", "operations", "--"] + words)
            #expect(result.status == 0, "\(result)")
            return result.stdoutText.split(separator: "\n").map(String.init)
        }
        #expect(try complete("pets", "") == ["list-pets", "create-pet", "pets"])
        #expect(try complete("pets", "cr") == ["create-pet"])
        #expect(try complete("pets", "pets", "") == ["delete"])
        #expect(try complete("pets", "list-pets", "--ki") == ["--kind"])
        #expect(try complete("pets", "list-pets", "--kind", "") == ["cat", "dog"])
        #expect(try complete("nobody", "").isEmpty)
    }
}
