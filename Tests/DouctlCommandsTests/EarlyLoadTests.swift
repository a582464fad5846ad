@testable import DouctlCommands
import Testing

/// Issue 44: the commands that start opening libcurl before parsing are those that call the API.
@Suite("Early libcurl load")
struct EarlyLoadTests {
    @Test func theEarlyListIsTheCommandTreesCommandsCallingTheAPI() {
        #expect(EarlyLoad.commandsCallingAPI == Set(CommandTree.commandsCallingAPI))
    }
}
