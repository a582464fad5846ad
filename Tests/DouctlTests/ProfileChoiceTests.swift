import DouctlJSON
import DouctlSandbox
import DouctlTestSupport
import Foundation
import Testing

/// Issue 39, point 4, with the built binary against the sandbox on 127.0.0.1: the account
/// is chosen by the directory a process runs in (.douctl), never by state another process
/// wrote, and a profile pinned to one account (`expect_user`) never stores another's tokens.
@Suite("profile by context: .douctl, expect_user, twenty processes")
struct ProfileChoiceTests {
    /// Profiles home (pinned to ahbei) and work (pinned to linglu) on the sandbox, and a
    /// directory for each whose .douctl names it.
    static func setUp(_ fixture: SandboxFixture) throws -> (home: String, work: String) {
        let base = fixture.sandbox.baseURL
        func profile(_ name: String, _ user: String) -> String {
            #""\#(name)":{"preset":"sandbox","api_base":"\#(base)","token_url":"\#(base)/service/auth2/token","client_id":"douctl-sandbox","client_secret":"sandbox-secret","expect_user":"\#(user)"}"#
        }
        let config = #"{"default_profile":"sandbox","profiles":{\#(profile("home", "ahbei")),\#(profile("work", "linglu"))}}"#
        let path = fixture.douctl.configDirectory + "/config.json"
        try Data(config.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        let root = TemporaryDirectory.make(prefix: "douctl-dirs")
        var directories: [String] = []
        for name in ["home", "work"] {
            let directory = root + "/" + name + "/src"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let file = root + "/" + name + "/.douctl"
            try Data("\(name)\n".utf8).write(to: URL(fileURLWithPath: file))
            chmod(file, 0o600)
            directories.append(directory)
        }
        return (directories[0], directories[1])
    }

    /// credentials.json with an expired login per profile: its user name and a refresh token.
    static func storeExpiredLogins(_ fixture: SandboxFixture, _ logins: [(profile: String, user: String, refresh: String)]) throws {
        let entries = logins.map { login in
            #""\#(login.profile)":{"access_token":"expired-\#(login.profile)","refresh_token":"\#(login.refresh)","expires_at":"2001-01-01T00:00:00Z","user_name":"\#(login.user)"}"#
        }
        let path = fixture.douctl.configDirectory + "/credentials.json"
        try Data(#"{"profiles":{\#(entries.joined(separator: ","))}}"#.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
    }

    @Test func twentyProcessesInTwoDirectoriesWithTwoAccountsLoggingInAndRefreshingAtOnceNeverCross() throws {
        let fixture = try SandboxFixture()
        defer { fixture.stop() }
        let (home, work) = try Self.setUp(fixture)
        let users = [home: "ahbei", work: "linglu"]
        let configBefore = try Data(contentsOf: URL(fileURLWithPath: fixture.douctl.configDirectory + "/config.json"))
        try Self.storeExpiredLogins(fixture, [("home", "ahbei", fixture.sandbox.issueToken(user: "ahbei").refreshToken),
                                              ("work", "linglu", fixture.sandbox.issueToken(user: "linglu").refreshToken)])
        // Ten processes per directory: half log in with a new login of that directory's
        // account (an export: a refresh token with it), half refresh the stored login, all at
        // once; every access token is expired at the server, so every refresh is sent.
        var logins: [String: [String]] = [:]
        for (directory, user) in users {
            logins[directory] = (0..<5).map { _ in
                let tokens = fixture.sandbox.issueToken(user: user)
                return #"{"douctl":"credentials","credential":{"access_token":"\#(tokens.accessToken)","refresh_token":"\#(tokens.refreshToken)","expires_at":"2099-01-01T00:00:00Z","user_name":"\#(user)"}}"#
            }
        }
        fixture.sandbox.expireAccessTokens()
        var running: [(directory: String, login: Bool, process: RunningDouctl)] = []
        for index in 0..<20 {
            let directory = index % 2 == 0 ? home : work
            if index % 4 < 2 {
                let process = try RunningDouctl(fixture.douctl, ["auth", "login", "--with-credentials"], in: directory)
                process.send((logins[directory]?[index / 4] ?? "") + "\n")
                process.closeInput()
                running.append((directory, true, process))
            } else {
                running.append((directory, false, try RunningDouctl(fixture.douctl, ["auth", "refresh"], in: directory)))
            }
        }
        var refreshes = 0
        for (directory, login, process) in running {
            let result = process.finish(timeout: 120)
            #expect(result.status == 0, "\(login ? "login" : "refresh") in \(directory): \(result)")
        }
        for (directory, user) in users {
            let other = user == "ahbei" ? "linglu" : "ahbei"
            let me = try RunningDouctl(fixture.douctl, ["user", "me"], in: directory).finish()
            #expect(me.status == 0, "\(me)")
            #expect(me.stdoutText.contains("\"\(user)\""), "\(directory) is \(user): \(me)")
            #expect(!me.stdoutText.contains("\"\(other)\""), "never the other account: \(me)")
        }
        refreshes = fixture.sandbox.requests.filter { $0.form.contains { $0.name == "grant_type" && $0.value == "refresh_token" } && $0.status == 200 }.count
        #expect(refreshes >= 2, "refreshes were sent (a process that finds the login rotated by another uses it)")
        print("twenty processes: \(refreshes) refreshes, \(fixture.sandbox.requests.count) requests, no crossing")

        for (directory, user) in users {
            let status = try RunningDouctl(fixture.douctl, ["auth", "status", "--explain", "--no-check", "--json"], in: directory).finish()
            #expect(status.status == 0, "\(status)")
            guard case .object(let object) = try status.json() else { throw TestFailure("\(status)") }
            #expect(object["user_name"]?.stringValue == user, "\(directory): \(object)")
            #expect(object["expect_user"]?.stringValue == user)
            #expect(object["chosen_by"]?.stringValue?.hasPrefix("the file ") == true, "\(object)")
            #expect(object["origin"]?.stringValue == fixture.sandbox.baseURL)
        }
        let configAfter = try Data(contentsOf: URL(fileURLWithPath: fixture.douctl.configDirectory + "/config.json"))
        #expect(configAfter == configBefore, "choosing a profile wrote nothing global")
    }

    @Test func aLoginOrRefreshForAnotherAccountThanExpectUserIsRefusedAndNothingIsStored() throws {
        let fixture = try SandboxFixture()
        defer { fixture.stop() }
        let (home, _) = try Self.setUp(fixture)

        // A login with linglu's token in the directory of the profile pinned to ahbei.
        let login = try RunningDouctl(fixture.douctl, ["auth", "login", "--with-token"], in: home)
        login.send(fixture.sandbox.issueToken(user: "linglu").accessToken + "\n")
        login.closeInput()
        let refused = login.finish()
        #expect(refused.status == 4, "\(refused)")
        #expect(refused.errorLine == "douctl: the login is for 'linglu', but profile 'home' expects 'ahbei' (expect_user); nothing was stored; log in as ahbei, or change the pin: douctl config set expect_user NAME --profile home", "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: fixture.douctl.configDirectory + "/credentials.json") || !fixture.credentials.contains("\"home\""))

        // A stored login whose refresh answers for another account (no user name stored, so
        // only the refresh says whose it is).
        let path = fixture.douctl.configDirectory + "/credentials.json"
        let refresh = fixture.sandbox.issueToken(user: "linglu").refreshToken
        fixture.sandbox.expireAccessTokens()
        try Data(#"{"profiles":{"home":{"access_token":"expired","refresh_token":"\#(refresh)","expires_at":"2001-01-01T00:00:00Z"}}}"#.utf8)
            .write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        let before = fixture.credentials
        let me = try RunningDouctl(fixture.douctl, ["user", "me"], in: home).finish()
        #expect(me.status == 4, "\(me)")
        #expect(me.errorLine.hasPrefix("douctl: the refresh is for "), "\(me)")
        #expect(me.errorLine.contains("but profile 'home' expects 'ahbei' (expect_user); nothing was stored"), "\(me)")
        #expect(fixture.credentials == before, "nothing stored")
        #expect(!me.stdoutText.contains("linglu"))
        print("expect_user refusals: \(refused.errorLine) | \(me.errorLine)")
    }

    @Test func aDouctlFileThatIsALinkIsRefused() throws {
        let fixture = try SandboxFixture()
        defer { fixture.stop() }
        let (home, _) = try Self.setUp(fixture)
        let file = (home as NSString).deletingLastPathComponent + "/.douctl"
        try FileManager.default.removeItem(atPath: file)
        try FileManager.default.createSymbolicLink(atPath: file, withDestinationPath: "/etc/hostname")
        let result = try RunningDouctl(fixture.douctl, ["api", "/v2/user/~me"], in: home).finish()
        #expect(result.status == 3, "\(result)")
        #expect(result.errorLine == "douctl: bad configuration file \(file) (it is a symbolic link; a .douctl file picks the profile and must be a plain file (replace the link with a copy))")
        #expect(fixture.sandbox.requests.isEmpty, "nothing was sent")
    }

    /// The promise table's row "a credential goes only to its origin", for this feature: a
    /// profile a .douctl chose sends its token to its api_base, and none to another origin.
    @Test func aProfileADouctlFileChoseSendsItsTokenOnlyToItsOrigin() throws {
        let fixture = try SandboxFixture()
        defer { fixture.stop() }
        let (home, _) = try Self.setUp(fixture)
        let token = fixture.sandbox.issueToken(user: "ahbei")
        let path = fixture.douctl.configDirectory + "/credentials.json"
        try Data(#"{"profiles":{"home":{"access_token":"\#(token.accessToken)","expires_at":"2099-01-01T00:00:00Z","user_name":"ahbei"}}}"#.utf8)
            .write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        let elsewhere = try TestServer(json: "{}")
        defer { elsewhere.stop() }
        let own = try RunningDouctl(fixture.douctl, ["api", "/v2/user/~me"], in: home).finish()
        #expect(own.status == 0 && own.stdoutText.contains("\"ahbei\""), "\(own)")
        let other = try RunningDouctl(fixture.douctl, ["api", elsewhere.baseURL + "/x"], in: home).finish()
        #expect(other.status == 0, "\(other)")
        #expect(elsewhere.received.count == 1)
        #expect(elsewhere.received.allSatisfy { $0.header("Authorization") == nil }, "no credential to another origin")
    }
}
