import DouctlJSON
import DouctlTestSupport
import Foundation
import Testing

/// `douctl config` and `douctl profile`, and the files they keep.
@Suite("config and profiles")
struct ConfigTests {
    let douctl = Douctl()

    var configPath: String { douctl.configDirectory + "/config.json" }

    func mode(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    @Test func profileAddWritesConfigAtomicallyWithPrivateModes() throws {
        let result = try douctl.run("profile", "add", "work", "--preset", "douban", "--client-id", "0b5405e19c58e4cc21fc11a4d50aae64",
                                    "--client-secret", "-", "--redirect-uri", "https://www.example.com/back", "--scopes", "shuo_basic_r, shuo_basic_w", input: "s3cr3t-value\n")
        #expect(result.status == 0, "\(result)")
        let shown = try result.json()
        #expect(shown["name"]?.stringValue == "work")
        #expect(shown["api_base"]?.stringValue == "https://api.douban.com")
        #expect(shown["client_secret"]?.stringValue == "s3cr********")
        #expect(shown["scopes"] == ["shuo_basic_r", "shuo_basic_w"])
        #expect(try mode(douctl.configDirectory) == 0o700)
        #expect(try mode(configPath) == 0o600)
        let file = try JSONParser.parse(Array(Data(contentsOf: URL(fileURLWithPath: configPath))))
        #expect(file["profiles"]?["work"]?["preset"]?.stringValue == "douban")
        #expect(file["profiles"]?["work"]?["client_id"]?.stringValue == "0b5405e19c58e4cc21fc11a4d50aae64")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: douctl.configDirectory).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty)
    }

    /// A writer killed between creating its temp file and renaming it left
    /// `.config.json.tmp-*` behind for good; the next change of the config removes it
    /// (only regular files: a directory of that name is not douctl's).
    @Test func aKilledWritersTempFileIsRemovedByTheNextChange() throws {
        try douctl.run("profile", "add", "work", "--preset", "douban")
        let abandoned = douctl.configDirectory + "/.config.json.tmp-4242-dead"
        try Data(#"{"profiles": {"work": {"pre"#.utf8).write(to: URL(fileURLWithPath: abandoned))
        let notOurs = douctl.configDirectory + "/.config.json.tmp-a-directory"
        try FileManager.default.createDirectory(atPath: notOurs, withIntermediateDirectories: false)
        #expect(try douctl.run("config", "get", "preset", "--profile", "work").stdoutText == "douban\n", "reading leaves it")
        #expect(FileManager.default.fileExists(atPath: abandoned))
        #expect(try douctl.run("config", "set", "scopes", "a,b", "--profile", "work").status == 0)
        #expect(!FileManager.default.fileExists(atPath: abandoned), "the next change removed it")
        #expect(FileManager.default.fileExists(atPath: notOurs))
        #expect(try douctl.run("config", "get", "scopes", "--profile", "work").stdoutText == "a,b\n")
    }

    @Test func configGetSetUnsetList() throws {
        try douctl.run("profile", "add", "work", "--preset", "douban")
        #expect(try douctl.run("config", "get", "api_base", "--profile", "work").stdoutText == "https://api.douban.com\n")
        #expect(try douctl.run("config", "set", "api_base", "http://127.0.0.1:9", "--profile", "work").status == 0)
        #expect(try douctl.run("config", "get", "api_base", "--profile", "work").stdoutText == "http://127.0.0.1:9\n")
        try douctl.run("config", "set", "client_secret", "-", "--profile", "work", input: "topsecretvalue\n")
        #expect(try douctl.run("config", "list", "--profile", "work").stdoutText == "preset=douban\napi_base=http://127.0.0.1:9\nclient_secret=tops********\n")
        #expect(try douctl.run("config", "list", "--profile", "work", "--show-secrets").stdoutText.contains("client_secret=topsecretvalue\n"))
        try douctl.run("config", "unset", "api_base", "--profile", "work")
        #expect(try douctl.run("config", "get", "api_base", "--profile", "work").stdoutText == "https://api.douban.com\n")
        // DOUCTL_PROFILE picks the profile too.
        #expect(try douctl.run(["config", "get", "preset"], environment: ["DOUCTL_PROFILE": "work"]).stdoutText == "douban\n")
    }

    @Test func invalidValuesAreUsageErrors() throws {
        let badStyle = try douctl.run("config", "set", "style", "weibo", "--profile", "p")
        #expect(badStyle.status == 2)
        #expect(badStyle.errorLine == "douctl: invalid value 'weibo' for style: expected one of douban, coding")
        let badKey = try douctl.run("config", "get", "colour")
        #expect(badKey.status == 2)
        #expect(badKey.errorLine.hasPrefix("douctl: invalid value 'colour' for KEY: expected one of preset, style, api_base"))
        let badURL = try douctl.run("config", "set", "api_base", "ftp://x", "--profile", "p")
        #expect(badURL.status == 2)
        let badBase = try douctl.run("api", "/x", "--api-base", "127.0.0.1:80")
        #expect(badBase.status == 2)
        #expect(badBase.errorLine == "douctl: invalid value '127.0.0.1:80' for --api-base: expected an http:// or https:// URL")
    }

    @Test func malformedConfigIsReportedAndNeverOverwritten() throws {
        try FileManager.default.createDirectory(atPath: douctl.configDirectory, withIntermediateDirectories: true)
        let broken = #"{"profiles": {"work": {"api_base": "http://x"}"#
        try Data(broken.utf8).write(to: URL(fileURLWithPath: configPath))
        let result = try douctl.run("config", "set", "api_base", "http://127.0.0.1:1", "--profile", "work")
        #expect(result.status == 3, "\(result)")
        #expect(result.errorLine == "douctl: bad configuration file \(configPath) (unexpected end of input at line 1, column 47)")
        #expect(try String(contentsOfFile: configPath, encoding: .utf8) == broken)
    }

    /// Found by fuzzing the loader: JSON lets a name appear twice; douctl listed the profile
    /// twice and a write-back dropped one. Now each is a bad configuration file, left as is.
    @Test(arguments: [
        (#"{"profiles":{"c":{"preset":"coding"},"c":{"preset":"douban"}}}"#, "profile 'c' appears twice"),
        (#"{"profiles":{"w":{"preset":"douban","client_id":"a","client_id":"b"}}}"#, "key 'client_id' appears twice in profile 'w'"),
        (#"{"default_profile":"a","default_profile":"b","profiles":{}}"#, "'default_profile' appears twice"),
    ])
    func namesThatAppearTwiceAreRefused(config: String, detail: String) throws {
        try FileManager.default.createDirectory(atPath: douctl.configDirectory, withIntermediateDirectories: true)
        try Data(config.utf8).write(to: URL(fileURLWithPath: configPath))
        let result = try douctl.run("profile", "list")
        #expect(result.status == 3, "\(result)")
        #expect(result.errorLine == "douctl: bad configuration file \(configPath) (\(detail))")
        #expect(result.stdout.isEmpty)
        #expect(try String(contentsOfFile: configPath, encoding: .utf8) == config, "never rewritten")
    }

    @Test func unknownKeysAreRejectedWithTheValidOnes() throws {
        try FileManager.default.createDirectory(atPath: douctl.configDirectory, withIntermediateDirectories: true)
        try Data(#"{"profiles":{"work":{"api_base":"http://x.example","colour":"red"}}}"#.utf8).write(to: URL(fileURLWithPath: configPath))
        let result = try douctl.run("api", "/x", "--profile", "work")
        #expect(result.status == 3)
        #expect(result.errorLine == "douctl: bad configuration file \(configPath) (unknown key 'colour' in profile 'work'; valid keys: preset, style, api_base, authorize_url, token_url, device_authorization_url, revoke_url, client_id, client_secret, scopes, redirect_uri, user_url, user_id_field, user_name_field, items_key, graphql_url, next_page_header, cursor_key, cursor_param, token_auth, token_placement, auth_scheme, token_header, token_query, issuer, expect_user, pkce, body_format, common_params, common_headers, signing, signing_secret, signing_command, rate_limit, cache_max_mb, ca_bundle, ca_path, client_cert, client_key, insecure, proxy, keep, openapi, record_scrub)")
    }

    @Test func profileListShowUseRemove() throws {
        try douctl.run("profile", "add", "a", "--preset", "sandbox")
        try douctl.run("profile", "add", "b", "--preset", "coding", "--api-base", "https://team.coding.net")
        #expect(try douctl.run("profile", "use", "b").status == 0)
        let lines = try douctl.run("profile", "list").lines()
        #expect(lines.map { $0["name"]?.stringValue } == ["a", "b", "douban", "coding", "coding-openapi", "sandbox", "coding-sandbox"], "the presets --profile accepts too")
        #expect(lines.map { $0["default"]?.boolValue } == [false, true, false, false, false, false, false])
        #expect(lines.map { $0["configured"]?.boolValue } == [true, true, false, false, false, false, false])
        #expect(lines[1]["style"]?.stringValue == "coding")
        let shown = try douctl.run("profile", "show").json()
        #expect(shown["name"]?.stringValue == "b")
        #expect(shown["token_placement"]?.stringValue == "query")
        #expect(shown["api_base"]?.stringValue == "https://team.coding.net")
        #expect(try douctl.run("profile", "remove", "b").status == 0)
        #expect(try douctl.run("profile", "list").lines().map { $0["name"]?.stringValue } == ["a", "douban", "coding", "coding-openapi", "sandbox", "coding-sandbox"])
        let missing = try douctl.run("profile", "show", "nosuch")
        #expect(missing.status == 2)
        #expect(missing.errorLine.hasPrefix("douctl: no profile named 'nosuch'"))
    }

    @Test func credentialsReadableByOthersAreRefused() throws {
        try Credentials.write(["douban": "tok"], in: douctl.configDirectory)
        chmod(douctl.configDirectory + "/credentials.json", 0o644)
        let result = try douctl.run("api", "/x", "--api-base", "http://127.0.0.1:1")
        #expect(result.status == 3)
        #expect(result.errorLine.contains("is readable by other users (mode 644); refusing to use it"))
    }

    @Test func versionAndHelp() throws {
        #expect(try douctl.run("--version").stdoutText == "douctl 0.1.0\n")
        let version = try douctl.run("version")
        #expect(version.stdoutText.hasPrefix("douctl 0.1.0\nlibcurl "))
        let help = try douctl.run("help", "api")
        #expect(help.status == 0)
        #expect(help.stdoutText.hasPrefix("douctl api — send a request to any API endpoint"))
        #expect(try douctl.run("api", "--help").stdoutText == help.stdoutText)
    }
}
