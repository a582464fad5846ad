import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// Issue 42, through the built binary with no server: a YAML description read through
/// libyaml; without libyaml a YAML description is one line (exit 3) and JSON still works;
/// a broken description names its file and line; profile refresh rebuilds after a change.
@Suite("API descriptions from files")
struct DescriptionFileTests {
    static let yaml = """
    openapi: 3.0.3
    info: {title: Pets, version: "1"}
    servers: [{url: "http://127.0.0.1:9/v1"}]
    paths:
      /pets/{id}:
        get:
          operationId: showPet
          parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
    """

    func douctl() -> Douctl {
        Douctl(environment: ["XDG_CACHE_HOME": TemporaryDirectory.make(prefix: "douctl-cache")])
    }

    @Test func yamlReadsThroughLibyamlAndItsAbsenceIsOneLine() throws {
        let directory = TemporaryDirectory.make(prefix: "douctl-descriptions")
        try Data(Self.yaml.utf8).write(to: URL(fileURLWithPath: directory + "/pets.yaml"))
        try Data(#"{"openapi": "3.0.3", "info": {"title": "J", "version": "1"}, "servers": [{"url": "http://127.0.0.1:9"}], "paths": {"/a": {"get": {"operationId": "getA"}}}}"#.utf8)
            .write(to: URL(fileURLWithPath: directory + "/j.json"))
        let douctl = douctl()
        let missing = try douctl.run(["profile", "add", "pets", "--openapi", directory + "/pets.yaml"], environment: ["DOUCTL_LIBYAML": "/nonexistent/libyaml.so"])
        #expect(missing.status == 3, "\(missing)")
        #expect(missing.errorLine.hasPrefix("douctl: cannot read the API description \(directory)/pets.yaml as YAML: cannot load libyaml ("), "\(missing)")
        #expect(missing.stderr.split(separator: "\n").count == 1, "\(missing)")
        let json = try douctl.run(["profile", "add", "j", "--openapi", directory + "/j.json"], environment: ["DOUCTL_LIBYAML": "/nonexistent/libyaml.so"])
        #expect(json.status == 0, "\(json)")

        let added = try douctl.run(["profile", "add", "pets", "--openapi", directory + "/pets.yaml"])
        if added.status == 3, added.stderr.contains("cannot load libyaml") {
            if Tools.areRequired { Issue.record("libyaml is not installed") }
            return
        }
        #expect(added.status == 0, "\(added)")
        let dry = try douctl.run(["pets", "show-pet", "12", "--dry-run"])
        #expect(dry.stdoutText.hasPrefix("curl -sS -g http://127.0.0.1:9/v1/pets/12 "), "\(dry)")

        // A change to the file: refresh rebuilds the index; a broken one names its line.
        try Data(Self.yaml.replacingOccurrences(of: "showPet", with: "getPet").utf8).write(to: URL(fileURLWithPath: directory + "/pets.yaml"))
        let refreshed = try douctl.run(["profile", "refresh", "pets"])
        #expect(refreshed.status == 0 && refreshed.stderr.contains("index rebuilt"), "\(refreshed)")
        let renamed = try douctl.run(["pets", "get-pet", "12", "--dry-run"])
        #expect(renamed.status == 0, "\(renamed)")
        try Data("openapi: 3.0.3\npaths:\n  /a: [\n".utf8).write(to: URL(fileURLWithPath: directory + "/pets.yaml"))
        let broken = try douctl.run(["profile", "refresh", "pets"])
        #expect(broken.status == 3, "\(broken)")
        #expect(broken.errorLine.hasPrefix("douctl: cannot read the API description \(directory)/pets.yaml: ") && broken.errorLine.contains(" at line "), "\(broken)")
    }
}
