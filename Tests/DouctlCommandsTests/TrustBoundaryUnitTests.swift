#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import DouctlCommands
@testable import DouctlCore
import DouctlJSON
import DouctlSystem
import DouctlTestSupport
import Testing

/// Issue 30, case by case in process: what may reach a terminal (`TerminalText`, the JSON
/// colorizer), what a browser may open (`BrowserURL`), which token replies may be stored
/// (`TokenGrant`), and what an output path is (`OutputPath`). The built binary proves each
/// against hostile servers in `TrustBoundaryTests`.
@Suite("Trust boundaries, case by case")
struct TrustBoundaryUnitTests {
    // MARK: - TerminalText

    @Test(arguments: [
        ("plain ASCII, 中文, 👍🏽 and 👨‍👩‍👧 stay", "plain ASCII, 中文, 👍🏽 and 👨‍👩‍👧 stay"),
        ("tab\tstays", "tab\tstays"),
        ("a\u{1B}]52;c;ZXZpbA==\u{07}b", #"a\x1B]52;c;ZXZpbA==\x07b"#),
        ("two\nlines\r", #"two\nlines\r"#),
        ("csi\u{9B}2J osc\u{9D}8;;x\u{9C}", #"csi\u009B2J osc\u009D8;;x\u009C"#),
        ("invoice_\u{202E}txt.exe", #"invoice_\u202Etxt.exe"#),
        ("iso\u{2066}late\u{2069} lrm\u{200E} alm\u{061C}", #"iso\u2066late\u2069 lrm\u200E alm\u061C"#),
        ("del\u{7F}", #"del\u007F"#),
    ])
    func escapedWritesEveryTerminalControlAsAnEscape(text: String, expected: String) {
        #expect(TerminalText.escaped(text) == expected)
        #expect(TerminalText.needsEscaping(text) == (text != expected))
    }

    @Test func linesKeepTheirNewlinesOnlyWhenAsked() {
        #expect(TerminalText.escaped("a\nb\u{1B}", keepingNewlines: true) == "a\nb\\x1B")
        #expect(TerminalText.escaped("a\nb", keepingNewlines: true) == "a\nb")
        #expect(!TerminalText.needsEscaping("a\nb", keepingNewlines: true))
    }

    @Test func viewsShowCaretsAndReplacementCharacters() {
        #expect(TerminalText.shown("x\u{1B}[2J\u{9B}y\u{202E}z\n\tw") == "x^[[2J\u{FFFD}y\u{FFFD}z\n\tw")
    }

    // MARK: - JSON on a terminal

    @Test func jsonOnATerminalSpellsControlsAsJSONEscapesWhateverTheChunks() throws {
        let document = Array(#"{"t":"a\#u{9B}2J\#u{202E}b 中文 \#u{7F}","k\#u{2066}":[1]}"#.utf8)
        let whole = JSONColorizer.colorize(document, colors: false)
        let text = String(decoding: whole, as: UTF8.self)
        #expect(text == #"{"t":"a\u009B2J\u202Eb 中文 \u007F","k\u2066":[1]}"#)
        // Same value to a JSON reader.
        #expect(try JSONParser.parse(whole) == JSONParser.parse(document))
        // Split anywhere, even inside a character: the same bytes come out.
        for cut in 1..<document.count {
            var colorizer = JSONColorizer(colors: false)
            let out = colorizer.feed(Array(document[..<cut])) + colorizer.feed(Array(document[cut...])) + colorizer.finish()
            #expect(out == whole, "cut at \(cut)")
        }
        // Nothing to escape, no colours: byte for byte the input.
        let plain = Array(#"{"a":"中文 ü é","b":[true,null,-1.5e3]}"#.utf8)
        #expect(JSONColorizer.colorize(plain, colors: false) == plain)
        // With colours, stripping them gives the escaped text back.
        #expect(ViewTests.strip(String(decoding: JSONColorizer.colorize(document), as: UTF8.self)) == text)
    }

    // MARK: - BrowserURL

    @Test(arguments: [
        ("https://example.com/device", true),
        ("HTTP://127.0.0.1:8080/authorize?client_id=x&state=y", true),
        ("https://user@example.com/x", true),
        ("javascript:alert(1)", false),
        ("file:///etc/passwd", false),
        ("smb://host/share", false),
        ("--renderer-cmd-prefix=/tmp/pwn", false),
        ("-https://example.com", false),
        ("https://", false),
        ("https:///path", false),
        ("https://example.com/a b", false),
        ("https://example.com/\u{202E}exe", false),
        ("https://exa\nmple.com", false),
    ])
    func onlyPlainHTTPURLsMayBeOpened(url: String, opens: Bool) {
        #expect((BrowserURL.problem(url) == nil) == opens, "\(url): \(BrowserURL.problem(url) ?? "opens")")
    }

    // MARK: - token replies

    static func grant(_ text: String) throws -> TokenGrant? {
        TokenGrant(json: try JSONParser.parse(Array(text.utf8)))
    }

    @Test(arguments: [
        (#"{"access_token":"t","token_type":"Bearer"}"#, nil),
        (#"{"access_token":"t","token_type":"bearer"}"#, nil),
        (#"{"access_token":"t"}"#, nil),
        (#"{"access_token":"a.b-c_d~e+f/g=","refresh_token":"r r"}"#, nil),
        (#"{"access_token":"t","token_type":"mac"}"#, "token_type 'mac'"),
        (#"{"access_token":"t","token_type":"DPoP"}"#, "token_type 'DPoP'"),
        (#"{"access_token":"t","token_type":"N_A"}"#, "token_type 'N_A'"),
        (#"{"access_token":"t\r\nX: 1"}"#, "access_token holds bytes"),
        (#"{"access_token":"t\u0000"}"#, "access_token holds bytes"),
        (#"{"access_token":"tök"}"#, "access_token holds bytes"),
        (#"{"access_token":"t","refresh_token":"r\n"}"#, "refresh_token holds bytes"),
    ] as [(String, String?)])
    func aGrantIsCheckedWholeBeforeItIsStored(reply: String, problem: String?) throws {
        let grant = try #require(try Self.grant(reply))
        if let problem {
            #expect(grant.problem?.contains(problem) == true, "\(grant.problem ?? "accepted")")
        } else {
            #expect(grant.problem == nil)
        }
    }

    @Test func aRefreshMustNameTheSameUser() throws {
        let mine = Credential(accessToken: "a", userID: "42", extra: JSONObject([("sub", .string("s-1"))]))
        #expect(try #require(try Self.grant(#"{"access_token":"b","douban_user_id":"42"}"#)).identityChange(from: mine) == nil)
        #expect(try #require(try Self.grant(#"{"access_token":"b"}"#)).identityChange(from: mine) == nil)
        #expect(try #require(try Self.grant(#"{"access_token":"b","douban_user_id":"7"}"#)).identityChange(from: mine)?.contains("user '7'") == true)
        // An ID token whose payload says sub "s-2" (signature not read: TLS vouches).
        let payload = Base64.encode(Array(#"{"sub":"s-2","iss":"x"}"#.utf8), urlSafe: true)
        let switched = try #require(try Self.grant(#"{"access_token":"b","id_token":"e30.\#(payload).sig"}"#))
        #expect(switched.subject == "s-2")
        #expect(switched.identityChange(from: mine)?.contains("subject 's-2'") == true)
        // A first login keeps the subject, for the next refresh to compare with.
        #expect(switched.credential(now: 0, requestedScopes: []).extra["sub"] == .string("s-2"))
    }

    // MARK: - OutputPath

    @Test func outputPathsAreReplacedOnlyWhenTheyAreFiles() throws {
        let directory = TemporaryDirectory.make(prefix: "douctl-outputpath")
        #expect(try OutputPath.resolve(directory + "/new.json") == .replaceFile)
        try AtomicFile.write([1], to: directory + "/old.json")
        #expect(try OutputPath.resolve(directory + "/old.json") == .replaceFile)
        guard case .stream(let null, let what) = try OutputPath.resolve("/dev/null") else {
            Issue.record("/dev/null is not written into")
            return
        }
        #expect(what == "a character device")
        close(null)
        // An open descriptor named as /dev/fd/N is duplicated, not reopened.
        let pipe = try FileIO.makePipe()
        defer { close(pipe.read); close(pipe.write) }
        guard case .stream(let copy, _) = try OutputPath.resolve("/dev/fd/\(pipe.write)") else {
            Issue.record("/dev/fd/N is not written into")
            return
        }
        try FileIO.writeAll(copy, Array("via fd".utf8))
        close(copy)
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(read(pipe.read, &buffer, 16) == 6)
        // A read-only descriptor is not an output.
        #expect(OutputPath.inheritedDescriptor("/dev/fd/\(pipe.read)") == nil)
        #expect(OutputPath.inheritedDescriptor("/dev/fd/1x") == nil)
    }
}

extension OutputPath: Equatable {
    public static func == (lhs: OutputPath, rhs: OutputPath) -> Bool {
        switch (lhs, rhs) {
        case (.replaceFile, .replaceFile): return true
        case (.stream(let a, let x), .stream(let b, let y)): return a == b && x == y
        default: return false
        }
    }
}
