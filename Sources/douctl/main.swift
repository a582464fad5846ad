#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import DouctlCommands
import DouctlSystem

// First, before anything can open a file or a socket: a closed 0, 1 or 2 becomes /dev/null.
if !StandardDescriptors.ensureOpen() { exit(3) }
Interrupt.install()
// A command that calls the API starts opening libcurl now, beside the parsing (EarlyLoad).
EarlyLoad.libcurlIfTheCommandCallsTheAPI(CommandLine.arguments)
// Then out with _exit, past the libraries' exit handlers (ProcessExit says why).
ProcessExit.finish(Douctl.main(.current()))
