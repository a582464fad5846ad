@testable import DouctlCommands
import DouctlCore
import DouctlHTTP
import DouctlSystem
import DouctlTestSupport
import Testing

/// Issue 44 in process: which runs send through the connection keeper (the route the HTTP
/// configuration carries), `keeper status` with none running, the profile key `keep`.
@Suite("Connection keeper, in process")
struct KeeperCommandTests {
    /// The keeper route the run's HTTP client was given, for `api https://…/x` with `arguments`.
    func route(_ arguments: [String], environment: [String: String] = [:], before: [[String]] = []) throws -> (KeeperRoute?, CommandResult) {
        let seen = LockedValue<KeeperRoute??>(nil)
        let transport = ScriptedTransport([.json(200, "{}")])
        var douctl = try InProcessDouctl(environment: ["XDG_RUNTIME_DIR": "/run/user/4242"].merging(environment) { $1 }, transport: transport)
        for setup in before { #expect(try douctl.run(setup).status == 0, "\(setup)") }
        douctl.configure = { process in
            process.makeTransport = { configuration in
                seen.withLock { $0 = .some(configuration.keeper) }
                return transport
            }
        }
        let result = try douctl.run(["api", "https://api.example/x"] + arguments)
        return (seen.value ?? nil, result)
    }

    @Test func byDefaultRequestsGoThroughThisUsersKeeper() throws {
        let (route, result) = try route([])
        #expect(result.status == 0, "\(result)")
        #expect(route?.socketPath == "/run/user/4242/douctl/keeper-\(Douctl.version).sock")
        #expect(route?.version == Douctl.version)
    }

    @Test(arguments: [
        ("--no-keep", ["--no-keep"], [String: String](), [[String]]()),
        ("DOUCTL_KEEP=0", [], ["DOUCTL_KEEP": "0"], []),
        ("DOUCTL_KEEP=off", [], ["DOUCTL_KEEP": "off"], []),
        ("--proxy", ["--proxy", "http://127.0.0.1:9"], [:], []),
        ("https_proxy", [], ["https_proxy": "http://127.0.0.1:9"], []),
        ("--unix-socket", ["--unix-socket", "/"], [:], []),
        ("OPENSSL_CONF", [], ["OPENSSL_CONF": "/etc/ssl/strict.cnf"], []),
        ("keep: false", [], [:], [["config", "set", "keep", "false"]]),
    ])
    func theseGoDirect(what: String, arguments: [String], environment: [String: String], before: [[String]]) throws {
        let (route, result) = try route(arguments, environment: environment, before: before)
        if what != "--unix-socket" { #expect(result.status == 0, "\(what): \(result)") }
        #expect(route == nil, "\(what)")
    }

    @Test func aBadKeepValueIsRefused() throws {
        let douctl = try InProcessDouctl()
        let result = try douctl.run("config", "set", "keep", "sometimes")
        #expect(result.status == 2)
        #expect(result.stderr.contains("invalid value 'sometimes' for keep"), "\(result.stderr)")
        #expect(try douctl.run("config", "set", "keep", "5m").status == 0)
    }

    @Test func statusWithNoKeeperSaysSo() throws {
        let runtime = try TemporaryDirectory(prefix: "keeper-status")
        let douctl = try InProcessDouctl(environment: ["XDG_RUNTIME_DIR": runtime.path])
        let status = try douctl.run("keeper", "status")
        #expect(status.status == 0)
        #expect(status.stdoutText == "{\"running\":false,\"socket\":\"\(runtime.path)/douctl/keeper-\(Douctl.version).sock\"}\n")
        let stop = try douctl.run("keeper", "stop")
        #expect(stop.status == 0 && stop.stderr.contains("keeper: not running"))
    }

    @Test func theIdleTimeComesFromTheEnvironmentOverTheProfile() throws {
        var profile = try ConfigFile().resolve("douban")
        profile.keep = "5m"
        let network = try NetworkSettings.resolve(options: .init(), environment: [:], profile: profile)
        let fromProfile = KeeperChoice(executable: "/usr/bin/douctl", version: "1.2.3").route(network: network, profile: profile, environment: [:], configDirectory: "/home/u/.config/douctl")
        #expect(fromProfile?.socketPath == "/home/u/.config/douctl/keeper/keeper-1.2.3.sock")
        #expect(fromProfile?.start == ["/usr/bin/douctl", "keeper", "serve", "--idle", "300", "--directory", "/home/u/.config/douctl/keeper"])
        let fromEnvironment = KeeperChoice.fromEnvironment("90s", executable: "/usr/bin/douctl", version: "1.2.3")?.route(network: network, profile: profile, environment: [:], configDirectory: "/c")
        #expect(fromEnvironment?.start?[4] == "90")
        #expect(KeeperChoice.fromEnvironment("no", executable: nil, version: "1") == nil)
    }
}
