@testable import DouctlCommands
import DouctlTestSupport
import Testing

/// Global options typed at parse time (issue 38, point 6): `--cache` is a duration and the
/// options' conflicts are refused while binding, so `--dry-run` never changes which errors
/// a user sees. Before, `--cache 5q --dry-run` exited 0 and `--cache 5q` exited 2 (the
/// duration was read only when the session built its cache policy, which a dry run skips).
@Suite struct TypedGlobalOptionsTests {
    static let refused: [(arguments: [String], line: String)] = [
        (["--cache", "5q"], "douctl: invalid value '5q' for --cache: expected a duration such as 30s, 5m, 1h"),
        (["--cache", ""], "douctl: invalid value '' for --cache: expected a duration such as 30s, 5m, 1h"),
        (["--api-base", "api.test"], "douctl: invalid value 'api.test' for --api-base: expected an http:// or https:// URL"),
        (["--key", "k.pem"], "douctl: --key needs --cert (the client certificate it belongs to)"),
        (["--proxy", "a b"], "douctl: invalid proxy 'a b': expected a URL such as http://proxy.example:3128"),
        (["--unix-socket", ""], "douctl: invalid value '' for --unix-socket: expected the path of a Unix domain socket"),
    ]

    /// The same usage error (exit 2, its line, then the usage line) with and without
    /// --dry-run, and nothing sent either way.
    @Test(arguments: refused)
    func aMalformedGlobalOptionIsTheSameUsageErrorWithOrWithoutDryRun(arguments: [String], line: String) throws {
        var results: [CommandResult] = []
        for dryRun in [false, true] {
            let transport = ScriptedTransport([.json(200, "{}")])
            let douctl = try InProcessDouctl(environment: ["DOUCTL_TOKEN": "t"], transport: transport)
            let argv = ["api", "/x"] + (arguments.first == "--api-base" ? [] : ["--api-base", "http://api.test"]) + arguments + (dryRun ? ["--dry-run"] : [])
            let result = try douctl.run(argv)
            #expect(result.status == 2, "\(argv): \(result)")
            let lines = result.stderr.split(separator: "\n").map(String.init)
            #expect(lines.first == line, "\(argv): \(result.stderr)")
            #expect(lines.count == 2 && lines[1].hasPrefix("usage: douctl api"), "\(argv): the usage line follows: \(result.stderr)")
            #expect(result.stdout.isEmpty)
            #expect(transport.requests.isEmpty)
            results.append(result)
        }
        #expect(results[0].stderr == results[1].stderr)
    }

    /// A duration is read once, as the option is bound: the typed value is seconds.
    @Test(arguments: [("30s", 30.0), ("5m", 300), ("1h", 3600), ("2", 2), ("1.5m", 90)])
    func theCacheDurationIsBoundAsSeconds(text: String, seconds: Double) throws {
        let (outcome, _) = try Douctl.parse(["api", "/x", "--cache", text])
        guard case .run(let parsed) = outcome else {
            Issue.record("not a run: \(outcome)")
            return
        }
        #expect(try GlobalOptionValues.bind(parsed).cache == seconds)
    }
}
