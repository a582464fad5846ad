import DouctlTestSupport
import Testing

/// `douctl api` on Coding-style envelopes, in-process over a scripted transport: one whose
/// success code comes first is unwrapped as it arrives and prints exactly what the held
/// path prints for the same envelope with its data first (issue 23).
@Suite("api envelopes")
struct APIEnvelopeTests {
    func run(_ body: String, _ extra: String...) throws -> CommandResult {
        let transport = ScriptedTransport([.json(200, body)])
        let douctl = try InProcessDouctl(transport: transport)
        return try douctl.run(["api", "/x", "--api-base", "http://api.test"] + extra)
    }

    static let values = [
        #"{"id":7,"name":"\u4e2d\"x\"","tags":["a",{"data":null,"code":5}],"n":1.50,"e":{},"l":[]}"#,
        #"[1,-2e3,true,null,"a\\b",[[]]]"#, #""just text""#, "12345678901234567890123", "false",
    ]

    @Test(arguments: values)
    func codeFirstStreamsTheSameBytesAsTheHeldPath(value: String) throws {
        for format in ["--compact", "--pretty"] {
            let streamed = try run(#"{"code":0,"msg":"ok","data":"# + value + #","request":"r"}"#, format)
            let held = try run(#"{"data":"# + value + #","code":0,"msg":"ok"}"#, format)
            #expect(streamed.status == 0, "\(streamed)")
            #expect(held.status == 0, "\(held)")
            #expect(streamed.stdoutText == held.stdoutText, "\(format)")
            #expect(streamed.stderr.isEmpty)
        }
    }

    @Test func rawPrintsTheWholeEnvelope() throws {
        let body = #"{"code":0,"data":[1, 2]}"#
        #expect(try run(body, "--raw").stdoutText == body)
    }

    @Test(arguments: [
        (#"{"code":0,"data":[1],"code":5,"msg":"late"}"#, 1, "douctl: the API answered HTTP 200 (late, code 5, GET /x)"),
        (#"{"errcode":0,"data":[1],"errmsg":"m","code":6}"#, 1, "douctl: the API answered HTTP 200 (m, code 6, GET /x)"),
        (#"{"code":0,"data":[1],"data":[2]}"#, 8, #"douctl: the reply is not a valid envelope (HTTP 200: the envelope has a second "data" member after the "data" already printed)"#),
    ])
    func aMemberAfterThePrintedDataCanStillMakeItAnError(body: String, exit: Int32, line: String) throws {
        let result = try run(body, "--error-body", "none")
        #expect(result.status == exit, "\(result)")
        // The data was printed as it came (a reply refused after it has no closing newline).
        #expect(result.stdoutText == (exit == 8 ? "[1]" : "[1]\n"))
        #expect(result.errorLine == line)
    }

    @Test func anErrorEnvelopeIsReadOnlyToItsFirst64KiB() throws {
        let padding = String(repeating: "x", count: 80 << 10)
        let result = try run(#"{"code":5,"msg":"nope","data":""# + padding + #""}"#, "--error-body", "stderr")
        #expect(result.status == 1, "\(result)")
        #expect(result.stdout.isEmpty)
        #expect(result.errorLine == "douctl: the API answered HTTP 200 (nope, code 5, GET /x)")
        // The prefix that was read is not JSON: like a cut error status's body, it is not
        // shown (only --raw would show it).
        #expect(result.stderr == result.errorLine + "\n")
    }

    @Test func aSmallErrorEnvelopeIsReportedAsBefore() throws {
        let body = #"{"code":907,"msg":{"operation_need_captcha":"需要验证码"},"data":[1]}"#
        let result = try run(body)
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == body + "\n" + "douctl: the API answered HTTP 200 (需要验证码, code 907, GET /x)\n")
    }
}
