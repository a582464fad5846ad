import DouctlHTTP
import DouctlSystem
import DouctlTestSupport
import Testing
@testable import DouctlCommands

/// Issue 41, item 6 as the issue writes it: `douctl sandbox verify DIR --profile live`, the
/// same check as `sandbox --verify DIR`, which keeps working.
@Suite struct SandboxVerifyWordTests {
    @Test func verifyAsAWordChecksTheRecordingAsTheOptionDoes() throws {
        let directory = try FakeAnyAPICommandTests.recording(reply: #"{"id":1,"name":"x"}"#)
        for arguments in [["sandbox", "verify", directory.path], ["sandbox", "--verify", directory.path]] {
            let transport = ScriptedTransport([.json(201, #"{"id":"2","name":"y"}"#)])
            let result = try FakeAnyAPICommandTests.live(transport).run(["--profile", "live"] + arguments)
            #expect(result.status == 11, "\(arguments): \(result)")
            #expect(result.stdoutText == "POST /v1/items (0001-POST-v1_items.json): field .id: number → string\n", "\(arguments): \(result.stdoutText)")
            #expect(transport.requests.first?.url == "http://api.test/v1/items?page=2")
        }
    }

    @Test(arguments: [
        (["sandbox", "verify"], "douctl: verify needs the recording: douctl sandbox verify DIR|FILE.har --profile live"),
        (["sandbox", "verify", "rec", "--verify", "rec"], "douctl: give the recording once: douctl sandbox verify DIR, or douctl sandbox --verify DIR"),
        (["sandbox", "verfy", "rec"], "douctl: invalid value 'verfy' for verify: expected one of verify (did you mean 'verify'?)"),
    ])
    func aWrongVerifyIsAUsageErrorBeforeAnythingStarts(arguments: [String], line: String) throws {
        let transport = ScriptedTransport([])
        let result = try InProcessDouctl(transport: transport).run(arguments)
        #expect(result.status == 2, "\(result)")
        #expect(result.errorLine == line)
        #expect(result.stdout.isEmpty)
        #expect(transport.requests.isEmpty)
    }

    @Test func theHelpShowsTheWord() throws {
        let help = try InProcessDouctl().run(["sandbox", "--help"])
        #expect(help.status == 0)
        #expect(help.stdoutText.contains("[verify] [RECORDING]"), "\(help.stdoutText)")
        #expect(help.stdoutText.contains("douctl sandbox verify recordings/ --profile live"))
    }
}
