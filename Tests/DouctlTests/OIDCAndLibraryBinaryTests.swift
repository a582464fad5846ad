import DouctlJSON
import DouctlServer
import DouctlTestSupport
import Foundation
import Testing

/// Issue 39 points 1 and 6 with the built binary: discovery refused on plain http off
/// this machine and on a document pointing an endpoint at plain http, bound by --max-time;
/// and libcurl / libjq loaded only from the system's library directories.
@Suite("OIDC and the system's libraries (binary)", .serialized)
struct OIDCAndLibraryBinaryTests {
    /// An http:// issuer on a host other than this machine is refused before anything is
    /// sent (exit 2), one line naming the fix; no profile is written.
    @Test func aPlainHTTPIssuerOffThisMachineIsRefused() throws {
        let douctl = Douctl()
        let add = try douctl.run(["profile", "add", "corp", "--issuer", "http://login.example.invalid", "--client-id", "c"])
        #expect(add.status == 2, "\(add)")
        #expect(add.errorLine.contains("refused issuer 'http://login.example.invalid'") && add.errorLine.contains("https://"), "\(add)")
        #expect(add.stderr.split(separator: "\n").count == 1, "\(add)")
        #expect(add.stdout.isEmpty)
        #expect(try douctl.run(["profile", "show", "corp"]).status == 2, "no profile was written")
    }

