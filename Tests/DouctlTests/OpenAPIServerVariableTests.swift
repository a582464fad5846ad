import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// `profile add NAME --openapi FILE --server-var NAME=VALUE` (issue 42) through the built
/// binary: a description whose server URL has variables (the port among them), served by
/// `douctl sandbox --openapi`; the variables given make api_base the sandbox's, and the
/// operation reaches it; a value outside a variable's enum exits 2 naming it; help shows them.
@Suite("OpenAPI servers variables (binary)", .serialized)
struct OpenAPIServerVariableTests {
    static let description = ##"""
    {"openapi": "3.0.3", "info": {"title": "Stations", "version": "1"},
     "servers": [{"url": "http://{host}:{port}/{stage}", "description": "a station",
                  "variables": {"host": {"default": "stations.invalid"}, "port": {"default": "80"},
                                "stage": {"default": "prod", "enum": ["prod", "test"]}}},
                 {"url": "http://127.0.0.1:9/other"}],
     "paths": {"/stations/{id}": {"get": {"operationId": "getStation", "summary": "One station",
       "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
       "responses": {"200": {"description": "ok", "content": {"application/json": {"example": {"id": 7, "name": "Harbour"}}}}}}}}}
    """##

    @Test func serverVariablesPointTheProfileAtTheSandbox() throws {
        let douctl = Douctl(environment: ["XDG_CACHE_HOME": TemporaryDirectory.make(prefix: "douctl-cache")])
        let file = try TemporaryDirectory.file(named: "stations.json", bytes: Array(Self.description.utf8))
        let sandbox = try RunningDouctl(douctl, ["sandbox", "--openapi", file])
        defer { sandbox.kill(SIGTERM); _ = sandbox.finish() }
        let base = String(try sandbox.waitForStdout { $0.contains("\n") }.prefix { $0 != "\n" })
        let port = try #require(base.split(separator: ":").last.map(String.init))

        let defaults = try douctl.run(["profile", "add", "far", "--openapi", file])
        #expect(try JSONParser.parse(defaults.stdoutText)["api_base"] == "http://stations.invalid:80/prod", "\(defaults)")

        let added = try douctl.run(["profile", "add", "st", "--openapi", file, "--server-var", "host=127.0.0.1", "--server-var", "port=" + port, "--server-var", "stage=test"])
        #expect(added.status == 0, "\(added)")
        #expect(try JSONParser.parse(added.stdoutText)["api_base"] == .string(base + "/test"), "\(added)")
        let station = try douctl.run(["st", "get-station", "7", "--compact"])
        #expect(station.status == 0 && station.stdoutText == #"{"id":7,"name":"Harbour"}"# + "\n", "\(station)")
        let viaAPI = try douctl.run(["--profile", "st", "api", "/stations/7", "--compact"])
        #expect(viaAPI.stdoutText == station.stdoutText, "\(viaAPI)")

        let refused = try douctl.run(["profile", "add", "bad", "--openapi", file, "--server-var", "stage=dev"])
        #expect(refused.status == 2 && refused.errorLine == "douctl: --server-var stage: must be one of prod, test, not dev" && refused.stdout.isEmpty, "\(refused)")
        let second = try douctl.run(["profile", "add", "two", "--openapi", file, "--server", "2"])
        #expect(try JSONParser.parse(second.stdoutText)["api_base"] == "http://127.0.0.1:9/other", "\(second)")

        let help = try douctl.run(["help", "st"])
        #expect(help.status == 0 && help.stdoutText.contains("     --server-var stage=VALUE  one of prod, test, default prod\n"), "\(help)")
        #expect(help.stdoutText.contains("  1: http://{host}:{port}/{stage}  a station\n"), "\(help)")
    }
}