    /// A provider (written here to lie) whose document sends the token endpoint over plain
    /// http to another host: refused, exit 8, nothing written.
    @Test func aDocumentPointingTheTokenEndpointAtPlainHTTPIsRefused() throws {
        let own = OIDCPortBox()
        let server = try TestServer { _ in
            let base = "http://127.0.0.1:\(own.port)"
            let document = #"{"issuer":"\#(base)","authorization_endpoint":"\#(base)/authorize","token_endpoint":"http://tokens.example.invalid/token","userinfo_endpoint":"\#(base)/userinfo"}"#
            return HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(Array(document.utf8)))
        }
        own.port = server.port
        let douctl = Douctl()
        let add = try douctl.run(["profile", "add", "corp", "--issuer", server.baseURL, "--client-id", "c"])
        #expect(add.status == 8, "\(add)")
        #expect(add.errorLine.contains("puts token_endpoint at 'http://tokens.example.invalid/token'"), "\(add)")
        #expect(try douctl.run(["profile", "show", "corp"]).status == 2, "no profile was written")
    }

    /// A provider that accepts the connection and never answers: --max-time bounds
    /// `profile add --issuer` (exit 7, nothing written), where it was refused as an option.
    @Test func discoveryIsBoundByMaxTime() throws {
        let listener = try HostileListener { connection, _ in
            // Never answer; hold the connection until the client gives up.
            var byte: UInt8 = 0
            _ = read(connection, &byte, 1)
        }
        defer { listener.stop() }
        let douctl = Douctl()
        let started = Date()
        let add = try douctl.run(["profile", "add", "slow", "--issuer", "http://127.0.0.1:\(listener.port)", "--client-id", "c", "--max-time", "2"], timeout: 30)
        #expect(add.status == 7, "\(add)")
        #expect(Date().timeIntervalSince(started) < 20)
        #expect(try douctl.run(["profile", "show", "slow"]).status == 2, "no profile was written")
        let timeout = try douctl.run(["profile", "add", "slow", "--issuer", "http://127.0.0.1:\(listener.port)", "--client-id", "c", "--timeout", "2"], timeout: 30)
        #expect(timeout.status == 7, "\(timeout)")
    }

    /// RFC 9207 against a server written to lie: its authorization response names another
    /// issuer than the profile's. Refused, exit 4, the code never sent to the token endpoint.
    @Test func anAuthorizationResponseNamingAnotherIssuerIsRefused() throws {
        let server = try TestServer { request in
            if request.path == "/authorize" {
                let location = (request.queryValue("redirect_uri") ?? "") + "?code=abc&iss=https%3A%2F%2Fevil.example&state=" + (request.queryValue("state") ?? "")
                return HTTPServerResponse(status: 302, headers: [("Location", location)], body: .bytes([]))
            }
            return HTTPServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: .bytes(Array(#"{"access_token":"mixed-up-token","token_type":"Bearer"}"#.utf8)))
        }
        let browser = try FakeBrowser()
        let douctl = Douctl(environment: ["BROWSER": browser.command("follow")])
        #expect(try douctl.run("profile", "add", "o", "--api-base", server.baseURL, "--authorize-url", server.baseURL + "/authorize",
                               "--token-url", server.baseURL + "/token", "--client-id", "c", "--token-auth", "none").status == 0)
        #expect(try douctl.run("config", "set", "issuer", server.baseURL, "--profile", "o").status == 0)
        let login = try douctl.run(["--profile", "o", "auth", "login", "--web", "--wait", "60"], timeout: 120)
        #expect(login.status == 4, "\(login)")
        #expect(login.errorLine.contains("names issuer 'https://evil.example'") && login.errorLine.contains("RFC 9207"), "\(login)")
        #expect(!server.received.contains { $0.path == "/token" }, "the code went to the token endpoint")
        let stored = (try? String(contentsOfFile: douctl.configDirectory + "/credentials.json", encoding: .utf8)) ?? ""
        #expect(!stored.contains("mixed-up-token"))
    }

    /// A copy of douctl in a directory holding a planted libcurl.so.4 and libjq.so.1 (each
    /// writes a marker file from its constructor): neither runs, on --version, a request or
    /// --jq, with the directory as the working directory and an empty LD_LIBRARY_PATH entry.
    @Test func aLibraryPlantedBesideTheBinaryIsNotLoaded() throws {
        let cc = try Tools.require("cc")
        let directory = TemporaryDirectory.make(prefix: "douctl-planted")
        let marker = directory + "/planted-ran"
        let source = directory + "/planted.c"
        try #"""
        #include <stdio.h>
        #include <stdlib.h>
        __attribute__((constructor)) static void planted(void) {
            const char *path = getenv("PLANTED_MARKER");
            FILE *file = path ? fopen(path, "a") : NULL;
            if (file) { fputs("planted library ran\n", file); fclose(file); }
        }
        """#.write(toFile: source, atomically: true, encoding: .utf8)
        for name in ["libcurl.so.4", "libjq.so.1"] {
            let build = Process()
            build.executableURL = URL(fileURLWithPath: cc)
            build.arguments = ["-shared", "-fPIC", "-o", directory + "/" + name, source]
            try build.runAlone()
            build.waitUntilExit()
            try #require(build.terminationStatus == 0, "cc could not build \(name)")
        }
        let copy = directory + "/douctl"
        try FileManager.default.copyItem(atPath: Douctl.binary, toPath: copy)

        func run(_ arguments: [String]) throws -> (Int32, String) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: copy)
            process.arguments = arguments
            process.currentDirectoryURL = URL(fileURLWithPath: directory)
            process.environment = ["PATH": "/usr/bin:/bin", "HOME": directory, "DOUCTL_CONFIG_DIR": directory + "/config",
                                   "PLANTED_MARKER": marker, "LD_LIBRARY_PATH": ":.:"]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = output
            process.standardInput = FileHandle.nullDevice
            try process.runAlone()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return (process.terminationStatus, text)
        }
        let version = try run(["--version"])
        #expect(version.0 == 0, "\(version.1)")
        let request = try run(["api", "http://127.0.0.1:9/nothing", "--no-retry", "--timeout", "2"])
        #expect(request.0 == 7, "libcurl loaded and tried to connect: \(request.1)")
        let server = try TestServer(json: #"{"a":1}"#)
        let jq = try run(["api", server.baseURL + "/x", "--jq", ".a"])
        #expect(jq.0 == 0 && jq.1 == "1\n", "\(jq.1)")
        #expect(!FileManager.default.fileExists(atPath: marker), "a planted library ran: \((try? String(contentsOfFile: marker, encoding: .utf8)) ?? "")")
    }

    /// Issue 44 opens libcurl RTLD_DEEPBIND (its libraries find each other's symbols first),
    /// except when LD_PRELOAD names a library: one that replaces connect() (as torsocks and
    /// proxychains do) still sees libcurl's connect. Without that exception this fails.
    @Test func aPreloadedLibraryStillSeesLibcurlsCalls() throws {
        let cc = try Tools.require("cc")
        let directory = TemporaryDirectory.make(prefix: "douctl-preload")
        let marker = directory + "/connect-seen"
        let source = directory + "/preload.c"
        try #"""
        #define _GNU_SOURCE
        #include <dlfcn.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <sys/socket.h>
        int connect(int fd, const struct sockaddr *address, socklen_t length) {
            const char *path = getenv("PRELOAD_MARKER");
            FILE *file = path ? fopen(path, "a") : NULL;
            if (file) { fputs("connect\n", file); fclose(file); }
            int (*real)(int, const struct sockaddr *, socklen_t) = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "connect");
            return real(fd, address, length);
        }
        """#.write(toFile: source, atomically: true, encoding: .utf8)
        let library = directory + "/preload.so"
        let build = Process()
        build.executableURL = URL(fileURLWithPath: cc)
        build.arguments = ["-shared", "-fPIC", "-o", library, source, "-ldl"]
        try build.runAlone()
        build.waitUntilExit()
        try #require(build.terminationStatus == 0, "cc could not build the preload library")
        let server = try TestServer(json: #"{"a":1}"#)
        let douctl = Douctl()
        let result = try douctl.run(["api", server.baseURL + "/x"], environment: ["LD_PRELOAD": library, "PRELOAD_MARKER": marker])
        #expect(result.status == 0 && result.stdoutText.contains("\"a\""), "\(result)")
        let seen = (try? String(contentsOfFile: marker, encoding: .utf8)) ?? ""
        #expect(seen.contains("connect"), "the preloaded connect() did not see libcurl's call")
    }
}

/// The test server's port, known once it listens, for the document it serves.
final class OIDCPortBox: @unchecked Sendable {
    var port: UInt16 = 0
}
